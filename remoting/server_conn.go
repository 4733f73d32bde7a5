package remoting

import (
	"encoding/binary"
	"fmt"

	"github.com/panjf2000/gnet/v2"

	"rmqd/codec"
)

// iovLimit keeps a writev under the kernel's IOV_MAX (1024).
const iovLimit = 1000

// initialFrameCap is what a frame buffer starts with before the bytes arrive; it
// grows as they do, so a peer announcing 16 MiB and sending nothing costs 64 KiB.
const initialFrameCap = 64 << 10

// serverConn is a gnet connection: the framing state, touched only on its event
// loop, and the wire that writes through gnet's async writes.
type serverConn struct {
	s  *Server
	gc gnet.Conn
	ep endpoint

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
		// On the connection's own loop gnet writes synchronously and copies what
		// the socket did not take, so buf is free right after.
		_, err := sc.gc.Write(buf.b)
		sc.s.bufs.put(buf)
		return err
	}
	s := sc.s
	s.life.RLock()
	defer s.life.RUnlock()
	if s.state != stateRunning {
		s.bufs.put(buf)
		return ErrServerClosed
	}
	if err := sc.gc.AsyncWrite(buf.b, buf.written); err != nil {
		s.bufs.put(buf)
		return fmt.Errorf("remoting: async write: %w", err)
	}
	return nil
}

func (sc *serverConn) sendv(hdr *buffer, bodies [][]byte, done func()) error {
	s := sc.s
	if len(bodies)+1 > iovLimit {
		// Too many pieces for one writev: copy them after the header instead.
		for _, b := range bodies {
			hdr.b = append(hdr.b, b...)
		}
		done()
		return sc.send(hdr, false)
	}
	iov := make([][]byte, 0, len(bodies)+1)
	iov = append(iov, hdr.b)
	iov = append(iov, bodies...)
	cb := func(gnet.Conn, error) error {
		s.bufs.put(hdr)
		done()
		return nil
	}
	s.life.RLock()
	defer s.life.RUnlock()
	if s.state != stateRunning {
		_ = cb(nil, nil)
		return ErrServerClosed
	}
	if err := sc.gc.AsyncWritev(iov, cb); err != nil {
		_ = cb(nil, nil)
		return fmt.Errorf("remoting: async writev: %w", err)
	}
	return nil
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
