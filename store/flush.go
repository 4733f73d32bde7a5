package store

import (
	"context"
	"sync"
	"time"
)

// runFlushCommitLog is FlushRealTimeService (ASYNC_FLUSH): msync every interval once
// enough pages are dirty, and everything at least every thorough interval.
func (s *DefaultStore) runFlushCommitLog(ctx context.Context) {
	interval := time.Duration(max(s.cfg.FlushIntervalCommitLog, 1)) * time.Millisecond
	thorough := time.Duration(s.cfg.FlushCommitLogThoroughInterval) * time.Millisecond
	t := time.NewTicker(interval)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		least := s.cfg.FlushCommitLogLeastPages
		if time.Since(last) >= thorough {
			least = 0
			last = time.Now()
		}
		s.flushCommitLog(least)
	}
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
	if ts > 0 && s.commitLog.q.flushedWhere.Load() >= end {
		s.checkpoint.physicMsgTimestamp.Store(ts)
	}
	return nil
}

// runFlushConsumeQueue is FlushConsumeQueueService; it also flushes the checkpoint.
func (s *DefaultStore) runFlushConsumeQueue(ctx context.Context) {
	interval := time.Duration(max(s.cfg.FlushIntervalConsumeQueue, 1)) * time.Millisecond
	thorough := time.Duration(s.cfg.FlushConsumeQueueThoroughInterval) * time.Millisecond
	t := time.NewTicker(interval)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		least := s.cfg.FlushConsumeQueueLeastPages
		if time.Since(last) >= thorough {
			least = 0
			last = time.Now()
		}
		// Captured first: after a full flush every unit up to this time is on disk.
		logicTs := s.lastLogicTs.Load()
		ok := true
		for _, cq := range s.allCQs() {
			if err := cq.q.flush(least); err != nil {
				ok = false
				s.log.Error("consume queue flush failed", "topic", cq.topic, "queue", cq.qid, "err", err)
			}
		}
		if least == 0 && ok && logicTs > 0 {
			s.checkpoint.logicsMsgTimestamp.Store(logicTs)
		}
		if err := s.checkpoint.flush(); err != nil {
			s.log.Error("checkpoint flush failed", "err", err)
		}
	}
}

// flushReq is one SYNC_FLUSH put waiting for its bytes to reach the disk.
type flushReq struct {
	next  int64
	done  chan bool
	timer *time.Timer
}

// groupCommit is GroupCommitService: waiting puts queue up, one msync serves them all.
type groupCommit struct {
	s    *DefaultStore
	mu   sync.Mutex
	reqs []*flushReq
	busy []*flushReq
	wake chan struct{}
	pool sync.Pool
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

func (g *groupCommit) wakeup() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

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

func (g *groupCommit) run(ctx context.Context) {
	t := time.NewTicker(10 * time.Millisecond)
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
	}
}

func (g *groupCommit) serve() {
	g.mu.Lock()
	g.reqs, g.busy = g.busy[:0], g.reqs
	g.mu.Unlock()
	if len(g.busy) == 0 {
		return
	}
	err := g.s.flushCommitLog(0)
	flushed := g.s.commitLog.q.flushedWhere.Load()
	for i, r := range g.busy {
		r.done <- err == nil && flushed >= r.next
		g.busy[i] = nil
	}
}
