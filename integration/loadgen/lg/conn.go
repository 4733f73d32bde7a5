// Package lg is a lean pipelined RocketMQ remoting client for load generation, built on rmqd's codec:
// many requests in flight per connection, one write per request, responses matched by opaque in one
// reader goroutine that hands each decoded response to the waiting caller's callback.
package lg

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"rmqd/codec"
)

// ErrClosed is returned for requests on a connection that failed or was closed.
var ErrClosed = errors.New("lg: connection closed")

const maxFrame = 64 << 20

// Conn is one TCP connection with requests pipelined on it.
type Conn struct {
	nc     net.Conn
	wmu    sync.Mutex
	opaque atomic.Int32

	mu      sync.Mutex
	pending map[int32]*Call
	err     error
	done    chan struct{}
	// lastRead (unix ns) and the watchdog replace a timer per request: a connection with requests pending
	// and nothing read for the request timeout is failed as a whole.
	lastRead atomic.Int64
	timeout  atomic.Int64
	sign     *Credentials // signs what Request sends (WithCredentials)
}

// Call is a reusable request slot: OnResponse runs in the reader goroutine with the decoded response (which
// aliases the read buffer: copy what you keep), then Do returns.
type Call struct {
	OnResponse func(cmd *codec.RemotingCommand)
	done       chan error
}

// NewCall makes a slot; reuse it for one request at a time.
func NewCall(on func(cmd *codec.RemotingCommand)) *Call {
	return &Call{OnResponse: on, done: make(chan error, 1)}
}

// Dial connects to addr.
func Dial(ctx context.Context, addr string) (*Conn, error) { return DialTLS(ctx, addr, nil) }

// DialTLS connects to addr over TLS when cfg is not nil.
func DialTLS(ctx context.Context, addr string, cfg *tls.Config) (*Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("lg: dial %s: %w", addr, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	if cfg != nil {
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = nc.Close()
			return nil, fmt.Errorf("lg: TLS handshake with %s: %w", addr, err)
		}
		nc = tc
	}
	c := &Conn{nc: nc, pending: make(map[int32]*Call), done: make(chan struct{})}
	c.lastRead.Store(time.Now().UnixNano())
	go c.readLoop()
	go c.watchdog()
	return c, nil
}

func (c *Conn) watchdog() {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case now := <-t.C:
			c.mu.Lock()
			n := len(c.pending)
			c.mu.Unlock()
			idle := time.Duration(now.UnixNano() - c.lastRead.Load())
			if to := time.Duration(c.timeout.Load()); n > 0 && to > 0 && idle > to {
				c.fail(fmt.Errorf("lg: %d requests without a response for %v", n, idle.Round(time.Millisecond)))
			}
		}
	}
}

// NextOpaque returns a fresh request id.
func (c *Conn) NextOpaque() int32 { return c.opaque.Add(1) }

// Close closes the connection; pending calls fail with ErrClosed.
func (c *Conn) Close() error {
	c.fail(ErrClosed)
	<-c.done
	return nil
}

func (c *Conn) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
		_ = c.nc.Close()
		for op, call := range c.pending {
			delete(c.pending, op)
			call.done <- err
		}
	}
	c.mu.Unlock()
}

// Do sends frame (already encoded with opaque) and waits for its response. When requests are pending and
// nothing arrives for timeout, the connection is closed: a benchmark treats a lost response as a failure,
// not something to retry.
func (c *Conn) Do(frame []byte, opaque int32, call *Call, timeout time.Duration) error {
	if int64(timeout) > c.timeout.Load() {
		c.timeout.Store(int64(timeout))
	}
	c.mu.Lock()
	if len(c.pending) == 0 {
		c.lastRead.Store(time.Now().UnixNano()) // idle until now is not waiting
	}
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	c.pending[opaque] = call
	c.mu.Unlock()

	c.wmu.Lock()
	_, err := c.nc.Write(frame)
	c.wmu.Unlock()
	if err != nil {
		c.fail(fmt.Errorf("lg: write: %w", err))
		return <-call.done
	}
	return <-call.done
}

// Oneway writes frame (a request with the oneway flag) and returns: no response comes back.
func (c *Conn) Oneway(frame []byte) error {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if err != nil {
		return err
	}
	c.wmu.Lock()
	_, err = c.nc.Write(frame)
	c.wmu.Unlock()
	if err != nil {
		c.fail(fmt.Errorf("lg: write: %w", err))
		return err
	}
	return nil
}

// Request encodes req (setting its opaque) and runs Do with a fresh slot; convenient for control requests.
func (c *Conn) Request(req *codec.RemotingCommand, timeout time.Duration) (code int32, remark string, ext map[string]string, body []byte, err error) {
	req.Opaque = c.NextOpaque()
	if c.sign != nil {
		c.sign.sign(req)
	}
	call := NewCall(func(cmd *codec.RemotingCommand) {
		// cmd aliases the reader's buffer: copy what outlives the callback.
		code, remark = cmd.Code, strings.Clone(cmd.Remark)
		ext = make(map[string]string, len(cmd.Ext))
		for _, f := range cmd.Ext {
			ext[strings.Clone(f.Key)] = strings.Clone(f.Value)
		}
		body = append([]byte(nil), cmd.Body...)
	})
	err = c.Do(req.Encode(nil), req.Opaque, call, timeout)
	return code, remark, ext, body, err
}

func (c *Conn) readLoop() {
	defer close(c.done)
	r := bufio.NewReaderSize(c.nc, 256<<10)
	buf := make([]byte, 0, 64<<10)
	var cmd codec.RemotingCommand
	for {
		var err error
		if buf, err = readCommand(r, buf, &cmd); err != nil {
			c.fail(err)
			return
		}
		c.lastRead.Store(time.Now().UnixNano())
		if !cmd.IsResponse() {
			continue // broker-initiated requests (e.g. consumer id change notices) need no answer here
		}
		c.mu.Lock()
		call := c.pending[cmd.Opaque]
		delete(c.pending, cmd.Opaque)
		c.mu.Unlock()
		if call == nil {
			continue
		}
		if call.OnResponse != nil {
			call.OnResponse(&cmd)
		}
		call.done <- nil
	}
}

// readCommand reads one length-prefixed frame into buf (grown as needed and
// returned for the next frame) and decodes it into cmd, which aliases buf.
func readCommand(r io.Reader, buf []byte, cmd *codec.RemotingCommand) ([]byte, error) {
	var lenBuf [4]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return buf, fmt.Errorf("lg: read: %w", err)
	}
	n := int(binary.BigEndian.Uint32(lenBuf[:]))
	if n < 4 || n > maxFrame {
		return buf, fmt.Errorf("lg: bad frame length %d", n)
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return buf, fmt.Errorf("lg: read: %w", err)
	}
	if err := codec.DecodeCommand(buf, cmd); err != nil {
		return buf, fmt.Errorf("lg: decode: %w", err)
	}
	return buf, nil
}
