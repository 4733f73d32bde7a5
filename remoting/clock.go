package remoting

import (
	"sync/atomic"
	"time"
)

// coarseClock is a server's time for last-use stamps: the ticker advances it,
// so a request costs an atomic load instead of a time.Now. While no
// connection is in use the ticker sleeps and the clock stops; the first
// reader then moves it on itself and wakes the ticker, so no stamp is taken
// from a stopped clock.
type coarseClock struct {
	now     atomic.Int64 // unix nanos
	stopped atomic.Bool
	wake    chan struct{}
}

func newCoarseClock() *coarseClock {
	c := &coarseClock{wake: make(chan struct{}, 1)}
	c.now.Store(time.Now().UnixNano())
	return c
}

// Load is the clock's time, moved on first when it was stopped.
func (c *coarseClock) Load() int64 {
	if c.stopped.Load() {
		c.now.Store(time.Now().UnixNano())
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return c.now.Load()
}

// Store advances the clock (the ticker).
func (c *coarseClock) Store(v int64) { c.now.Store(v) }
