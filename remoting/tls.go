package remoting

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"

	"github.com/panjf2000/gnet/v2"

	"rmqd/codec"
)

// TLSMode is Java's tls.server.mode.
type TLSMode int

const (
	// TLSDisabled serves plain connections only; a TLS handshake fails the
	// frame checks and closes the connection, as on a Java broker.
	TLSDisabled TLSMode = iota
	// TLSPermissive serves TLS and plain on the same port, told apart by the
	// first byte a peer sends.
	TLSPermissive
	// TLSEnforcing serves TLS only; plain peers are closed after their first
	// byte.
	TLSEnforcing
)

// ParseTLSMode reads tls.server.mode as Java's TlsMode.parse does
// (case-insensitive names).
func ParseTLSMode(s string) (TLSMode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "disabled":
		return TLSDisabled, nil
	case "permissive":
		return TLSPermissive, nil
	case "enforcing":
		return TLSEnforcing, nil
	}
	return TLSDisabled, fmt.Errorf("remoting: tls.server.mode %q: want disabled, permissive or enforcing", s)
}

func (m TLSMode) String() string {
	switch m {
	case TLSPermissive:
		return "permissive"
	case TLSEnforcing:
		return "enforcing"
	}
	return "disabled"
}

// tlsRecordHandshake is the first byte of a TLS ClientHello record. A
// RocketMQ frame starts with its big-endian length, whose first byte is 0 for
// any frame under 16 MiB, so the two never collide.
const tlsRecordHandshake = 0x16

// sniffTLS looks at the first byte of a connection of a server with TLS on
// (event loop only). It reports handled=false when the connection stays
// plain and its bytes must be framed as usual. A TLS peer is handed to a
// goroutine-served tlsConn over a duplicate of the socket, with the bytes
// gnet already read, and the gnet connection is closed (closing its
// descriptor only: the socket lives on in the duplicate).
func (sc *serverConn) sniffTLS(c gnet.Conn) (act gnet.Action, handled bool) {
	first, err := c.Peek(1)
	if err != nil || len(first) == 0 {
		return gnet.None, true
	}
	sc.sniffed = true
	s := sc.s
	if first[0] != tlsRecordHandshake {
		if s.cfg.TLSMode == TLSEnforcing {
			s.warnClose("remoting: closing a plain connection, TLS is enforced", "conn", &sc.ep)
			return gnet.Close, true
		}
		return gnet.None, false
	}
	fd, err := c.Dup()
	if err != nil {
		s.log.Warn("remoting: cannot take over a TLS connection", "conn", &sc.ep, "err", err)
		return gnet.Close, true
	}
	buffered, _ := c.Next(-1)
	replay := bytes.Clone(buffered)
	f := os.NewFile(uintptr(fd), "tls")
	nc, err := net.FileConn(f) // dups again: f is ours to close
	_ = f.Close()
	if err != nil {
		s.log.Warn("remoting: cannot take over a TLS connection", "conn", &sc.ep, "err", err)
		return gnet.Close, true
	}
	s.tls.start(s, nc, replay, sc.port, sc.ep.local)
	return gnet.Close, true
}

// tlsConns are the connections served over TLS, on goroutines.
type tlsConns struct {
	mu     sync.Mutex
	conns  map[*tlsConn]struct{}
	closed bool
	wg     sync.WaitGroup
}

func (t *tlsConns) start(s *Server, nc net.Conn, replay []byte, port int, local net.Addr) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		_ = nc.Close()
		return
	}
	if t.conns == nil {
		t.conns = make(map[*tlsConn]struct{})
	}
	tc := newTLSConn(s, nc, replay, port, local)
	t.conns[tc] = struct{}{}
	t.wg.Add(1)
	t.mu.Unlock()
	// It stays counted against its listener's and address's limits: counted
	// before the gnet connection it replaces is uncounted by OnClose.
	ip := countedIP(nc.RemoteAddr())
	s.countConn(port, ip, false)
	go func() {
		defer t.wg.Done()
		tc.serve()
		s.connsMu.Lock()
		s.uncountConnLocked(port, ip)
		s.connsMu.Unlock()
		t.mu.Lock()
		delete(t.conns, tc)
		t.mu.Unlock()
	}()
}

func (t *tlsConns) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.conns)
}

// closeAll closes every TLS connection and waits, until ctx ends, for their
// goroutines to finish (and post their close events).
func (t *tlsConns) closeAll(ctx context.Context) error {
	t.mu.Lock()
	t.closed = true
	for tc := range t.conns {
		_ = tc.shut()
	}
	t.mu.Unlock()
	done := make(chan struct{})
	go func() {
		t.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("remoting: TLS connections still closing: %w", ctx.Err())
	}
}

// replayConn serves the bytes gnet read before the hand-off, then the socket.
type replayConn struct {
	net.Conn
	pre []byte
}

func (r *replayConn) Read(p []byte) (int, error) {
	if len(r.pre) > 0 {
		n := copy(p, r.pre)
		r.pre = r.pre[n:]
		return n, nil
	}
	return r.Conn.Read(p)
}

// handshake makes nc a TLS client connection when the client has TLS on.
func (c *Client) handshake(ctx context.Context, nc net.Conn, addr string) (net.Conn, error) {
	if c.cfg.TLS == nil {
		return nc, nil
	}
	cfg := c.cfg.TLS
	if cfg.ServerName == "" && !cfg.InsecureSkipVerify {
		cfg = cfg.Clone()
		if host, _, err := net.SplitHostPort(codec.DialAddr(addr)); err == nil {
			cfg.ServerName = host
		}
	}
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = nc.Close()
		return nil, fmt.Errorf("remoting: TLS handshake with %s: %w", addr, err)
	}
	return tc, nil
}
