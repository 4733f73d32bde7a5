package processor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/remoting"
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
	return net.JoinHostPort(codec.BareHost(ip), strconv.Itoa(port))
}

func (b *Broker) brokerIdentity(req *codec.RemotingCommand) {
	req.Ext.Set("brokerName", b.conf().BrokerName)
	req.Ext.Set("brokerAddr", b.conf().BrokerAddr())
	req.Ext.Set("clusterName", b.conf().BrokerClusterName)
	req.Ext.Set("brokerId", i64s(b.conf().BrokerID))
}

// registerBodyMax is the largest REGISTER_BROKER body sent: a name server
// (rmqd's, or Java's with its default frameMaxLength) drops a connection whose
// frame is above 16 MiB, so a larger body fails every registration and the
// broker leaves the routes. The margin is for the header.
const registerBodyMax = remoting.DefaultMaxFrameLength - 64<<10

// registerTargets is the name servers to register with now; nil when none or
// when this broker does not register (controller mode not ready).
func (b *Broker) registerTargets() []string {
	addrs := b.nameServerAddrs()
	if len(addrs) == 0 || b.ns == nil || !b.controllerRunning() || b.acting.isolated.Load() {
		return nil
	}
	return addrs
}

// RegisterAll sends REGISTER_BROKER with the whole topic table to every name
// server in parallel; it returns the first failure, after all have answered.
func (b *Broker) RegisterAll(ctx context.Context) error {
	addrs := b.registerTargets()
	if addrs == nil {
		return nil
	}
	b.regState.send.Lock()
	defer b.regState.send.Unlock()
	if b.regState.leaving {
		return nil
	}
	return b.registerAllLocked(ctx, addrs)
}

// registerAllLocked is RegisterAll for addrs; regState.send is held.
func (b *Broker) registerAllLocked(ctx context.Context, addrs []string) error {
	snap := b.topics.Snapshot()
	errs := make([]error, len(addrs))
	for _, reg := range b.registerParts(snap.TopicConfigTable, snap.DataVersion) {
		for i, err := range b.sendRegistration(ctx, addrs, reg) {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	var first error
	for i, addr := range addrs {
		b.regState.note(b.log, addr, errs[i])
		if first == nil {
			first = errs[i]
		}
	}
	return first
}

// registerChanged sends only the topics created or updated since the last
// registration, with the table's current data version, as Java's
// registerIncrementBrokerData does after UPDATE_AND_CREATE_TOPIC and a topic
// made by a send: the whole table at every change made creating N topics cost
// O(N^2) bytes. A name server writes the queue data of every topic in a
// registration whose data version differs from the one it recorded, and
// keeps the broker's other topics (unless it runs with
// deleteTopicWithBrokerRegistration=true, which drops them until the next
// periodic registration, as on Java). A name server whose last registration
// failed, or that refuses this one (one that restarted refuses a single topic
// from a broker it does not know), gets the whole table instead; so does
// every name server after a topic was deleted.
func (b *Broker) registerChanged(ctx context.Context) error {
	addrs := b.registerTargets()
	if addrs == nil {
		return nil
	}
	b.regState.send.Lock()
	defer b.regState.send.Unlock()
	if b.regState.leaving {
		return nil
	}
	// Taken under send, so registrations leave in the order of their versions.
	changed, version, deleted := b.topics.TakeChanged()
	if deleted {
		return b.registerAllLocked(ctx, addrs)
	}
	if len(changed) == 0 {
		return nil
	}
	var inc, full []string
	for _, addr := range addrs {
		if b.regState.good(addr) {
			inc = append(inc, addr)
		} else {
			full = append(full, addr)
		}
	}
	var first error
	if len(inc) > 0 {
		table := make(map[string]TopicConfig, len(changed))
		for _, tc := range changed {
			table[tc.TopicName] = tc
		}
		errs := b.sendRegistration(ctx, inc, b.registerBody(table, version))
		for i, addr := range inc {
			var refused *nsRefusedError
			if errors.As(errs[i], &refused) {
				full = append(full, addr)
				continue
			}
			b.regState.note(b.log, addr, errs[i])
			if first == nil {
				first = errs[i]
			}
		}
	}
	if len(full) > 0 {
		if err := b.registerAllLocked(ctx, full); first == nil {
			first = err
		}
	}
	return first
}

// registerBody is the REGISTER_BROKER body for table at version; each topic's
// perm is narrowed to the broker's when the broker is not RW, as Java does.
func (b *Broker) registerBody(table map[string]TopicConfig, version DataVersion) *codec.RegisterBrokerBody {
	perm := b.conf().BrokerPermission
	narrow := !permWritable(perm) || !permReadable(perm)
	reg := &codec.RegisterBrokerBody{FilterServerList: []string{}, TopicConfigSerializeWrapper: codec.TopicConfigSerializeWrapper{
		DataVersion: version, TopicConfigTable: make(map[string]*codec.TopicConfig, len(table))}}
	for name, tc := range table {
		if narrow {
			tc.Perm &= perm
		}
		reg.TopicConfigSerializeWrapper.TopicConfigTable[name] = &tc
	}
	// Static topics' mappings go with their topics, as Java's registerBrokerAll
	// and registerIncrementBrokerData send them.
	reg.TopicConfigSerializeWrapper.TopicQueueMappingInfoMap = b.mappings.Infos(maps.Keys(table))
	return reg
}

// registerParts is the whole table as one body, or, with
// enableSplitRegistration and more than splitRegistrationSize topics, as
// bodies of that many topics each (Java's registerBrokerAll), sorted by name.
//
// Java sends every part with the table's data version, so a name server
// rewrites only the first part's topics: the later parts carry the version it
// has just recorded, and it skips the topics it already holds, changed or not.
// Here every part but the last carries the version with a negative counter,
// which no table has, so each part reads as changed; the last carries the
// real one, which the name server then keeps.
func (b *Broker) registerParts(table map[string]TopicConfig, version DataVersion) []*codec.RegisterBrokerBody {
	size := int(b.conf().SplitRegistrationSize)
	if !b.conf().EnableSplitRegistration || size <= 0 || len(table) <= size {
		return []*codec.RegisterBrokerBody{b.registerBody(table, version)}
	}
	names := slices.Sorted(maps.Keys(table))
	var parts []*codec.RegisterBrokerBody
	for i := 0; i < len(names); i += size {
		chunk := names[i:min(i+size, len(names))]
		sub := make(map[string]TopicConfig, len(chunk))
		for _, n := range chunk {
			sub[n] = table[n]
		}
		v := version
		if i+size < len(names) {
			v.Counter = -1 - int64(i/size)
		}
		parts = append(parts, b.registerBody(sub, v))
	}
	return parts
}

// nsRefusedError is a name server's answer other than SUCCESS.
type nsRefusedError struct {
	addr   string
	code   int32
	remark string
}

func (e *nsRefusedError) Error() string {
	return fmt.Sprintf("register broker to name server %s: code %d %s", e.addr, e.code, e.remark)
}

// encodeRegistration encodes reg compressed when compressedRegister is set, and
// also when its plain form is above registerBodyMax: no name server takes that
// frame, while a 5.x one (Java's or rmqd's) takes the compressed form, a few
// times smaller. A 4.x name server cannot parse the compressed form rmqd and
// Java 5.x brokers write, but it could not take the oversized plain body either.
func (b *Broker) encodeRegistration(reg *codec.RegisterBrokerBody) (body []byte, compressed bool, err error) {
	compressed = b.conf().CompressedRegister
	if body, err = reg.Encode(compressed); err != nil {
		return nil, false, fmt.Errorf("encode register body: %w", err)
	}
	if !compressed && len(body) > registerBodyMax {
		plain := len(body)
		if body, err = reg.Encode(true); err != nil {
			return nil, false, fmt.Errorf("encode register body: %w", err)
		}
		compressed = true
		b.regState.compressOnce.Do(func() {
			b.log.Warn("topic table too large for a plain registration; sending it compressed (set compressedRegister=true to say so; a 4.x name server cannot read it)",
				"topics", len(reg.TopicConfigSerializeWrapper.TopicConfigTable), "plainBytes", plain,
				"compressedBytes", len(body), "max", registerBodyMax)
		})
	}
	if len(body) > registerBodyMax {
		return nil, false, fmt.Errorf("register body of %d topics is %d bytes (compressed), above the name server frame limit %d; set enableSplitRegistration=true",
			len(reg.TopicConfigSerializeWrapper.TopicConfigTable), len(body), registerBodyMax)
	}
	return body, compressed, nil
}

// sendRegistration sends reg to every name server in addrs in parallel and
// returns each one's failure (nsRefusedError when it answered one).
func (b *Broker) sendRegistration(ctx context.Context, addrs []string, reg *codec.RegisterBrokerBody) []error {
	errs := make([]error, len(addrs))
	body, compressed, err := b.encodeRegistration(reg)
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	crc := codec.BodyCRC(body) // Java's UtilAll.crc32 of the body as sent
	timeout := compat.Millis(int64(b.conf().RegisterBrokerTimeoutMills))
	var wg sync.WaitGroup
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
			b.actingRegisterFields(req)
			req.Ext.Set("compressed", strconv.FormatBool(compressed))
			req.Ext.Set("bodyCrc32", strconv.FormatInt(int64(crc), 10))
			req.Body = body
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			resp, err := b.ns.InvokeSync(cctx, addr, req)
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("register broker to name server %s: %w", addr, err)
			case resp.Code != codec.RespSuccess:
				errs[i] = &nsRefusedError{addr: addr, code: resp.Code, remark: resp.Remark}
			default:
				b.registered(resp)
			}
		}()
	}
	wg.Wait()
	return errs
}

// unregisterAll sends UNREGISTER_BROKER to every name server.
func (b *Broker) unregisterAll(ctx context.Context) {
	if b.ns == nil {
		return
	}
	// A registration in flight (an admin request's) ends first; none follows.
	b.regState.send.Lock()
	b.regState.leaving = true
	b.regState.send.Unlock()
	for _, addr := range b.nameServerAddrs() {
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

// registerLoop registers the whole table every period, and the changed
// topics whenever the topic table changed.
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
		case <-b.topicsChanged:
			// Only what changed; the period is left alone, so a steady stream of
			// changes never holds back the whole-table registration.
			_ = b.registerChanged(ctx)
			continue
		case <-b.nsMoved:
			// A namesrvAddr update: the new list gets the whole table now, and
			// the period starts again from here.
			b.regState.forget(b.nameServerAddrs())
			waited = 0
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
		case <-t.C:
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
	// send orders registrations: they leave in the order of the data
	// versions they carry (a name server skips a topic it already has when
	// the version equals the one it recorded).
	send sync.Mutex
	// leaving (under send): the broker unregistered; nothing registers again
	// until it starts anew.
	leaving      bool
	compressOnce sync.Once // the oversized-table warning
	mu           sync.Mutex
	ok           map[string]bool
}

// good says the last registration with addr succeeded.
func (r *registrationState) good(addr string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ok[addr]
}

// forget drops the state of name servers not in keep (left by a
// namesrvAddr update), so the map stays as small as the list.
func (r *registrationState) forget(keep []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for addr := range r.ok {
		if !slices.Contains(keep, addr) {
			delete(r.ok, addr)
		}
	}
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

// registerCreated registers a topic the send path just created before the send
// is answered, as Java's createTopicInSendMessageMethod does (its
// registerIncrementBrokerData waits for every name server): a producer that
// got SEND_OK, or a consumer it tells, finds the route at once. A send to a new
// topic runs on a worker (sendInline), so the wait, bounded by
// registerBrokerTimeoutMills, holds no event loop; on a loop the register
// loop's signal (topicChanged) is all.
func (b *Broker) registerCreated(ctx context.Context) {
	if remoting.OnLoop(ctx) {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, compat.Millis(b.conf().RegisterBrokerTimeoutMills))
	defer cancel()
	_ = b.registerChanged(rctx) // failures are logged per name server (regState)
}
