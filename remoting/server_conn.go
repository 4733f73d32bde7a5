package remoting

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"

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
	s  *Server
	gc gnet.Conn
	ep endpoint

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
	for {
		if sc.frame == nil {
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
	d.dispatch(&sc.ep, in, true)
	return gnet.None
}

func (sc *serverConn) protocolError(err error) gnet.Action {
	sc.s.log.Warn("remoting: closing connection on a bad frame", "conn", &sc.ep, "reason", err)
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

func (sc *serverConn) sendv(hdr *buffer, bodies [][]byte, done func()) error {
	if len(bodies)+1 > iovLimit {
		// Too many pieces for one writev: copy them after the header instead.
		for _, b := range bodies {
			hdr.b = append(hdr.b, b...)
		}
		done()
		return sc.enqueue(outFrame{buf: hdr})
	}
	return sc.enqueue(outFrame{buf: hdr, bodies: bodies, done: done})
}

// enqueue queues a frame written by another goroutine. The first frame queued
// schedules a flush on the connection's event loop; frames queued before it runs
// go out with it in one writev, so a busy connection costs one syscall per
// batch instead of one per response.
func (sc *serverConn) enqueue(f outFrame) error {
	sc.outMu.Lock()
	sc.outQ = append(sc.outQ, f)
	schedule := !sc.flushQueued
	sc.flushQueued = true
	sc.outMu.Unlock()
	if !schedule {
		return nil
	}
	s := sc.s
	s.life.RLock()
	var err error
	if s.state != stateRunning {
		err = ErrServerClosed
	} else if err = sc.gc.EventLoop().Execute(context.Background(), sc.flushTask); err != nil {
		err = fmt.Errorf("remoting: schedule write: %w", err)
	}
	s.life.RUnlock()
	if err != nil {
		sc.outMu.Lock()
		q := sc.outQ
		sc.outQ = nil
		sc.flushQueued = false
		sc.outMu.Unlock()
		sc.dropFrames(q)
	}
	return err
}

// flush writes the queued frames (event loop only).
func (sc *serverConn) flush(context.Context) error {
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

// dropFrames releases frames that were written or will never be.
func (sc *serverConn) dropFrames(q []outFrame) {
	for _, f := range q {
		sc.s.bufs.put(f.buf)
		if f.done != nil {
			f.done()
		}
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
