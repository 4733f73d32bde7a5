package remoting

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"time"
)

// tlsHandshakeTimeout bounds a TLS handshake: a peer that opens a
// ClientHello and stalls must not hold a goroutine for long.
const tlsHandshakeTimeout = 10 * time.Second

// tlsConn is a server connection served over TLS: a reader goroutine that
// frames, decodes and dispatches with the same dispatcher and hooks as the
// gnet connections, and a writer goroutine that batches the answers into one
// TLS write per wake-up. Flow control follows ServerConfig's limits: the
// reader waits while the connection has MaxRequestsPerConn requests in the
// pools or its output is above the high-water mark.
type tlsConn struct {
	s    *Server
	raw  net.Conn
	tc   *tls.Conn
	ep   endpoint
	port int

	q       outQueue
	wr      writability   // Writable (writable.go)
	drained chan struct{} // the writer flushed, or a request finished

	quit     chan struct{}
	quitOnce sync.Once

	// firstBy is when the first whole frame must have come (zero: no bound);
	// framed is set once it has. Reader goroutine only.
	firstBy time.Time
	framed  bool
}

func newTLSConn(s *Server, nc net.Conn, replay []byte, port int, local net.Addr) *tlsConn {
	raw := &replayConn{Conn: nc, pre: replay}
	c := &tlsConn{
		s:       s,
		raw:     nc,
		tc:      tls.Server(raw, s.cfg.TLS),
		port:    port,
		q:       newOutQueue(s.bufs, outputHardCap(s.cfg.WriteBufferHighWaterMark, s.cfg.MaxFrameLength)),
		drained: make(chan struct{}, 1),
		quit:    make(chan struct{}),
	}
	c.ep = endpoint{
		id:          s.nextID.Add(1),
		local:       local,
		remote:      peerAddrOf(nc.RemoteAddr()),
		opaque:      &s.opaque,
		bufs:        s.bufs,
		w:           c,
		clock:       s.clock,
		maxInflight: int32(max(s.cfg.MaxRequestsPerConn, 0)),
	}
	if s.cfg.FirstFrameTimeout > 0 {
		c.firstBy = time.Now().Add(s.cfg.FirstFrameTimeout)
	}
	c.ep.touch()
	return c
}

// serve runs the handshake, then reads until the connection ends.
func (c *tlsConn) serve() {
	s := c.s
	_ = c.raw.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
	if err := c.tc.Handshake(); err != nil {
		s.warnClose("remoting: TLS handshake failed, closing the connection", "conn", &c.ep, "reason", err)
		c.shut()
		return
	}
	_ = c.raw.SetDeadline(time.Time{})
	st := c.tc.ConnectionState()
	s.log.Debug("remoting: TLS connection open", "conn", &c.ep, "version", tls.VersionName(st.Version),
		"cipher", tls.CipherSuiteName(st.CipherSuite), "client_certs", len(st.PeerCertificates))
	s.events.post(&c.ep, true)
	go c.writeLoop()
	err := c.readRecovered()
	c.shut()
	c.ep.markClosed()
	s.log.Debug("remoting: TLS connection closed", "conn", &c.ep, "err", err)
	s.events.post(&c.ep, false)
}

func (c *tlsConn) readRecovered() (err error) {
	defer func() {
		if r := recover(); r != nil {
			c.s.log.Error("remoting: panic reading a TLS connection, closing it", "conn", &c.ep,
				"panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("remoting: panic: %v", r)
		}
	}()
	return c.read()
}

// idleReader turns a read deadline into the server's idle timeout: the
// deadline is pushed back while the connection wrote meanwhile. Until the
// first whole frame it is also FirstFrameTimeout after the handshake began,
// which no byte pushes back (as on the plain connections).
type idleReader struct {
	c *tlsConn
}

func (r idleReader) Read(p []byte) (int, error) {
	c := r.c
	idle := c.s.cfg.IdleTimeout
	for {
		var by time.Time
		if idle > 0 {
			by = time.Now().Add(idle)
		}
		first := !c.framed && !c.firstBy.IsZero()
		if first && (by.IsZero() || c.firstBy.Before(by)) {
			by = c.firstBy
		}
		_ = c.raw.SetReadDeadline(by)
		n, err := c.tc.Read(p)
		if n > 0 {
			c.ep.touch()
		}
		if err != nil && errors.Is(err, os.ErrDeadlineExceeded) && n == 0 {
			if first && !time.Now().Before(c.firstBy) {
				c.s.warnClose("remoting: closing a connection that sent no whole frame", "conn", &c.ep,
					"within", c.s.cfg.FirstFrameTimeout)
				return n, err
			}
			if time.Duration(c.s.clock.Load()-c.ep.lastUsed.Load()) < idle {
				continue // it wrote meanwhile
			}
			c.s.log.Info("remoting: closing idle connection", "conn", &c.ep, "idle", idle)
		}
		return n, err
	}
}

// read frames, decodes and dispatches until the connection fails.
func (c *tlsConn) read() error {
	s := c.s
	frames := newStreamFrames(idleReader{c}, s.cfg.MaxFrameLength, s.bufs, s.d)
	for {
		if err := c.waitFlow(); err != nil {
			return err
		}
		in, bad, err := frames.next()
		if err != nil {
			if bad {
				s.warnClose("remoting: closing connection on a bad frame", "conn", &c.ep, "reason", err)
			}
			return err
		}
		c.framed = true
		s.d.dispatch(&c.ep, in, false)
	}
}

// waitFlow blocks the reader while the connection has as many requests in
// the pools as it may, or more output queued than the high-water mark; the
// output must then drain within WriteStallTimeout.
func (c *tlsConn) waitFlow() error {
	cfg := &c.s.cfg
	var stalled *time.Timer
	defer func() {
		if stalled != nil {
			stalled.Stop()
		}
	}()
	for {
		busy := c.ep.maxInflight > 0 && c.ep.inflight.Load() >= c.ep.maxInflight
		high := cfg.WriteBufferHighWaterMark > 0 && c.q.bytes.Load() > int64(cfg.WriteBufferHighWaterMark)
		if !busy && !high {
			return nil
		}
		var timeout <-chan time.Time
		if high && cfg.WriteStallTimeout > 0 {
			if stalled == nil {
				stalled = time.NewTimer(cfg.WriteStallTimeout)
			}
			timeout = stalled.C
		}
		select {
		case <-c.drained:
		case <-c.quit:
			return ErrConnClosed
		case <-timeout:
			c.s.warnClose("remoting: closing a connection that does not read its answers",
				"conn", &c.ep, "unsent_bytes", c.q.bytes.Load(), "for", cfg.WriteStallTimeout)
			return ErrConnClosed
		}
	}
}

func (c *tlsConn) signalDrained() {
	select {
	case c.drained <- struct{}{}:
	default:
	}
}

// resume is told by a worker that a request of this connection finished.
func (c *tlsConn) resume() { c.signalDrained() }

func (c *tlsConn) send(buf *buffer, _ bool) error {
	return c.enqueue(outFrame{buf: buf})
}

func (c *tlsConn) sendv(hdr *buffer, bodies [][]byte, done Releaser) error {
	return c.enqueue(outFrame{buf: hdr, bodies: bodies, done: done})
}

func (c *tlsConn) enqueue(f outFrame) error {
	err := c.q.push(f)
	if errors.Is(err, ErrOutputOverflow) {
		c.s.warnClose("remoting: closing a connection whose unsent output passed its limit",
			"conn", &c.ep, "unsent_bytes", c.q.bytes.Load(), "limit", c.q.limit)
		c.shut()
	}
	return err
}

// shut closes the socket; the reader notices and finishes the teardown.
func (c *tlsConn) shut() error {
	c.quitOnce.Do(func() {
		close(c.quit)
		_ = c.raw.Close()
	})
	return nil
}

// writeLoop writes what is queued with one TLS flush per wake-up.
func (c *tlsConn) writeLoop() {
	w := bufio.NewWriterSize(c.tc, 64<<10)
	var batch []outFrame
	var err error
	stall := c.s.cfg.WriteStallTimeout
	for {
		select {
		case <-c.q.wake:
		case <-c.quit:
			c.q.shutdown()
			return
		}
		batch = c.q.take(batch)
		if stall > 0 {
			_ = c.raw.SetWriteDeadline(time.Now().Add(stall))
		}
		err = c.q.writeBatch(w, batch, err)
		c.signalDrained()
		if err != nil {
			c.s.log.Debug("remoting: TLS write failed", "conn", &c.ep, "err", err)
			c.shut()
		}
	}
}
