package store

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"rmqd/compat"
)

// flushPeriodically calls flush every interval with leastPages, and with 0
// (flush everything) once thorough has passed since the last full flush: the
// shape of Java's FlushRealTimeService and FlushConsumeQueueService. Unlike
// Java's, it sleeps once pending reports nothing left to flush, until n is
// kicked by new work; the first flush after a sleep longer than thorough is a
// full one, as Java's would be. The three settings are read each round
// (params), as Java's loops read them, so updateBrokerConfig changes them at
// the next one.
func flushPeriodically(ctx context.Context, params func() (intervalMs, thoroughMs int64, leastPages int), n *napper,
	flush func(least int), pending func() bool) {
	last := time.Now()
	period := func() time.Duration {
		interval, _, _ := params()
		return compat.Millis(max(interval, 1))
	}
	tickUntilIdle(ctx, period, n, nil, func() {
		_, thorough, least := params()
		if time.Since(last) >= compat.Millis(thorough) {
			least = 0
			last = time.Now()
		}
		flush(least)
	}, pending)
}

// runFlushCommitLog is FlushRealTimeService (ASYNC_FLUSH): msync every interval once
// enough pages are dirty, and everything at least every thorough interval. It
// sleeps while everything appended is on disk; appends kick it (appendedReplica).
func (s *DefaultStore) runFlushCommitLog(ctx context.Context) {
	flushPeriodically(ctx, func() (int64, int64, int) {
		c := s.live.Load()
		return int64(c.FlushIntervalCommitLog), int64(c.FlushCommitLogThoroughInterval), c.FlushCommitLogLeastPages
	}, s.clFlushNap, func(least int) { _ = s.flushCommitLog(least) }, s.commitLogDirty)
}

// commitLogDirty: appended bytes are not all on disk yet.
func (s *DefaultStore) commitLogDirty() bool {
	q := s.commitLog.q
	return q.flushedWhere.Load() < q.maxOffset()
}

// flushCommitLog flushes and, when everything appended so far is on disk, records
// the store time of the last record in the checkpoint.
func (s *DefaultStore) flushCommitLog(leastPages int) error {
	ts := s.commitLog.lastStoreTs.Load()
	end := s.commitLog.q.maxOffset()
	err := s.commitLog.q.flush(leastPages)
	if err != nil {
		s.log.Error("commitlog flush failed", "err", err)
		return err
	}
	if ts > 0 && s.commitLog.q.flushedWhere.Load() >= end && s.checkpoint.physicMsgTimestamp.Swap(ts) != ts {
		s.cqWork()
	}
	return nil
}

// runFlushConsumeQueue is FlushConsumeQueueService; it also flushes the checkpoint.
// It sleeps once a full flush covered everything dispatched and the checkpoint
// is synced; a dispatch or a checkpoint change kicks it (cqWork).
func (s *DefaultStore) runFlushConsumeQueue(ctx context.Context) {
	flushPeriodically(ctx, func() (int64, int64, int) {
		c := s.live.Load()
		return int64(c.FlushIntervalConsumeQueue), int64(c.FlushConsumeQueueThoroughInterval), c.FlushConsumeQueueLeastPages
	}, s.cqFlushNap, s.flushConsumeQueues, s.consumeQueuesDirty)
}

// consumeQueuesDirty: something was dispatched (or cut) since the last full
// consume-queue flush, or the checkpoint has changes not synced.
func (s *DefaultStore) consumeQueuesDirty() bool {
	return s.reputFrom.Load() != s.cqFlushedAt.Load() || s.checkpoint.changed()
}

// cqWork tells the consume-queue flusher there is something to flush: call it
// after the change (a dispatch, a truncation, a checkpoint field set).
func (s *DefaultStore) cqWork() { s.cqFlushNap.kick() }

// flushConsumeQueues flushes every consume queue and the checkpoint.
func (s *DefaultStore) flushConsumeQueues(least int) {
	// Captured first: after a full flush every unit up to this time is on disk.
	logicTs := s.lastLogicTs.Load()
	through := s.reputFrom.Load()
	ok := true
	y := newYielder()
	for _, cq := range s.allCQs() {
		if err := cq.q.flush(least); err != nil {
			ok = false
			s.log.Error("consume queue flush failed", "topic", cq.topic, "queue", cq.qid, "err", err)
		}
		y.between()
	}
	if least == 0 && ok {
		if logicTs > 0 {
			s.checkpoint.logicsMsgTimestamp.Store(logicTs)
		}
		s.cqFlushedAt.Store(through)
	}
	if err := s.checkpoint.flush(); err != nil {
		s.log.Error("checkpoint flush failed", "err", err)
	}
}

// flushReq is one SYNC_FLUSH put waiting for its bytes to reach the disk.
type flushReq struct {
	next  int64
	done  chan bool
	timer *time.Timer
	// cb, when set, makes the request asynchronous: finish calls it exactly once,
	// from the group commit or from the timeout, whichever comes first.
	cb    func(ok bool)
	fired atomic.Bool
}

// finish answers the request: into its channel, or through cb exactly once.
func (r *flushReq) finish(ok bool) {
	if r.cb == nil {
		r.done <- ok
		return
	}
	if r.fired.CompareAndSwap(false, true) {
		if r.timer != nil {
			r.timer.Stop()
		}
		r.cb(ok)
	}
}

// groupCommit is GroupCommitService: waiting puts queue up, one msync serves them all.
type groupCommit struct {
	s    *DefaultStore
	mu   sync.Mutex
	reqs []*flushReq
	busy []*flushReq
	wake chan struct{}
	pool sync.Pool
	// holdFlush, set by tests before Start, runs before every group flush.
	holdFlush func()
}

func newGroupCommit(s *DefaultStore) *groupCommit {
	g := &groupCommit{s: s, wake: make(chan struct{}, 1)}
	g.pool.New = func() any {
		t := time.NewTimer(time.Hour)
		t.Stop()
		return &flushReq{done: make(chan bool, 1), timer: t}
	}
	return g
}

// expire is the timeout of an asynchronous request; it never touches r.timer,
// which it may run before the assignment of.
func (r *flushReq) expire() {
	if r.fired.CompareAndSwap(false, true) {
		r.cb(false)
	}
}

func (g *groupCommit) wakeup() { signal(g.wake) }

// wait blocks until the commitlog is flushed to next, the timeout passes or ctx ends.
func (g *groupCommit) wait(ctx context.Context, next int64, timeout time.Duration) PutStatus {
	if g.s.commitLog.q.flushedWhere.Load() >= next {
		return PutOK
	}
	r := g.pool.Get().(*flushReq)
	r.next = next
	g.mu.Lock()
	g.reqs = append(g.reqs, r)
	g.mu.Unlock()
	g.wakeup()
	r.timer.Reset(timeout)
	select {
	case ok := <-r.done:
		r.timer.Stop()
		g.pool.Put(r)
		if ok {
			return PutOK
		}
		return PutFlushDiskTimeout
	case <-r.timer.C:
	case <-ctx.Done():
		r.timer.Stop()
	}
	// The service still owns r and will answer into its buffered channel; r is
	// left to the garbage collector rather than reused.
	return PutFlushDiskTimeout
}

// waitAsync is wait without blocking: done runs with the status exactly once,
// inline when the bytes are already flushed, else from the group-commit service
// after its msync or from a timer after timeout.
func (g *groupCommit) waitAsync(next int64, timeout time.Duration, done func(PutStatus)) {
	if g.s.commitLog.q.flushedWhere.Load() >= next {
		done(PutOK)
		return
	}
	r := &flushReq{next: next}
	r.cb = func(ok bool) {
		if ok {
			done(PutOK)
		} else {
			done(PutFlushDiskTimeout)
		}
	}
	// The timer exists before the service can see r, so finish can always stop it.
	r.timer = time.AfterFunc(timeout, r.expire)
	g.mu.Lock()
	g.reqs = append(g.reqs, r)
	g.mu.Unlock()
	g.wakeup()
}

// run serves the queued requests whenever one is queued: every request wakes
// it (wait, waitAsync), so unlike Java's 10 ms loop it sleeps while none is.
func (g *groupCommit) run(ctx context.Context) {
	t := time.NewTimer(idleSafetyNet)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			g.serve()
			return
		case <-g.wake:
		case <-t.C:
		}
		g.serve()
		t.Reset(idleSafetyNet)
	}
}

func (g *groupCommit) serve() {
	g.mu.Lock()
	g.reqs, g.busy = g.busy[:0], g.reqs
	g.mu.Unlock()
	s := g.s
	if len(g.busy) == 0 && !s.commitLogDirty() {
		return
	}
	// Also without waiting puts: a put with WAIT=false and a replicated
	// append wake it too, and are on disk soon after as in Java (whose
	// GroupCommitService flushes every 10 ms).
	if g.holdFlush != nil {
		g.holdFlush()
	}
	err := s.flushCommitLog(0)
	flushed := s.commitLog.q.flushedWhere.Load()
	if s.flushBound() && flushed > s.reputFrom.Load() {
		// Dispatch waited for this flush: one wake-up per group commit, not
		// per put, sent before the answers so it overlaps them. A signal
		// (kickReput), not wakeReput's conditional kick:
		// a dispatcher that just found the end of the flushed bytes held
		// has not published idleness yet.
		s.kickReput()
	}
	for i, r := range g.busy {
		r.finish(err == nil && flushed >= r.next)
		g.busy[i] = nil
	}
}
