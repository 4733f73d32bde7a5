package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"rmqd/codec"
	"rmqd/compat"
)

const scheduleTopic = "SCHEDULE_TOPIC_XXXX"

// runReput is ReputMessageService: it turns new commitlog records into consume
// queue units and index entries, then tells the arriving listener.
func (s *DefaultStore) runReput(ctx context.Context) {
	t := time.NewTimer(reputRetry)
	defer t.Stop()
	for {
		stuck, held := s.doReput()
		// Publish idleness, then look again: a put that saw us busy did not
		// wake us, but its bytes are visible to this second look. A log stuck
		// at a bad record is retried every reputRetry; an idle one waits for
		// an append's wake-up (an append it does not dispatch itself wakes
		// it, replicated ones too).
		s.reputNap.idle.Store(true)
		if !stuck && !held && s.reputFrom.Load() < s.dispatchLimit() {
			s.reputNap.idle.Store(false)
			continue
		}
		wait := idleSafetyNet // appends wake the dispatcher, a slave dispatches itself
		if stuck {
			wait = reputRetry
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-s.reputNap.wake:
		case <-t.C:
		}
		s.reputNap.idle.Store(false)
	}
}

const reputRetry = 100 * time.Millisecond

// doReput dispatches everything between reputFrom and the commitlog's end (the
// confirm offset, when that bounds it). It reports whether it stopped at a
// record it cannot decode, or at one the confirm offset cuts (held).
func (s *DefaultStore) doReput() (stuck, held bool) {
	s.dispatchMu.Lock()
	defer s.dispatchMu.Unlock()
	return s.doReputLocked()
}

// doReputLocked is doReput with dispatchMu held. Progress wakes the sleeping
// consume-queue flusher, whichever goroutine dispatched.
func (s *DefaultStore) doReputLocked() (stuck, held bool) {
	start := s.reputFrom.Load()
	defer func() {
		if s.reputFrom.Load() != start {
			s.cqWork()
		}
	}()
	var m codec.Message
	q := s.commitLog.q
	for {
		from := s.reputFrom.Load()
		limit := s.dispatchLimit()
		if from >= limit {
			return false, false
		}
		f := q.findHeld(from)
		if f == nil {
			if min := q.minOffset(); min > from {
				s.reputFrom.Store(min) // retention went past us
				continue
			}
			return true, false // no file to read yet: wait rather than spin
		}
		pos := from - f.from
		wrote := min(f.wrote.Load(), limit-f.from)
		stop, again := false, false
		for pos < wrote {
			if codec.RecordMagic(f.data[pos:wrote]) == codec.MagicBlank {
				pos = int64(f.size)
				break
			}
			n, err := codec.DecodeRecord(f.data[pos:wrote], &m)
			if err != nil {
				if errors.Is(err, codec.ErrRecordTruncated) && f.from+wrote == limit {
					if s.dispatchLimit() > limit {
						// Its rest arrived while we read: read on. Reporting it
						// held would make the dispatcher wait for a wake-up the
						// appender, seeing it busy, did not send.
						again = true
						break
					}
					if limit < q.maxOffset() {
						// The rest of this record is written but not confirmed yet.
						f.release()
						return false, true
					}
				}
				if !errors.Is(err, codec.ErrRecordTruncated) {
					s.log.Error("dispatch: bad record", "offset", f.from+pos, "err", err)
				}
				stop = true
				break
			}
			var derr error
			if ferr := guardFault(func() { derr = s.dispatch(&m, n) }); ferr != nil {
				derr = ferr
			}
			if derr != nil {
				// A consume-queue or index page the full disk cannot back:
				// retried from this record once space is freed. Logged once
				// per record, not at every retry.
				if at := f.from + pos; at != s.dispatchFailedAt {
					s.dispatchFailedAt = at
					s.log.Error("dispatch: write failed; retrying", "offset", at, "err", derr)
				}
				s.noSpace()
				stop = true
				break
			}
			pos += int64(n)
			s.reputFrom.Store(f.from + pos)
		}
		if !stop && !again && pos >= int64(f.size) {
			s.reputFrom.Store(f.from + int64(f.size))
		}
		f.release()
		if again {
			continue
		}
		if stop {
			return true, false
		}
		if pos < int64(f.size) {
			return false, false
		}
	}
}

// dispatchProps are the properties dispatch reads, found in one pass.
type dispatchProps struct {
	tags, keys, uniq, delay string
	hasDelay                bool
}

func scanProps(props string) dispatchProps {
	names := [...]string{codec.PropTags, codec.PropKeys, codec.PropUniqKey, codec.PropDelay}
	var vals [len(names)]string
	var found [len(names)]bool
	codec.PropertyValues(props, names[:], vals[:], found[:])
	return dispatchProps{tags: vals[0], keys: vals[1], uniq: vals[2], delay: vals[3], hasDelay: found[3]}
}

// dispatch builds the consume-queue unit and index entries of one record. m
// aliases the mapping; nothing here keeps it.
// A consume queue that cannot take the unit (its next file cannot be made: a
// full disk) fails the dispatch, which is retried from this record later
// rather than leaving a hole in the queue.
func (s *DefaultStore) dispatch(m *codec.Message, size int) error {
	p := scanProps(m.Properties)
	if assignsQueueOffset(m.SysFlag) {
		tags := s.tagsCode(m, &p)
		cq := s.findOrCreateQueue(m.Topic, m.QueueID, m.SysFlag&codec.SysFlagInnerBatch != 0)
		if cq == nil {
			// Written before the store refused such topics (or by another
			// broker): the record stays in the commitlog, unindexed.
			s.log.Error("dispatch: no consume queue for an unsafe topic", "topic", fmt.Sprintf("%.300q", m.Topic), "queue", m.QueueID)
			return nil
		}
		if cq.batch {
			return s.dispatchBatchIndexed(cq, m, size, tags, &p)
		}
		if err := cq.put(m.CommitLogOffset, int32(size), tags, m.QueueOffset); err != nil {
			return fmt.Errorf("consume queue %s/%d: %w", m.Topic, m.QueueID, err)
		}
		s.lastLogicTs.Store(m.StoreTimestamp)
		if l := s.listener.Load(); l != nil {
			(*l)(m.Topic, m.QueueID, m.QueueOffset+1, tags, m.StoreTimestamp, m.Properties)
		}
		if err := s.dispatchLMQ(m, size, tags); err != nil {
			return fmt.Errorf("light message queue of %s/%d: %w", m.Topic, m.QueueID, err)
		}
	}
	if s.cfg.MessageIndexEnable {
		s.index.build(m, p.uniq, p.keys, p.tags)
	}
	if s.IsSlave() {
		// A slave appends raw bytes without decoding them; the flush
		// checkpoint learns their store time here.
		s.commitLog.lastStoreTs.Store(m.StoreTimestamp)
	}
	return nil
}

// dispatchBatchIndexed is dispatch for a record of a batch consume queue: its
// unit, then its index entries. Java dispatches no LMQ from such a queue.
func (s *DefaultStore) dispatchBatchIndexed(cq *consumeQueue, m *codec.Message, size int, tags int64, p *dispatchProps) error {
	if err := s.dispatchBatch(cq, m, size, tags); err != nil {
		return err
	}
	if s.cfg.MessageIndexEnable {
		s.index.build(m, p.uniq, p.keys, p.tags)
	}
	if s.IsSlave() {
		s.commitLog.lastStoreTs.Store(m.StoreTimestamp)
	}
	return nil
}

// tagsCode is the consume-queue tags field: the TAGS hash, or for the schedule
// topic the time the delayed message is due.
func (s *DefaultStore) tagsCode(m *codec.Message, p *dispatchProps) int64 {
	if m.Topic == scheduleTopic && p.hasDelay {
		level, err := strconv.Atoi(p.delay)
		if err == nil {
			level = min(level, len(s.delayLevels))
			if level > 0 {
				return m.StoreTimestamp + s.delayLevels[level-1]
			}
		}
	}
	if p.tags == "" {
		return 0
	}
	return int64(compat.JavaStringHash(p.tags))
}
