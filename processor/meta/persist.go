package meta

import (
	"sync"
	"sync/atomic"
)

// persister writes one config file for many callers: a caller returns once a
// write that took its snapshot after the call has finished, so callers that
// arrive while a write runs share the next one. Each write is the whole file
// and an fsync; one per caller let a burst of auto-created groups or topics
// (every new name in a pull, a send or a heartbeat) rewrite the file once per
// name.
type persister struct {
	write   func() error
	asked   atomic.Uint64 // persist calls so far
	mu      sync.Mutex    // one write at a time
	covered uint64        // calls the last finished write covers (under mu)
	err     error         // that write's result (under mu)
}

// persist writes the file unless a write that began after this call already
// did. The caller's change must be in the table before the call: the writer
// reads asked before it takes its snapshot.
func (p *persister) persist() error {
	n := p.asked.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.covered >= n {
		return p.err
	}
	covered := p.asked.Load()
	p.err = p.write()
	p.covered = covered
	return p.err
}
