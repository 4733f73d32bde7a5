// Package chaos drives producers and consumers (the official Go client in-process, the Java client in a JVM
// of its own, see javaclient.go) against a target while it injects faults on a schedule, and accounts for
// every message by id, the way OpenChaos measures RocketMQ: lost (acknowledged, never consumed),
// duplicated, out of order (orderly topic), and sent without an acknowledgement but stored all the same
// (counted, not an error). See docs/reliability.md.
package chaos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"rmqd/integration/harness"
	"rmqd/store"
)

// Fault is one kind of fault the driver injects.
type Fault string

// The faults, in the order of their value to a user.
const (
	BrokerKill  Fault = "broker-kill"  // SIGKILL of the broker, restarted on the same store
	NamesrvKill Fault = "namesrv-kill" // SIGKILL of the separate name server, restarted
	BrokerPause Fault = "broker-pause" // SIGSTOP of the broker for Hold (longer than the clients' timeouts), SIGCONT
	SlowDisk    Fault = "slow-disk"    // every flush delayed by SlowDiskDelay for Hold (rmqd's flush-delay failpoint)
	DiskFull    Fault = "disk-full"    // the store's file system (Config.DiskDir) filled to ENOSPC for Hold, then freed
	Partition   Fault = "partition"    // every packet between the clients and the broker dropped for Hold (iptables)
	MasterKill  Fault = "master-kill"  // SIGKILL of a SYNC_MASTER (Config.Slave is its slave), restarted after Hold
	SlaveKill   Fault = "slave-kill"   // SIGKILL of the slave (Config.Slave), restarted after Hold
)

// Config is one chaos run: a target, a fault, how often.
type Config struct {
	Target *harness.Target
	Fault  Fault
	Cycles int           // faults injected, one after the other
	Load   time.Duration // load before each fault (default 2 s)
	// Hold is how long the fault lasts: time dead before the restart, pause length, slow-disk length.
	Hold          time.Duration
	SlowDiskDelay string        // flush-delay value for SlowDisk (default "300ms")
	Rate          int           // messages per second over all producers (default 400)
	Producers     int           // sending goroutines per topic (default 2); each is one sharding key on the orderly topic
	Recover       time.Duration // how long a cycle waits for the first send and consume after the fault (default 60 s)
	Drain         time.Duration // how long the end waits for acknowledged messages still unconsumed (default 90 s)
	// ConsumeEvery: the cycles wait for the consumers to recover only every ConsumeEvery-th time (and on the
	// last), the others only for a send. After a broker restart the Go client consumes again only after its
	// next heartbeat (every 30 s, fixed), which would make 100 cycles last an hour. Default 1.
	ConsumeEvery int
	Topic        string // base topic name; the orderly topic is Topic + "_ORD"
	// DiskDir (DiskFull) is a folder on the store's own size-limited file system, where the fault writes
	// its filler file.
	DiskDir string
	// Slave is the master's slave (MasterKill, SlaveKill): a second broker of Target's broker name.
	Slave *harness.Target
	// Warmup is extra load before the first fault (Apache looks at its disk first a minute after start).
	Warmup time.Duration
	// Java adds the Java clients (java/ChaosClient.java, rocketmq-client 5.3.3): a producer sending to both
	// topics as one more key at the rate of one Go sender, and a push consumer per topic in the Go
	// consumers' groups, so the two clients share the queues. Their ids go into the same ledger.
	Java bool
	// CheckEvery > 0 (broker-kill only): after every CheckEvery-th recovery the broker is stopped gracefully
	// (SIGTERM), its store checked (store.Inspect, as `rmqd check`) and the broker started again, so the checks see what crash
	// recoveries left, not only the end of the run. Problems go to Result.MidProblems.
	CheckEvery int
}

func (c *Config) defaults() {
	if c.Load == 0 {
		c.Load = 2 * time.Second
	}
	if c.SlowDiskDelay == "" {
		c.SlowDiskDelay = "300ms"
	}
	if c.Rate == 0 {
		c.Rate = 400
	}
	if c.Producers == 0 {
		c.Producers = 2
	}
	if c.Recover == 0 {
		c.Recover = 60 * time.Second
	}
	if c.Drain == 0 {
		c.Drain = 90 * time.Second
	}
	if c.ConsumeEvery == 0 {
		c.ConsumeEvery = 1
	}
	if c.Topic == "" {
		c.Topic = "CHAOS_" + strings.ReplaceAll(string(c.Fault), "-", "_")
	}
}

// Result is what one run counted.
type Result struct {
	Target, Fault, Flush string
	Cycles               int
	Sent                 int           // send calls made
	Acked                int           // acknowledged SEND_OK
	Unacked              int           // failed, timed out, or not SEND_OK
	Consumed             int           // distinct ids consumed
	Lost                 int           // acknowledged, never consumed
	Duplicated           int           // ids consumed more than once
	Reordered            int           // first deliveries on the orderly topic behind a later message of the same key
	ReorderedUnacked     int           // of Reordered, sends that had ended without an acknowledgement
	UnackedStored        int           // sent without an acknowledgement, consumed all the same
	Stored               int           // records of the run's messages in the commitlog at the end (copies included)
	SlowestAck           time.Duration // longest SendSync that ended acknowledged (client retries included)
	LostIDs              []string
	LostByQueue          string // per queue: count and queue offsets of what the first drain missed (Go sends)
	// Stalled: acknowledged, not consumed by the end of the drain, then delivered to fresh consumers of
	// the same groups (from the broker's offsets): the old client instances stopped consuming them.
	Stalled int
	// RecoverSend / RecoverConsume: per cycle, fault end to the first acknowledged send, and to the first
	// consumed message sent after the fault ended; -1 when none came within Config.Recover, notMeasured
	// when the cycle did not wait for it (Config.ConsumeEvery).
	RecoverSend, RecoverConsume []time.Duration
	StoreCheck                  string // "ok", "n/a" or the checker's complaint
	JavaAcked, JavaConsumed     int    // of Acked and of the deliveries, the Java clients' (Config.Java)
	ConsumedInFault             int    // deliveries while a fault was in place (from the slave, for MasterKill)
	MidChecks                   int    // stores checked after a recovery, during the run (Config.CheckEvery)
	MidProblems                 []string
}

const notMeasured = -2

// Max and median of the recovery times that came; misses counts those that did not.
func summary(ds []time.Duration) (med, maxd time.Duration, misses int) {
	var ok []time.Duration
	for _, d := range ds {
		if d == notMeasured {
			continue
		}
		if d < 0 {
			misses++
			continue
		}
		ok = append(ok, d)
	}
	if len(ok) == 0 {
		return -1, -1, misses
	}
	slices.Sort(ok)
	return ok[len(ok)/2], ok[len(ok)-1], misses
}

// recovery records, from the start of a fault, every acknowledged send (when it started, when it ended)
// and every consume (the message's birth, the delivery), so that once the fault's end is known the first
// send started after it and the first consume of a message born after it can be picked out, even when they
// happened while the harness was still waiting for the restarted process to listen.
type recovery struct {
	mu        sync.Mutex
	recording bool
	sends     [][2]time.Time
	cons      [][2]time.Time
}

const maxRecovered = 1 << 20

func (r *recovery) start() {
	r.mu.Lock()
	r.recording, r.sends, r.cons = true, r.sends[:0], r.cons[:0]
	r.mu.Unlock()
}

func (r *recovery) sent(start, now time.Time) {
	r.mu.Lock()
	if r.recording && len(r.sends) < maxRecovered {
		r.sends = append(r.sends, [2]time.Time{start, now})
	}
	r.mu.Unlock()
}

func (r *recovery) consumed(born, now time.Time) {
	r.mu.Lock()
	if r.recording && len(r.cons) < maxRecovered {
		r.cons = append(r.cons, [2]time.Time{born, now})
	}
	r.mu.Unlock()
}

// consumedBetween counts the deliveries recorded between from and to (while a fault was in place).
func (r *recovery) consumedBetween(from, to time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.cons {
		if !c[1].Before(from) && c[1].Before(to) {
			n++
		}
	}
	return n
}

// first is the earliest end among events whose start is not before since (ms: born times are in ms).
func first(evs [][2]time.Time, since time.Time) time.Time {
	var f time.Time
	for _, e := range evs {
		if !e[0].Before(since) && (f.IsZero() || e[1].Before(f)) {
			f = e[1]
		}
	}
	return f
}

// wait waits, limit at most, for the first send after the fault's end (and, with consume, the first
// consume of a message born after it) and stops recording.
func (r *recovery) wait(ctx context.Context, end time.Time, limit time.Duration, consume bool) (send, con time.Duration) {
	deadline := time.Now().Add(limit)
	for {
		r.mu.Lock()
		fs, fc := first(r.sends, end), first(r.cons, end.Truncate(time.Millisecond))
		done := (!fs.IsZero() && (!fc.IsZero() || !consume)) || time.Now().After(deadline) || ctx.Err() != nil
		if done {
			r.recording = false
		}
		r.mu.Unlock()
		if done {
			send, con = -1, -1
			if !fs.IsZero() {
				send = fs.Sub(end)
			}
			if !fc.IsZero() {
				con = fc.Sub(end)
			} else if !consume {
				con = notMeasured
			}
			return send, con
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ledger is every id sent and consumed.
type ledger struct {
	mu        sync.Mutex
	acked     map[string]bool // id -> acknowledged (false: sent, no acknowledgement)
	delivered map[string]int
	maxSeq    map[string]int // orderly topic: highest sequence first-delivered per key
	reordered int
	reIDs     []string            // the reordered ids
	where     map[string]queuePos // the Go clients' acknowledged sends: where the broker put them
}

// waitDelivered waits, up to limit, until every acknowledged id was delivered, and returns those that
// were not.
func (l *ledger) waitDelivered(limit time.Duration) []string {
	deadline := time.Now().Add(limit)
	for {
		var missing []string
		l.mu.Lock()
		for id, ok := range l.acked {
			if ok && l.delivered[id] == 0 {
				missing = append(missing, id)
			}
		}
		l.mu.Unlock()
		if len(missing) == 0 || time.Now().After(deadline) {
			return missing
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// queuePos is a message's queue and queue offset, from its send result.
type queuePos struct {
	topic  string
	queue  int
	offset int64
}

func newLedger() *ledger {
	return &ledger{acked: map[string]bool{}, delivered: map[string]int{}, maxSeq: map[string]int{},
		where: map[string]queuePos{}}
}

func (l *ledger) placed(id, topic string, queue int, offset int64) {
	l.mu.Lock()
	l.where[id] = queuePos{topic, queue, offset}
	l.mu.Unlock()
}

// lostByQueue says, per queue, how many lost messages the Go producers put there and their offset
// range: losses on a few queues from some offset on point at a consumer's position, scattered ones at
// the store. Called with l.mu held.
func (l *ledger) lostByQueue(lost []string) string {
	type span struct {
		n        int
		min, max int64
	}
	per := map[string]*span{}
	unknown := 0
	for _, id := range lost {
		p, ok := l.where[id]
		if !ok {
			unknown++
			continue
		}
		k := fmt.Sprintf("%s/%d", p.topic, p.queue)
		sp := per[k]
		if sp == nil {
			sp = &span{min: p.offset, max: p.offset}
			per[k] = sp
		}
		sp.n++
		sp.min, sp.max = min(sp.min, p.offset), max(sp.max, p.offset)
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(per)) {
		sp := per[k]
		parts = append(parts, fmt.Sprintf("%s: %d (offsets %d-%d)", k, sp.n, sp.min, sp.max))
	}
	if unknown > 0 {
		parts = append(parts, fmt.Sprintf("%d from the Java producer (queue not known)", unknown))
	}
	return strings.Join(parts, "; ")
}

// An id is "<topic kind>-<key>-<seq>": "c-1-42" (concurrent topic), "o-0-17" (orderly topic, key 0).
func msgID(kind string, key, seq int) string { return fmt.Sprintf("%s-%d-%d", kind, key, seq) }

// probeKey is the key of the recovery probe's messages on the concurrent topic.
const probeKey = 999

const bodySize = 128

func body(id string) []byte {
	b := make([]byte, bodySize)
	copy(b, id+"|")
	for i := len(id) + 1; i < len(b); i++ {
		b[i] = 'x'
	}
	return b
}

func (l *ledger) deliver(b []byte) {
	if id, _, ok := strings.Cut(string(b), "|"); ok {
		l.deliverID(id)
	}
}

func (l *ledger) deliverID(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.delivered[id]++
	if l.delivered[id] > 1 || !strings.HasPrefix(id, "o-") {
		return
	}
	// Orderly topic: a first delivery must follow every earlier first delivery of its key.
	i := strings.LastIndexByte(id, '-')
	key := id[:i]
	seq, err := strconv.Atoi(id[i+1:])
	if err != nil {
		return
	}
	if m, seen := l.maxSeq[key]; seen && seq < m {
		l.reordered++
		l.reIDs = append(l.reIDs, id)
		return
	}
	l.maxSeq[key] = seq
}

// Run runs cfg on tb (a test), injecting cfg.Cycles faults under load, and returns the counts. It does not
// fail tb on losses: the caller asserts on the Result.
func Run(tb harness.TB, cfg Config) Result {
	tb.Helper()
	cfg.defaults()
	tg := cfg.Target
	res := Result{Target: tg.Kind, Fault: string(cfg.Fault), Cycles: cfg.Cycles}
	led := newLedger()
	rec := &recovery{}
	ordTopic := cfg.Topic + "_ORD"
	ctx, stopLoad := context.WithCancel(tb.Context())
	defer stopLoad()

	// The topics exist before the load starts (auto-creation races with the first sends otherwise).
	for _, topic := range []string{cfg.Topic, ordTopic} {
		harness.RunGoProduce(tb, tg, harness.GoProduce{Topic: topic, Count: 1, BodyPrefix: "warm-up"})
		tg.WaitRoute(tb, topic, 60*time.Second)
	}

	// The Go clients' rebalance and offset lines are at info: a loss report needs them (lossClues).
	rlog.SetLogLevel("info")
	stopCons := []func(){startConsumer(tb, tg, cfg.Topic, false, led, rec), startConsumer(tb, tg, ordTopic, true, led, rec)}
	defer func() {
		for _, s := range stopCons {
			s()
		}
	}()

	var wg sync.WaitGroup
	var counts sync.Mutex
	newProducer := func(name string, orderly bool) rocketmq.Producer {
		opts := []producer.Option{
			producer.WithNameServer([]string{tg.NamesrvAddr}),
			producer.WithGroupName("chaos-pg-" + name),
			producer.WithInstanceName(fmt.Sprintf("chaos-p-%s-%s-%d", cfg.Fault, name, time.Now().UnixNano())),
			producer.WithRetry(2),
			producer.WithSendMsgTimeout(3 * time.Second),
		}
		if orderly {
			opts = append(opts, producer.WithQueueSelector(producer.NewHashQueueSelector()))
		}
		pr, err := rocketmq.NewProducer(opts...)
		if err != nil {
			tb.Fatalf("chaos: producer: %v", err)
		}
		if err := pr.Start(); err != nil {
			tb.Fatalf("chaos: producer start: %v", err)
		}
		tb.Cleanup(func() { _ = pr.Shutdown() })
		return pr
	}
	// record enters one ended send in the ledger and the counts.
	record := func(id string, ok bool, start, end time.Time) {
		counts.Lock()
		res.Sent++
		led.mu.Lock()
		led.acked[id] = ok
		led.mu.Unlock()
		if ok {
			res.Acked++
			res.SlowestAck = max(res.SlowestAck, end.Sub(start))
			if strings.Contains(id, "-"+strconv.Itoa(javaKey)+"-") {
				res.JavaAcked++
			}
		} else {
			res.Unacked++
		}
		counts.Unlock()
		if ok {
			rec.sent(start, end)
		}
	}
	// send sends one message, enters it in the ledger and reports whether it was acknowledged.
	send := func(pr rocketmq.Producer, orderly bool, key, seq int) bool {
		topic, kind := cfg.Topic, "c"
		if orderly {
			topic, kind = ordTopic, "o"
		}
		id := msgID(kind, key, seq)
		m := primitive.NewMessage(topic, body(id))
		m.WithKeys([]string{id})
		if orderly {
			m.WithShardingKey(strconv.Itoa(key))
		}
		start := time.Now()
		sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		r, err := pr.SendSync(sctx, m)
		cancel()
		ok := err == nil && r.Status == primitive.SendOK
		if ok && r.MessageQueue != nil {
			led.placed(id, topic, r.MessageQueue.QueueId, r.QueueOffset)
		}
		record(id, ok, start, time.Now())
		return ok
	}
	var java *javaClients
	firstJavaAck := make(chan struct{})
	if cfg.Java {
		var firstOnce sync.Once
		every := time.Duration(int64(time.Second) * int64(2*cfg.Producers) / int64(cfg.Rate))
		java = startJava(tb, tg, cfg.Topic, every, func(id string, ok bool, start, end time.Time) {
			record(id, ok, start, end)
			if ok {
				firstOnce.Do(func() { close(firstJavaAck) })
			}
		}, func(id string, born, now time.Time) {
			led.deliverID(id)
			counts.Lock()
			res.JavaConsumed++
			counts.Unlock()
			rec.consumed(born, now)
		})
		defer java.stop()
		// Nothing is sent until the Java consumers joined the groups and the queues were shared out again:
		// a member joining under load takes over queues whose offsets were not committed yet and replays them.
		select {
		case <-java.ready:
		case <-java.done:
			tb.Fatalf("chaos: the Java clients exited during start-up (log in %s)", tg.LogDir)
		case <-time.After(90 * time.Second):
			tb.Fatalf("chaos: the Java clients did not start within 90 s (log in %s)", tg.LogDir)
		}
		time.Sleep(3 * time.Second)
		java.startSending()
	}
	for _, orderly := range []bool{false, true} {
		pr := newProducer(fmt.Sprint("load-", orderly), orderly)
		every := time.Duration(int64(time.Second) * int64(2*cfg.Producers) / int64(cfg.Rate))
		for key := range cfg.Producers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tick := time.NewTicker(every)
				defer tick.Stop()
				for seq := 0; ; seq++ {
					select {
					case <-ctx.Done():
						return
					case <-tick.C:
					}
					if !send(pr, orderly, key, seq) {
						time.Sleep(50 * time.Millisecond) // a dead broker answers at once; do not spin
					}
				}
			}()
		}
	}

	// The probe: from the moment a fault is in place until the recovery is measured, a fresh send every
	// 20 ms (up to 50 in flight), so that a send starts right when the fault ends. The load's own senders
	// may all be stuck then: the Go client leaves a request that was in flight on a connection the broker's
	// death closed waiting for its whole timeout (3 s) instead of failing it.
	probePr := newProducer("probe", false)
	// One send first, so the probe holds the topic's route like any client that has sent before (a name
	// server fault would otherwise fail it for want of a route, not of a broker).
	for probeSeq := 0; !send(probePr, false, probeKey, -1-probeSeq); probeSeq++ {
		if probeSeq == 20 {
			tb.Fatalf("chaos: the probe producer cannot send before any fault")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if java != nil {
		select {
		case <-firstJavaAck:
		case <-java.done:
			tb.Fatalf("chaos: the Java clients exited before their first acknowledged send (log in %s)", tg.LogDir)
		case <-time.After(60 * time.Second):
			tb.Fatalf("chaos: no acknowledged send from the Java clients within 60 s (log in %s)", tg.LogDir)
		}
	}
	probeSeq := 0
	startProbe := func() (stop func()) {
		pctx, cancel := context.WithCancel(ctx)
		var pwg sync.WaitGroup
		inFlight := make(chan struct{}, 50)
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-pctx.Done():
					return
				case <-tick.C:
				}
				select {
				case inFlight <- struct{}{}:
				default:
					continue
				}
				seq := probeSeq
				probeSeq++
				pwg.Add(1)
				go func() {
					defer pwg.Done()
					send(probePr, false, probeKey, seq)
					<-inFlight
				}()
			}
		}()
		return func() { cancel(); pwg.Wait() }
	}

	for cycle := range cfg.Cycles {
		wait := cfg.Load
		if cycle == 0 {
			wait += cfg.Warmup
		}
		select {
		case <-time.After(wait):
		case <-tb.Context().Done():
			tb.Fatalf("chaos: test ended")
		}
		rec.start()
		var stopProbe func()
		var placed time.Time
		end := inject(tb, tg, cfg, func() { placed = time.Now(); stopProbe = startProbe() })
		consume := (cycle+1)%cfg.ConsumeEvery == 0 || cycle == cfg.Cycles-1
		s, c := rec.wait(tb.Context(), end, cfg.Recover, consume)
		stopProbe()
		res.ConsumedInFault += rec.consumedBetween(placed, end)
		res.RecoverSend = append(res.RecoverSend, s)
		res.RecoverConsume = append(res.RecoverConsume, c)
		if cfg.CheckEvery > 0 && cfg.Fault == BrokerKill && (cycle+1)%cfg.CheckEvery == 0 && cycle != cfg.Cycles-1 {
			tg.Procs[len(tg.Procs)-1].Stop(tb)
			st := store.Inspect(tg.StoreDir)
			res.MidChecks++
			if len(st.Problems) != 0 {
				res.MidProblems = append(res.MidProblems, fmt.Sprintf("after cycle %d: %s", cycle, checkSummary(st)))
			}
			tb.Logf("chaos: store after cycle %d: %s", cycle, checkSummary(st))
			tg.RestartBroker(tb)
		}
		tb.Logf("chaos: %s %s cycle %d: first send %v, first consume %v after the fault ended", tg.Kind, cfg.Fault, cycle, s, c)
	}
	time.Sleep(cfg.Load)
	stopLoad()
	wg.Wait()
	if java != nil {
		java.stopSending(tb.Context())
	}

	// Drain: every acknowledged id consumed, or the drain time spent.
	missing := led.waitDelivered(cfg.Drain)
	time.Sleep(time.Second) // late duplicates
	for _, s := range stopCons {
		s()
	}
	stopCons = nil
	if java != nil {
		java.stop()
	}
	if len(missing) > 0 {
		// Still missing: fresh consumers in the same groups resume from the offsets the broker holds. What
		// they deliver was stored, indexed and not skipped by the broker's offsets; the old client
		// instances had stalled on it. What they do not deliver is lost.
		tb.Logf("chaos: %d acknowledged messages not consumed after the drain; restarting the consumers", len(missing))
		stopCons = []func(){startConsumer(tb, tg, cfg.Topic, false, led, rec), startConsumer(tb, tg, ordTopic, true, led, rec)}
		led.waitDelivered(cfg.Drain)
		for _, s := range stopCons {
			s()
		}
		stopCons = nil
		led.mu.Lock()
		for _, id := range missing {
			if led.delivered[id] > 0 {
				res.Stalled++
			}
		}
		led.mu.Unlock()
	}

	led.mu.Lock()
	defer led.mu.Unlock()
	for id, ok := range led.acked {
		n := led.delivered[id]
		switch {
		case ok && n == 0:
			res.Lost++
			res.LostIDs = append(res.LostIDs, id)
		case !ok && n > 0:
			res.UnackedStored++
		}
	}
	for id, n := range led.delivered {
		if _, sent := led.acked[id]; !sent {
			continue // warm-up
		}
		res.Consumed++
		if n > 1 {
			res.Duplicated++
		}
	}
	res.Reordered = led.reordered
	for _, id := range led.reIDs {
		if !led.acked[id] {
			res.ReorderedUnacked++
		}
	}
	if len(missing) > 0 {
		res.LostByQueue = led.lostByQueue(missing) // what the first drain missed: lost and stalled alike
	}
	sort.Strings(res.LostIDs)
	if len(res.LostIDs) > 20 {
		res.LostIDs = res.LostIDs[:20]
	}
	return res
}

// inject applies one fault, calls inPlace once it is, and returns when it ended (the restart issued, the
// broker resumed, the disk fast again).
func inject(tb harness.TB, tg *harness.Target, cfg Config, inPlace func()) time.Time {
	tb.Helper()
	switch cfg.Fault {
	case BrokerKill:
		tg.KillBroker(tb)
		inPlace()
		time.Sleep(cfg.Hold)
		return tg.RestartBroker(tb)
	case MasterKill:
		tg.KillBroker(tb)
		inPlace()
		time.Sleep(cfg.Hold)
		return tg.RestartBroker(tb)
	case SlaveKill:
		cfg.Slave.KillBroker(tb)
		inPlace()
		time.Sleep(cfg.Hold)
		return cfg.Slave.RestartBroker(tb)
	case NamesrvKill:
		tg.KillNamesrv(tb)
		inPlace()
		time.Sleep(cfg.Hold)
		return tg.RestartNamesrv(tb)
	case BrokerPause:
		tg.SignalBroker(tb, syscall.SIGSTOP)
		inPlace()
		time.Sleep(cfg.Hold)
		tg.SignalBroker(tb, syscall.SIGCONT)
		return time.Now()
	case DiskFull:
		filler := filepath.Join(cfg.DiskDir, "filler")
		n := fill(tb, filler)
		tb.Logf("chaos: %s disk full (%d MiB of filler)", tg.Kind, n>>20)
		inPlace()
		time.Sleep(cfg.Hold)
		if err := os.Remove(filler); err != nil {
			tb.Fatalf("chaos: free the disk: %v", err)
		}
		return time.Now()
	case Partition:
		tb.Cleanup(func() { healAll(tb, tg.BrokerAddr) })
		partition(tb, tg.BrokerAddr, true)
		inPlace()
		time.Sleep(cfg.Hold)
		partition(tb, tg.BrokerAddr, false)
		return time.Now()
	case SlowDisk:
		tg.SetFailpoint(tb, "flush-delay", cfg.SlowDiskDelay)
		inPlace()
		time.Sleep(cfg.Hold)
		tg.SetFailpoint(tb, "flush-delay", "")
		return time.Now()
	}
	tb.Fatalf("chaos: unknown fault %q", cfg.Fault)
	return time.Time{}
}

// startConsumer runs a push consumer (orderly or concurrent) that records every delivery; the returned
// function shuts it down (bounded).
func startConsumer(tb harness.TB, tg *harness.Target, topic string, orderly bool, led *ledger, rec *recovery) func() {
	tb.Helper()
	pc, err := consumer.NewPushConsumer(
		consumer.WithNameServer([]string{tg.NamesrvAddr}),
		consumer.WithGroupName("chaos-cg-"+topic),
		consumer.WithInstance(fmt.Sprintf("chaos-c-%s-%d", topic, time.Now().UnixNano())),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumerOrder(orderly),
	)
	if err != nil {
		tb.Fatalf("chaos: consumer: %v", err)
	}
	err = pc.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			now := time.Now()
			for _, m := range msgs {
				led.deliver(m.Body)
				rec.consumed(time.UnixMilli(m.BornTimestamp), now)
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		tb.Fatalf("chaos: subscribe: %v", err)
	}
	if err := pc.Start(); err != nil {
		tb.Fatalf("chaos: consumer start: %v", err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			done := make(chan struct{})
			go func() { _ = pc.Shutdown(); close(done) }()
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				tb.Logf("chaos: consumer of %s still shutting down after 15 s; leaving it", topic)
			}
		})
	}
}

// fill writes path until its file system has no space left (ENOSPC) and returns the bytes written.
func fill(tb harness.TB, path string) int64 {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatalf("chaos: filler: %v", err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var n int64
	for small := false; ; {
		w, err := f.Write(buf)
		n += int64(w)
		if errors.Is(err, syscall.ENOSPC) {
			if small { // the last pages too
				return n
			}
			buf, small = buf[:4096], true
			continue
		}
		if err != nil {
			tb.Fatalf("chaos: filler: %v", err)
		}
	}
}
