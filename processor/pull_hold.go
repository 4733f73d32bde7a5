package processor

import (
	"context"
	"sync"
	"time"

	"rmqd/codec"
	"rmqd/processor/delivery"
	"rmqd/remoting"
	"rmqd/store"
)

// heldPull is a PULL_MESSAGE that found nothing and waits for a message
// (Java's PullRequest).
type heldPull struct {
	conn     remoting.Conn
	header   codec.PullMessageRequestHeader
	reply    pullReply
	filter   store.MessageFilter
	deadline time.Time
}

type topicQueue struct {
	topic string
	queue int32
}

// pullHoldService is PullRequestHoldService: held pulls per queue, woken by the
// store's arriving listener, re-checked on a tick for deadlines and for messages
// a notification missed.
type pullHoldService struct {
	b     *Broker
	tick  time.Duration
	mu    sync.Mutex
	held  map[topicQueue][]*heldPull
	count int
	max   int // held pulls at most; 0 = no bound
	// stopped: a shutdown answered the held pulls; new ones are answered at once.
	stopped bool
	kick    chan struct{} // the first pull held after an empty spell: start ticking again
	// free recycles held pulls once answered: a long-polling consumer parks
	// one per empty pull, and the header's strings are kept for the next.
	free sync.Pool
}

// newHeld parks a copy of h: strings of its own, the rest as given.
func (s *pullHoldService) newHeld(c remoting.Conn, h *codec.PullMessageRequestHeader, reply pullReply,
	filter store.MessageFilter, deadline time.Time) *heldPull {
	p, _ := s.free.Get().(*heldPull)
	if p == nil {
		p = new(heldPull)
	}
	p.header.CopyOwned(h)
	p.conn, p.reply, p.filter, p.deadline = c, reply, filter, deadline
	return p
}

// release returns an answered pull; nothing may use p afterwards.
func (s *pullHoldService) release(p *heldPull) {
	p.conn, p.filter, p.reply = nil, nil, pullReply{}
	s.free.Put(p)
}

// DefaultMaxHeldPulls bounds the held pulls of a broker (rmqd's
// maxHeldPullRequests; Java has no bound): a few hundred bytes each plus
// their filter, so a client pipelining suspended pulls cannot grow the heap.
const DefaultMaxHeldPulls = 100000

func newPullHoldService(b *Broker) *pullHoldService {
	return &pullHoldService{b: b, tick: 500 * time.Millisecond, held: map[topicQueue][]*heldPull{}, max: DefaultMaxHeldPulls,
		kick: make(chan struct{}, 1)}
}

// SetMaxHeldPulls bounds the pulls held for long polling (maxHeldPullRequests);
// past it a pull that finds nothing is answered PULL_NOT_FOUND at once, as
// Java answers one it cannot suspend. n <= 0 removes the bound. Call before
// Start.
func (b *Broker) SetMaxHeldPulls(n int) {
	b.hold.mu.Lock()
	b.hold.max = max(n, 0)
	b.hold.mu.Unlock()
}

// HeldPulls is the number of pulls held for long polling.
func (b *Broker) HeldPulls() int {
	b.hold.mu.Lock()
	defer b.hold.mu.Unlock()
	return b.hold.count
}

// suspend parks a pull. A message may have arrived between the read and the
// park, so the queue is checked once more right away. Past the bound the pull
// is re-run without suspension and answered at once.
func (s *pullHoldService) suspend(p *heldPull) {
	k := topicQueue{p.header.Topic, p.header.QueueID}
	s.mu.Lock()
	if s.stopped || s.max > 0 && s.count >= s.max {
		s.mu.Unlock()
		s.b.log.Debug("held pulls at their bound, answering at once", "max", s.max, "remote", p.conn.RemoteAddr())
		s.execute([]*heldPull{p})
		return
	}
	p.reply.suspended = true
	// p may be woken, answered and recycled as soon as the lock is let go.
	offset := p.header.QueueOffset
	s.held[k] = append(s.held[k], p)
	s.count++
	first := s.count == 1
	s.mu.Unlock()
	if first {
		delivery.Kick(s.kick)
	}
	if s.b.store.MaxOffsetInQueue(k.topic, k.queue) > offset {
		s.notify(k.topic, k.queue, -1, 0, "", false)
	}
}

// arriving is the store's ArrivingListener. As in Java's
// NotifyMessageArrivingListener, maxOffset is the queue's new max offset (the
// arrived message's offset + 1).
func (s *pullHoldService) arriving(topic string, queueID int32, maxOffset int64, tagsCode int64, _ int64, props string) {
	// Runs on the store's dispatch goroutine: a filter's panic must not end it.
	defer func() { s.b.recovered("held pull notification", recover()) }()
	s.mu.Lock()
	empty := s.count == 0
	s.mu.Unlock()
	if empty {
		return
	}
	s.notify(topic, queueID, maxOffset, tagsCode, props, true)
}

// notify wakes the held pulls of a queue that can now see a message (newest is
// the queue's max offset, -1 to ask the store) and those past their deadline.
func (s *pullHoldService) notify(topic string, queueID int32, newest int64, tagsCode int64, props string, haveTags bool) {
	k := topicQueue{topic, queueID}
	now := time.Now()
	var wake []*heldPull
	s.mu.Lock()
	list := s.held[k]
	if len(list) == 0 {
		s.mu.Unlock()
		return
	}
	keep := list[:0]
	for _, p := range list {
		n := newest
		if n <= p.header.QueueOffset {
			n = s.b.store.MaxOffsetInQueue(topic, queueID)
		}
		ready := n > p.header.QueueOffset
		if ready && haveTags && newest > p.header.QueueOffset && p.filter != nil {
			ready = s.matches(p, tagsCode, props)
		}
		if ready || !now.Before(p.deadline) || p.conn.Closed() {
			wake = append(wake, p)
		} else {
			keep = append(keep, p)
		}
	}
	for i := len(keep); i < len(list); i++ {
		list[i] = nil
	}
	if len(keep) == 0 {
		delete(s.held, k)
	} else {
		s.held[k] = keep
	}
	s.count -= len(wake)
	s.mu.Unlock()
	var rest []*heldPull
	for _, p := range wake {
		// A woken pull reads what was just stored, from memory: the loop of its
		// connection runs it and writes the answer in the same turn. One with a
		// property (SQL92) filter may evaluate it on thousands of records
		// before it finds a match: it stays off the loop.
		if evaluatesProperties(p.filter) || !remoting.RunOnLoop(p.conn, func() { s.executeOne(p, true) }) {
			rest = append(rest, p)
		}
	}
	if len(rest) > 0 {
		go s.execute(rest)
	}
}

// matches runs a held pull's filter on an arrived message; one that panics
// counts as a match, so the pull is re-run and answered (execute recovers).
// It runs under s.mu, which a panic must not leave locked.
func (s *pullHoldService) matches(p *heldPull, tagsCode int64, props string) (ok bool) {
	defer func() {
		if s.b.recovered("held pull filter", recover()) {
			ok = true
		}
	}()
	ok = p.filter.MatchTagsCode(tagsCode)
	if pm, isPM := p.filter.(propsMatcher); isPM && ok {
		ok = pm.MatchEncodedProperties(props)
	}
	return ok
}

// execute re-runs woken pulls without suspension and answers them.
func (s *pullHoldService) execute(ps []*heldPull) {
	for _, p := range ps {
		s.executeOne(p, false)
	}
}

// executeOne re-runs one pull, on the loop of its connection or not; a panic
// answers it SYSTEM_ERROR.
func (s *pullHoldService) executeOne(p *heldPull, onLoop bool) {
	defer s.release(p) // last: the recovery below still answers through p
	p.reply.onLoop = onLoop
	defer func() {
		if s.b.recovered("held pull", recover()) {
			_ = s.b.answerPull(p.conn, p.reply, p.reply.response(codec.RespSystemError, "internal error"))
		}
	}()
	if p.conn.Closed() {
		return
	}
	// A pull that reads its subscription from the group's heartbeats reads it
	// again, as Java re-runs the whole request: the consumer may have
	// re-subscribed while it was held, and the old filter would skip what the
	// new one wants. One that carries its own subscription keeps its filter.
	filter := p.filter
	if p.header.SysFlag&codec.PullFlagSubscription == 0 {
		filter = nil
	}
	resp, err := s.b.pull(p.conn, &p.header, p.reply, filter, false, 0)
	if err != nil {
		resp = p.reply.response(codec.RespSystemError, err.Error())
	}
	if resp != nil {
		if err := s.b.answerPull(p.conn, p.reply, resp); err != nil {
			s.b.log.Debug("write held pull response", "remote", p.conn.RemoteAddr(), "err", err)
		}
	}
}

// run checks every held queue each tick until ctx ends; with nothing held it
// sleeps until a pull is.
func (s *pullHoldService) run(ctx context.Context) {
	delivery.TickUntilIdle(ctx, s.tick, delivery.IdleTick, s.kick, func(context.Context) bool {
		s.mu.Lock()
		keys := make([]topicQueue, 0, len(s.held))
		for k := range s.held {
			keys = append(keys, k)
		}
		s.mu.Unlock()
		for _, k := range keys {
			s.notify(k.topic, k.queue, -1, 0, "", false)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.count > 0
	})
}

// wakeAll answers every held pull and holds no more (shutdown): their
// consumers pull again, elsewhere once the broker left the routes.
func (s *pullHoldService) wakeAll() {
	s.mu.Lock()
	s.stopped = true
	var all []*heldPull
	for k, l := range s.held {
		all = append(all, l...)
		delete(s.held, k)
	}
	s.count = 0
	s.mu.Unlock()
	s.execute(all)
}
