package ha

import (
	"sync/atomic"
	"time"
)

// flow is Java's FlowMonitor for one slave connection: the bytes sent in the current one-second window and
// in the last whole one (haStatus's transferredByteInSecond), and, with a limit (haFlowControlEnable), how
// many more the window may take. Java's master sends a frame of what is left, even an empty one, and spins;
// this one waits for the next window instead. The limit is read at each look, as Java's FlowMonitor reads
// MessageStoreConfig, so a change applies to the running connection.
type flow struct {
	limit       func() int64 // maxHaTransferByteInSecond in force, 0: no limit; nil: none ever
	windowStart atomic.Int64 // unix ns
	inWindow    atomic.Int64
	lastSecond  atomic.Int64
}

func newFlow(limit func() int64, now time.Time) *flow {
	f := &flow{limit: limit}
	f.windowStart.Store(now.UnixNano())
	return f
}

// roll starts a new window when the current one is a second old; only the writer calls it.
func (f *flow) roll(now time.Time) {
	start := f.windowStart.Load()
	if age := now.UnixNano() - start; age >= int64(time.Second) {
		last := f.inWindow.Load()
		if age >= 2*int64(time.Second) {
			last = 0 // a whole idle second went by
		}
		f.lastSecond.Store(last)
		f.inWindow.Store(0)
		f.windowStart.Store(now.UnixNano())
	}
}

// room is how many bytes the current window may still send (at most max), and when it ends.
func (f *flow) room(now time.Time, max int) (int, time.Time) {
	f.roll(now)
	end := time.Unix(0, f.windowStart.Load()+int64(time.Second))
	limit := int64(0)
	if f.limit != nil {
		limit = f.limit()
	}
	if limit <= 0 {
		return max, end
	}
	left := limit - f.inWindow.Load()
	if left <= 0 {
		return 0, end
	}
	return int(min(int64(max), left)), end
}

func (f *flow) sent(n int) { f.inWindow.Add(int64(n)) }

// perSecond is the last whole second's bytes (0 once a second passed without a window roll).
func (f *flow) perSecond(now time.Time) int64 {
	if now.UnixNano()-f.windowStart.Load() >= 2*int64(time.Second) {
		return 0
	}
	return f.lastSecond.Load()
}

// waitRoom is room for a writer: it waits out a spent window (warning at most
// once a second through warn, with the limit in force) and returns the bytes
// the next frame may carry, or false once done is closed.
func (f *flow) waitRoom(max int, done <-chan struct{}, lastWarn *time.Time, warn func(limit int64)) (int, bool) {
	for {
		room, windowEnd := f.room(time.Now(), max)
		if room > 0 {
			return room, true
		}
		if time.Since(*lastWarn) >= time.Second {
			warn(f.limit())
			*lastWarn = time.Now()
		}
		wait := time.NewTimer(time.Until(windowEnd))
		select {
		case <-done:
			wait.Stop()
			return 0, false
		case <-wait.C:
		}
	}
}

// idleWait parks an idle writer until a wake-up or its next heartbeat (d from
// now); false once done is closed.
func idleWait(idle *time.Timer, d time.Duration, done, wake <-chan struct{}) bool {
	if !idle.Stop() {
		select {
		case <-idle.C:
		default:
		}
	}
	idle.Reset(d)
	select {
	case <-done:
		return false
	case <-wake:
	case <-idle.C:
	}
	return true
}
