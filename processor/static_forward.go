package processor

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"rmqd/codec"
	"rmqd/compat"
)

// A request on a static topic's logical queue whose offsets another broker
// holds (after `mqadmin remappingStaticTopic`) is forwarded to that broker's
// master with lo=false and the physical queue id, as Java's RpcClient does,
// through the broker's signed client, and its answer rewritten here.
const (
	// maxForwardTimeout bounds forwardTimeout: a forward holds a pull worker.
	maxForwardTimeout = time.Minute
	// brokerAddrTTL is how long a resolved broker address is trusted (Java
	// refreshes its cluster metadata every few seconds).
	brokerAddrTTL = 30 * time.Second
	// brokerAddrCacheMax bounds the cache: names come from mappings the wire
	// wrote.
	brokerAddrCacheMax = 1024
)

// brokerAddrCache maps a broker name to its master's address.
type brokerAddrCache struct {
	mu    sync.Mutex
	addrs map[string]brokerAddr
}

type brokerAddr struct {
	addr string
	at   time.Time
}

func (c *brokerAddrCache) get(name string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.addrs[name]
	if !ok || time.Since(a.at) > brokerAddrTTL {
		return "", false
	}
	return a.addr, true
}

func (c *brokerAddrCache) put(name, addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.addrs == nil || len(c.addrs) >= brokerAddrCacheMax {
		c.addrs = make(map[string]brokerAddr)
	}
	c.addrs[strings.Clone(name)] = brokerAddr{strings.Clone(addr), time.Now()}
}

func (c *brokerAddrCache) forget(name string) {
	c.mu.Lock()
	delete(c.addrs, name)
	c.mu.Unlock()
}

// staticBrokerAddr is the address of bname's master, from the topic's route
// (the brokers holding a static topic's items all carry the topic).
func (b *Broker) staticBrokerAddr(ctx context.Context, topic, bname string) (string, error) {
	if addr, ok := b.remotes.get(bname); ok {
		return addr, nil
	}
	if len(b.nameServerAddrs()) == 0 {
		return "", errors.New("no name server to find it")
	}
	route, err := b.topicRoute(ctx, topic)
	if err != nil {
		return "", err
	}
	for _, bd := range route.BrokerDatas {
		if bd.BrokerName == bname {
			if addr := bd.BrokerAddrs[codec.MasterID]; addr != "" {
				b.remotes.put(bname, addr)
				return addr, nil
			}
		}
	}
	return "", fmt.Errorf("no master of broker %s in the route of %s", bname, topic)
}

// forwardStatic sends req to the master of bname and waits for its answer;
// an error is worded as Java's RpcException reaches the client.
func (b *Broker) forwardStatic(ctx context.Context, topic, bname string, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	if b.ns == nil {
		return nil, fmt.Errorf("cannot find addr for broker %s: no name server to find it", bname)
	}
	addr, err := b.staticBrokerAddr(ctx, topic, bname)
	if err != nil {
		return nil, fmt.Errorf("cannot find addr for broker %s: %w", bname, err)
	}
	wait := compat.Millis(b.conf().ForwardTimeout)
	switch {
	case wait <= 0:
		wait = 3 * time.Second // Java's default
	case wait > maxForwardTimeout:
		wait = maxForwardTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	resp, err := b.ns.InvokeSync(cctx, addr, req)
	if err != nil {
		b.remotes.forget(bname) // it may have moved: resolve again next time
		return nil, fmt.Errorf("forward %d to broker %s (%s): %w", req.Code, bname, addr, err)
	}
	return resp, nil
}

// forwardQueueRequest is a request on physical queue queueID of broker bname
// with lo=false: Java's rewritten TopicQueueRequestHeader. kv are the other
// fields.
func forwardQueueRequest(code int32, topic string, queueID int32, bname string, kv ...string) *codec.RemotingCommand {
	req := codec.NewRequest(code)
	req.Ext.Set("topic", topic)
	req.Ext.Set("queueId", strconv.Itoa(int(queueID)))
	req.Ext.Set("lo", "false")
	req.Ext.Set("bname", bname)
	for i := 0; i+1 < len(kv); i += 2 {
		req.Ext.Set(kv[i], kv[i+1])
	}
	return req
}

// remoteRefusal is err, or an error for a forwarded request's answer other
// than SUCCESS.
func remoteRefusal(resp *codec.RemotingCommand, err error) error {
	if err == nil && resp.Code != codec.RespSuccess {
		err = fmt.Errorf("remote answered code %d: %s", resp.Code, resp.Remark)
	}
	return err
}

// forwardCommit sends the group's commit of physical offset phys of item it's
// queue to the item's broker (UPDATE_CONSUMER_OFFSET).
func (b *Broker) forwardCommit(ctx context.Context, topic string, it *codec.LogicQueueMappingItem, group string, phys int64) (*codec.RemotingCommand, error) {
	fwd := forwardQueueRequest(codec.ReqUpdateConsumerOffset, topic, it.QueueID, it.Bname,
		"consumerGroup", group, "commitOffset", strconv.FormatInt(phys, 10))
	return b.forwardStatic(ctx, topic, it.Bname, fwd)
}

// forwardedOffset is the "offset" (or key) of a forwarded request's SUCCESS
// answer.
func forwardedOffset(resp *codec.RemotingCommand, key string) (int64, error) {
	if err := remoteRefusal(resp, nil); err != nil {
		return 0, err
	}
	v, ok := resp.Ext.Get(key)
	if !ok {
		return 0, fmt.Errorf("remote answer without %s", key)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("remote answer's %s: %w", key, err)
	}
	return n, nil
}
