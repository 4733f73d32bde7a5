package store

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// The commitlog is written and read through a shared mapping, so every page the
// broker ever touched stays in its resident set until the file is unmapped, and
// every fresh page costs a fault (allocate, zero, reserve a block) in the middle of
// an append, under the commitlog lock. pageKeeper works on both ends of the tail:
//
//   - ahead of the write position it populates pages with MADV_POPULATE_WRITE, in
//     one call per stretch instead of one fault per page, and makes the next file
//     before the current one fills;
//   - behind what is both flushed and dispatched it unmaps pages with
//     MADV_DONTNEED. For a shared file mapping that only drops the page table
//     entries: the data stays in the kernel's page cache, a later read maps it
//     back with a minor fault. Pages a reader faulted in further back (a consumer
//     catching up) are dropped by a periodic sweep.
//
// Neither changes a byte of the file, so neither races with writers or readers.
type pageKeeper struct {
	s      *DefaultStore
	ahead  int64 // bytes kept populated past the write position (0: off)
	behind int64 // bytes kept mapped behind the flushed and dispatched position (<0: off)

	released  int64     // everything below was last released up to here
	lastSweep time.Time // last full sweep from the first file
	populate  bool      // MADV_POPULATE_WRITE works on this kernel
	// prepare makes the next file ahead of need even when nothing is
	// populated: a write-through commitlog must not be populated (that dirties
	// its pages through the mapping, the slow path write-through avoids).
	prepare bool
	// prepareFailed is set after a failed prepareNext (a full disk), so the
	// failure is logged once, not every tick.
	prepareFailed bool
	dropped       bool // dropIdle ran since the last append
}

// pageKeeperTick is how often the keeper looks while appends go on, at most;
// it looks less often the slower they go (busyWait), and backs off to
// pageKeeperIdle when nothing was appended.
const (
	pageKeeperTick = 5 * time.Millisecond
	// pageKeeperBusyMax bounds busyWait: a burst after a slow stretch outruns
	// the window for at most this long.
	pageKeeperBusyMax = 100 * time.Millisecond
	pageKeeperIdle    = time.Second // an append wakes an idle keeper (appended)
	pageKeeperSweep   = time.Second
	// pageKeeperDropAfter is how long appends must have stopped before the
	// keeper drops its windows (dropIdle): not after every short pause of a
	// light load, which would populate the window ahead again each time.
	pageKeeperDropAfter = 2 * time.Second
)

// newPageKeeper takes its windows from the store's configuration.
func newPageKeeper(s *DefaultStore) *pageKeeper {
	wt := s.commitLog.q.writeThrough
	return &pageKeeper{s: s, ahead: int64(s.cfg.PrefaultAheadBytes), behind: s.cfg.MappedResidentBytes,
		populate: s.cfg.PrefaultAheadBytes > 0 && !wt, prepare: s.cfg.PrefaultAheadBytes > 0, lastSweep: time.Now()}
}

func (s *DefaultStore) runPageKeeper(ctx context.Context) {
	k := newPageKeeper(s)
	if !k.prepare && k.behind < 0 {
		return
	}
	t := time.NewTimer(pageKeeperTick)
	defer t.Stop()
	lastEnd := int64(-1)
	// Idle, the keeper still looks now and then: the flushed position moves
	// after the last append, and readers fault old pages in. Each look that
	// finds nothing moved doubles the wait, up to idleSafetyNet.
	idleWait, lastMark := pageKeeperIdle, int64(-1)
	lastMove := time.Now()
	// The append rate since the last busy tick paces the next one; zero after
	// an idle look (a rate across a pause says nothing of the next burst).
	var busyAt time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.keeperNap.wake:
		}
		s.keeperNap.idle.Store(false)
		end, now := s.commitLog.q.maxOffset(), time.Now()
		k.tick()
		if end == lastEnd {
			// Publish idleness, then look again: an append that saw the keeper
			// busy did not wake it.
			s.keeperNap.idle.Store(true)
			if s.commitLog.q.maxOffset() != end {
				s.keeperNap.idle.Store(false)
				t.Reset(pageKeeperTick)
			} else {
				mark := min(s.commitLog.q.flushedWhere.Load(), s.reputFrom.Load())
				if mark == lastMark {
					idleWait = min(2*idleWait, idleSafetyNet)
				} else {
					idleWait, lastMark = pageKeeperIdle, mark
				}
				busyAt = time.Time{}
				sinceMove := time.Since(lastMove)
				if sinceMove >= pageKeeperDropAfter {
					k.dropIdle()
				}
				t.Reset(nextIdleLook(idleWait, sinceMove, k.dropped))
			}
		} else {
			wait := pageKeeperTick
			if !busyAt.IsZero() { // lastEnd is that busy tick's end
				wait = k.busyWait(end-lastEnd, now.Sub(busyAt))
			}
			t.Reset(wait)
			busyAt = now
			idleWait = pageKeeperIdle
			lastMove, k.dropped = now, false
		}
		lastEnd = end
	}
}

// nextIdleLook is the wait before the next idle look: idleWait, but no later
// than pageKeeperDropAfter after the last append while the windows are still
// there. The look after the drop time could come up to an idleWait late, and
// an idle broker then held its populated window for 2-4 s instead of 2.
func nextIdleLook(idleWait, sinceMove time.Duration, dropped bool) time.Duration {
	if left := pageKeeperDropAfter - sinceMove; !dropped && left > 0 {
		return min(idleWait, left)
	}
	return idleWait
}

// busyWait is how long the keeper may sleep while appends go on at n bytes per
// d: about the time they take to use a quarter of the window ahead (what
// populateTo waits for), so a slow stream costs a few wake-ups a second where
// a fixed tick cost 200 (each a timer, a thread wake-up and a context switch
// on a broker that otherwise sleeps between messages).
func (k *pageKeeper) busyWait(n int64, d time.Duration) time.Duration {
	if n <= 0 {
		return pageKeeperTick
	}
	stretch := float64(max(k.ahead/4, 1<<20))
	wait := time.Duration(float64(d) * stretch / float64(n))
	return min(max(wait, pageKeeperTick), pageKeeperBusyMax)
}

func (k *pageKeeper) tick() {
	if k.prepare && !k.dropped { // dropped: populate again once appends resume
		k.prefault()
	}
	if k.behind >= 0 {
		k.release()
	}
}

// prefault keeps [wrote, wrote+ahead) of the tail file populated, reaching into a
// prepared next file when the tail file ends sooner.
func (k *pageKeeper) prefault() {
	q := k.s.commitLog.q
	f := q.last()
	if f == nil || !f.hold() {
		return
	}
	defer f.release()
	wrote := f.wrote.Load()
	want := wrote + k.ahead
	if !k.populateTo(f, min(want, int64(f.size))) || want <= int64(f.size) {
		return
	}
	if k.s.diskFull.Load() {
		return // puts are refused; making a file would only fail or eat the rest
	}
	next, err := q.prepareNext()
	if err != nil {
		if !k.prepareFailed {
			k.s.log.Warn("prepare next commitlog file", "err", err)
		}
		k.prepareFailed = true
		k.s.noSpace()
		return
	}
	k.prepareFailed = false
	if next != nil {
		k.populateTo(next, min(want-int64(f.size), int64(next.size)))
		next.release()
	}
}

// populateStep is how much one MADV_POPULATE_WRITE call populates: fresh pages
// cost up to ~75 µs each on a VM that returns free memory to its host, so a
// step holds the keeper's P for about a millisecond at worst.
const populateStep = 64 << 10

// populateTo populates f from what is already populated (or written) up to end,
// once at least a quarter of the window is missing. It reports false when the
// kernel cannot populate, which turns prefaulting off.
func (k *pageKeeper) populateTo(f *mappedFile, end int64) bool {
	if !k.populate {
		return true
	}
	from := max(f.populated.Load(), f.wrote.Load()) &^ (osPageSize - 1)
	end = min((end+osPageSize-1)&^(osPageSize-1), int64(f.size))
	if end-from < k.ahead/4 && end < int64(f.size) || end <= from {
		return true
	}
	y := newYielder()
	for from < end {
		step := min(end, from+populateStep)
		if err := unix.Madvise(f.data[from:step], unix.MADV_POPULATE_WRITE); err != nil {
			if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
				k.populate, k.prepare = false, false
				k.s.log.Info("MADV_POPULATE_WRITE not supported; commitlog pages fault on first write", "err", err)
				return false
			}
			// ENOMEM/EFAULT-like failures: try again on the next tick.
			return true
		}
		f.populated.Store(step)
		from = step
		if from < end {
			y.between()
		}
	}
	return true
}

// dropIdle, once appends have stopped for a while, unmaps what the keeper
// keeps mapped for them: the populated window ahead of the write position and
// the resident window behind. An idle broker's resident set then holds its
// code and heap, not up to ahead+behind bytes of commitlog; the pages stay in
// the page cache, so the next appends and tail reads take a minor fault per
// page until the keeper, woken by the appends, populates again.
func (k *pageKeeper) dropIdle() {
	if k.dropped {
		return
	}
	k.dropped = true
	if k.behind > 0 {
		behind := k.behind
		k.behind = 0
		k.release()
		k.behind = behind
	}
	for _, f := range k.s.commitLog.q.snapshot() {
		from := (f.wrote.Load() + osPageSize - 1) &^ (osPageSize - 1)
		if f.populated.Load() <= from || !f.hold() {
			continue
		}
		if p := f.populated.Load(); p > from {
			_ = unix.Madvise(f.data[from:p], unix.MADV_DONTNEED)
			f.populated.Store(from)
		}
		f.release()
	}
}

// release unmaps commitlog pages below min(flushed, dispatched) - behind.
func (k *pageKeeper) release() {
	s := k.s
	q := s.commitLog.q
	limit := min(q.flushedWhere.Load(), s.reputFrom.Load()) - k.behind
	limit &^= osPageSize - 1
	from := k.released
	if time.Since(k.lastSweep) >= pageKeeperSweep {
		from = 0
		k.lastSweep = time.Now()
	}
	if limit <= from {
		return
	}
	for _, f := range q.snapshot() {
		lo, hi := max(from, f.from), min(limit, f.from+int64(f.size))
		if lo >= hi || !f.hold() {
			continue
		}
		_ = unix.Madvise(f.data[lo-f.from:hi-f.from], unix.MADV_DONTNEED)
		f.release()
	}
	k.released = limit
}
