package remoting

import (
	"context"
	"sync/atomic"

	"github.com/panjf2000/gnet/v2"
)

// WritabilityReporter is implemented by the server's connections. Writable
// follows Netty's Channel.isWritable: false once the unsent output passed
// ServerConfig.WriteBufferHighWaterMark, true again once it fell to the
// low-water mark. The broker's enableNetWorkFlowControl drops pull answers
// to a connection that is not writable.
type WritabilityReporter interface {
	Writable() bool
}

// Writable reports whether c can take more output; a connection that does
// not track its output (a client's) always can.
func Writable(c Conn) bool {
	if w, ok := c.(WritabilityReporter); ok {
		return w.Writable()
	}
	return true
}

// writability is a connection's Netty-style writable flag. It is evaluated
// when asked rather than on every write: the hysteresis between the marks is
// kept by the flag, set above high and cleared at or below low.
type writability struct {
	unwritable atomic.Bool
}

func (w *writability) observe(out, high, low int64) bool {
	if high <= 0 {
		return true
	}
	switch {
	case out > high:
		w.unwritable.Store(true)
	case out <= low:
		w.unwritable.Store(false)
	}
	return !w.unwritable.Load()
}

// Writable implements WritabilityReporter through the transport.
func (e *endpoint) Writable() bool {
	if w, ok := e.w.(interface{ writable() bool }); ok {
		return w.writable()
	}
	return true
}

// writable: gnetOut is refreshed only after the loop's own writes, so once
// it says not writable a task re-reads gnet's buffer: the socket may have
// drained it since, and a consumer would otherwise wait for an unrelated
// answer to find out.
func (sc *serverConn) writable() bool {
	cfg := &sc.s.cfg
	ok := sc.wr.observe(sc.outBytes.Load()+sc.gnetOut.Load(), int64(cfg.WriteBufferHighWaterMark), int64(cfg.WriteBufferLowWaterMark))
	if !ok && sc.gc != nil && !sc.ep.closed.Load() && !sc.refreshing.Swap(true) {
		if sc.execute(gnet.RunnableFunc(sc.refreshOut)) != nil {
			sc.refreshing.Store(false)
		}
	}
	return ok
}

// refreshOut re-reads what gnet holds unsent (event loop only).
func (sc *serverConn) refreshOut(context.Context) error {
	defer sc.refreshing.Store(false)
	if !sc.ep.closed.Load() {
		sc.gnetOut.Store(int64(sc.gc.OutboundBuffered()))
	}
	return nil
}

func (c *tlsConn) writable() bool {
	cfg := &c.s.cfg
	return c.wr.observe(c.q.bytes.Load(), int64(cfg.WriteBufferHighWaterMark), int64(cfg.WriteBufferLowWaterMark))
}
