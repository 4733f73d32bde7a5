package store

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"
)

// An idle broker should not wake once a second per service. A periodic store
// service with nothing to do sleeps instead, and whatever brings it work (an
// append, a dispatch, a mapping) kicks it. This is the store's side of
// processor/delivery's TickUntilIdle (the store imports neither): the same
// shape, plus the idle flag that keeps a kick off the hot path while the
// service is busy.

// idleSafetyNet bounds a sleeping service's wait: kicks are what wake it, the
// net only covers a change no kick reports.
const idleSafetyNet = 10 * time.Second

// napper is a service's idle flag and wake-up channel.
type napper struct {
	idle atomic.Bool
	wake chan struct{}
}

func newNapper() *napper { return &napper{wake: make(chan struct{}, 1)} }

// kick wakes the service if it sleeps; a busy one costs the caller one load.
// Kickers change what the service looks at first, then kick: the service
// publishes idleness first, then looks, so one of the two sees the other.
func (n *napper) kick() {
	if n.idle.Load() {
		signal(n.wake)
	}
}

// every is a fixed tickUntilIdle period.
func every(d time.Duration) func() time.Duration { return func() time.Duration { return d } }

// signal leaves one wake-up in a channel of capacity 1 without blocking; a
// wake-up already pending covers this one.
func signal(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// tickUntilIdle calls f every period while pending reports work left after
// it; then it publishes idleness, looks once more, and sleeps until a kick (or
// the safety net). After a kick the next call comes one period later, as a
// ticker's would, so a burst of appends is served in the same rhythm as
// before. other, when not nil, is an extra wake-up that calls f at once
// (a failed append's disk check). period is asked before each wait, so a
// changed setting takes effect at the next round.
func tickUntilIdle(ctx context.Context, period func() time.Duration, n *napper, other <-chan struct{}, f func(), pending func() bool) {
	t := time.NewTimer(period())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-other:
		}
		f()
		if pending() {
			t.Reset(period())
			continue
		}
		n.idle.Store(true)
		if pending() {
			n.idle.Store(false)
			t.Reset(period())
			continue
		}
		t.Reset(idleSafetyNet)
		select {
		case <-ctx.Done():
			n.idle.Store(false)
			return
		case <-n.wake:
			t.Reset(period())
		case <-t.C:
			t.Reset(0)
		case <-other:
			t.Reset(0)
		}
		n.idle.Store(false)
	}
}

// yielder lets goroutines queued behind a background service run between the
// blocking calls of a long job (populating pages, syncing queue files). A
// goroutine in a syscall keeps its P until sysmon takes it back, which takes
// up to 20 ms once sysmon has backed off, and one that returns from a syscall
// keeps it with no yield at all; with GOMAXPROCS as small as the broker's
// event loops, a loop that had just yielded (gnet yields after every empty
// poll) waited that long behind one 1 MiB MADV_POPULATE_WRITE (a SYNC_MASTER
// trace at 3,000 msg/s: 19.4 ms). The job yields once it has held its P for
// yieldAfter, not after every call: a Gosched per call keeps the yielder in
// the global run queue, and a P that always finds work there never steals the
// goroutines queued on the other one (20,000 queue flushes did that).
type yielder struct{ last time.Time }

const yieldAfter = 500 * time.Microsecond

func newYielder() yielder { return yielder{last: time.Now()} }

// between is called between two blocking calls of a long job.
func (y *yielder) between() {
	if time.Since(y.last) >= yieldAfter {
		runtime.Gosched()
		y.last = time.Now()
	}
}
