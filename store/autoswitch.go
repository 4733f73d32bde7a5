package store

import (
	"fmt"

	"rmqd/codec"
)

// What controller-mode (auto-switch) replication needs of the store: the
// confirm offset that bounds dispatch, and truncation of a divergent tail.

// UseConfirmOffset turns the confirm-offset bound of dispatch on or off. On,
// records are dispatched to the consume queues (so consumers see them) only
// below ConfirmOffset: Java 5.x's ReputMessageService in controller mode stops
// at CommitLog.getConfirmOffset unless readUnCommitted. Off (the default, and
// a controller master whose sync state set is itself alone or that does not
// wait for all of it), everything written is dispatched.
func (s *DefaultStore) UseConfirmOffset(on bool) {
	s.confirmOn.Store(on)
	s.kickReput()
}

// SetConfirmOffset sets the confirm offset: the end of what enough replicas
// hold. A slave sets it from its master's frames, a master from its sync
// state set's acks. The checkpoint keeps it (confirmPhyOffset, as Java's).
func (s *DefaultStore) SetConfirmOffset(offset int64) {
	s.confirmOffset.Store(offset)
	s.checkpoint.confirmPhyOffset.Store(offset)
	s.cqWork()
	s.kickReput()
}

// ConfirmOffset is the end of what enough replicas hold: the set confirm
// offset, or the commitlog end while the bound is off.
func (s *DefaultStore) ConfirmOffset() int64 {
	end := s.commitLog.q.maxOffset()
	if s.confirmOn.Load() {
		return min(end, s.confirmOffset.Load())
	}
	return end
}

// dispatchLimit is where dispatch stops: the confirm offset, under SYNC_FLUSH
// no further than the commitlog is flushed, or with readUnCommitted the
// commitlog end (Java's getReputEndOffset), which lets consumers read what
// replicas may still lose to a truncation, or a crash to the page cache.
func (s *DefaultStore) dispatchLimit() int64 {
	if s.cfg.ReadUnCommitted {
		return s.commitLog.q.maxOffset()
	}
	if s.flushBound() {
		return min(s.ConfirmOffset(), s.commitLog.q.flushedWhere.Load())
	}
	return s.ConfirmOffset()
}

// flushBound: dispatch waits for the flush (SYNC_FLUSH without
// readUnCommitted), so a consumer never reads what a crash can take back.
// Java's CommitLog.getConfirmOffset bounds it so outside controller mode; here
// also in it, where Java stops at the replicas' confirm offset only.
func (s *DefaultStore) flushBound() bool {
	return s.cfg.FlushDiskType == SyncFlush && !s.cfg.ReadUnCommitted
}

// DispatchBehind is how many confirmed bytes are not dispatched yet: Java's
// dispatchBehindBytes (ReputMessageService.behind), from CommitLog's confirm
// offset, which under SYNC_FLUSH is no further than the flushed offset, also
// with readUnCommitted. Bytes waiting for the flush are FlushBehindBytes'.
func (s *DefaultStore) DispatchBehind() int64 {
	end := s.ConfirmOffset()
	if s.cfg.FlushDiskType == SyncFlush {
		end = min(end, s.commitLog.q.flushedWhere.Load())
	}
	return max(end-s.reputFrom.Load(), 0)
}

// kickReput wakes the dispatcher even when it is not idle-waiting on appends.
func (s *DefaultStore) kickReput() { signal(s.reputNap.wake) }

// TruncateCommitLog cuts the commitlog at offset (Java's truncateFiles and
// truncateDirtyFiles): the consume queues lose the units at or above it, the
// index the files reaching past it (re-indexed up to offset), the queue offset
// table is rebuilt from the queues, dispatch restarts at offset at the latest
// and the confirm offset is lowered to it. offset must start a record (or a
// file, or lie at or below the first file, which empties the log). Puts and
// replicated appends wait meanwhile. The zeroed tail is synced, so a crash
// after the call recovers the cut log.
func (s *DefaultStore) TruncateCommitLog(offset int64) error {
	s.dispatchMu.Lock()
	defer s.dispatchMu.Unlock()
	return s.truncateLocked(offset, true)
}

// TruncateInvalidTail cuts off what follows the last whole, valid record from
// the dispatch position on (Java's AutoSwitchHAService.truncateInvalidMsg: a
// slave may end in the middle of a record its master sent in two frames). It
// returns the offset cut at, or -1 when the tail is clean.
func (s *DefaultStore) TruncateInvalidTail() (int64, error) {
	s.dispatchMu.Lock()
	defer s.dispatchMu.Unlock()
	q := s.commitLog.q
	end := q.maxOffset()
	at := s.reputFrom.Load()
	var m codec.Message
	for at < end {
		f := q.findHeld(at)
		if f == nil {
			break
		}
		pos := at - f.from
		wrote := f.wrote.Load()
		bad := false
		for pos < wrote {
			n := checkRecord(f.data[pos:wrote], &m, s.cfg.verifyCRC())
			if n == 0 {
				pos = int64(f.size)
				break
			}
			if n < 0 {
				bad = true
				break
			}
			pos += int64(n)
		}
		f.release()
		at = f.from + pos
		if bad || pos < int64(f.size) {
			break
		}
	}
	if at >= end {
		return -1, nil
	}
	if err := s.truncateLocked(at, false); err != nil {
		return -1, err
	}
	return at, nil
}

// truncateLocked runs with dispatchMu held (lock order dispatchMu -> commitLog.mu);
// aligned checks that a record starts at offset (what follows a partial record
// does not decode).
func (s *DefaultStore) truncateLocked(offset int64, aligned bool) error {
	c := s.commitLog
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("truncate commitlog: %w", ErrClosed)
	}
	end := c.q.maxOffset()
	if offset >= end {
		return nil
	}
	offset = max(offset, 0)
	if aligned {
		if err := s.checkAligned(offset); err != nil {
			return err
		}
	}
	for _, cq := range s.allCQs() {
		if cq.maxPhysicOffset.Load() >= offset {
			if err := cq.truncateAbove(offset); err != nil {
				return fmt.Errorf("truncate consume queue: %w", err)
			}
		}
	}
	if err := c.q.truncateDirty(offset); err != nil {
		return fmt.Errorf("truncate commitlog: %w", err)
	}
	if last := c.q.last(); last != nil {
		if err := last.reserveFrom(last.wrote.Load() &^ (osPageSize - 1)); err != nil {
			s.log.Warn("reserve commitlog tail", "file", last.name(), "err", err)
		}
	}
	if err := s.index.truncateAbove(offset); err != nil {
		return fmt.Errorf("truncate index: %w", err)
	}
	if at, ok := s.index.rebuildFrom(); ok && s.cfg.MessageIndexEnable {
		s.rebuildIndex(max(at, c.q.minOffset()), min(offset, s.reputFrom.Load()))
	}
	if s.reputFrom.Load() > offset {
		s.reputFrom.Store(offset)
	}
	if s.confirmOffset.Load() > offset {
		s.confirmOffset.Store(offset)
		s.checkpoint.confirmPhyOffset.Store(offset)
	}
	s.cqWork() // consume queues and the checkpoint were cut
	// recoverTopicQueueTable: the next queue offsets follow the cut queues.
	minPhy := max(c.q.minOffset(), 0)
	table := make(map[tqKey]*int64)
	for _, cq := range s.allCQs() {
		v := cq.maxOffset()
		table[tqKey{cq.topic, cq.qid}] = &v
		cq.correctMinOffset(minPhy)
	}
	c.table = table
	s.log.Warn("commitlog truncated", "offset", offset, "was", end)
	return nil
}

// checkAligned is Java's isOffsetAligned: a record (or a file's blank end)
// starts at offset, or nothing is stored there.
func (s *DefaultStore) checkAligned(offset int64) error {
	q := s.commitLog.q
	f := q.findHeld(offset)
	if f == nil {
		return nil
	}
	defer f.release()
	pos := offset - f.from
	wrote := f.wrote.Load()
	if pos == 0 || pos >= wrote {
		return nil
	}
	var m codec.Message
	if checkRecord(f.data[pos:wrote], &m, crcNone) < 0 {
		return fmt.Errorf("truncate commitlog at %d: no record starts there: %w", offset, ErrNotAligned)
	}
	return nil
}

// ErrNotAligned means a truncation offset is not a record boundary.
var ErrNotAligned = fmt.Errorf("store: offset is not a record boundary")
