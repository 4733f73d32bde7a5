package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Consume-queue files are mapped on demand and unmapped when idle. Each
// mapping costs one of the process's vm.max_map_count (65530 by default)
// areas, and a broker with 100,000 queues would map at least that many
// files if every queue kept its files mapped, as Java's does.
//
// A lazy file is mapped by the first hold that finds it unmapped and stays
// mapped while anything holds it. The sweeper (runUnmapIdle) unmaps files no
// one holds and no one touched for lazyIdle, and, when more than the budget
// are mapped, the least recently used of those no one holds. hold increments
// refs before it looks at the mapping under mapMu, and the sweeper unmaps only
// under mapMu with refs at 1 (the queue's own), so a reader either sees the
// mapping kept or maps it again; no reader ever slices an unmapped file.

// lazyIdle is how long an untouched consume-queue file stays mapped.
const lazyIdle = 30 * time.Second

// lazySweepEvery is how often the sweeper looks.
const lazySweepEvery = time.Second

// lazyMaps is the store's registry of mapped lazy files.
type lazyMaps struct {
	budget  int64        // most files to keep mapped (mappedConsumeQueueFilesMax)
	count   atomic.Int64 // files mapped now
	now     atomic.Int64 // coarse clock (unix s) for lastUse, set by the sweeper
	wake    chan struct{}
	nap     *napper    // the sweeper sleeps while nothing is mapped
	sweepMu sync.Mutex // one unmapping pass at a time (sweeper or trimIfFar)

	mu     sync.Mutex
	mapped map[*mappedFile]struct{}
}

func newLazyMaps(budget int64) *lazyMaps {
	r := &lazyMaps{budget: max(budget, 16), wake: make(chan struct{}, 1), nap: newNapper(), mapped: make(map[*mappedFile]struct{})}
	r.now.Store(time.Now().Unix())
	return r
}

func (r *lazyMaps) add(m *mappedFile) {
	if r.nap.idle.Load() {
		// The sleeping sweeper's clock stopped: m must not look long unused.
		now := time.Now().Unix()
		r.now.Store(now)
		m.lastUse.Store(now)
	}
	r.mu.Lock()
	r.mapped[m] = struct{}{}
	r.mu.Unlock()
	if r.count.Add(1) > r.budget {
		signal(r.wake)
	}
	r.nap.kick()
}

func (r *lazyMaps) remove(m *mappedFile) {
	r.mu.Lock()
	delete(r.mapped, m)
	r.mu.Unlock()
	r.count.Add(-1)
}

// newLazyMappedFile is newMappedFile for a lazy file: an existing one is only
// checked, a created one is made and mapped (its writer is about to use it).
func newLazyMappedFile(path string, from int64, size int, create bool, reg *lazyMaps) (*mappedFile, error) {
	mf := &mappedFile{path: path, from: from, size: size, lazy: reg}
	mf.fd.Store(-1)
	mf.refs.Store(1)
	mf.lastUse.Store(reg.now.Load())
	if !create {
		var st unix.Stat_t
		if err := unix.Stat(path, &st); err != nil {
			return nil, fmt.Errorf("stat %s: %w", path, err)
		}
		if st.Size != int64(size) {
			return nil, fmt.Errorf("mapped file %s is %d bytes, want %d", path, st.Size, size)
		}
		return mf, nil
	}
	eager, err := newMappedFile(path, from, size, true, false)
	if err != nil {
		return nil, err
	}
	mf.data = eager.data
	mf.adviseUnwritten()
	reg.add(mf)
	reg.trimIfFar()
	return mf, nil
}

// adviseUnwritten gives the part of a lazy file past its last written page
// MADV_RANDOM. A consume-queue file is made sparse and written a unit at a
// time; without the advice the first write into it faults in the kernel's
// read-ahead window of zeros (this machine: 5.4 of its 5.7 MiB per file, 4 ms
// of CPU), for every queue made, where only the pages written are needed.
// A file mapped again keeps normal read-ahead for the part written before,
// which readers catching up from disk read; the pages written since a file
// was mapped are in the page cache already.
// Called with the file mapped and not yet shared; failure only costs memory.
func (m *mappedFile) adviseUnwritten() {
	from := m.wrote.Load() &^ int64(unix.Getpagesize()-1)
	if from < int64(len(m.data)) {
		_ = unix.Madvise(m.data[from:], unix.MADV_RANDOM)
	}
}

// holdLazy is hold for a lazy file: it takes the reference, then maps the
// file if the sweeper unmapped it. False when the file is being destroyed or
// cannot be mapped (no map areas or memory left).
func (m *mappedFile) holdLazy() bool {
	for {
		r := m.refs.Load()
		if r <= 0 || m.destroyed.Load() {
			return false
		}
		if m.refs.CompareAndSwap(r, r+1) {
			break
		}
	}
	m.lastUse.Store(m.lazy.now.Load())
	m.mapMu.Lock()
	mapped := m.data == nil
	if mapped {
		if err := m.mapIn(); err != nil {
			m.mapMu.Unlock()
			m.release()
			return false
		}
	}
	m.mapMu.Unlock()
	if mapped {
		m.lazy.trimIfFar() // after mapMu: the trim takes other files' mapMu
	}
	return true
}

// mapIn maps the file. Called with mapMu held.
func (m *mappedFile) mapIn() error {
	fd, err := unix.Open(m.path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", m.path, err)
	}
	defer unix.Close(fd)
	data, err := unix.Mmap(fd, 0, m.size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mmap %s: %w", m.path, err)
	}
	m.data = data
	m.adviseUnwritten()
	m.lazy.add(m)
	return nil
}

// unmapIfIdle unmaps a lazy file no one holds whose last use is at or before
// usedBefore. It reports whether it did.
func (m *mappedFile) unmapIfIdle(usedBefore int64) bool {
	m.mapMu.Lock()
	defer m.mapMu.Unlock()
	if m.data == nil || m.refs.Load() != 1 || m.lastUse.Load() > usedBefore {
		return false
	}
	// Dirty pages stay in the page cache after munmap; the flusher syncs
	// lazy files through a descriptor (mappedFile.flush), not the mapping.
	_ = unix.Munmap(m.data)
	m.data = nil
	m.lazy.remove(m)
	return true
}

// unmapLast is the last release's unmap of a lazy file.
func (m *mappedFile) unmapLast() {
	m.mapMu.Lock()
	defer m.mapMu.Unlock()
	if m.data != nil {
		_ = unix.Munmap(m.data)
		m.data = nil
		m.lazy.remove(m)
	}
}

// unmapUnheld unmaps every lazy file of q no one holds (recovery calls it after
// each queue, so that opening 100,000 queues never maps them all at once).
func (q *mappedFileQueue) unmapUnheld() {
	for _, f := range q.snapshot() {
		if f.lazy != nil {
			f.unmapIfIdle(1 << 62)
		}
	}
}

// sweep unmaps files idle for lazyIdle, then, while more than the budget are
// mapped, the least recently used no one holds down to three quarters of it.
// It returns how many it unmapped.
func (r *lazyMaps) sweep() int {
	now := time.Now().Unix()
	r.now.Store(now)
	r.sweepMu.Lock()
	defer r.sweepMu.Unlock()
	files := r.snapshot()
	n := 0
	idleBefore := now - int64(lazyIdle/time.Second)
	for _, f := range files {
		if f.unmapIfIdle(idleBefore) {
			n++
		}
	}
	return n + r.trimLocked(files)
}

// trimIfFar is the mapper's own trim once twice the budget is mapped: a burst
// of new queues maps files faster than the sweeper, woken at the budget, gets
// scheduled to unmap them. It waits for a sweep under way (which may have been
// preempted holding sweepMu) and then finds little left to trim; a pull on an
// event loop waits here only past twice the budget, for at most one sweep.
func (r *lazyMaps) trimIfFar() {
	if r.count.Load() <= 2*r.budget {
		return
	}
	r.sweepMu.Lock()
	defer r.sweepMu.Unlock()
	r.trimLocked(r.snapshot())
}

func (r *lazyMaps) snapshot() []*mappedFile {
	r.mu.Lock()
	defer r.mu.Unlock()
	files := make([]*mappedFile, 0, len(r.mapped))
	for f := range r.mapped {
		files = append(files, f)
	}
	return files
}

// trimLocked unmaps the least recently used of files no one holds until three
// quarters of the budget are mapped. Called with sweepMu held.
func (r *lazyMaps) trimLocked(files []*mappedFile) int {
	if r.count.Load() <= r.budget {
		return 0
	}
	type use struct {
		f  *mappedFile
		at int64
	}
	uses := make([]use, len(files))
	for i, f := range files {
		uses[i] = use{f, f.lastUse.Load()} // read once: holds move it meanwhile
	}
	slices.SortFunc(uses, func(a, b use) int { return cmp.Compare(a.at, b.at) })
	target := r.budget * 3 / 4
	n := 0
	for _, u := range uses {
		if r.count.Load() <= target {
			break
		}
		if u.f.unmapIfIdle(1 << 62) {
			n++
		}
	}
	return n
}

// runUnmapIdle is the sweeper: every lazySweepEvery while any file is mapped,
// and at once when the budget is passed. With nothing mapped it sleeps until a
// mapping kicks it (add, which also moves its stopped clock on).
func (s *DefaultStore) runUnmapIdle(ctx context.Context) {
	r := s.lazy
	tickUntilIdle(ctx, every(lazySweepEvery), r.nap, r.wake, func() { r.sweep() },
		func() bool { return r.count.Load() > 0 })
}

// MappedConsumeQueueFiles is how many consume-queue files are mapped now.
func (s *DefaultStore) MappedConsumeQueueFiles() int64 { return s.lazy.count.Load() }
