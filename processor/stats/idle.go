package stats

import (
	"context"
	"sync/atomic"
	"time"
)

// An idle broker should not wake every second to sample counters that do not
// move. A sampler that finds nothing moved since its last sample sleeps until
// a count kicks it; the seconds it slept are filled in afterwards (catchUp),
// by the wake-up or by the first reader, with the totals that held while it
// slept. The figures read are the same as if it had sampled throughout, up to
// the sampling's own one-second grain.

// napper is a sampler's sleeping flag and wake-up channel; the zero value is
// ready once run made the channel.
type napper struct {
	sleeping atomic.Bool
	wake     chan struct{}
}

// kick wakes a sleeping sampler; the count paths pay one atomic load.
func (n *napper) kick() {
	if n.sleeping.Load() {
		select {
		case n.wake <- struct{}{}:
		default:
		}
	}
}

// run calls sample every second (not while manual is set). After a sample
// with activity unchanged since the previous one it publishes sleeping, looks
// at activity once more, and waits for a kick; wake then fills the gap. The
// counters a kick follows are added before it, so either the second look sees
// them or the kick sees the flag.
func (n *napper) run(ctx context.Context, manual *atomic.Bool, sample func(time.Time), activity func() int64,
	wake func(time.Time)) {
	n.wake = make(chan struct{}, 1)
	t := time.NewTimer(time.Second)
	defer t.Stop()
	if !manual.Load() { // a late-scheduled first sample must not land inside a test's own timeline
		sample(time.Now())
	}
	last := activity()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		t.Reset(time.Second)
		if manual.Load() {
			continue
		}
		sample(time.Now())
		if a := activity(); a != last {
			last = a
			continue
		}
		n.sleeping.Store(true)
		if activity() != last {
			n.sleeping.Store(false)
			continue
		}
		t.Stop()
		select {
		case <-ctx.Done():
			return
		case <-n.wake:
		}
		wake(time.Now()) // clears sleeping under the sampler's lock
		t.Reset(time.Second)
	}
}

// gapSamples calls f at the times a sampler sleeping since lastMs would have
// sampled up to nowMs: every second over the last ringSecs (what the
// one-second rings hold), every 10 minutes before that (enough for the hour
// and day windows and the day counters, which need no finer grain).
func gapSamples(lastMs, nowMs int64, ringSecs int, f func(atMs int64)) {
	if lastMs == 0 {
		return
	}
	t := lastMs + 1000
	for ; nowMs-t > int64(ringSecs)*1000; t += 600_000 {
		f(t)
	}
	for ; t <= nowMs; t += 1000 {
		f(t)
	}
}
