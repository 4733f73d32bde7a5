package remoting

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/panjf2000/gnet/v2"

	"rmqd/codec"
)

// iovLimit keeps a writev under the kernel's IOV_MAX (1024).
const iovLimit = 1000

// initialFrameCap is what a frame buffer starts with before the bytes arrive; it
// grows as they do, so a peer announcing 16 MiB and sending nothing costs 64 KiB.
const initialFrameCap = 64 << 10

// serverConn is a gnet connection: the framing state, touched only on its event
// loop, and the wire: frames written on the loop are batched per OnTraffic,
// frames from other goroutines are queued and flushed by a task on the loop.
type serverConn struct {
	s    *Server
	gc   gnet.Conn
	ep   endpoint
	port int        // local port: the listener it came through
	ip   netip.Addr // remote address counted for MaxConnsPerIP (zero: not counted)
	// opened is when it opened (unix nanos); framed is set at its first whole frame.
	opened int64
	framed atomic.Bool

	// Flow control (see ServerConfig.WriteBufferHighWaterMark). outBytes is
	// what sits in outQ; paused and outOverSince are event loop only.
	outBytes     atomic.Int64
	gnetOut      atomic.Int64 // gnet's OutboundBuffered after the loop's last write
	overflowed   atomic.Bool
	paused       bool
	shedding     bool        // paused, answering the excess SYSTEM_BUSY (pausedTraffic)
	pausedFlag   atomic.Bool // paused, for workers (resume)
	outOverSince int64       // coarse unix nanos since the output stayed high while paused
	recheckTask  gnet.Runnable
	wr           writability // Writable (writable.go)
	refreshing   atomic.Bool // a refreshOut task is queued

	// Write queue for frames from other goroutines (see enqueue).
	outMu       sync.Mutex
	outQ        []outFrame
	flushQueued bool
	flushTask   gnet.Runnable
	spare       []outFrame // event loop only
	iov         [][]byte   // event loop only
	loopOut     []*buffer  // answers produced on the event loop, event loop only

	// Read state, event loop only.
	lenBuf  [lengthFieldSize]byte
	frame   *buffer // nil while waiting for the length field
	length  int     // announced length of frame
	checked bool    // header-length word validated
	sniffed bool    // first byte looked at for TLS (ServerConfig.TLSMode)
}

// inboundReader is the part of gnet.Conn the framing reads through.
type inboundReader interface {
	InboundBuffered() int
	Read(p []byte) (int, error)
}

// onTraffic consumes everything gnet has buffered: whole frames are decoded and
// dispatched, a partial frame is copied into its own buffer to be completed by
// the next traffic. A malformed frame closes the connection.
func (sc *serverConn) onTraffic(c inboundReader) gnet.Action {
	act := sc.readFrames(c)
	sc.flushLoopOut()
	return act
}

func (sc *serverConn) readFrames(c inboundReader) gnet.Action {
	sc.ep.touch()
	if sc.paused {
		return sc.pausedTraffic(c)
	}
	return sc.frames(c)
}

// frames reads and delivers the buffered frames until the connection must
// pause or, while shedding, until what is left fits the shedding limit.
func (sc *serverConn) frames(c inboundReader) gnet.Action {
	for {
		if sc.frame == nil {
			if sc.shedding {
				if c.InboundBuffered() <= sc.pausedInboundLimit() {
					return gnet.None
				}
			} else if sc.mustPause() {
				sc.pause()
				return sc.pausedTraffic(c)
			}
			if c.InboundBuffered() < lengthFieldSize {
				return gnet.None
			}
			if _, err := c.Read(sc.lenBuf[:]); err != nil {
				return sc.protocolError(fmt.Errorf("read length field: %w", err))
			}
			length := int32(binary.BigEndian.Uint32(sc.lenBuf[:]))
			if err := checkLength(length, sc.s.cfg.MaxFrameLength); err != nil {
				return sc.protocolError(err)
			}
			sc.length = int(length)
			sc.checked = false
			sc.frame = sc.s.bufs.get(min(sc.length, max(initialFrameCap, c.InboundBuffered())))
		}
		avail := c.InboundBuffered()
		if avail == 0 {
			return gnet.None
		}
		f := sc.frame
		have := len(f.b)
		n := min(sc.length-have, avail)
		if have+n > cap(f.b) {
			f = sc.grow(have + n)
		}
		if _, err := c.Read(f.b[have : have+n]); err != nil {
			return sc.protocolError(fmt.Errorf("read frame: %w", err))
		}
		f.b = f.b[:have+n]
		if !sc.checked && len(f.b) >= headerWordSize {
			if err := checkHeaderWord(f.b[:headerWordSize], sc.length); err != nil {
				return sc.protocolError(err)
			}
			sc.checked = true
		}
		if len(f.b) < sc.length {
			return gnet.None
		}
		sc.frame = nil
		if !sc.framed.Load() {
			sc.framed.Store(true)
		}
		if act := sc.deliver(f); act != gnet.None || sc.ep.closed.Load() {
			return act
		}
	}
}

// grow moves the partial frame into a buffer of at least need bytes, doubling
// so that a large frame arriving in pieces is copied O(1) times per byte.
func (sc *serverConn) grow(need int) *buffer {
	old := sc.frame
	nb := sc.s.bufs.get(min(sc.length, max(need, 2*cap(old.b))))
	nb.b = append(nb.b, old.b...)
	sc.s.bufs.put(old)
	sc.frame = nb
	return nb
}

// deliver decodes a complete frame and hands it to the dispatcher.
func (sc *serverConn) deliver(f *buffer) gnet.Action {
	d := sc.s.d
	in := d.getInbound()
	in.buf = f
	if err := codec.DecodeCommand(f.b, &in.cmd); err != nil {
		d.release(in)
		return sc.protocolError(fmt.Errorf("decode: %w", err))
	}
	d.dispatchOrShed(&sc.ep, in, true, sc.shedding)
	return gnet.None
}

func (sc *serverConn) protocolError(err error) gnet.Action {
	sc.s.warnClose("remoting: closing connection on a bad frame", "conn", &sc.ep, "reason", err)
	sc.resetRead()
	return gnet.Close
}

// resetRead drops a partial frame (event loop only).
func (sc *serverConn) resetRead() {
	if sc.frame != nil {
		sc.s.bufs.put(sc.frame)
		sc.frame = nil
	}
}

func (sc *serverConn) send(buf *buffer, onLoop bool) error {
	if onLoop {
		// Answers given while reading a batch of frames go out together when
		// the batch is done (flushLoopOut).
		sc.loopOut = append(sc.loopOut, buf)
		return nil
	}
	return sc.enqueue(outFrame{buf: buf})
}

func (sc *serverConn) sendv(hdr *buffer, bodies [][]byte, done Releaser) error {
	if len(bodies)+1 > iovLimit {
		// Too many pieces for one writev: copy them after the header instead.
		for _, b := range bodies {
			hdr.b = append(hdr.b, b...)
		}
		release(done)
		return sc.enqueue(outFrame{buf: hdr})
	}
	return sc.enqueue(outFrame{buf: hdr, bodies: bodies, done: done})
}

// enqueue queues a frame written by another goroutine. The first frame queued
// schedules a flush on the connection's event loop; frames queued before it runs
// go out with it in one writev, so a busy connection costs one syscall per
// batch instead of one per response.
func (sc *serverConn) enqueue(f outFrame) error {
	if sc.overflow(f.size()) {
		sc.dropFrames([]outFrame{f})
		return ErrOutputOverflow
	}
	sc.outBytes.Add(f.size())
	sc.outMu.Lock()
	sc.outQ = append(sc.outQ, f)
	schedule := !sc.flushQueued
	sc.flushQueued = true
	sc.outMu.Unlock()
	if !schedule {
		return nil
	}
	err := sc.execute(sc.flushTask)
	if err != nil {
		if !errors.Is(err, ErrServerClosed) {
			err = fmt.Errorf("remoting: schedule write: %w", err)
		}
		sc.outMu.Lock()
		q := sc.outQ
		sc.outQ = nil
		sc.flushQueued = false
		sc.outMu.Unlock()
		sc.dropFrames(q)
	}
	return err
}

// overflow reports that n more bytes would take the output past the hard cap
// (outputHardCapFactor high-water marks) and then closes the connection.
func (sc *serverConn) overflow(n int64) bool {
	limit := outputHardCap(sc.s.cfg.WriteBufferHighWaterMark, sc.s.cfg.MaxFrameLength)
	if limit == 0 {
		return false
	}
	out := sc.outBytes.Load() + sc.gnetOut.Load()
	if out+n <= limit && !sc.overflowed.Load() {
		return false
	}
	if !sc.overflowed.Swap(true) {
		sc.s.warnClose("remoting: closing a connection whose unsent output passed its limit",
			"conn", &sc.ep, "unsent_bytes", out, "limit", limit)
		_ = sc.shut()
	}
	return true
}

// size is what the frame holds until written: its buffer's capacity, since a
// small answer keeps a whole pooled buffer (512 B for ~100 B written) and
// counting its length let a flood of them hold several times the caps.
func (f outFrame) size() int64 {
	n := cap(f.buf.b)
	for _, b := range f.bodies {
		n += len(b)
	}
	return int64(n)
}

// outputHigh reports output above the high-water mark: queued for the loop
// plus what gnet holds because the socket did not take it (event loop only).
func (sc *serverConn) outputHigh() bool {
	high := sc.s.cfg.WriteBufferHighWaterMark
	return high > 0 && sc.gc != nil && int64(sc.gc.OutboundBuffered())+sc.outBytes.Load() > int64(high)
}

// mustPause: the output is high, or the connection has as many requests in
// the pools as it may (event loop only).
func (sc *serverConn) mustPause() bool {
	return sc.outputHigh() || sc.ep.maxInflight > 0 && sc.ep.inflight.Load() >= sc.ep.maxInflight
}

func (sc *serverConn) outputLow() bool {
	return sc.gc == nil || int64(sc.gc.OutboundBuffered())+sc.outBytes.Load() <= int64(sc.s.cfg.WriteBufferLowWaterMark)
}

// pause stops taking requests from a connection (mustPause); the ticker
// re-checks it (recheck) every pausedTick, and a worker finishing one of its
// requests at once (event loop only).
func (sc *serverConn) pause() {
	sc.paused = true
	sc.pausedFlag.Store(true)
	sc.outOverSince = sc.s.clock.Load()
	s := sc.s
	s.pausedMu.Lock()
	s.paused[sc] = struct{}{}
	s.pausedMu.Unlock()
	s.log.Debug("remoting: output high, not reading", "conn", &sc.ep, "buffered", sc.gc.OutboundBuffered())
}

func (sc *serverConn) unpause() {
	sc.paused = false
	sc.pausedFlag.Store(false)
	s := sc.s
	s.pausedMu.Lock()
	delete(s.paused, sc)
	s.pausedMu.Unlock()
}

// resume is told by a worker that the connection's requests in the pools
// fell below the bound.
func (sc *serverConn) resume() {
	if sc.pausedFlag.Load() {
		sc.scheduleRecheck()
	}
}

// pausedInboundLimit is how many unread bytes a paused connection may have:
// the high-water mark, at least 1 MiB.
func (sc *serverConn) pausedInboundLimit() int {
	return max(sc.s.cfg.WriteBufferHighWaterMark, 1<<20)
}

// pausedTraffic handles bytes arriving while paused: gnet keeps reading the
// socket into its own buffer whatever we do, so past pausedInboundLimit a
// peer that does not read its answers is closed, and one that does but sends
// faster than the workers serve it has the excess answered SYSTEM_BUSY (as
// Java's full executors answer) until it fits again.
func (sc *serverConn) pausedTraffic(c inboundReader) gnet.Action {
	if !sc.mustPause() && sc.outputLow() {
		// Drained since the last check: no need to wait for the ticker.
		sc.unpause()
		return sc.frames(c)
	}
	if c.InboundBuffered() <= sc.pausedInboundLimit() {
		return gnet.None
	}
	if !sc.outputLow() {
		sc.s.warnClose("remoting: closing a connection that sends without reading its answers",
			"conn", &sc.ep, "unread_requests_bytes", c.InboundBuffered(), "unsent_bytes", sc.gc.OutboundBuffered())
		sc.resetRead()
		return gnet.Close
	}
	sc.shedding = true
	act := sc.frames(c)
	sc.shedding = false
	return act
}

func (sc *serverConn) scheduleRecheck() {
	if !sc.ep.closed.Load() {
		_ = sc.execute(sc.recheckTask)
	}
}

// execute schedules task on the connection's event loop while the server
// runs (life's read lock keeps Shutdown from stopping the engine meanwhile).
func (sc *serverConn) execute(task gnet.Runnable) error {
	s := sc.s
	s.life.RLock()
	defer s.life.RUnlock()
	if s.state != stateRunning {
		return ErrServerClosed
	}
	return sc.gc.EventLoop().Execute(context.Background(), task)
}

// recheck resumes a paused connection whose output drained below the
// low-water mark and processes what it sent meanwhile, or closes it when the
// output stayed high longer than WriteStallTimeout (event loop only).
func (sc *serverConn) recheck(context.Context) error {
	defer sc.recoverOnLoop("resuming")
	if !sc.paused || sc.ep.closed.Load() {
		return nil
	}
	s := sc.s
	sc.gnetOut.Store(int64(sc.gc.OutboundBuffered()))
	if sc.outputLow() {
		sc.outOverSince = s.clock.Load()
	} else {
		if st := s.cfg.WriteStallTimeout; st > 0 && s.clock.Load()-sc.outOverSince > int64(st) {
			s.warnClose("remoting: closing a connection that does not read its answers",
				"conn", &sc.ep, "unsent_bytes", sc.gc.OutboundBuffered(), "for", st)
			sc.unpause()
			return sc.gc.Close()
		}
		return nil
	}
	if sc.ep.maxInflight > 0 && sc.ep.inflight.Load() >= sc.ep.maxInflight {
		return nil // a worker's resume comes back here
	}
	sc.unpause()
	s.log.Debug("remoting: reading again", "conn", &sc.ep)
	if sc.onTraffic(sc.gc) == gnet.Close {
		return sc.gc.Close()
	}
	return nil
}

// runOnLoop schedules f on the connection's loop. What f writes is queued as
// from any goroutine, and the flush task that queues runs in the same turn of
// the loop (gnet drains tasks queued by a task) after the tasks already there:
// answers from several tasks go out in one writev, with no eventfd write of
// their own.
func (sc *serverConn) runOnLoop(f func()) bool {
	if sc.gc == nil || sc.ep.closed.Load() {
		return false
	}
	return sc.execute(gnet.RunnableFunc(func(context.Context) error {
		defer sc.recoverOnLoop("running a task for")
		f()
		return nil
	})) == nil
}

// flush writes the queued frames (event loop only).
func (sc *serverConn) flush(context.Context) error {
	defer sc.recoverOnLoop("writing")
	sc.outMu.Lock()
	q := sc.outQ
	sc.outQ = sc.spare[:0]
	sc.flushQueued = false
	sc.outMu.Unlock()

	for start := 0; start < len(q); {
		if sc.ep.closed.Load() {
			// OnClose already ran on this loop; gnet must not write to the fd.
			sc.dropFrames(q[start:])
			break
		}
		iov := sc.iov[:0]
		end := start
		for ; end < len(q) && len(iov)+1+len(q[end].bodies) <= iovLimit; end++ {
			iov = append(iov, q[end].buf.b)
			iov = append(iov, q[end].bodies...)
		}
		// gnet copies what the socket does not take, so everything is released
		// once Writev returns; on an error gnet closes the connection itself.
		_, _ = sc.gc.Writev(iov)
		clear(iov)
		sc.iov = iov
		sc.gnetOut.Store(int64(sc.gc.OutboundBuffered()))
		sc.dropFrames(q[start:end])
		start = end
	}
	clear(q)
	sc.spare = q
	return nil
}

// flushLoopOut writes the answers produced on the event loop while reading
// (event loop only). gnet writes synchronously and copies what the socket did
// not take, so the buffers are free right after.
func (sc *serverConn) flushLoopOut() {
	if len(sc.loopOut) == 0 {
		return
	}
	if !sc.ep.closed.Load() {
		iov := sc.iov[:0]
		for i, b := range sc.loopOut {
			iov = append(iov, b.b)
			if len(iov) == iovLimit || i == len(sc.loopOut)-1 {
				_, _ = sc.gc.Writev(iov)
				clear(iov)
				iov = iov[:0]
				sc.gnetOut.Store(int64(sc.gc.OutboundBuffered()))
				if sc.ep.closed.Load() {
					break
				}
			}
		}
		sc.iov = iov
	}
	for _, b := range sc.loopOut {
		sc.s.bufs.put(b)
	}
	clear(sc.loopOut)
	sc.loopOut = sc.loopOut[:0]
}

// recoverOnLoop is deferred by the tasks run on the event loop: a panic there
// closes this connection only.
func (sc *serverConn) recoverOnLoop(what string) {
	if r := recover(); r != nil {
		sc.s.log.Error("remoting: panic "+what+" a connection, closing it", "conn", &sc.ep,
			"panic", r, "stack", string(debug.Stack()))
		sc.resetRead()
		_ = sc.gc.Close()
	}
}

// dropFrames releases frames that were written or will never be.
func (sc *serverConn) dropFrames(q []outFrame) {
	for _, f := range q {
		sc.outBytes.Add(-f.size())
		sc.s.bufs.put(f.buf)
		release(f.done)
	}
}

func (sc *serverConn) shut() error {
	s := sc.s
	s.life.RLock()
	defer s.life.RUnlock()
	if s.state != stateRunning {
		return nil
	}
	return sc.gc.Close()
}
