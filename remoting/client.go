package remoting

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"rmqd/codec"
)

// ClientConfig configures a Client. Zero values take the defaults.
type ClientConfig struct {
	// DialTimeout bounds a connect when ctx has no earlier deadline. Default 3 s.
	DialTimeout time.Duration
	// MaxFrameLength bounds an incoming frame; default DefaultMaxFrameLength.
	MaxFrameLength int
	// WriteBufferHighWaterMark sets, as on the server, the hard cap on a
	// connection's unsent output (outputHardCapFactor times it, or two maximal
	// frames): a peer that sends requests and never reads the answers is
	// disconnected. Default DefaultWriteBufferHighWaterMark; negative disables.
	WriteBufferHighWaterMark int
	Logger                   *slog.Logger
	// TLS, when set, makes every connection a TLS client (Java's
	// tls.enable=true); see TLSSettings.ClientConfig.
	TLS *tls.Config
}

// Client keeps one connection per server address, dialed on first use and
// redialed after it closed. Responses are matched to requests by opaque; the
// server may also send requests, served by processors registered on the client.
//
// It uses plain net.Conn with a reader and a writer goroutine per connection
// rather than gnet's client: a client holds a handful of connections, blocking
// reads are simplest there, and the writer goroutine batches frames of
// concurrent callers into one syscall.
type Client struct {
	cfg    ClientConfig
	log    *slog.Logger
	bufs   *bufPool
	d      *dispatcher
	opaque atomic.Int32
	nextID atomic.Uint64

	mu     sync.Mutex
	conns  map[string]*clientSlot
	closed bool
}

// clientSlot serializes dialing one address.
type clientSlot struct {
	mu   sync.Mutex
	conn *clientConn
}

// NewClient makes a client; nothing is dialed until the first call.
func NewClient(cfg ClientConfig) *Client {
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 3 * time.Second
	}
	if cfg.MaxFrameLength <= 0 {
		cfg.MaxFrameLength = DefaultMaxFrameLength
	}
	if cfg.WriteBufferHighWaterMark == 0 {
		cfg.WriteBufferHighWaterMark = DefaultWriteBufferHighWaterMark
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	c := &Client{cfg: cfg, log: cfg.Logger, bufs: newBufPool(), conns: make(map[string]*clientSlot)}
	// Responses handed to callers are never recycled; requests from the server
	// are, like on the server side.
	c.d = newDispatcher(c.log, c.bufs, false)
	return c
}

// Register serves requests of code sent by servers to this client.
func (c *Client) Register(code int32, p Processor, opts ...RegisterOption) {
	c.d.register(code, p, opts)
}

// RegisterDefault serves server requests of codes without a registration.
func (c *Client) RegisterDefault(p Processor, opts ...RegisterOption) {
	c.d.registerDefault(p, opts)
}

// AddRPCHook adds a hook run around requests served by the client.
func (c *Client) AddRPCHook(h RPCHook) { c.d.addHook(h) }

// Conn returns the connection to addr, dialing it when there is none.
func (c *Client) Conn(ctx context.Context, addr string) (Conn, error) {
	cc, err := c.conn(ctx, addr)
	if err != nil {
		return nil, err
	}
	return &cc.ep, nil
}

func (c *Client) conn(ctx context.Context, addr string) (*clientConn, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, fmt.Errorf("remoting: dial %s: client closed", addr)
	}
	slot := c.conns[addr]
	if slot == nil {
		slot = &clientSlot{}
		c.conns[addr] = slot
	}
	c.mu.Unlock()

	slot.mu.Lock()
	defer slot.mu.Unlock()
	if cc := slot.conn; cc != nil && !cc.ep.Closed() {
		select {
		case <-cc.quit: // closing: dial a new one
		default:
			return cc, nil
		}
	}
	dctx, cancel := context.WithTimeout(ctx, c.cfg.DialTimeout)
	defer cancel()
	var d net.Dialer
	// Route data from a Java broker names an IPv6 host as "::1:10911".
	nc, err := d.DialContext(dctx, "tcp", codec.DialAddr(addr))
	if err != nil {
		return nil, fmt.Errorf("remoting: dial %s: %w", addr, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	if nc, err = c.handshake(dctx, nc, addr); err != nil {
		return nil, err
	}
	cc := c.newConn(nc)
	// A Close racing the dial must not leave this connection behind.
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		cc.shut()
		return nil, fmt.Errorf("remoting: dial %s: client closed", addr)
	}
	slot.conn = cc
	return cc, nil
}

// InvokeSync sends req to addr and waits for its response until ctx ends.
// req.Opaque and req.Flag are set by the call, so one req must not be in two
// calls at once; it may be reused once the call returned.
func (c *Client) InvokeSync(ctx context.Context, addr string, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	cc, err := c.conn(ctx, addr)
	if err != nil {
		return nil, err
	}
	return cc.ep.Invoke(ctx, req)
}

// InvokeAsync sends req to addr; cb runs on its own goroutine with the response
// or the error (ctx ended, connection closed). cb runs exactly once, also when
// InvokeAsync returns an error.
func (c *Client) InvokeAsync(ctx context.Context, addr string, req *codec.RemotingCommand, cb func(*codec.RemotingCommand, error)) error {
	cc, err := c.conn(ctx, addr)
	if err != nil {
		go runCallback(cb, nil, err)
		return err
	}
	return cc.ep.InvokeAsync(ctx, req, cb)
}

// InvokeOneway sends req to addr with the oneway flag and returns once it is
// queued for writing.
func (c *Client) InvokeOneway(ctx context.Context, addr string, req *codec.RemotingCommand) error {
	cc, err := c.conn(ctx, addr)
	if err != nil {
		return err
	}
	return cc.ep.InvokeOneway(req)
}

// CloseConn closes the connection to addr, if any; the next call redials.
func (c *Client) CloseConn(addr string) {
	c.mu.Lock()
	slot := c.conns[addr]
	c.mu.Unlock()
	if slot == nil {
		return
	}
	slot.mu.Lock()
	cc := slot.conn
	slot.conn = nil
	slot.mu.Unlock()
	if cc != nil {
		cc.shut()
	}
}

// Close closes every connection (failing their pending calls) and stops the
// workers serving server requests without waiting for running processors.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	slots := c.conns
	c.conns = map[string]*clientSlot{}
	c.mu.Unlock()
	var ccs []*clientConn
	for _, slot := range slots {
		slot.mu.Lock()
		if slot.conn != nil {
			ccs = append(ccs, slot.conn)
			slot.conn = nil
		}
		slot.mu.Unlock()
	}
	for _, cc := range ccs {
		cc.shut()
		<-cc.readerDone
	}
	// Processors see their context cancelled; Close does not wait for them.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = c.d.stop(ctx)
	return nil
}

// clientConn is one dialed connection: a reader goroutine that frames, decodes
// and dispatches, and a writer goroutine that drains the outgoing queue.
type clientConn struct {
	c  *Client
	nc net.Conn
	ep endpoint

	q outQueue

	quit       chan struct{}
	quitOnce   sync.Once
	readerDone chan struct{}
}

// outFrame is one queued write: buf, then bodies (whose done runs once they are
// written or dropped).
type outFrame struct {
	buf    *buffer
	bodies [][]byte
	done   Releaser
}

func (c *Client) newConn(nc net.Conn) *clientConn {
	cc := &clientConn{
		c:          c,
		nc:         nc,
		q:          newOutQueue(c.bufs, outputHardCap(c.cfg.WriteBufferHighWaterMark, c.cfg.MaxFrameLength)),
		quit:       make(chan struct{}),
		readerDone: make(chan struct{}),
	}
	cc.ep = endpoint{
		id:     c.nextID.Add(1),
		local:  nc.LocalAddr(),
		remote: nc.RemoteAddr(),
		opaque: &c.opaque,
		bufs:   c.bufs,
		w:      cc,
	}
	go cc.writeLoop()
	go cc.readLoop()
	return cc
}

func (cc *clientConn) send(buf *buffer, _ bool) error {
	return cc.enqueue(outFrame{buf: buf})
}

func (cc *clientConn) sendv(hdr *buffer, bodies [][]byte, done Releaser) error {
	return cc.enqueue(outFrame{buf: hdr, bodies: bodies, done: done})
}

// enqueue closes the connection when the peer lets the output pile up: its
// own requests answered REQUEST_CODE_NOT_SUPPORTED would otherwise grow the
// queue without bound.
func (cc *clientConn) enqueue(f outFrame) error {
	err := cc.q.push(f)
	if errors.Is(err, ErrOutputOverflow) {
		cc.c.log.Warn("remoting: closing a client connection whose unsent output passed its limit",
			"conn", &cc.ep, "unsent_bytes", cc.q.bytes.Load(), "limit", cc.q.limit)
		cc.shut()
	}
	return err
}

// shut closes the socket; the reader notices and finishes the teardown.
func (cc *clientConn) shut() error {
	cc.quitOnce.Do(func() {
		close(cc.quit)
		_ = cc.nc.Close()
	})
	return nil
}

// writeLoop writes whatever is queued with one flush per wakeup.
func (cc *clientConn) writeLoop() {
	w := bufio.NewWriterSize(cc.nc, 64<<10)
	var batch []outFrame
	var err error
	for {
		select {
		case <-cc.q.wake:
		case <-cc.quit:
			cc.q.shutdown()
			return
		}
		// When the last flush carried several frames, calls are pipelined: let
		// the callers about to queue do so, so that one flush takes them all.
		// A lone synchronous caller never waits for this.
		if len(batch) > 1 {
			runtime.Gosched()
		}
		batch = cc.q.take(batch)
		if err = cc.q.writeBatch(w, batch, err); err != nil {
			cc.c.log.Debug("remoting: client write failed", "conn", &cc.ep, "err", err)
			cc.shut()
		}
	}
}

func (cc *clientConn) readLoop() {
	defer close(cc.readerDone)
	err := cc.readRecovered()
	cc.shut()
	cc.ep.markClosed()
	if !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.EOF) {
		cc.c.log.Warn("remoting: client connection closed", "conn", &cc.ep, "reason", err)
	} else {
		cc.c.log.Debug("remoting: client connection closed", "conn", &cc.ep)
	}
}

// readRecovered is read with a panic turned into an error: it closes this
// connection only, never the process.
func (cc *clientConn) readRecovered() (err error) {
	defer func() {
		if r := recover(); r != nil {
			cc.c.log.Error("remoting: panic reading a client connection", "conn", &cc.ep, "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("remoting: panic: %v", r)
		}
	}()
	return cc.read()
}

// read serves the connection until it fails; it never returns nil.
func (cc *clientConn) read() error {
	frames := newStreamFrames(cc.nc, cc.c.cfg.MaxFrameLength, cc.c.bufs, cc.c.d)
	for {
		in, _, err := frames.next()
		if err != nil {
			return err
		}
		cc.c.d.dispatch(&cc.ep, in, false)
	}
}
