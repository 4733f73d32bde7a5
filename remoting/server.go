package remoting

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/panjf2000/gnet/v2/pkg/pool/goroutine"
)

// DefaultEventLoops is one event loop per P but one (at least one). Each loop
// is a locked thread that sleeps in epoll_wait; with one on every P, a loop
// woken by another (a reply handed across loops) waited for sysmon to retake
// a P, 1.3 ms at its back-off, and that was the end-to-end p99 at 2,000/s.
// GOMAXPROCS, not gnet's host CPU count, so a container's CPU limit counts.
func DefaultEventLoops() int {
	return max(1, runtime.GOMAXPROCS(0)-1)
}

// ServerConfig configures a Server. Zero values take the defaults.
type ServerConfig struct {
	// Addr is host:port to listen on, e.g. "127.0.0.1:0" or ":10911".
	Addr string
	// ExtraAddrs are more addresses served by the same event loops, processors
	// and listeners (the broker's VIP port, listen port - 2, for old clients).
	ExtraAddrs []string
	// Multicore runs DefaultEventLoops() event loops, or NumEventLoop loops.
	Multicore    bool
	NumEventLoop int
	// MaxFrameLength bounds a frame including its length field; a peer sending
	// a longer one is disconnected. Default DefaultMaxFrameLength (16 MiB).
	MaxFrameLength int
	// IdleTimeout closes connections that neither read nor wrote for that long.
	// Default DefaultIdleTimeout (120 s); negative disables.
	IdleTimeout time.Duration
	Logger      *slog.Logger
	// KeepRequestFrames disables recycling of request frames, for when a
	// processor is suspected of keeping request strings past its return.
	KeepRequestFrames bool

	// MaxConns bounds the open connections of each listener; connections
	// beyond it are closed as soon as they are accepted. Default
	// DefaultMaxConns; negative means no limit.
	MaxConns int
	// MaxConnsPerIP bounds the open connections from one remote address that
	// is not a loopback one, so that one host cannot take every slot of
	// MaxConns. Default DefaultMaxConnsPerIP; negative means no limit.
	MaxConnsPerIP int
	// FirstFrameTimeout closes a connection that has not sent one whole frame
	// that long after it opened: a byte now and then would keep it from the
	// idle timeout and hold a slot for ever. Default DefaultFirstFrameTimeout;
	// negative disables.
	FirstFrameTimeout time.Duration
	// WriteBufferHighWaterMark: a connection whose output not yet taken by the
	// socket exceeds it is no longer read (its requests wait) until the output
	// drains below WriteBufferLowWaterMark, as Java's NettyRemotingServer turns
	// autoRead off while a channel is not writable. Defaults
	// DefaultWriteBufferHighWaterMark and DefaultWriteBufferLowWaterMark;
	// negative disables.
	WriteBufferHighWaterMark int
	WriteBufferLowWaterMark  int
	// WriteStallTimeout closes a paused connection whose output stayed above
	// the low-water mark that long: a peer that never reads. Default
	// DefaultWriteStallTimeout; negative never closes.
	WriteStallTimeout time.Duration
	// MaxQueuedRequestBytes bounds the bytes of the requests handed to worker
	// pools and not yet processed, over all connections; requests beyond it are
	// answered SYSTEM_BUSY at once. Default DefaultMaxQueuedRequestBytes;
	// negative means no limit.
	MaxQueuedRequestBytes int64
	// MaxRequestsPerConn bounds the requests of one connection handed to
	// worker pools and not yet processed: at the bound the connection is no
	// longer read until one is done. It also bounds how many answers a client
	// that pipelines requests and does not read can make the server produce
	// before its output pauses it.
	// Default DefaultMaxRequestsPerConn; negative means no limit.
	MaxRequestsPerConn int

	// TLSMode (Java's tls.server.mode) and TLS, the server's certificate and
	// client-auth settings, required unless TLSMode is TLSDisabled. Plain
	// connections stay on gnet; TLS ones are served on goroutines (tls.go).
	TLSMode TLSMode
	TLS     *tls.Config
}

// Limit defaults (rmqd's own; see README "Limits").
const (
	DefaultMaxConns                 = 10000
	DefaultMaxConnsPerIP            = 1000
	DefaultFirstFrameTimeout        = 30 * time.Second
	DefaultWriteBufferHighWaterMark = 4 << 20
	DefaultWriteBufferLowWaterMark  = 1 << 20
	DefaultWriteStallTimeout        = 30 * time.Second
	DefaultMaxQueuedRequestBytes    = 128 << 20
	DefaultMaxRequestsPerConn       = 256
)

// outputHardCapFactor: a connection whose unsent output passes this many
// high-water marks (or two maximal frames) is closed at once, whatever
// produced the output (held pulls woken together, server-initiated requests).
const outputHardCapFactor = 16

// pausedTick is how often paused connections are re-checked: gnet tells
// nothing when a connection's output drains.
const pausedTick = 10 * time.Millisecond

func (c *ServerConfig) withDefaults() {
	if c.MaxFrameLength <= 0 {
		c.MaxFrameLength = DefaultMaxFrameLength
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MaxConns == 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.MaxConnsPerIP == 0 {
		c.MaxConnsPerIP = DefaultMaxConnsPerIP
	}
	if c.FirstFrameTimeout == 0 {
		c.FirstFrameTimeout = DefaultFirstFrameTimeout
	}
	if c.WriteBufferHighWaterMark == 0 {
		c.WriteBufferHighWaterMark = DefaultWriteBufferHighWaterMark
	}
	if c.WriteBufferLowWaterMark == 0 {
		c.WriteBufferLowWaterMark = min(DefaultWriteBufferLowWaterMark, c.WriteBufferHighWaterMark/2)
	}
	if c.WriteBufferLowWaterMark > c.WriteBufferHighWaterMark {
		c.WriteBufferLowWaterMark = c.WriteBufferHighWaterMark
	}
	if c.WriteStallTimeout == 0 {
		c.WriteStallTimeout = DefaultWriteStallTimeout
	}
	if c.MaxQueuedRequestBytes == 0 {
		c.MaxQueuedRequestBytes = DefaultMaxQueuedRequestBytes
	}
	if c.MaxRequestsPerConn == 0 {
		c.MaxRequestsPerConn = DefaultMaxRequestsPerConn
	}
}

// Server is the remoting server: gnet event loops frame and decode requests,
// worker pools run the processors, responses go back through gnet's async
// writes. Register processors and listeners before Start.
//
// Request ownership: a request's strings and body alias a pooled frame buffer
// that is recycled once the processor returned a response or an error. A
// processor that returns (nil, nil) owns the request from then on (long
// polling keeps it and answers later through Conn.WriteResponse).
type Server struct {
	cfg    ServerConfig
	log    *slog.Logger
	bufs   *bufPool
	d      *dispatcher
	events *connEvents
	opaque atomic.Int32  // server-initiated requests
	nextID atomic.Uint64 // connection ids
	clock  *coarseClock  // unix nanos, advanced by OnTick

	// life guards the engine's lifetime: writes hold it shared so that no write
	// reaches a stopped engine's poller.
	life    sync.RWMutex
	state   serverState
	eng     gnet.Engine
	addrs   []net.Addr // bound addresses: Addr, then ExtraAddrs
	runDone chan error

	connsMu     sync.Mutex
	conns       map[uint64]*serverConn
	perListener map[int]int        // open connections by local port
	perIP       map[netip.Addr]int // open connections by remote address, loopback ones not counted

	rejected     atomic.Int64 // connections refused since the last log line
	rejectLogged atomic.Int64 // unix nanos of that line
	closedLogged atomic.Int64 // unix nanos of the last "closing a connection" line
	closedQuiet  atomic.Int64 // such closes not logged since

	pausedMu sync.Mutex
	paused   map[*serverConn]struct{} // connections not read for their output

	tls tlsConns // connections handed over to TLS (TLSMode)
}

type serverState int

const (
	stateNew serverState = iota
	stateStarting
	stateRunning
	stateStopped
)

// NewServer makes a server; nothing listens until Start.
func NewServer(cfg ServerConfig) *Server {
	cfg.withDefaults()
	s := &Server{cfg: cfg, log: cfg.Logger, bufs: newBufPool(), conns: make(map[uint64]*serverConn),
		perListener: make(map[int]int), perIP: make(map[netip.Addr]int), paused: make(map[*serverConn]struct{}),
		clock: newCoarseClock()}
	s.d = newDispatcher(s.log, s.bufs, cfg.KeepRequestFrames)
	s.d.maxQueued = max(cfg.MaxQueuedRequestBytes, 0)
	s.events = newConnEvents(s.log)
	return s
}

// Register routes requests of code to p, on its own worker pool unless opts say
// otherwise. A later registration of the same code replaces the earlier one.
func (s *Server) Register(code int32, p Processor, opts ...RegisterOption) {
	s.d.register(code, p, opts)
}

// RegisterDefault handles every code without a registration of its own. Without
// it such codes are answered REQUEST_CODE_NOT_SUPPORTED.
func (s *Server) RegisterDefault(p Processor, opts ...RegisterOption) {
	s.d.registerDefault(p, opts)
}

// AddRPCHook adds a hook run around every request, in the order added.
func (s *Server) AddRPCHook(h RPCHook) { s.d.addHook(h) }

// AddConnListener adds a listener told of every connection opening and closing,
// on a dedicated goroutine in event order.
func (s *Server) AddConnListener(l ConnListener) { s.events.add(l) }

// Start listens and serves until Shutdown; it returns once the listener is
// bound (ctx bounds only that wait).
func (s *Server) Start(ctx context.Context) error {
	s.life.Lock()
	if s.state != stateNew {
		s.life.Unlock()
		return fmt.Errorf("remoting: start %s: %w", s.cfg.Addr, ErrServerClosed)
	}
	if s.cfg.TLSMode != TLSDisabled && s.cfg.TLS == nil {
		s.life.Unlock()
		return fmt.Errorf("remoting: start %s: TLS mode %v without a TLS config", s.cfg.Addr, s.cfg.TLSMode)
	}
	s.state = stateStarting
	s.life.Unlock()

	h := &serverHandler{s: s, ready: make(chan struct{}), tickStop: make(chan struct{})}
	// gnet's package-level goroutine pool (ants) serves only Engine.Register,
	// which rmqd never calls; its clock goroutine would wake twice a second.
	goroutine.DefaultWorkerPool.Release()
	opts := []gnet.Option{
		gnet.WithMulticore(s.cfg.Multicore),
		gnet.WithReuseAddr(true),
		gnet.WithTCPNoDelay(gnet.TCPNoDelay),
		// No gnet ticker: ours (runTicker) can sleep while no connection is open.
		gnet.WithLogger(gnetLogger{s.log}),
	}
	switch {
	case s.cfg.NumEventLoop > 0:
		opts = append(opts, gnet.WithNumEventLoop(s.cfg.NumEventLoop))
	case s.cfg.Multicore:
		opts = append(opts, gnet.WithNumEventLoop(DefaultEventLoops()))
	}
	s.events.start()
	s.runDone = make(chan error, 1)
	protoAddrs := []string{"tcp://" + listenAddr(s.cfg.Addr)}
	for _, a := range s.cfg.ExtraAddrs {
		protoAddrs = append(protoAddrs, "tcp://"+listenAddr(a))
	}
	go func() {
		if len(protoAddrs) == 1 {
			s.runDone <- gnet.Run(h, protoAddrs[0], opts...)
		} else {
			s.runDone <- gnet.Rotate(h, protoAddrs, opts...)
		}
	}()
	running := func() {
		s.life.Lock()
		s.state = stateRunning
		s.life.Unlock()
	}
	select {
	case <-h.ready:
		running()
		s.log.Info("remoting: server listening", "addrs", fmt.Sprint(s.Addrs()))
		return nil
	case err := <-s.runDone:
		s.runDone <- err
		s.markStopped()
		_ = s.stopRest(context.Background())
		return fmt.Errorf("remoting: listen on %s: %w", s.cfg.Addr, err)
	case <-ctx.Done():
		go func() {
			select {
			case <-h.ready:
				running()
				_ = s.Shutdown(context.Background())
			case err := <-s.runDone:
				s.runDone <- err
			}
		}()
		return fmt.Errorf("remoting: listen on %s: %w", s.cfg.Addr, ctx.Err())
	}
}

func (s *Server) markStopped() {
	s.life.Lock()
	s.state = stateStopped
	s.life.Unlock()
}

func (s *Server) stopRest(ctx context.Context) error {
	err := s.d.stop(ctx)
	s.events.stop()
	return err
}

// Addr is the bound address of ServerConfig.Addr (the real port when configured
// with port 0), or nil before Start.
func (s *Server) Addr() net.Addr {
	s.life.RLock()
	defer s.life.RUnlock()
	if len(s.addrs) == 0 {
		return nil
	}
	return s.addrs[0]
}

// Addrs are the bound addresses of Addr and ExtraAddrs, in that order.
func (s *Server) Addrs() []net.Addr {
	s.life.RLock()
	defer s.life.RUnlock()
	return append([]net.Addr(nil), s.addrs...)
}

// Shutdown closes the listener and every connection, fails their pending calls,
// delivers the remaining connection events and stops the workers (queued
// requests are dropped). It waits at most until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.life.Lock()
	if s.state != stateRunning {
		s.life.Unlock()
		return nil
	}
	s.state = stateStopped
	eng := s.eng
	s.life.Unlock()

	var errs []error
	// Engine.Stop polls for the end every 500 ms; Run returns as soon as the
	// engine is down, so wait for that instead.
	go func() {
		if err := eng.Stop(ctx); err != nil && ctx.Err() == nil {
			s.log.Debug("remoting: stop engine", "err", err)
		}
	}()
	select {
	case err := <-s.runDone:
		if err != nil {
			errs = append(errs, fmt.Errorf("remoting: engine: %w", err))
		}
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("remoting: wait for engine: %w", ctx.Err()))
	}
	// Connections the engine did not report closed (ctx ran out) still get
	// their pending calls failed and their close event.
	s.connsMu.Lock()
	left := make([]*serverConn, 0, len(s.conns))
	for _, sc := range s.conns {
		left = append(left, sc)
	}
	clear(s.conns)
	s.connsMu.Unlock()
	for _, sc := range left {
		if sc.ep.markClosed() {
			s.events.post(&sc.ep, false)
		}
	}
	if err := s.tls.closeAll(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := s.stopRest(ctx); err != nil {
		errs = append(errs, err)
	}
	s.pausedMu.Lock()
	clear(s.paused)
	s.pausedMu.Unlock()
	s.log.Info("remoting: server stopped", "addrs", fmt.Sprint(s.Addrs()))
	return errors.Join(errs...)
}

// ConnCount is the number of open connections, TLS ones included.
func (s *Server) ConnCount() int {
	s.connsMu.Lock()
	n := len(s.conns)
	s.connsMu.Unlock()
	return n + s.tls.count()
}

// boundAddr asks the kernel for a listener's address through a duplicate of
// its descriptor (gnet does not expose the listener).
func boundAddr(eng gnet.Engine, addr string, only bool) (net.Addr, error) {
	var fd int
	var err error
	if only {
		fd, err = eng.Dup()
	} else {
		fd, err = eng.DupListener("tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "listener")
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	return ln.Addr(), nil
}

// idleSweep closes connections idle for longer than the timeout.
// idleSweep closes connections idle for longer than the timeout, and those
// that sent no whole frame within FirstFrameTimeout of opening.
func (s *Server) idleSweep(now int64) {
	limit := now - int64(s.cfg.IdleTimeout)
	var idle, silent []*serverConn
	s.connsMu.Lock()
	for _, sc := range s.conns {
		switch {
		case s.cfg.IdleTimeout > 0 && sc.ep.lastUsed.Load() < limit:
			idle = append(idle, sc)
		case s.cfg.FirstFrameTimeout > 0 && !sc.framed.Load() && now-sc.opened >= int64(s.cfg.FirstFrameTimeout):
			silent = append(silent, sc)
		}
	}
	s.connsMu.Unlock()
	for _, sc := range idle {
		s.log.Info("remoting: closing idle connection", "conn", &sc.ep, "idle", s.cfg.IdleTimeout)
		_ = sc.shut()
	}
	for _, sc := range silent {
		s.warnClose("remoting: closing a connection that sent no whole frame", "conn", &sc.ep, "within", s.cfg.FirstFrameTimeout)
		_ = sc.shut()
	}
}

// tickInterval is how often the clock advances and idle connections are swept.
func (s *Server) tickInterval() time.Duration {
	t := s.cfg.IdleTimeout
	if f := s.cfg.FirstFrameTimeout; f > 0 && (t <= 0 || f < t) {
		t = f
	}
	if t <= 0 {
		return time.Second
	}
	d := t / 8
	return min(max(d, 5*time.Millisecond), time.Second)
}

// serverHandler is the gnet event handler.
type serverHandler struct {
	gnet.BuiltinEventEngine
	s         *Server
	ready     chan struct{}
	lastSweep int64 // unix nanos; the ticker's goroutine only
	tickStop  chan struct{}
	stopOnce  sync.Once
}

func (h *serverHandler) OnBoot(eng gnet.Engine) gnet.Action {
	s := h.s
	cfgAddrs := append([]string{s.cfg.Addr}, s.cfg.ExtraAddrs...)
	addrs := make([]net.Addr, 0, len(cfgAddrs))
	for _, a := range cfgAddrs {
		addr, err := boundAddr(eng, listenAddr(a), len(cfgAddrs) == 1)
		if err != nil {
			s.log.Warn("remoting: cannot read the bound address", "addr", a, "err", err)
			addr, _ = net.ResolveTCPAddr("tcp", a)
		}
		addrs = append(addrs, addr)
	}
	s.life.Lock()
	s.eng = eng
	s.addrs = addrs
	s.life.Unlock()
	close(h.ready)
	go h.runTicker()
	return gnet.None
}

func (h *serverHandler) OnShutdown(gnet.Engine) {
	h.stopOnce.Do(func() { close(h.tickStop) })
}

// runTicker calls OnTick at the delays it returns. It replaces gnet's ticker,
// which cannot be woken: with no connection in use there is nothing to stamp,
// sweep or re-check until the first connection can go idle, so it sleeps until
// then (napFor), and the clock, stopped meanwhile, wakes it at its first read.
func (h *serverHandler) runTicker() {
	s := h.s
	t := time.NewTimer(s.tickInterval())
	defer t.Stop()
	var prev int64 // the clock at the previous tick
	for {
		select {
		case <-h.tickStop:
			return
		case <-t.C:
		case <-s.clock.wake:
		}
		d, _ := h.OnTick()
		now := s.clock.now.Load()
		if nap, ok := s.napFor(prev, now); ok {
			d = nap
		} else {
			s.clock.stopped.Store(false)
		}
		prev = now
		t.Reset(d)
	}
}

// idleTickerNap bounds the ticker's sleep: a safety net only.
const idleTickerNap = time.Minute

// napFor says whether the ticker may sleep, and how long: no connection is
// paused or served over TLS, none was used since the previous tick (stamps
// then read prev or later), and none can reach its idle timeout within a
// tick. It stops the clock before its last look, so a connection used
// meanwhile is either seen here or restarts the clock.
func (s *Server) napFor(prev, now int64) (time.Duration, bool) {
	s.pausedMu.Lock()
	paused := len(s.paused) > 0
	s.pausedMu.Unlock()
	if paused || s.tls.count() > 0 {
		return 0, false
	}
	s.clock.stopped.Store(true)
	d := idleTickerNap
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	for _, sc := range s.conns {
		used := sc.ep.lastUsed.Load()
		if used >= prev {
			return 0, false
		}
		if s.cfg.IdleTimeout > 0 {
			d = min(d, time.Duration(used+int64(s.cfg.IdleTimeout)-now))
		}
		if s.cfg.FirstFrameTimeout > 0 && !sc.framed.Load() {
			d = min(d, time.Duration(sc.opened+int64(s.cfg.FirstFrameTimeout)-now))
		}
	}
	if d < s.tickInterval() {
		return 0, false
	}
	return d, true
}

func (h *serverHandler) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	s := h.s
	port, ip := portOf(c.LocalAddr()), countedIP(c.RemoteAddr())
	if !s.countConn(port, ip, true) {
		s.refused(c)
		return nil, gnet.Close
	}
	sc := &serverConn{s: s, gc: c, port: port, ip: ip, opened: time.Now().UnixNano()}
	sc.flushTask = gnet.RunnableFunc(sc.flush)
	sc.recheckTask = gnet.RunnableFunc(sc.recheck)
	sc.ep = endpoint{
		id:     s.nextID.Add(1),
		local:  localAddrOf(c.Fd(), c.LocalAddr()),
		remote: peerAddrOf(c.RemoteAddr()),
		opaque: &s.opaque,
		bufs:   s.bufs,
		w:      sc,
		clock:  s.clock,

		maxInflight: int32(max(s.cfg.MaxRequestsPerConn, 0)),
	}
	sc.ep.touch()
	c.SetContext(sc)
	s.connsMu.Lock()
	s.conns[sc.ep.id] = sc
	s.connsMu.Unlock()
	sc.ep.touch() // again, once napFor can see it: a sleeping ticker wakes
	s.log.Debug("remoting: connection open", "conn", &sc.ep)
	s.events.post(&sc.ep, true)
	return nil, gnet.None
}

func (h *serverHandler) OnClose(c gnet.Conn, err error) gnet.Action {
	sc, ok := c.Context().(*serverConn)
	if !ok {
		return gnet.None
	}
	s := h.s
	sc.resetRead()
	s.connsMu.Lock()
	delete(s.conns, sc.ep.id)
	s.uncountConnLocked(sc.port, sc.ip)
	s.connsMu.Unlock()
	if sc.paused {
		sc.unpause()
	}
	if sc.ep.markClosed() {
		s.log.Debug("remoting: connection closed", "conn", &sc.ep, "err", err)
		s.events.post(&sc.ep, false)
	}
	return gnet.None
}

func (h *serverHandler) OnTraffic(c gnet.Conn) (act gnet.Action) {
	sc, ok := c.Context().(*serverConn)
	if !ok {
		return gnet.Close
	}
	// A panic on the event loop would end the process: it closes this
	// connection only (processors recover on their own, in dispatcher.run).
	defer func() {
		if r := recover(); r != nil {
			h.s.log.Error("remoting: panic reading a connection, closing it", "conn", &sc.ep,
				"panic", r, "stack", string(debug.Stack()))
			sc.resetRead()
			act = gnet.Close
		}
	}()
	if !sc.sniffed && h.s.cfg.TLSMode != TLSDisabled {
		if act, handled := sc.sniffTLS(c); handled {
			return act
		}
	}
	return sc.onTraffic(c)
}

func (h *serverHandler) OnTick() (time.Duration, gnet.Action) {
	s := h.s
	now := time.Now().UnixNano()
	s.clock.Store(now)
	// Paused connections shorten the tick; the sweep keeps its own pace.
	if (s.cfg.IdleTimeout > 0 || s.cfg.FirstFrameTimeout > 0) && now-h.lastSweep >= int64(s.tickInterval()) {
		h.lastSweep = now
		s.idleSweep(now)
	}
	if s.recheckPaused() {
		return min(pausedTick, s.tickInterval()), gnet.None
	}
	return s.tickInterval(), gnet.None
}

// countedIP is the remote address a connection counts against for
// MaxConnsPerIP; the zero Addr for loopback (local processes) or unknown ones.
func countedIP(a net.Addr) netip.Addr {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Addr{}
	}
	ip := ta.AddrPort().Addr().Unmap()
	if ip.IsLoopback() {
		return netip.Addr{}
	}
	return ip
}

// countConn counts a connection against its listener's and its address's
// limits; with check it refuses one past either.
func (s *Server) countConn(port int, ip netip.Addr, check bool) bool {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	if check && (s.cfg.MaxConns > 0 && s.perListener[port] >= s.cfg.MaxConns ||
		ip.IsValid() && s.cfg.MaxConnsPerIP > 0 && s.perIP[ip] >= s.cfg.MaxConnsPerIP) {
		return false
	}
	s.perListener[port]++
	if ip.IsValid() {
		s.perIP[ip]++
	}
	return true
}

func (s *Server) uncountConnLocked(port int, ip netip.Addr) {
	if s.perListener[port]--; s.perListener[port] <= 0 {
		delete(s.perListener, port)
	}
	if ip.IsValid() {
		if s.perIP[ip]--; s.perIP[ip] <= 0 {
			delete(s.perIP, ip)
		}
	}
}

// refused logs connections closed at accept, at most one line a second.
func (s *Server) refused(c gnet.Conn) {
	s.rejected.Add(1)
	now := time.Now().UnixNano()
	last := s.rejectLogged.Load()
	if now-last < int64(time.Second) || !s.rejectLogged.CompareAndSwap(last, now) {
		return
	}
	n := s.rejected.Swap(0)
	s.log.Warn("remoting: connection limit reached, closing new connections",
		"listener", c.LocalAddr(), "limit", s.cfg.MaxConns, "per_ip_limit", s.cfg.MaxConnsPerIP, "refused", n, "last", c.RemoteAddr())
}

// warnClose logs the closing of a misbehaving connection, at most one line
// a second (a client that reconnects and misbehaves again must not flood the
// log), with how many went unlogged before it.
func (s *Server) warnClose(msg string, args ...any) {
	now := time.Now().UnixNano()
	last := s.closedLogged.Load()
	if now-last < int64(time.Second) || !s.closedLogged.CompareAndSwap(last, now) {
		s.closedQuiet.Add(1)
		return
	}
	s.log.Warn(msg, append(args, "unlogged_before", s.closedQuiet.Swap(0))...)
}

// recheckPaused asks each paused connection's loop to look at it again, and
// reports whether any is paused.
func (s *Server) recheckPaused() bool {
	s.pausedMu.Lock()
	if len(s.paused) == 0 {
		s.pausedMu.Unlock()
		return false
	}
	ps := make([]*serverConn, 0, len(s.paused))
	for sc := range s.paused {
		ps = append(ps, sc)
	}
	s.pausedMu.Unlock()
	for _, sc := range ps {
		sc.scheduleRecheck()
	}
	return true
}

func portOf(a net.Addr) int {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.Port
	}
	return 0
}

// gnetLogger sends gnet's own logs to slog.
type gnetLogger struct{ l *slog.Logger }

func (g gnetLogger) Debugf(format string, args ...any) {
	g.l.Debug("gnet: " + fmt.Sprintf(format, args...))
}
func (g gnetLogger) Infof(format string, args ...any) {
	g.l.Debug("gnet: " + fmt.Sprintf(format, args...))
}
func (g gnetLogger) Warnf(format string, args ...any) {
	g.l.Warn("gnet: " + fmt.Sprintf(format, args...))
}
func (g gnetLogger) Errorf(format string, args ...any) {
	g.l.Error("gnet: " + fmt.Sprintf(format, args...))
}
func (g gnetLogger) Fatalf(format string, args ...any) {
	g.l.Error("gnet: " + strings.TrimSpace(fmt.Sprintf(format, args...)))
}
