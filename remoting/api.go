// Package remoting carries RemotingCommands over TCP: a gnet server that frames,
// decodes and dispatches requests by code, and a client with opaque-matched
// responses. It knows nothing of brokers or name servers.
//
// Threading: gnet event loops read and frame; each request then runs on its
// registration's worker pool (Register's default, WithWorkers, WithPool) or, with
// Inline, on the event loop itself, where a processor must never block (no
// Invoke, no disk, no locks held for long). Listeners run on one goroutine of
// their own; async callbacks each on a new goroutine.
//
// Ownership: a request's Body and strings alias a pooled frame buffer that is
// recycled after the processor returned a response or an error (and after the
// RPC hooks' After). Clone what must outlive that (strings.Clone, bytes.Clone).
// A processor returning (nil, nil) owns the request for good; one returning
// (nil, ErrAnsweredLater) answers later too but kept nothing of it, and the
// frame is recycled at once. A response a processor returns is released through
// its Recycler (when set) once written or dropped. Responses handed to callers
// of Invoke are never recycled.
package remoting

import (
	"context"
	"errors"
	"net"
	"time"

	"rmqd/codec"
)

// Conn is one peer connection as processors see it. All methods are safe from any
// goroutine.
type Conn interface {
	ID() uint64
	RemoteAddr() net.Addr
	LocalAddr() net.Addr
	// WriteResponse sends a response (or any command) on this connection. It never
	// blocks on the network; it fails only when the connection is closed. cmd is
	// encoded before it returns, so the caller may reuse it (a pooled answer).
	WriteResponse(cmd *codec.RemotingCommand) error
	// Invoke sends a server-initiated request and waits for the matched response
	// (CHECK_TRANSACTION_STATE, GET_CONSUMER_RUNNING_INFO, ...).
	Invoke(ctx context.Context, req *codec.RemotingCommand) (*codec.RemotingCommand, error)
	// InvokeOneway sends a request with the oneway flag set and expects nothing back.
	InvokeOneway(req *codec.RemotingCommand) error
	Close() error
	Closed() bool
}

// ErrAnsweredLater, returned by a processor with a nil response, says it
// answered through Conn.WriteResponse already or will, and kept no string or
// byte of the request: the request's frame goes back to the pool at once
// instead of to the GC (a held pull would otherwise cost a frame each).
var ErrAnsweredLater = errors.New("remoting: answered later, request released")

// Processor handles the requests of one or more codes.
//
// It returns the response to send, or (nil, nil) when it will answer later through
// c.WriteResponse (long polling) or never (oneway). A non-nil error is answered with
// SYSTEM_ERROR carrying the error text. A processor must not keep req.Body or any
// string of req past its return unless the server says the command is owned (see
// Server docs).
type Processor interface {
	ProcessRequest(ctx context.Context, c Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error)
}

// ProcessorFunc adapts a function to Processor.
type ProcessorFunc func(ctx context.Context, c Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error)

func (f ProcessorFunc) ProcessRequest(ctx context.Context, c Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	return f(ctx, c, req)
}

// RPCHook runs around every request (ACL plugs in here). Before may return a
// response to short-circuit the processor.
type RPCHook interface {
	Before(c Conn, req *codec.RemotingCommand) *codec.RemotingCommand
	After(c Conn, req, resp *codec.RemotingCommand)
}

// RPCTimer is an optional extension of an RPCHook: after After it is told how
// long the hooks and the processor took (metrics). Requests answered later
// through Conn.WriteResponse are reported with a nil resp.
type RPCTimer interface {
	Timed(c Conn, req, resp *codec.RemotingCommand, elapsed time.Duration)
}

// ConnListener is told when connections open and close (the broker drops a
// client's registrations when its channel closes).
type ConnListener interface {
	OnConnect(c Conn)
	OnClose(c Conn)
}

// Defaults as the Java remoting layer has them.
const (
	DefaultMaxFrameLength = 16 << 20
	DefaultIdleTimeout    = 120 * time.Second
)

// BodiesWriter is implemented by every Conn this package hands out. Pull
// responses use it to send mapped store bytes without copying them into a frame.
type BodiesWriter interface {
	// WriteResponseBodies sends cmd with the concatenation of bodies as its body
	// (cmd.Body is ignored). done (may be nil) is released exactly once, after
	// the bytes were written to the socket or copied by the transport, or when
	// the write failed; only then may the memory behind bodies be released.
	WriteResponseBodies(cmd *codec.RemotingCommand, bodies [][]byte, done Releaser) error
}

// Releaser is what holds the memory behind written bodies, such as a store's
// read result: an interface, so a caller passing one allocates no closure.
type Releaser interface{ Release() }

// ReleaseFunc adapts a function to a Releaser.
type ReleaseFunc func()

// Release calls f.
func (f ReleaseFunc) Release() { f() }

// release releases r unless it is nil.
func release(r Releaser) {
	if r != nil {
		r.Release()
	}
}

// RunOnLoop runs f on the event loop that owns c, when c is a plain server
// connection, and reports whether f was scheduled there; f must not block (the
// loop's other connections wait for it). A request woken by another
// connection's traffic (a held pull) is then answered by the loop that writes
// its answer, without a goroutine that would wake an idle P to run it.
func RunOnLoop(c Conn, f func()) bool {
	ep, ok := c.(*endpoint)
	if !ok {
		return false
	}
	lr, ok := ep.w.(loopRunner)
	return ok && lr.runOnLoop(f)
}

type onLoopKey struct{}

// OnLoop reports whether the request whose context is ctx runs on the network
// event loop (Inline, InlineWhen). Work that exists only to keep a stall off
// the loop (touching mapped pages before the loop writes them) is then waste.
func OnLoop(ctx context.Context) bool {
	v, _ := ctx.Value(onLoopKey{}).(bool)
	return v
}

// LoopContext marks ctx as a request's on the event loop, as the dispatcher
// does for the requests it runs there (and a test may for a processor).
func LoopContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, onLoopKey{}, true)
}

// loopRunner is a transport with an event loop of its own.
type loopRunner interface{ runOnLoop(f func()) bool }

// WriteResponseBodies sends cmd with bodies through c without concatenating them
// when c supports it, and by copying them into cmd.Body otherwise (test fakes).
// done is released exactly once, as BodiesWriter describes.
func WriteResponseBodies(c Conn, cmd *codec.RemotingCommand, bodies [][]byte, done Releaser) error {
	if bw, ok := c.(BodiesWriter); ok {
		return bw.WriteResponseBodies(cmd, bodies, done)
	}
	n := 0
	for _, b := range bodies {
		n += len(b)
	}
	body := make([]byte, 0, n)
	for _, b := range bodies {
		body = append(body, b...)
	}
	release(done)
	cmd.Body = body
	return c.WriteResponse(cmd)
}
