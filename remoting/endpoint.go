package remoting

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"

	"rmqd/codec"
)

// wire is what a transport (gnet server connection, client net.Conn) gives the
// shared connection logic.
type wire interface {
	// send writes one encoded frame and owns buf from then on (it goes back to
	// the pool once written). onLoop is true only when called from the
	// connection's own event loop, where the transport may write directly.
	send(buf *buffer, onLoop bool) error
	// sendv writes hdr followed by bodies without copying bodies first. It owns
	// hdr, and releases done (may be nil) exactly once: after the bytes were
	// written or copied by the transport, or when the write failed.
	sendv(hdr *buffer, bodies [][]byte, done Releaser) error
	// shut closes the connection asynchronously.
	shut() error
}

// endpoint is one connection as processors and callers see it; it implements
// Conn for both the server and the client. Its address is stable for the
// connection's life, so a Conn can be a map key.
type endpoint struct {
	id       uint64
	local    net.Addr
	remote   net.Addr
	closed   atomic.Bool
	pending  pendingTable
	opaque   *atomic.Int32 // shared by every connection of a server or client
	bufs     *bufPool
	w        wire
	clock    *coarseClock // coarse time for idle detection; nil when unused
	lastUsed atomic.Int64

	// Requests handed to worker pools and not yet processed, and their bound
	// (0 = none): ServerConfig.MaxRequestsPerConn. Only server connections
	// use them.
	inflight    atomic.Int32
	maxInflight int32
}

var _ Conn = (*endpoint)(nil)
var _ BodiesWriter = (*endpoint)(nil)

func (e *endpoint) ID() uint64           { return e.id }
func (e *endpoint) RemoteAddr() net.Addr { return e.remote }
func (e *endpoint) LocalAddr() net.Addr  { return e.local }
func (e *endpoint) Closed() bool         { return e.closed.Load() }

func (e *endpoint) String() string {
	return fmt.Sprintf("conn#%d(%v)", e.id, e.remote)
}

// Close closes the connection; pending calls fail with ErrConnClosed once the
// transport has closed it.
func (e *endpoint) Close() error {
	if e.closed.Load() {
		return nil
	}
	return e.w.shut()
}

// resumer is a transport that stops reading a connection with too many
// requests in the pools and wants to know when that ends.
type resumer interface{ resume() }

// requestDone counts a pool request processed.
func (e *endpoint) requestDone() {
	if n := e.inflight.Add(-1); n == e.maxInflight-1 {
		if r, ok := e.w.(resumer); ok {
			r.resume()
		}
	}
}

func (e *endpoint) touch() {
	if e.clock != nil {
		e.lastUsed.Store(e.clock.Load())
	}
}

// write encodes cmd into a pooled buffer and hands it to the transport.
func (e *endpoint) write(cmd *codec.RemotingCommand, onLoop bool) error {
	if e.closed.Load() {
		return ErrConnClosed
	}
	buf := e.bufs.get(256 + len(cmd.Body) + 32*len(cmd.Ext))
	buf.b = cmd.Encode(buf.b)
	e.touch()
	return e.w.send(buf, onLoop)
}

// WriteResponse sends cmd as it is (the caller sets opaque and the response
// flag, as codec.NewResponse does).
func (e *endpoint) WriteResponse(cmd *codec.RemotingCommand) error {
	return e.write(cmd, false)
}

// WriteResponseBodies sends cmd with bodies as its body, written after the
// header without being concatenated. cmd.Body is ignored. done (may be nil) is
// released exactly once, after the transport wrote or copied the bodies or
// failed to; only then is the memory behind bodies given back.
func (e *endpoint) WriteResponseBodies(cmd *codec.RemotingCommand, bodies [][]byte, done Releaser) error {
	if e.closed.Load() {
		release(done)
		return ErrConnClosed
	}
	total := 0
	for _, b := range bodies {
		total += len(b)
	}
	hdr := e.bufs.get(256 + 32*len(cmd.Ext))
	hdr.b = cmd.EncodeHeader(hdr.b, total)
	e.touch()
	return e.w.sendv(hdr, bodies, done)
}

func (e *endpoint) prepareRequest(req *codec.RemotingCommand, oneway bool) int32 {
	opaque := e.opaque.Add(1)
	req.Opaque = opaque
	req.Flag &^= codec.FlagResponse
	if oneway {
		req.Flag |= codec.FlagOneway
	} else {
		req.Flag &^= codec.FlagOneway
	}
	return opaque
}

// Invoke sends req and waits for the response with the same opaque, until ctx
// is done or the connection closes. req.Opaque and req.Flag are overwritten.
func (e *endpoint) Invoke(ctx context.Context, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("remoting: invoke code %d on %v: %w", req.Code, e.remote, err)
	}
	opaque := e.prepareRequest(req, false)
	c := &call{done: make(chan struct{})}
	if err := e.pending.add(opaque, c); err != nil {
		return nil, fmt.Errorf("remoting: invoke code %d on %v: %w", req.Code, e.remote, err)
	}
	if err := e.write(req, false); err != nil {
		e.pending.take(opaque)
		return nil, fmt.Errorf("remoting: invoke code %d on %v: %w", req.Code, e.remote, err)
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		if e.pending.take(opaque) != nil {
			return nil, fmt.Errorf("remoting: invoke code %d opaque %d on %v: %w", req.Code, opaque, e.remote, ctx.Err())
		}
		<-c.done // completed concurrently; its result wins
	}
	if c.err != nil {
		return nil, fmt.Errorf("remoting: invoke code %d opaque %d on %v: %w", req.Code, opaque, e.remote, c.err)
	}
	return c.resp, nil
}

// InvokeAsync sends req and calls cb on its own goroutine with the response, or
// with the error when ctx ends first, the connection closes or the write fails.
// cb is called exactly once, also when InvokeAsync returns an error.
func (e *endpoint) InvokeAsync(ctx context.Context, req *codec.RemotingCommand, cb func(*codec.RemotingCommand, error)) error {
	wrap := func(err error) error {
		return fmt.Errorf("remoting: invoke code %d on %v: %w", req.Code, e.remote, err)
	}
	if err := ctx.Err(); err != nil {
		err = wrap(err)
		go runCallback(cb, nil, err)
		return err
	}
	opaque := e.prepareRequest(req, false)
	c := &call{cb: cb}
	// stop is set before the call is published so that complete may read it.
	c.stop = context.AfterFunc(ctx, func() {
		if c := e.pending.take(opaque); c != nil {
			c.complete(nil, wrap(ctx.Err()))
		}
	})
	if err := e.pending.add(opaque, c); err != nil {
		c.stop()
		err = wrap(err)
		go runCallback(cb, nil, err)
		return err
	}
	if ctx.Err() != nil { // ctx ended before add; the AfterFunc found nothing
		if c := e.pending.take(opaque); c != nil {
			c.complete(nil, wrap(ctx.Err()))
		}
		return nil
	}
	if err := e.write(req, false); err != nil {
		if c := e.pending.take(opaque); c != nil {
			c.complete(nil, wrap(err))
		}
		return wrap(err)
	}
	return nil
}

// InvokeOneway sends req with the oneway flag; no response is expected.
func (e *endpoint) InvokeOneway(req *codec.RemotingCommand) error {
	e.prepareRequest(req, true)
	if err := e.write(req, false); err != nil {
		return fmt.Errorf("remoting: oneway code %d on %v: %w", req.Code, e.remote, err)
	}
	return nil
}

// onResponse completes the call waiting for resp. It reports false when nobody
// waits (timed out already, or a peer's stray response).
func (e *endpoint) onResponse(resp *codec.RemotingCommand) bool {
	c := e.pending.take(resp.Opaque)
	if c == nil {
		return false
	}
	c.complete(resp, nil)
	return true
}

// markClosed flags the connection closed and fails its pending calls. It
// reports whether this call did it.
func (e *endpoint) markClosed() bool {
	if e.closed.Swap(true) {
		return false
	}
	e.pending.failAll(ErrConnClosed)
	return true
}
