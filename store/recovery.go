package store

import (
	"errors"
	"strings"

	"rmqd/codec"
)

// crcCheck is what recovery checks of a record beyond its framing.
type crcCheck uint8

const (
	crcNone crcCheck = iota
	crcBody          // checkCRCOnRecover: the BODYCRC field
	crcProp          // and forceVerifyPropCRC: the CRC property instead
)

// verifyCRC is the check of a record read with checkCRC set in Java (the
// forceVerifyPropCRC switch decides which CRC).
func (c *Config) verifyCRC() crcCheck {
	if c.ForceVerifyPropCRC {
		return crcProp
	}
	return crcBody
}

// recoverCRC is the check the configuration asks recovery for.
func (c *Config) recoverCRC() crcCheck {
	if !c.CheckCRCOnRecover {
		return crcNone
	}
	return c.verifyCRC()
}

// checkRecord validates the record at the start of b as
// CommitLog.checkMessageAndReturnSize does: size > 0 for a good record, 0 for a
// blank end-of-file record, -1 for anything else (the end of the valid log).
// A record carrying the CRC property passes the other checks whatever this
// store's enabledAppendPropCRC is; under crcProp one without it fails, as in Java.
func checkRecord(b []byte, m *codec.Message, check crcCheck) int {
	if codec.RecordMagic(b) == codec.MagicBlank {
		return 0
	}
	n, err := codec.DecodeRecord(b, m)
	if err != nil {
		return -1
	}
	switch check {
	case crcBody:
		if len(m.Body) > 0 && codec.BodyCRC(m.Body) != m.BodyCRC {
			return -1
		}
	case crcProp:
		if ok, _ := codec.RecordPropCRC(b, m); !ok {
			return -1
		}
	}
	// The body CRC says nothing about the bytes after the body. A record cut
	// short on disk reads zeros there: topics never hold NUL and a properties
	// string always ends with its 0x02 separator.
	if m.Topic == "" || strings.IndexByte(m.Topic, 0) >= 0 ||
		(len(m.Properties) > 0 && m.Properties[len(m.Properties)-1] == 0) {
		return -1
	}
	return n
}

// recover restores a consistent store after load: consume queues first, then the
// commitlog tail, then dispatch of whatever the queues miss, then the offset table.
func (s *DefaultStore) recover() error {
	var maxPhyInCQ int64 = -1
	for _, cq := range s.allCQs() {
		if err := cq.recover(); err != nil {
			return err
		}
		cq.q.unmapUnheld()
		maxPhyInCQ = max(maxPhyInCQ, cq.maxPhysicOffset.Load())
	}
	files := s.commitLog.q.snapshot()
	if len(files) == 0 {
		// Nothing in the commitlog: the queues point at nothing.
		for _, cq := range s.allCQs() {
			cq.q.destroyAll()
		}
		s.cqMu.Lock()
		clear(s.cqs)
		s.cqMu.Unlock()
		s.reputFrom.Store(0)
		return nil
	}
	var m codec.Message
	start := 0
	for i := len(files) - 1; i >= 0; i-- {
		f := files[i]
		if checkRecord(f.data, &m, crcBody) <= 0 || m.StoreTimestamp == 0 {
			continue
		}
		var ok bool
		if s.lastExitOK {
			ok = m.CommitLogOffset <= maxPhyInCQ
		} else {
			limit := s.checkpoint.minTimestamp()
			if s.cfg.MessageIndexEnable && s.cfg.MessageIndexSafe {
				limit = s.checkpoint.minTimestampIndex()
			}
			ok = m.StoreTimestamp <= limit
		}
		if ok {
			start = i
			break
		}
	}
	process := files[start].from
	check := s.cfg.recoverCRC()
scan:
	for i := start; i < len(files); i++ {
		f := files[i]
		pos := 0
		for pos < f.size {
			n := checkRecord(f.data[pos:], &m, check)
			switch {
			case n > 0:
				pos += n
				process = f.from + int64(pos)
			case n == 0:
				if i == len(files)-1 {
					// A blank in the last file ends the log at the blank.
					break scan
				}
				process = f.from + int64(f.size)
				continue scan
			default:
				break scan
			}
		}
	}
	s.log.Info("commitlog recovered", "clean", s.lastExitOK, "fromFile", files[start].name(), "end", process)
	for _, cq := range s.allCQs() {
		if cq.maxPhysicOffset.Load() >= process {
			if err := cq.truncateAbove(process); err != nil {
				return err
			}
			cq.q.unmapUnheld()
		}
	}
	if err := s.commitLog.q.truncateDirty(process); err != nil {
		return err
	}
	if last := s.commitLog.q.last(); last != nil {
		// A tail file made sparse (by Java, or before files were reserved)
		// gets its blocks now, so appends into its mapping cannot fault.
		if err := last.reserveFrom(last.wrote.Load() &^ (osPageSize - 1)); err != nil {
			s.log.Warn("reserve commitlog tail", "file", last.name(), "err", err)
		}
	}
	if err := s.index.truncateAbove(process); err != nil {
		return err
	}
	// Dispatch what the consume queues miss. After a crash everything from the
	// checkpoint file on is re-dispatched; the duplicate guards skip what is there.
	from := files[start].from
	if s.lastExitOK {
		from = 0
		for _, cq := range s.allCQs() {
			from = max(from, cq.maxPhysicOffset.Load())
		}
		from = max(from, s.commitLog.q.minOffset())
	}
	from = min(from, process)
	if at, ok := s.index.rebuildFrom(); ok && s.cfg.MessageIndexEnable {
		gap := s.index.missFrom
		s.index.missFrom = -1 // a record that still finds no index file notes it again
		s.rebuildIndex(max(at, s.commitLog.q.minOffset()), from)
		if gap >= 0 {
			s.index.gapFilled()
		}
	}
	s.reputFrom.Store(from)
	s.doReput()
	if s.reputFrom.Load() < process {
		return errors.New("dispatch stopped before the end of the commitlog")
	}
	s.rebuildOffsets()
	return nil
}

// rebuildIndex indexes the records in [from, to) again: index files deleted at
// open held them, and the dispatch replay starts only at to. Java loses these
// keys (a crash deletes the index file being written, and a replay from the
// checkpoint seldom reaches back to where that file began); query by key or
// message id would miss them until they expire.
func (s *DefaultStore) rebuildIndex(from, to int64) {
	start, n := from, 0
	var m codec.Message
	q := s.commitLog.q
	for from < to {
		f := q.findHeld(from)
		if f == nil {
			break
		}
		pos := from - f.from
		end := min(f.wrote.Load(), to-f.from)
		for pos < end {
			if codec.RecordMagic(f.data[pos:end]) == codec.MagicBlank {
				pos = int64(f.size)
				break
			}
			size, err := codec.DecodeRecord(f.data[pos:end], &m)
			if err != nil {
				break // recovery validated [from, to): only a bad start gets here
			}
			p := scanProps(m.Properties)
			s.index.build(&m, p.uniq, p.keys, p.tags)
			pos += int64(size)
			n++
		}
		f.release()
		next := f.from + pos
		if next <= from || (pos < int64(f.size) && next < to) {
			break
		}
		from = next
	}
	s.log.Info("index rebuilt", "from", start, "to", to, "records", n)
}

// rebuildOffsets sets the topic-queue table from the consume queues and corrects
// each queue's min offset against the commitlog.
func (s *DefaultStore) rebuildOffsets() {
	minPhy := s.MinPhyOffset()
	t := make(map[tqKey]int64)
	for _, cq := range s.allCQs() {
		t[tqKey{cq.topic, cq.qid}] = cq.maxOffset()
		cq.correctMinOffset(minPhy)
		cq.q.unmapUnheld()
	}
	s.commitLog.setQueueOffsets(t)
}
