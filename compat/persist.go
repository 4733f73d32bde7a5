package compat

import (
	"sync"
	"sync/atomic"
)

// Persister writes one config file for many callers (a group commit): a caller
// returns once a write that took its snapshot after the call has finished, so
// callers that arrive while a write runs share the next one. Each write is the
// whole file and an fsync (WriteConfigFile); one per caller let a burst of
// auto-created groups or topics, or of KV changes, rewrite a file once per
// name. Write takes the snapshot and writes it; it is set before first use.
type Persister struct {
	Write   func() error
	asked   atomic.Uint64 // persist calls so far
	mu      sync.Mutex    // one write at a time
	covered uint64        // calls the last finished write covers (under mu)
	err     error         // that write's result (under mu)
}

// Persist writes the file unless a write that began after this call already
// did. The caller's change must be in the table before the call: the writer
// reads asked before it takes its snapshot.
func (p *Persister) Persist() error {
	n := p.asked.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.covered >= n {
		return p.err
	}
	covered := p.asked.Load()
	p.err = p.Write()
	p.covered = covered
	return p.err
}

// Calls is how many Persist calls have begun.
func (p *Persister) Calls() uint64 { return p.asked.Load() }

// DirtyFile is a config file written on a period (Java's persistAll every few
// seconds) rather than on each change: changes mark it, a flush writes it only
// when marked, one write at a time, and a failed write leaves it marked. The
// mark is cleared before write takes its snapshot, so a change racing the
// flush costs one more write, never a lost one.
type DirtyFile struct {
	dirty atomic.Bool
	mu    sync.Mutex // one write at a time
}

// Mark records a change not written yet.
func (d *DirtyFile) Mark() { d.dirty.Store(true) }

// Dirty reports a change not written yet.
func (d *DirtyFile) Dirty() bool { return d.dirty.Load() }

// Flush calls write, which snapshots the table and writes the file, when the
// file is marked or force is set.
func (d *DirtyFile) Flush(force bool, write func() error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.dirty.Swap(false) && !force {
		return nil
	}
	if err := write(); err != nil {
		d.dirty.Store(true)
		return err
	}
	return nil
}
