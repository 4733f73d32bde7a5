package store

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// The commitlog's read mode (Java's dataReadAheadEnable and
// SET_COMMITLOG_READ_MODE). With read-ahead off every commitlog mapping gets
// MADV_RANDOM, so a page fault reads that page and no neighbours: a consumer
// catching up from far behind then costs the page cache only what it reads, at
// the price of more, smaller disk reads. The advice changes nothing in the
// files; it does not touch the page keeper's MADV_POPULATE_WRITE and
// MADV_DONTNEED, which work the same under either mode.
//
// As in Java: a store opened with the key off advises its loaded files; each
// file taken for writing afterwards is advised when taken (a file the page
// keeper made ahead is advised then, so it follows the mode of that moment);
// SET_COMMITLOG_READ_MODE changes the key and advises every file held now;
// the key set with UPDATE_BROKER_CONFIG changes only the files taken later.
// Unlike Java, whose put path alone advises new files, a slave's replicated
// files follow the mode too: they are the files its readers read.

// adviseTaken gives f, about to become the last file, the read mode in force.
// Called with createMu held.
func (q *mappedFileQueue) adviseTaken(f *mappedFile) {
	if !q.randomRead || q.lazy != nil {
		return
	}
	if err := adviseWhole(f, unix.MADV_RANDOM); err != nil && q.adviseFailed != nil {
		q.adviseFailed(err)
	}
}

// setRandomRead makes random (MADV_RANDOM) or normal (MADV_NORMAL) reading
// the mode of the files taken from now on and, with scan, advises every file
// the queue holds now. The mode changes and the list is read under createMu,
// so a file taken meanwhile is advised by one or the other; adviseMu keeps two
// changes from interleaving their scans. Errors are joined, one per file.
func (q *mappedFileQueue) setRandomRead(random, scan bool) error {
	q.adviseMu.Lock()
	defer q.adviseMu.Unlock()
	q.createMu.Lock()
	q.randomRead = random
	var files []*mappedFile
	if scan && q.lazy == nil {
		files = q.snapshot()
	}
	q.createMu.Unlock()
	advice := unix.MADV_NORMAL
	if random {
		advice = unix.MADV_RANDOM
	}
	var errs []error
	for _, f := range files {
		if err := adviseWhole(f, advice); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// adviseWhole madvises f's whole mapping, holding it so that it is not
// unmapped meanwhile; a file being destroyed is skipped.
func adviseWhole(f *mappedFile, advice int) error {
	if !f.hold() {
		return nil
	}
	defer f.release()
	if err := unix.Madvise(f.data, advice); err != nil {
		return fmt.Errorf("madvise(%d) %s: %w", advice, f.path, err)
	}
	return nil
}

// SetCommitLogReadAhead is SET_COMMITLOG_READ_MODE's work: dataReadAheadEnable
// takes enable in the live configuration, and every commitlog file now mapped
// gets MADV_NORMAL (enable) or MADV_RANDOM, as do the files taken from now on.
// An error says which files the kernel refused; Java logs those and carries
// on, and so does the store (the mode holds for every other file).
func (s *DefaultStore) SetCommitLogReadAhead(enable bool) error {
	s.liveMu.Lock()
	defer s.liveMu.Unlock()
	next := *s.live.Load()
	next.DataReadAheadEnable = enable
	s.live.Store(&next)
	return s.commitLog.q.setRandomRead(!enable, true)
}
