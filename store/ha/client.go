package ha

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"rmqd/codec"
)

// client is what the classic and the auto-switch slave share: the master's
// address, the one live connection (dropped on an address change or Close)
// and the dial-and-retry loop.
type client struct {
	log *slog.Logger

	addr atomic.Pointer[string]
	// addrChanged wakes a client waiting for an address or a retry.
	addrChanged chan struct{}

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu sync.Mutex
	nc net.Conn

	lastRead  atomic.Int64 // unix ms of the last frame read
	lastWrite atomic.Int64 // unix ms of the last frame written
}

func (c *client) init(parent context.Context, log *slog.Logger) {
	c.log = log
	c.addrChanged = make(chan struct{}, 1)
	c.ctx, c.cancel = context.WithCancel(parent)
}

// setAddr changes the master address; the current connection is dropped so
// the next one goes to the new address.
func (c *client) setAddr(addr string) {
	if old := c.addr.Load(); old != nil && *old == addr {
		// Told again while not connected (a returning master's
		// EXCHANGE_BROKER_HA_INFO, whose pre-online waits for this
		// connection): dial now rather than after the retry wait.
		if !c.connected() {
			select {
			case c.addrChanged <- struct{}{}:
			default:
			}
		}
		return
	}
	c.addr.Store(&addr)
	c.log.Info("master HA address", "addr", addr)
	c.dropConn()
	select {
	case c.addrChanged <- struct{}{}:
	default:
	}
}

func (c *client) masterAddr() string {
	if p := c.addr.Load(); p != nil {
		return *p
	}
	return ""
}

func (c *client) dropConn() {
	c.mu.Lock()
	if c.nc != nil {
		_ = c.nc.Close()
	}
	c.mu.Unlock()
}

func (c *client) connected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nc != nil
}

// stop ends the loop and waits for it.
func (c *client) stop() {
	c.cancel()
	c.dropConn()
	c.wg.Wait()
}

func (c *client) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.ctx.Done():
		return false
	case <-c.addrChanged:
		return true
	case <-t.C:
		return true
	}
}

var errHousekeeping = errors.New("nothing read from the master for haHousekeepingInterval")

// start runs session against the master address until stop, after ready
// before each dial (DefaultHAClient / AutoSwitchHAClient's run loop).
func (c *client) start(ready func(), session func(addr string) error) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for c.ctx.Err() == nil {
			addr := c.masterAddr()
			if addr == "" {
				if !c.sleep(retryWait) {
					return
				}
				continue
			}
			ready()
			err := session(addr)
			if c.ctx.Err() != nil {
				return
			}
			c.log.Warn("master connection ended", "master", addr, "err", err)
			if errors.Is(err, errHousekeeping) {
				continue // Java closes and dials again at once
			}
			if !c.sleep(retryWait) {
				return
			}
		}
	}()
}

// session is one live master connection and its heartbeat.
type session struct {
	c        *client
	nc       net.Conn
	stopBeat func()
}

// dial connects to addr and makes it the live connection until close.
func (c *client) dial(addr string) (*session, error) {
	d := net.Dialer{Timeout: dialTimeout}
	// haMasterAddress, or a Java master's haServerAddr, names an IPv6 host as
	// "::1:10912" (Java splits at the last colon).
	nc, err := d.DialContext(c.ctx, "tcp", codec.DialAddr(addr))
	if err != nil {
		return nil, fmt.Errorf("dial master %s: %w", addr, err)
	}
	c.mu.Lock()
	if c.ctx.Err() != nil {
		c.mu.Unlock()
		_ = nc.Close()
		return nil, c.ctx.Err()
	}
	nc = quiet(nc)
	c.nc = nc
	c.mu.Unlock()
	return &session{c: c, nc: nc}, nil
}

// beat reports every interval until close (the slave's heartbeat).
func (s *session) beat(interval func() time.Duration, report func() error) {
	s.stopBeat = beat(s.nc, interval, report)
}

// close drops the connection (which unblocks a report stuck in a write),
// stops the heartbeat and forgets the connection.
func (s *session) close() {
	_ = s.nc.Close()
	if s.stopBeat != nil {
		s.stopBeat()
	}
	s.c.mu.Lock()
	if s.c.nc == s.nc {
		s.c.nc = nil
	}
	s.c.mu.Unlock()
}

// beat reports every interval (the slave's heartbeat) until stop; a failed
// report closes nc so the session's reader ends too. The interval is read at
// least every liveRecheck, as Java's client reads haSendHeartbeatInterval at
// each look, so a change applies within it.
func beat(nc net.Conn, interval func() time.Duration, report func() error) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		last := time.Now()
		t := time.NewTimer(min(interval(), liveRecheck))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			iv := interval()
			if wait := iv - time.Since(last); wait > 0 {
				t.Reset(min(wait, liveRecheck))
				continue
			}
			last = time.Now()
			t.Reset(min(iv, liveRecheck))
			if report() != nil {
				_ = nc.Close()
				return
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// refreshReadDeadline keeps a reader's deadline hk ahead (haHousekeepingInterval,
// read at each frame): moved once a second, not per frame (each set updates a
// runtime timer), and at once when hk shrank below what is left.
func refreshReadDeadline(nc net.Conn, deadline *time.Time, hk time.Duration) {
	if now := time.Now(); now.After(deadline.Add(-hk+time.Second)) || deadline.Sub(now) > hk {
		*deadline = now.Add(hk)
		_ = nc.SetReadDeadline(*deadline)
	}
}

// acceptOne takes the next connection of an HA listener: nil with true after
// a transient error (retried after a pause), false once ctx is done.
func acceptOne(ctx context.Context, ln net.Listener, log *slog.Logger) (net.Conn, bool) {
	nc, err := ln.Accept()
	if err == nil {
		return quiet(nc), true
	}
	if ctx.Err() != nil {
		return nil, false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return nil, true
	}
	log.Error("ha accept", "err", err)
	select {
	case <-ctx.Done():
		return nil, false
	case <-time.After(100 * time.Millisecond):
	}
	return nil, true
}

// wakeList holds one buffered channel per slave connection: the store's
// append hook pokes each so an idle writer sends new bytes at once.
type wakeList struct {
	p atomic.Pointer[[]chan struct{}]
}

// publish replaces the list (under the owner's connection lock).
func (w *wakeList) publish(chans []chan struct{}) { w.p.Store(&chans) }

func (w *wakeList) poke() {
	p := w.p.Load()
	if p == nil {
		return
	}
	for _, c := range *p {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// writeFrame sends one master frame of n body bytes and counts them for flow
// control; false when the slave is gone.
func writeFrame(nc net.Conn, f *flow, deadline *time.Time, frame []byte, n int) bool {
	if now := time.Now(); now.After(deadline.Add(-writeTimeout + time.Second)) {
		*deadline = now.Add(writeTimeout) // refreshed once a second, not per frame
		_ = nc.SetWriteDeadline(*deadline)
	}
	if _, err := nc.Write(frame); err != nil {
		return false
	}
	f.sent(n)
	return true
}
