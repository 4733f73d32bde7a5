package remoting

import (
	"log/slog"
	"runtime/debug"
	"sync"

	"rmqd/codec"
)

// call is one request waiting for its response. Exactly one goroutine completes
// it: whoever removes it from the pendingTable.
type call struct {
	done chan struct{} // closed on completion (sync calls)
	resp *codec.RemotingCommand
	err  error

	cb   func(*codec.RemotingCommand, error) // async calls
	stop func() bool                         // cancels the async timeout
}

func (c *call) complete(resp *codec.RemotingCommand, err error) {
	if c.cb != nil {
		if c.stop != nil {
			c.stop()
		}
		// The completer is an event loop or a connection's reader; a callback
		// must never be able to stall it.
		go runCallback(c.cb, resp, err)
		return
	}
	c.resp, c.err = resp, err
	close(c.done)
}

// pendingTable holds one connection's outstanding requests by opaque.
type pendingTable struct {
	mu     sync.Mutex
	calls  map[int32]*call
	closed bool
}

func (t *pendingTable) add(opaque int32, c *call) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrConnClosed
	}
	if t.calls == nil {
		t.calls = make(map[int32]*call)
	}
	t.calls[opaque] = c
	return nil
}

// take removes and returns the call for opaque, or nil.
func (t *pendingTable) take(opaque int32) *call {
	t.mu.Lock()
	c := t.calls[opaque]
	if c != nil {
		delete(t.calls, opaque)
	}
	t.mu.Unlock()
	return c
}

// failAll closes the table and fails every outstanding call with err.
func (t *pendingTable) failAll(err error) {
	t.mu.Lock()
	t.closed = true
	calls := t.calls
	t.calls = nil
	t.mu.Unlock()
	for _, c := range calls {
		c.complete(nil, err)
	}
}

func (t *pendingTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.calls)
}

// runCallback runs an async call's callback; a panic in it is logged with its
// stack instead of ending the process (the callback is request-driven code).
func runCallback(cb func(*codec.RemotingCommand, error), resp *codec.RemotingCommand, err error) {
	defer func() {
		if r := recover(); r != nil {
			slog.Error("remoting: async callback panic", "panic", r, "stack", string(debug.Stack()))
		}
	}()
	cb(resp, err)
}
