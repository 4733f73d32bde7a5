package lg

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"rmqd/codec"
)

const ctlTimeout = 10 * time.Second

// Option changes how a control request is made.
type Option func(*Conn)

// WithCredentials signs the control requests (ACL 1.0 / 2.0 brokers).
func WithCredentials(c *Credentials) Option { return func(conn *Conn) { conn.sign = c } }

func dialOpts(ctx context.Context, addr string, opts []Option) (*Conn, error) {
	c, err := Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// CreateTopic creates (or updates) topic on the broker with queues read and write queues, like
// `mqadmin updateTopic -r queues -w queues`.
func CreateTopic(ctx context.Context, brokerAddr, topic string, queues int, opts ...Option) error {
	return CreateTopicAttrs(ctx, brokerAddr, topic, queues, "", opts...)
}

// CreateTopicAttrs is CreateTopic with topic attributes as mqadmin's -a takes them ("+queue.type=BatchCQ").
func CreateTopicAttrs(ctx context.Context, brokerAddr, topic string, queues int, attributes string, opts ...Option) error {
	c, err := dialOpts(ctx, brokerAddr, opts)
	if err != nil {
		return err
	}
	defer c.Close()
	req := codec.NewRequest(codec.ReqUpdateAndCreateTopic)
	q := strconv.Itoa(queues)
	for _, kv := range [][2]string{{"topic", topic}, {"defaultTopic", "TBW102"}, {"readQueueNums", q},
		{"writeQueueNums", q}, {"perm", "6"}, {"topicFilterType", "SINGLE_TAG"}, {"topicSysFlag", "0"}, {"order", "false"}} {
		req.Ext.Set(kv[0], kv[1])
	}
	if attributes != "" {
		req.Ext.Set("attributes", attributes)
	}
	code, remark, _, _, err := c.Request(req, ctlTimeout)
	if err != nil {
		return fmt.Errorf("lg: create topic %s: %w", topic, err)
	}
	if code != codec.RespSuccess {
		return fmt.Errorf("lg: create topic %s: code %d %s", topic, code, remark)
	}
	return nil
}

// Route is what the load generator needs from a topic's route: the master address and write queue count.
type Route struct {
	BrokerName string
	BrokerAddr string
	Queues     int
}

// LookupRoute asks the name server for topic's route once (GET_ROUTEINFO_BY_TOPIC) and returns the first
// master with its queues.
func LookupRoute(ctx context.Context, namesrv, topic string) (Route, error) {
	c, err := Dial(ctx, namesrv)
	if err != nil {
		return Route{}, err
	}
	defer c.Close()
	req := codec.NewRequest(codec.ReqGetRouteinfoByTopic)
	req.Ext.Set("topic", topic)
	code, remark, _, body, err := c.Request(req, ctlTimeout)
	if err != nil {
		return Route{}, fmt.Errorf("lg: route of %s: %w", topic, err)
	}
	if code != codec.RespSuccess {
		return Route{}, fmt.Errorf("lg: route of %s: code %d %s", topic, code, remark)
	}
	rd, err := codec.DecodeTopicRouteData(body)
	if err != nil {
		return Route{}, fmt.Errorf("lg: route of %s: %w", topic, err)
	}
	for _, bd := range rd.BrokerDatas {
		addr, ok := bd.BrokerAddrs[0]
		if !ok {
			continue
		}
		for _, qd := range rd.QueueDatas {
			if qd.BrokerName == bd.BrokerName && qd.WriteQueueNums > 0 {
				return Route{BrokerName: bd.BrokerName, BrokerAddr: addr, Queues: int(qd.WriteQueueNums)}, nil
			}
		}
	}
	return Route{}, fmt.Errorf("lg: route of %s has no master with write queues", topic)
}

// WaitRoute polls LookupRoute until the topic is routable or ctx ends.
func WaitRoute(ctx context.Context, namesrv, topic string) (Route, error) {
	for {
		r, err := LookupRoute(ctx, namesrv, topic)
		if err == nil {
			return r, nil
		}
		select {
		case <-ctx.Done():
			return Route{}, fmt.Errorf("lg: waiting for route of %s: %w (last: %v)", topic, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// MaxOffsets returns GET_MAX_OFFSET of every queue 0..queues-1 of topic and their sum: the number of
// messages the broker stored in the topic (from an empty topic).
func MaxOffsets(ctx context.Context, brokerAddr, topic string, queues int, opts ...Option) ([]int64, int64, error) {
	c, err := dialOpts(ctx, brokerAddr, opts)
	if err != nil {
		return nil, 0, err
	}
	defer c.Close()
	offs := make([]int64, queues)
	var sum int64
	for q := range queues {
		req := codec.NewRequest(codec.ReqGetMaxOffset)
		req.Ext.Set("topic", topic)
		req.Ext.Set("queueId", strconv.Itoa(q))
		code, remark, ext, _, err := c.Request(req, ctlTimeout)
		if err != nil {
			return nil, 0, fmt.Errorf("lg: max offset %s/%d: %w", topic, q, err)
		}
		if code != codec.RespSuccess {
			return nil, 0, fmt.Errorf("lg: max offset %s/%d: code %d %s", topic, q, code, remark)
		}
		v, err := strconv.ParseInt(ext["offset"], 10, 64)
		if err != nil {
			return nil, 0, fmt.Errorf("lg: max offset %s/%d: %w", topic, q, err)
		}
		offs[q] = v
		sum += v
	}
	return offs, sum, nil
}
