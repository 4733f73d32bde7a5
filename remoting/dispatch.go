package remoting

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"rmqd/codec"
)

// RegisterOption tunes how the requests of a registration run.
type RegisterOption func(*registerConfig)

type registerConfig struct {
	workers int
	queue   int
	pool    *WorkerPool
	inline  bool
	when    func(*codec.RemotingCommand) bool
}

// WithWorkers gives the registration its own pool of n goroutines.
func WithWorkers(n int) RegisterOption { return func(c *registerConfig) { c.workers = n } }

// WithQueue sets the queue length of the registration's own pool.
func WithQueue(n int) RegisterOption { return func(c *registerConfig) { c.queue = n } }

// WithPool runs the registration on a pool shared with other registrations.
func WithPool(p *WorkerPool) RegisterOption { return func(c *registerConfig) { c.pool = p } }

// Inline runs the processor on the network event loop itself: only for
// processors that never block and finish in microseconds (heartbeat-like).
func Inline() RegisterOption { return func(c *registerConfig) { c.inline = true } }

// InlineWhen runs on the event loop the requests for which when reports true,
// and the others on the registration's pool. when runs on the event loop for
// every request: it must cost a few microseconds at most and never wait (map
// lookups, a system call such as mincore that answers at once). It lets a
// processor keep its common case (a send to an existing topic, a pull of pages
// in memory) off the hand-off to a worker and the wake-up of the loop for the
// answer, while anything that may block still goes to a worker.
func InlineWhen(when func(*codec.RemotingCommand) bool) RegisterOption {
	return func(c *registerConfig) { c.when = when }
}

type registration struct {
	p      Processor
	pool   *WorkerPool
	inline bool
	when   func(*codec.RemotingCommand) bool
}

type procTable struct {
	byCode map[int32]*registration
	def    *registration
}

// inbound is a decoded request together with the frame its strings alias.
type inbound struct {
	buf *buffer
	cmd codec.RemotingCommand
}

// dispatcher routes decoded frames: responses to the waiting call, requests to
// their processor. Shared by Server and Client. Lookups are lock-free
// (copy-on-write tables); mu only serializes changes.
type dispatcher struct {
	log      *slog.Logger
	ctx      context.Context
	loopCtx  context.Context // ctx, marked for the requests run on the event loop (OnLoop)
	cancel   context.CancelFunc
	bufs     *bufPool
	inbounds sync.Pool
	keep     bool // never recycle request frames

	// Bytes of the requests handed to pools and not yet processed, and their
	// bound (0 = none): ServerConfig.MaxQueuedRequestBytes.
	queued     atomic.Int64
	maxQueued  int64
	busyLogged atomic.Int64 // unix nanos of the last overload line

	mu    sync.Mutex
	pools []*WorkerPool // every pool in use, stopped at shutdown
	table atomic.Pointer[procTable]
	hooks atomic.Pointer[[]RPCHook]
}

func newDispatcher(log *slog.Logger, bufs *bufPool, keep bool) *dispatcher {
	d := &dispatcher{log: log, bufs: bufs, keep: keep}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.loopCtx = LoopContext(d.ctx)
	d.inbounds.New = func() any { return new(inbound) }
	d.table.Store(&procTable{byCode: map[int32]*registration{}})
	d.hooks.Store(&[]RPCHook{})
	return d
}

func (d *dispatcher) newRegistration(name string, p Processor, opts []RegisterOption) *registration {
	var cfg registerConfig
	for _, o := range opts {
		o(&cfg)
	}
	r := &registration{p: p, inline: cfg.inline, when: cfg.when}
	if !cfg.inline {
		r.pool = cfg.pool
		if r.pool == nil {
			r.pool = NewWorkerPool(name, cfg.workers, cfg.queue)
		}
	}
	return r
}

func (d *dispatcher) register(code int32, p Processor, opts []RegisterOption) {
	r := d.newRegistration(fmt.Sprintf("code-%d", code), p, opts)
	d.mu.Lock()
	defer d.mu.Unlock()
	old := d.table.Load()
	t := &procTable{byCode: make(map[int32]*registration, len(old.byCode)+1), def: old.def}
	for k, v := range old.byCode {
		t.byCode[k] = v
	}
	t.byCode[code] = r
	d.addPoolLocked(r.pool)
	d.table.Store(t)
}

func (d *dispatcher) registerDefault(p Processor, opts []RegisterOption) {
	r := d.newRegistration("default", p, opts)
	d.mu.Lock()
	defer d.mu.Unlock()
	old := d.table.Load()
	d.addPoolLocked(r.pool)
	d.table.Store(&procTable{byCode: old.byCode, def: r})
}

func (d *dispatcher) addPoolLocked(p *WorkerPool) {
	if p == nil {
		return
	}
	for _, q := range d.pools {
		if q == p {
			return
		}
	}
	d.pools = append(d.pools, p)
}

func (d *dispatcher) addHook(h RPCHook) {
	d.mu.Lock()
	defer d.mu.Unlock()
	old := *d.hooks.Load()
	hs := make([]RPCHook, len(old), len(old)+1)
	copy(hs, old)
	hs = append(hs, h)
	d.hooks.Store(&hs)
}

// stop cancels the processors' context, stops the pools' workers and waits for
// them to finish their current request until ctx ends.
func (d *dispatcher) stop(ctx context.Context) error {
	d.cancel()
	d.mu.Lock()
	pools := d.pools
	d.mu.Unlock()
	for _, p := range pools {
		p.stop()
	}
	done := make(chan struct{})
	go func() {
		for _, p := range pools {
			p.wait()
		}
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("remoting: processors still running: %w", ctx.Err())
	}
}

func (d *dispatcher) getInbound() *inbound {
	return d.inbounds.Get().(*inbound)
}

// release recycles a request whose processing finished.
func (d *dispatcher) release(in *inbound) {
	if d.keep {
		return
	}
	d.bufs.put(in.buf)
	in.buf = nil
	in.cmd.Body = nil
	in.cmd.Remark = ""
	clear(in.cmd.Ext) // drop references into the old frame
	in.cmd.Ext = in.cmd.Ext[:0]
	d.inbounds.Put(in)
}

// dispatch takes a decoded frame. It never blocks: onLoop is true when called on
// a gnet event loop.
func (d *dispatcher) dispatch(ep *endpoint, in *inbound, onLoop bool) {
	d.dispatchOrShed(ep, in, onLoop, false)
}

// dispatchOrShed is dispatch; with shed, a request that would wait for a
// worker is answered SYSTEM_BUSY instead (inline ones still run).
func (d *dispatcher) dispatchOrShed(ep *endpoint, in *inbound, onLoop, shed bool) {
	cmd := &in.cmd
	if cmd.IsResponse() {
		// The frame now belongs to whoever waited for it.
		if !ep.onResponse(cmd) {
			d.log.Debug("remoting: response without a waiting request", "conn", ep, "opaque", cmd.Opaque, "code", cmd.Code)
			d.release(in)
		}
		return
	}
	t := d.table.Load()
	reg := t.byCode[cmd.Code]
	if reg == nil {
		reg = t.def
	}
	if reg == nil {
		d.log.Debug("remoting: request code not supported", "conn", ep, "code", cmd.Code)
		if !cmd.IsOneway() {
			resp := codec.NewResponse(cmd, codec.RespRequestCodeNotSupported, fmt.Sprintf(" request type %d not supported", cmd.Code))
			d.reply(ep, cmd, resp, onLoop)
		}
		d.release(in)
		return
	}
	if reg.pool != nil && reg.pool.rejects() {
		// NettyRemotingAbstract: a processor whose rejectRequest holds (the
		// store is busy) is answered before its request is queued or run.
		if !cmd.IsOneway() {
			resp := codec.NewResponse(cmd, codec.RespSystemBusy, "[REJECTREQUEST]system busy, start flow control for a while")
			d.reply(ep, cmd, resp, onLoop)
		}
		d.release(in)
		return
	}
	if reg.inline || onLoop && reg.when != nil && reg.when(cmd) {
		d.run(ep, reg, in, onLoop)
		return
	}
	if shed {
		d.busy(ep, in, onLoop, "requests of one connection over the limit", reg.pool.name)
		return
	}
	// Counted for the connection's flow control (serverConn.mustPause).
	ep.inflight.Add(1)
	size := int64(len(in.buf.b))
	if n := d.queued.Add(size); d.maxQueued > 0 && n > d.maxQueued && n != size {
		ep.inflight.Add(-1)
		// Over the budget (a single request is always let through, or one
		// bigger than the budget would never be served).
		d.queued.Add(-size)
		d.busy(ep, in, onLoop, "queued request bytes over the limit", reg.pool.name)
		return
	}
	if !reg.pool.submit(task{d: d, ep: ep, reg: reg, in: in, charged: size}) {
		ep.inflight.Add(-1)
		d.queued.Add(-size)
		d.busy(ep, in, onLoop, "worker pool full", reg.pool.name)
	}
}

// busy answers a request that cannot be queued SYSTEM_BUSY, as Java's
// executors rejecting a task do, and releases it.
func (d *dispatcher) busy(ep *endpoint, in *inbound, onLoop bool, why, pool string) {
	cmd := &in.cmd
	if d.busyLogged.Load() < time.Now().Add(-time.Second).UnixNano() {
		d.busyLogged.Store(time.Now().UnixNano())
		d.log.Warn("remoting: overloaded, rejecting requests (logged once a second)", "why", why, "pool", pool, "conn", ep, "code", cmd.Code)
	}
	if !cmd.IsOneway() {
		resp := codec.NewResponse(cmd, codec.RespSystemBusy, "[OVERLOAD]system busy, start flow control for a while")
		d.reply(ep, cmd, resp, onLoop)
	}
	d.release(in)
}

// run processes one request: hooks, processor, response. A panicking processor
// is answered with SYSTEM_ERROR and its frame is left to the GC.
func (d *dispatcher) run(ep *endpoint, reg *registration, in *inbound, onLoop bool) {
	req := &in.cmd
	defer func() {
		if r := recover(); r != nil {
			d.log.Error("remoting: processor panic", "conn", ep, "code", req.Code, "opaque", req.Opaque,
				"panic", r, "stack", string(debug.Stack()))
			if !req.IsOneway() {
				d.reply(ep, req, codec.NewResponse(req, codec.RespSystemError, fmt.Sprintf("panic: %v", r)), onLoop)
			}
		}
	}()
	hooks := *d.hooks.Load()
	var start time.Time
	if len(hooks) > 0 {
		start = time.Now()
	}
	var resp *codec.RemotingCommand
	released := false
	for _, h := range hooks {
		if resp = h.Before(ep, req); resp != nil {
			break
		}
	}
	if resp == nil {
		var err error
		ctx := d.ctx
		if onLoop {
			ctx = d.loopCtx
		}
		resp, err = reg.p.ProcessRequest(ctx, ep, req)
		if err == ErrAnsweredLater {
			resp, err, released = nil, nil, true
		}
		if err != nil {
			d.log.Debug("remoting: processor error", "conn", ep, "code", req.Code, "err", err)
			resp = codec.NewResponse(req, codec.RespSystemError, err.Error())
		}
	}
	for _, h := range hooks {
		h.After(ep, req, resp)
		if t, ok := h.(RPCTimer); ok {
			t.Timed(ep, req, resp, time.Since(start))
		}
	}
	if resp == nil {
		// Answered later through Conn.WriteResponse, or never: the request is
		// owned by the processor from now on, so its frame is not recycled,
		// unless the processor said it kept nothing.
		if released {
			d.release(in)
		}
		return
	}
	if !req.IsOneway() {
		d.reply(ep, req, resp, onLoop)
	}
	resp.Release() // written (encoded into a buffer of its own) or dropped
	d.release(in)
}

// reply stamps resp as the response to req and writes it. The response takes
// the request's serialize type, which every client generation accepts.
func (d *dispatcher) reply(ep *endpoint, req, resp *codec.RemotingCommand, onLoop bool) {
	resp.Opaque = req.Opaque
	resp.Flag |= codec.FlagResponse
	resp.SerializeType = req.SerializeType
	if err := ep.write(resp, onLoop); err != nil {
		d.log.Debug("remoting: response not written", "conn", ep, "code", req.Code, "opaque", req.Opaque, "err", err)
	}
}
