package pop

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"rmqd/codec"
	"rmqd/remoting"
	"rmqd/store"
)

func jsonMarshal(v any) ([]byte, error) { return codec.MarshalBody(v) }

// lockKey is topic@group@queueId (KeyBuilder.buildPollingKey, QueueLockManager).
func lockKey(topic, group string, queueID int32) string {
	return topic + "@" + group + "@" + strconv.Itoa(int(queueID))
}

// notifyKeyPrefix marks the held NOTIFICATIONs' keys: Java holds them in
// NotificationProcessor's own PopLongPollingService, so an arrival wakes one
// of each kind, POLLING_INFO counts only POPs, and a POP's rest or an ordered
// ack wakes only POPs. ':' is in no topic name, so the keys cannot meet.
const notifyKeyPrefix = "notify:"

// liteKeyPrefix marks a held POP_LITE_MESSAGE's key, lite:clientId@group:
// Java holds them in PopLiteLongPollingService, woken per client.
const liteKeyPrefix = "lite:"

func liteKey(clientID, group string) string { return liteKeyPrefix + clientID + "@" + group }

// heldKey is the key a request is held under.
func heldKey(hp *heldPop) string {
	if hp.lite != nil {
		return liteKey(hp.lite.clientID, hp.lite.group)
	}
	h, notify := &hp.h, hp.notify
	k := lockKey(h.topic, h.group, h.queueID)
	if notify {
		return notifyKeyPrefix + k
	}
	return k
}

// queueLocks is QueueLockManager: a try-lock per topic@group@queue; idle
// entries are dropped after a minute.
type queueLocks struct {
	mu sync.Mutex
	m  map[string]*queueLock
}

type queueLock struct {
	locked bool
	at     time.Time
}

func (l *queueLocks) tryLock(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.m[key]
	if q == nil {
		q = &queueLock{}
		l.m[key] = q
	}
	if q.locked {
		return false
	}
	q.locked, q.at = true, time.Now()
	return true
}

// lock spins until the lock is taken (Java's ack and change-invisible loops),
// yielding between tries.
func (l *queueLocks) lock(key string) {
	for !l.tryLock(key) {
		time.Sleep(50 * time.Microsecond)
	}
}

func (l *queueLocks) unlock(key string) {
	l.mu.Lock()
	if q := l.m[key]; q != nil {
		q.locked = false
	}
	l.mu.Unlock()
}

func (l *queueLocks) run(ctx context.Context) {
	everyTick(ctx, lockIdleExpiry, func() {
		now := time.Now()
		l.mu.Lock()
		for k, q := range l.m {
			if !q.locked && now.Sub(q.at) > lockIdleExpiry {
				delete(l.m, k)
			}
		}
		l.mu.Unlock()
	})
}

// everyTick calls f every d until ctx ends.
func everyTick(ctx context.Context, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

type pollResult int

const (
	pollNot pollResult = iota
	pollSuspended
	pollFull
	pollTimeout
)

// heldPop is a POP (or NOTIFICATION) waiting for a message (Java's PopRequest).
type heldPop struct {
	conn    remoting.Conn
	h       popHeader
	r       reply
	filter  store.MessageFilter
	expired int64       // ms: bornTime + pollTime
	notify  bool        // a NOTIFICATION, answered hasMsg instead of re-run
	lite    *liteHeader // a POP_LITE_MESSAGE (h holds its group, topic and times)
}

// polling is PopLongPollingService: held requests per topic@group@queue
// (queue -1: any queue), woken one at a time by arrivals, expired by a tick.
type polling struct {
	s    *Service
	mu   sync.Mutex
	held map[string][]*heldPop
	// groups lists the groups polling each topic; a retry topic maps to the
	// topic whose POPs read it (v1 and v2: Java wakes only for v2).
	groups map[string]map[string]int64 // topic -> group -> last park (ms)
	retry  map[string]topicGroup
	// lastClean: the topic/group interest is dropped 5 minutes after its
	// last park, so those maps stay as large as the groups polling lately.
	lastClean int64
	// lastOrder: held ordered POPs and NOTIFICATIONs are re-run every
	// second, so one waiting on a locked queue is answered once its invisible
	// time has passed (Java's ConsumerOrderInfoLockManager wakes both then).
	lastOrder int64
	total     int
	// sawNotify: a NOTIFICATION was ever held. No 5.3 proxy or client sends
	// one, so until then an arrival skips building their keys.
	sawNotify bool
	// active mirrors total > 0 for the arrival path, which runs for every
	// dispatched message and should not take mu when nothing is held.
	active atomic.Bool
	// kick wakes run when a request is parked while nothing was held: an
	// idle broker does not tick every 20 ms.
	kick chan struct{}
	// stopped: shutdown answers held requests and parks no more.
	stopped bool
}

type topicGroup struct{ topic, group string }

func newPolling(s *Service) *polling {
	return &polling{s: s, held: map[string][]*heldPop{}, groups: map[string]map[string]int64{}, retry: map[string]topicGroup{},
		kick: make(chan struct{}, 1)}
}

// hold parks a POP that found nothing (polling()).
func (p *polling) hold(c remoting.Conn, h *popHeader, r reply) pollResult {
	return p.park(&heldPop{conn: c, h: *h, r: r, expired: h.bornTime + h.pollTime})
}

// holdLite parks a POP_LITE_MESSAGE that found nothing. It is re-run every
// second as an ordered POP is, for a queue whose batch became visible again.
func (p *polling) holdLite(c remoting.Conn, h *liteHeader, r reply) pollResult {
	return p.park(&heldPop{conn: c, r: r, expired: h.bornTime + h.pollTime, lite: h,
		h: popHeader{group: h.group, topic: h.topic, queueID: -1, pollTime: h.pollTime, bornTime: h.bornTime, order: true}})
}

// notifyLite wakes a held POP_LITE_MESSAGE of the client.
func (p *polling) notifyLite(clientID, group string) {
	if !p.active.Load() {
		return
	}
	p.mu.Lock()
	hp := p.takeLocked(liteKey(clientID, group), 0, "", false)
	p.mu.Unlock()
	p.wake([]*heldPop{hp})
}

func (p *polling) park(hp *heldPop) pollResult {
	if hp.h.pollTime <= 0 {
		return pollNot
	}
	cfg := p.s.h.Conf()
	if hp.h.exp != "" {
		hp.filter, _ = p.s.h.NewFilter(hp.h.topic, hp.h.expType, hp.h.exp)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return pollNot
	}
	if hp.lite == nil { // a lite POP is woken by its client's queues, not by the topic
		p.interestLocked(hp.h.topic, hp.h.group)
	}
	if cfg.MaxPopPollingSize > 0 && p.total >= cfg.MaxPopPollingSize {
		return pollFull
	}
	if time.Now().UnixMilli() > hp.expired-pollingEarlyMs {
		return pollTimeout
	}
	key := heldKey(hp)
	p.sawNotify = p.sawNotify || hp.notify
	if cfg.PopPollingSize > 0 && len(p.held[key]) > cfg.PopPollingSize {
		return pollFull
	}
	p.held[key] = append(p.held[key], hp)
	p.total++
	if !p.active.Swap(true) {
		select {
		case p.kick <- struct{}{}:
		default:
		}
	}
	return pollSuspended
}

// interestLocked records that group polls topic (and its retry topics).
func (p *polling) interestLocked(topic, group string) {
	gs := p.groups[topic]
	if gs == nil {
		gs = map[string]int64{}
		p.groups[topic] = gs
	}
	if _, ok := gs[group]; !ok {
		tg := topicGroup{topic, group}
		p.retry[retryTopicV1(topic, group)] = tg
		p.retry[retryTopicV2(topic, group)] = tg
	}
	gs[group] = time.Now().UnixMilli()
}

// arriving wakes, for every group polling the topic, one POP and one
// NOTIFICATION of the any-queue key and of the queue's own key.
func (p *polling) arriving(topic string, queueID int32, tagsCode int64, props string) {
	if !p.active.Load() {
		return
	}
	p.mu.Lock()
	if p.total == 0 {
		p.mu.Unlock()
		return
	}
	var targets []topicGroup
	if tg, ok := p.retry[topic]; ok {
		targets = append(targets, tg)
	} else {
		for g := range p.groups[topic] {
			targets = append(targets, topicGroup{topic, g})
		}
	}
	var wake []*heldPop
	for _, tg := range targets {
		for _, k := range [2]string{lockKey(tg.topic, tg.group, -1), lockKey(tg.topic, tg.group, queueID)} {
			if hp := p.takeLocked(k, tagsCode, props, true); hp != nil {
				wake = append(wake, hp)
			}
			if !p.sawNotify {
				continue
			}
			if hp := p.takeLocked(notifyKeyPrefix+k, tagsCode, props, true); hp != nil {
				wake = append(wake, hp)
			}
		}
	}
	p.mu.Unlock()
	p.wake(wake)
}

// notifyKey wakes one POP of topic@group@queue (the rest of a POP that found
// more than it could take, or an ordered queue that became free).
func (p *polling) notifyKey(topic, group string, queueID int32) {
	p.mu.Lock()
	hp := p.takeLocked(lockKey(topic, group, queueID), 0, "", false)
	p.mu.Unlock()
	p.wake([]*heldPop{hp})
}

// takeLocked removes the first live request of key whose filter matches.
func (p *polling) takeLocked(key string, tagsCode int64, props string, filter bool) *heldPop {
	list := p.held[key]
	for i, hp := range list {
		if hp.conn.Closed() {
			continue
		}
		if filter && hp.filter != nil && !p.s.h.MatchArrival(hp.filter, tagsCode, props) {
			continue
		}
		// Drop it and the closed ones before it.
		rest := append(list[:0:0], list[i+1:]...)
		p.total -= i + 1
		p.active.Store(p.total > 0)
		if len(rest) == 0 {
			delete(p.held, key)
		} else {
			p.held[key] = rest
		}
		return hp
	}
	return nil
}

func (p *polling) wake(hs []*heldPop) {
	for _, hp := range hs {
		if hp == nil {
			continue
		}
		go p.execute(hp)
	}
}

// execute re-runs a woken POP, or answers a notification.
func (p *polling) execute(hp *heldPop) {
	defer func() {
		if p.s.h.Recovered("held pop", recover()) {
			_ = hp.conn.WriteResponse(hp.r.response(codec.RespSystemError, "internal error"))
		}
	}()
	if hp.conn.Closed() {
		return
	}
	var resp *codec.RemotingCommand
	if hp.lite != nil {
		resp = p.s.popLite(hp.conn, hp.lite, hp.r)
	} else if hp.notify {
		resp = p.s.notification(hp.conn, &hp.h, hp.r)
	} else {
		resp = p.s.pop(hp.conn, &hp.h, hp.r)
	}
	if resp != nil {
		if err := hp.conn.WriteResponse(resp); err != nil {
			p.s.log.Debug("write held pop response", "remote", hp.conn.RemoteAddr(), "err", err)
		}
	}
}

// run expires held requests every 20 ms (Java's service loop) and drops
// closed connections; with nothing held it waits for a park (or a minute,
// for the interest clean-up).
func (p *polling) run(ctx context.Context) {
	const tick, idle = 20 * time.Millisecond, time.Minute
	t := time.NewTimer(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
			t.Reset(tick)
			continue
		case <-t.C:
		}
		p.expire()
		if p.active.Load() {
			t.Reset(tick)
		} else {
			t.Reset(idle)
		}
	}
}

func (p *polling) expire() {
	now := time.Now().UnixMilli()
	var wake []*heldPop
	p.mu.Lock()
	orderRound := now-p.lastOrder >= 1000
	if orderRound {
		p.lastOrder = now
	}
	for k, list := range p.held {
		keep := list[:0]
		for _, hp := range list {
			switch {
			case hp.conn.Closed():
				p.total--
			case now > hp.expired-pollingEarlyMs, orderRound && hp.h.order:
				p.total--
				wake = append(wake, hp)
			default:
				keep = append(keep, hp)
			}
		}
		clear(list[len(keep):])
		if len(keep) == 0 {
			delete(p.held, k)
		} else {
			p.held[k] = keep
		}
	}
	p.active.Store(p.total > 0)
	if now-p.lastClean > interestTTL {
		p.lastClean = now
		for topic, gs := range p.groups {
			for g, last := range gs {
				if now-last > interestTTL {
					delete(gs, g)
					delete(p.retry, retryTopicV1(topic, g))
					delete(p.retry, retryTopicV2(topic, g))
				}
			}
			if len(gs) == 0 {
				delete(p.groups, topic)
			}
		}
	}
	p.mu.Unlock()
	p.wake(wake)
}

// interestTTL is how long a topic/group stays known to arrival
// notifications after its last held request (Java cleans every 5 minutes).
const interestTTL = 5 * 60 * 1000

// count is the number of POPs held for topic@group@queue (POLLING_INFO).
func (p *polling) count(topic, group string, queueID int32) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.held[lockKey(topic, group, queueID)])
}

// wakeAll answers every held request (shutdown).
func (p *polling) wakeAll() {
	p.mu.Lock()
	var all []*heldPop
	for k, list := range p.held {
		all = append(all, list...)
		delete(p.held, k)
	}
	p.total = 0
	p.active.Store(false)
	p.stopped = true
	p.mu.Unlock()
	for _, hp := range all {
		p.execute(hp)
	}
}

func jsonUnmarshal(b []byte, v any) error { return codec.UnmarshalBody(b, v) }
