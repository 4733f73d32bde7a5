package processor

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"rmqd/codec"
	"rmqd/compat"
)

// NameServerInvoker sends a request to one name server and waits for the
// answer. *remoting.Client implements it.
type NameServerInvoker interface {
	InvokeSync(ctx context.Context, addr string, req *codec.RemotingCommand) (*codec.RemotingCommand, error)
}

// nameServers splits namesrvAddr (';' separated).
func (c *BrokerConfig) nameServers() []string {
	var out []string
	for _, a := range strings.Split(c.NamesrvAddr, ";") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// registerPeriod is registerNameServerPeriod clamped to 10-60 s as Java does.
func (c *BrokerConfig) registerPeriod() time.Duration {
	p := min(max(c.RegisterNameServerPeriod, 10000), 60000)
	return compat.Millis(int64(p))
}

func (b *Broker) haServerAddr() string {
	ip := b.conf().BrokerIP2
	if ip == "" {
		ip = b.conf().BrokerIP1
	}
	port := b.conf().Store.HaListenPort
	if port <= 0 {
		port = b.conf().ListenPort + 1
	}
	return net.JoinHostPort(ip, strconv.Itoa(port))
}

func (b *Broker) brokerIdentity(req *codec.RemotingCommand) {
	req.Ext.Set("brokerName", b.conf().BrokerName)
	req.Ext.Set("brokerAddr", b.conf().BrokerAddr())
	req.Ext.Set("clusterName", b.conf().BrokerClusterName)
	req.Ext.Set("brokerId", i64s(b.conf().BrokerID))
}

// RegisterAll sends REGISTER_BROKER with the whole topic table to every name
// server in parallel; it returns the first failure, after all have answered.
func (b *Broker) RegisterAll(ctx context.Context) error {
	addrs := b.conf().nameServers()
	if len(addrs) == 0 || b.ns == nil || !b.controllerRunning() {
		return nil
	}
	snap := b.topics.Snapshot()
	if !permWritable(b.conf().BrokerPermission) || !permReadable(b.conf().BrokerPermission) {
		// Java narrows each topic's perm to the broker's when the broker is not RW.
		for k, tc := range snap.TopicConfigTable {
			tc.Perm &= b.conf().BrokerPermission
			snap.TopicConfigTable[k] = tc
		}
	}
	reg := codec.RegisterBrokerBody{FilterServerList: []string{}, TopicConfigSerializeWrapper: codec.TopicConfigSerializeWrapper{
		DataVersion: snap.DataVersion, TopicConfigTable: make(map[string]*codec.TopicConfig, len(snap.TopicConfigTable))}}
	for name, tc := range snap.TopicConfigTable {
		reg.TopicConfigSerializeWrapper.TopicConfigTable[name] = &tc
	}
	body, err := reg.Encode(false)
	if err != nil {
		return fmt.Errorf("encode register body: %w", err)
	}
	timeout := compat.Millis(int64(b.conf().RegisterBrokerTimeoutMills))
	var wg sync.WaitGroup
	errs := make([]error, len(addrs))
	for i, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if b.recovered("register broker", recover()) {
					errs[i] = fmt.Errorf("register broker to name server %s: internal error", addr)
				}
			}()
			req := codec.NewRequest(codec.ReqRegisterBroker)
			b.brokerIdentity(req)
			req.Ext.Set("haServerAddr", b.haServerAddr())
			req.Ext.Set("compressed", "false")
			req.Ext.Set("bodyCrc32", "0")
			req.Body = body
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			resp, err := b.ns.InvokeSync(cctx, addr, req)
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("register broker to name server %s: %w", addr, err)
			case resp.Code != codec.RespSuccess:
				errs[i] = fmt.Errorf("register broker to name server %s: code %d %s", addr, resp.Code, resp.Remark)
			default:
				b.registered(resp)
			}
			b.regState.note(b.log, addr, errs[i])
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// unregisterAll sends UNREGISTER_BROKER to every name server.
func (b *Broker) unregisterAll(ctx context.Context) {
	if b.ns == nil {
		return
	}
	for _, addr := range b.conf().nameServers() {
		req := codec.NewRequest(codec.ReqUnregisterBroker)
		b.brokerIdentity(req)
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		if _, err := b.ns.InvokeSync(cctx, addr, req); err != nil {
			b.log.Warn("unregister broker", "namesrv", addr, "err", err)
		} else {
			b.log.Info("unregistered from name server", "namesrv", addr)
		}
		cancel()
	}
}

// registerLoop registers every period and whenever the topic table changed.
// A slave that has not heard of its master yet (it registered before the
// master did) asks again after 1, 2, 4 ... s instead of a whole period: Java's
// slave waits for its next registration (30 s by default) and replicates
// nothing meanwhile.
func (b *Broker) registerLoop(ctx context.Context) {
	period := b.conf().registerPeriod()
	t := time.NewTimer(b.nextRegister(period, 0))
	defer t.Stop()
	var waited time.Duration
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-b.topicsChanged:
			t.Stop() // Go 1.23 timers: no stale tick is left to drain
		}
		// Failures are logged per name server when its state changes
		// (regState), not once every period.
		_ = b.RegisterAll(ctx)
		waited = b.nextRegister(period, waited)
		t.Reset(waited)
	}
}

// nextRegister is the wait before the next registration, given the last one.
func (b *Broker) nextRegister(period, last time.Duration) time.Duration {
	if !b.conf().IsSlave() || b.MasterAddr() != "" {
		return period
	}
	if last <= 0 {
		return min(time.Second, period)
	}
	return min(2*last, period)
}

// topicChanged asks the register loop to re-register soon (coalesced).
func (b *Broker) topicChanged(changed []TopicConfig) {
	select {
	case b.topicsChanged <- struct{}{}:
	default:
	}
	if p, ok := b.store.(queuePreparer); ok {
		// Off the caller's path: a topic is created in the send path too.
		go func() {
			defer func() { b.recovered("prepare queues", recover()) }()
			for _, tc := range changed {
				// A retry or DLQ topic gets its files with its first message, as on
				// Java: every group's heartbeat makes one, and most never hold a message.
				if isGroupTopic(tc.TopicName) {
					continue
				}
				b.queuesMu.Lock()
				if b.topics.Exists(tc.TopicName) {
					p.PrepareQueues(tc.TopicName, min(max(tc.ReadQueueNums, tc.WriteQueueNums), prepareQueuesMax))
				}
				b.queuesMu.Unlock()
			}
		}()
	}
}

// prepareQueuesMax is how many queues of a new topic get their files ahead of
// their first message; the rest get them with it, as every queue does on Java.
// A topic created with thousands of queues would otherwise make thousands of
// files (and mappings) at once, whether a message ever comes or not.
const prepareQueuesMax = 64

// queuePreparer is implemented by stores that can make a new topic's consume
// queues ahead of its first message (*store.DefaultStore.PrepareQueues), so the
// first dispatch into each does not pay for creating its file.
type queuePreparer interface {
	PrepareQueues(topic string, queues int32)
}

// registrationState remembers, per name server, whether the last registration
// succeeded, so the log gets one line when that changes (first success,
// failure, recovery) rather than one every registration period.
type registrationState struct {
	mu sync.Mutex
	ok map[string]bool
}

func (r *registrationState) note(log *slog.Logger, addr string, err error) {
	r.mu.Lock()
	was, seen := r.ok[addr]
	if r.ok == nil {
		r.ok = make(map[string]bool)
	}
	r.ok[addr] = err == nil
	r.mu.Unlock()
	switch {
	case err == nil && (!seen || !was):
		log.Info("registered with name server", "namesrv", addr)
	case err != nil && (!seen || was):
		log.Warn("registration with name server failed; retrying every period", "namesrv", addr, "err", err)
	}
}
