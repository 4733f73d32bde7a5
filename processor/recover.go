package processor

import (
	"fmt"
	"runtime/debug"
)

// recovered is deferred at the top of every goroutine that runs
// request-driven code outside the remoting workers (which recover on their
// own): a panic there is logged with its stack and ends that goroutine only,
// never the process. It reports whether it recovered something, for callers
// that answer the request.
func (b *Broker) recovered(what string, r any) bool {
	if r == nil {
		return false
	}
	b.log.Error("panic in "+what, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	return true
}
