package lg

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"rmqd/codec"
)

// Lite topics (RocketMQ 5.5): SendConfig.Lites spreads the sends over that many lite topics of a
// message.type=LITE topic; Lite consumes them as rocketmq-proxy 5.5 does for client-java's LitePushConsumer:
// LITE_SUBSCRIPTION_CTL, then POP_LITE_MESSAGE and one ACK_MESSAGE (with liteTopic) per message.

// LiteName is the name of lite topic i of a run.
func LiteName(i int) string { return "l" + strconv.Itoa(i) }

// appendLiteName appends LiteName(i) without allocating (the send loop's).
func appendLiteName(dst []byte, i int) []byte {
	return strconv.AppendInt(append(dst, 'l'), int64(i), 10)
}

// LiteConfig is one lite consumer run: Clients clients of Group, client c subscribed to the lite topics i
// with i % Clients == c, each popping and acking in a loop until Expect messages were acked over all.
type LiteConfig struct {
	Route     Route
	Topic     string // the LITE parent topic
	Group     string // bound to Topic (lite.bind.topic)
	Lites     int
	Clients   int
	Expect    int64
	Batch     int           // maxMsgNum, default 32
	Invisible time.Duration // default 60 s
	Timeout   time.Duration
	Full      bool
}

func (c *LiteConfig) defaults() {
	c.Clients = max(c.Clients, 1)
	popDefaults(&c.Batch, &c.Invisible, &c.Timeout)
}

// LiteClientID names client c of a run on topic: a broker (rmqd's and Java's) holds one subscription per
// client id, as a proxy's client consumes one group.
func LiteClientID(topic string, c int) string { return "lg-lite-" + topic + "-" + strconv.Itoa(c) }

// CreateLiteGroup creates a consumer group bound to the LITE topic parent (lite.bind.topic), as
// `mqadmin updateSubGroup -a +lite.bind.topic=parent` does.
func CreateLiteGroup(ctx context.Context, brokerAddr, group, parent string, opts ...Option) error {
	c, err := dialOpts(ctx, brokerAddr, opts)
	if err != nil {
		return err
	}
	defer c.Close()
	body, err := json.Marshal(map[string]any{"groupName": group, "consumeEnable": true, "consumeFromMinEnable": true,
		"consumeBroadcastEnable": true, "consumeMessageOrderly": true, "retryQueueNums": 1, "retryMaxTimes": 16,
		"brokerId": 0, "whichBrokerWhenConsumeSlowly": 1, "notifyConsumerIdsChangedEnable": true,
		"attributes": map[string]string{"+lite.bind.topic": parent}})
	if err != nil {
		return err
	}
	req := codec.NewRequest(codec.ReqUpdateAndCreateSubscriptiongroup)
	req.Body = body
	code, remark, _, _, err := c.Request(req, ctlTimeout)
	if err != nil {
		return fmt.Errorf("lg: create group %s: %w", group, err)
	}
	if code != codec.RespSuccess {
		return fmt.Errorf("lg: create group %s: code %d %s", group, code, remark)
	}
	return nil
}

// LiteSubscribe subscribes every client of cfg to its lite topics from their first message
// (LITE_SUBSCRIPTION_CTL PARTIAL_ADD with the offset option POLICY MIN).
func LiteSubscribe(ctx context.Context, cfg LiteConfig, opts ...Option) error {
	cfg.defaults()
	c, err := dialOpts(ctx, cfg.Route.BrokerAddr, opts)
	if err != nil {
		return err
	}
	defer c.Close()
	type entry struct {
		Action       string         `json:"action"`
		ClientID     string         `json:"clientId"`
		Group        string         `json:"group"`
		Topic        string         `json:"topic"`
		LiteTopicSet []string       `json:"liteTopicSet"`
		OffsetOption map[string]any `json:"offsetOption"`
		Version      int64          `json:"version"`
	}
	var set []entry
	for cl := range cfg.Clients {
		e := entry{Action: "PARTIAL_ADD", ClientID: LiteClientID(cfg.Topic, cl), Group: cfg.Group, Topic: cfg.Topic,
			OffsetOption: map[string]any{"type": "POLICY", "value": codec.LitePolicyMin}, Version: 1}
		for i := cl; i < cfg.Lites; i += cfg.Clients {
			e.LiteTopicSet = append(e.LiteTopicSet, LiteName(i))
		}
		set = append(set, e)
	}
	body, err := json.Marshal(map[string]any{"subscriptionSet": set})
	if err != nil {
		return err
	}
	req := codec.NewRequest(codec.ReqLiteSubscriptionCtl)
	req.Body = body
	code, remark, _, _, err := c.Request(req, ctlTimeout)
	if err != nil {
		return fmt.Errorf("lg: lite subscribe: %w", err)
	}
	if code != codec.RespSuccess {
		return fmt.Errorf("lg: lite subscribe: code %d %s", code, remark)
	}
	return nil
}

// Lite pops and acks until Expect messages were acked or the timeout passed; the latter is an error.
// The result counts pop and ack round trips as PopResult does.
func Lite(ctx context.Context, cfg LiteConfig) (PopResult, error) {
	cfg.defaults()
	return popLanes(ctx, cfg.Route.BrokerAddr, cfg.Clients, cfg.Expect, cfg.Timeout, cfg.Full, "lite popped",
		func(ctx context.Context, conn *Conn, cl int, c *popCounts) error {
			return liteClient(ctx, conn, &cfg, cl, c)
		})
}

// litePopped is one lite message of a pop: its lite topic and its offset there.
type litePopped struct {
	lite string
	off  string
}

func liteClient(ctx context.Context, conn *Conn, cfg *LiteConfig, cl int, c *popCounts) error {
	popH, ackH, acked, pops := c.popH, c.ackH, c.acked, c.pops
	req := codec.NewRequest(codec.ReqPopLiteMessage)
	for _, kv := range [][2]string{{"clientId", LiteClientID(cfg.Topic, cl)}, {"consumerGroup", cfg.Group}, {"topic", cfg.Topic},
		{"maxMsgNum", strconv.Itoa(cfg.Batch)}, {"invisibleTime", strconv.FormatInt(cfg.Invisible.Milliseconds(), 10)},
		{"pollTime", "0"}, {"bornTime", "0"}} {
		req.Ext.Set(kv[0], kv[1])
	}
	var (
		code                          int32
		remark                        string
		popTime, invisible, reviveQid string
		msgs                          []litePopped
		perr                          error
		rec                           codec.Message
	)
	call := NewCall(func(cmd *codec.RemotingCommand) {
		code, remark, msgs, perr = cmd.Code, strings.Clone(cmd.Remark), msgs[:0], nil
		if cmd.Code != codec.RespSuccess {
			return
		}
		get := func(k string) string { v, _ := cmd.Ext.Get(k); return strings.Clone(v) }
		popTime, invisible, reviveQid = get("popTime"), get("invisibleTime"), get("reviveQid")
		for b := cmd.Body; len(b) > 0; {
			n, err := codec.DecodeRecord(b, &rec)
			if err != nil {
				perr = err
				return
			}
			lite, _ := codec.PropertyValue(rec.Properties, codec.PropLiteTopic)
			off, _ := codec.PropertyValue(rec.Properties, codec.PropInnerMultiQueueOffset)
			msgs = append(msgs, litePopped{strings.Clone(lite), strings.Clone(off)})
			b = b[n:]
		}
	})
	var ackCode int32
	var ackRemark string
	ackCall := NewCall(func(cmd *codec.RemotingCommand) { ackCode, ackRemark = cmd.Code, strings.Clone(cmd.Remark) })
	var frame []byte
	for acked.Load() < cfg.Expect {
		if ctx.Err() != nil {
			return nil // another client failed or the run timed out; Lite reports the count
		}
		req.Ext.Set("bornTime", strconv.FormatInt(time.Now().UnixMilli(), 10))
		if err := roundTrip(conn, req, &frame, call, popH); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("pop lite %s client %d: %w", cfg.Topic, cl, err)
		}
		pops.Add(1)
		if drained, err := popAnswered(code, remark); err != nil {
			return fmt.Errorf("pop lite %s client %d: %w", cfg.Topic, cl, err)
		} else if drained {
			continue
		}
		if perr != nil {
			return fmt.Errorf("pop lite %s client %d: body: %w", cfg.Topic, cl, perr)
		}
		for _, m := range msgs {
			// The receipt handle MQClientAPIImpl.processPopLiteResponse builds: queue 0 of the parent topic,
			// the message's offset in its lite topic.
			a := codec.NewRequest(codec.ReqAckMessage)
			for _, kv := range [][2]string{{"consumerGroup", cfg.Group}, {"topic", cfg.Topic}, {"queueId", "0"},
				{"offset", m.off}, {"liteTopic", m.lite},
				{"extraInfo", "0 " + popTime + " " + invisible + " " + reviveQid + " 0 " + cfg.Route.BrokerName + " 0 " + m.off}} {
				a.Ext.Set(kv[0], kv[1])
			}
			if err := roundTrip(conn, a, &frame, ackCall, ackH); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("ack lite %s/%s: %w", cfg.Topic, m.lite, err)
			}
			if ackCode != codec.RespSuccess {
				return fmt.Errorf("ack lite %s/%s@%s: code %d %s", cfg.Topic, m.lite, m.off, ackCode, ackRemark)
			}
		}
		acked.Add(int64(len(msgs)))
	}
	return nil
}
