package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"rmqd/codec"
)

// GetMessage reads a queue as DefaultMessageStore.getMessage does. Records alias
// the mapped commitlog; the caller must Release the result.
func (s *DefaultStore) GetMessage(group, topic string, queueID int32, offset int64, maxMsgNums int32, maxTotalBytes int32, filter MessageFilter) *GetResult {
	return s.getMessage(topic, queueID, offset, maxMsgNums, maxTotalBytes, filter, true)
}

// GetMessageOnLoop is GetMessage for a reader on the network event loop, the
// thread that then writes the records to the socket: it does not touch their
// pages first (touchPages moves a disk read off that loop, which this reader
// cannot do). About a tenth of a catch-up read's CPU (cache misses taken
// twice).
func (s *DefaultStore) GetMessageOnLoop(topic string, queueID int32, offset int64, maxMsgNums int32, maxTotalBytes int32, filter MessageFilter) *GetResult {
	return s.getMessage(topic, queueID, offset, maxMsgNums, maxTotalBytes, filter, false)
}

func (s *DefaultStore) getMessage(topic string, queueID int32, offset int64, maxMsgNums int32, maxTotalBytes int32, filter MessageFilter, touch bool) *GetResult {
	if s.compaction != nil && !s.closed.Load() {
		if r := s.compaction.get(topic, queueID, offset, maxMsgNums, maxTotalBytes, filter); r != nil {
			return r
		}
	}
	return s.getMessageCQ(topic, queueID, offset, maxMsgNums, maxTotalBytes, filter, touch)
}

// getMessageCQ reads the consume queue (and the commitlog it points into).
func (s *DefaultStore) getMessageCQ(topic string, queueID int32, offset int64, maxMsgNums int32, maxTotalBytes int32, filter MessageFilter, touch bool) *GetResult {
	r := &GetResult{Status: GetNoMessageInQueue, NextBeginOffset: offset}
	if s.closed.Load() {
		r.Status = GetNoMatchedLogicQueue
		return r
	}
	cq := s.findCQ(topic, queueID)
	if cq == nil {
		r.Status = GetNoMatchedLogicQueue
		r.NextBeginOffset = s.correctOffset(offset, 0)
		return r
	}
	minOff, maxOff := cq.minOffset(), cq.maxOffset()
	r.MinOffset, r.MaxOffset = minOff, maxOff
	switch {
	case maxOff == 0:
		r.Status, r.NextBeginOffset = GetNoMessageInQueue, s.correctOffset(offset, 0)
		return r
	case offset < minOff:
		r.Status, r.NextBeginOffset = GetOffsetTooSmall, s.correctOffset(offset, minOff)
		return r
	case offset == maxOff:
		r.Status, r.NextBeginOffset = GetOffsetOverflowOne, offset
		return r
	case offset > maxOff:
		r.Status, r.NextBeginOffset = GetOffsetOverflowBadly, s.correctOffset(offset, maxOff)
		return r
	}
	if cq.batch {
		return s.getBatchMessages(r, cq, offset, maxMsgNums, maxTotalBytes, filter, touch)
	}
	cqFile, units := cq.unitsHeld(offset)
	if cqFile == nil {
		r.Status = GetOffsetFoundNull
		r.NextBeginOffset = s.correctOffset(offset, rollNext(offset*cqUnitSize, int64(cq.q.fileSize))/cqUnitSize)
		return r
	}
	defer cqFile.release()
	if maxMsgNums <= 0 {
		maxMsgNums = 1
	}
	maxFilter := max(s.live.Load().MaxFilterMessageSize, int(maxMsgNums)*cqUnitSize)
	maxPhy, hot := s.MaxPhyOffset(), s.HotCommitLogBytes()
	cold := s.coldWindow(maxPhy) // below -1 when off: one compare per record
	r.Status = GetNoMatchedMessage
	r.makeRoom(maxMsgNums, len(units)/cqUnitSize)
	r.files = r.fileSlots[:0]
	nextPhyFileStart := int64(math.MinInt64)
	var cur *mappedFile // commitlog file held for the records taken from it
	var lastPhy int64   // the last unit scanned, for SuggestPullingFromSlave
	i := 0
	for ; i+cqUnitSize <= len(units) && i < maxFilter; i += cqUnitSize {
		phy, size, tags := readUnit(units[i:])
		if s.batchFull(len(r.Records), r.BufferTotalSize, int(size), maxMsgNums, maxTotalBytes, maxPhy-phy <= hot) {
			break
		}
		lastPhy = phy
		if nextPhyFileStart != math.MinInt64 && phy < nextPhyFileStart {
			continue
		}
		if filter != nil && !filter.MatchTagsCode(tags) {
			continue
		}
		var rec []byte
		if cur != nil && phy >= cur.from && phy+int64(size) <= cur.from+cur.wrote.Load() {
			rec = cur.data[phy-cur.from : phy-cur.from+int64(size) : phy-cur.from+int64(size)]
		} else {
			f, b := s.commitLog.readRecord(phy, int(size))
			if f == nil {
				if r.BufferTotalSize == 0 {
					r.Status = GetMessageWasRemoving
				}
				nextPhyFileStart = rollNext(phy, int64(s.cfg.MappedFileSizeCommitLog))
				continue
			}
			if f == cur {
				f.release()
			} else {
				r.files = append(r.files, f)
				cur = f
			}
			rec = b
		}
		// Counted before the record filter, as Java does: the read was paid.
		if phy < cold.below && s.isCold(cold, phy, cur.data, rec) {
			r.ColdDataSum += int64(size)
		}
		if filter != nil && !filter.MatchRecord(rec) {
			if r.BufferTotalSize == 0 {
				r.Status = GetNoMatchedMessage
			}
			continue
		}
		r.Records = append(r.Records, rec)
		if touch {
			r.touched += touchPages(rec)
		}
		r.BufferTotalSize += len(rec)
		r.Status = GetFound
		nextPhyFileStart = math.MinInt64
	}
	r.NextBeginOffset = offset + int64(i/cqUnitSize)
	r.SuggestPullingFromSlave = maxPhy-lastPhy > hot
	if i > 0 {
		r.FallBehind = maxPhy - lastPhy
	}
	return r
}

// batchFull is Java's isTheBatchFull: whether a record of size ends a pull
// that holds count records of total bytes. The first record always goes;
// then the pull's own bounds (maxTotalBytes <= 0: none), then the in-memory
// limits for a record within the hot end of the commitlog, the on-disk ones
// otherwise. One pull returns at most that whatever the client asked: clients
// size their process queues on it (e2e PullParamTest asserts it).
func (s *DefaultStore) batchFull(count, total, size int, maxMsgNums, maxTotalBytes int32, inMem bool) bool {
	if count == 0 || total == 0 {
		return false
	}
	if count >= int(maxMsgNums) || maxTotalBytes > 0 && total+size > int(maxTotalBytes) {
		return true
	}
	c := s.live.Load()
	maxBytes, maxCount := c.MaxTransferBytesOnMessageInMemory, c.MaxTransferCountOnMessageInMemory
	if !inMem {
		maxBytes, maxCount = c.MaxTransferBytesOnMessageInDisk, c.MaxTransferCountOnMessageInDisk
	}
	return maxBytes > 0 && total+size > maxBytes || maxCount > 0 && count >= maxCount
}

// touchPages reads one byte of every page rec spans. The records are written
// to the socket from the mapping by the network event loop; a page that left
// the page cache is read from disk here, on the pull worker, rather than in
// a fault on the loop that serves every other connection.
func touchPages(rec []byte) byte {
	var sum byte
	for p := 0; p < len(rec); p += osPageSize {
		sum += rec[p]
	}
	if len(rec) > 0 {
		sum += rec[len(rec)-1]
	}
	return sum
}

// correctOffset is Java's nextOffsetCorrection: a slave (unless
// offsetCheckInSlave) answers with the offset asked, never moving a consumer
// to what its own, possibly lagging or emptied, queue holds; the broker then
// sends the consumer to its master (PULL_RETRY_IMMEDIATELY).
func (s *DefaultStore) correctOffset(asked, corrected int64) int64 {
	if s.Role() == RoleSlave && !s.live.Load().OffsetCheckInSlave {
		return asked
	}
	return corrected
}

func rollNext(offset, fileSize int64) int64 { return offset + fileSize - offset%fileSize }

// MaxOffsetInQueue is the next queue offset to be written, 0 for an unknown queue.
func (s *DefaultStore) MaxOffsetInQueue(topic string, queueID int32) int64 {
	if cq := s.findCQ(topic, queueID); cq != nil {
		return cq.maxOffset()
	}
	return 0
}

// MinOffsetInQueue is the first live queue offset, 0 for an unknown queue.
// ConsumeQueueFileEnd is the queue offset just past the consume-queue file
// that holds queueOffset (every queue's files hold the same number of units).
func (s *DefaultStore) ConsumeQueueFileEnd(queueOffset int64) int64 {
	units := int64(max(s.cfg.cqFileSize()/cqUnitSize, 1))
	return (max(queueOffset, 0)/units + 1) * units
}

// For a compacted queue it is the first kept message when the consume queue
// starts later (Java answers the consume queue's, so a consumer that seeks to
// the beginning skips what retention deleted but compaction kept).
func (s *DefaultStore) MinOffsetInQueue(topic string, queueID int32) int64 {
	var m int64
	if cq := s.findCQ(topic, queueID); cq != nil {
		m = cq.minOffset()
	}
	if s.compaction != nil {
		if c, ok := s.compaction.minOffset(topic, queueID); ok && c < m {
			m = c
		}
	}
	return m
}

// storeTimeAt reads the STORETIMESTAMP of the record at phy, -1 if it is gone.
func (s *DefaultStore) storeTimeAt(phy int64, size int32) int64 {
	f, b := s.commitLog.readRecord(phy, int(size))
	if f == nil {
		return -1
	}
	defer f.release()
	if len(b) < 64 {
		return -1
	}
	pos := 48 + 8
	if int32(binary.BigEndian.Uint32(b[36:]))&codec.SysFlagBornHostV6 != 0 {
		pos = 48 + 20
	}
	if len(b) < pos+8 {
		return -1
	}
	return int64(binary.BigEndian.Uint64(b[pos:]))
}

// OffsetInQueueByTime is the first queue offset whose store time is at or after
// timestamp, the queue's max offset when every message is older (5.x
// getOffsetInQueueByTime with BoundaryType.LOWER, the SEARCH_OFFSET default).
func (s *DefaultStore) OffsetInQueueByTime(topic string, queueID int32, timestamp int64) int64 {
	cq := s.findCQ(topic, queueID)
	if cq == nil {
		return 0
	}
	minPhy := s.MinPhyOffset()
	if cq.batch {
		return cq.bcqOffsetByTime(timestamp, minPhy)
	}
	lo, hi := cq.minOffset(), cq.maxOffset()
	for lo < hi {
		mid := lo + (hi-lo)/2
		phy, size, _, ok := cq.unitAt(mid)
		before := true // blank, removed or older units count as before timestamp
		if ok && phy >= minPhy && size != math.MaxInt32 {
			if t := s.storeTimeAt(phy, size); t >= timestamp {
				before = false
			}
		}
		if before {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// MessageStoreTimestamp is the store time of one queue entry, -1 if it is gone.
func (s *DefaultStore) MessageStoreTimestamp(topic string, queueID int32, queueOffset int64) int64 {
	cq := s.findCQ(topic, queueID)
	if cq == nil {
		return -1
	}
	phy, size, _, ok := cq.unitAt(queueOffset)
	if !ok {
		return -1
	}
	return s.storeTimeAt(phy, size)
}

// EarliestMessageTime is the store time of the queue's first live entry, -1 if none.
func (s *DefaultStore) EarliestMessageTime(topic string, queueID int32) int64 {
	cq := s.findCQ(topic, queueID)
	if cq == nil {
		return -1
	}
	return s.MessageStoreTimestamp(topic, queueID, cq.minOffset())
}

// ErrNoRecord means no valid record lies at the requested commitlog offset.
var ErrNoRecord = errors.New("store: no record at offset")

// ReadRecordByOffset copies the record at a commitlog offset.
func (s *DefaultStore) ReadRecordByOffset(commitLogOffset int64) ([]byte, error) {
	return s.AppendRecord(nil, commitLogOffset)
}

// AppendRecord appends the record at a commitlog offset to dst: a loop that
// reads records one by one (timer delivery) reuses one buffer.
func (s *DefaultStore) AppendRecord(dst []byte, commitLogOffset int64) ([]byte, error) {
	f, b := s.commitLog.readRecord(commitLogOffset, 0)
	if f == nil {
		return dst, fmt.Errorf("%w %d", ErrNoRecord, commitLogOffset)
	}
	defer f.release()
	return append(dst, b...), nil
}

// LookMessageByOffset decodes the record at a commitlog offset into an owned
// copy: its strings and body alias a copy of the record only it refers to.
func (s *DefaultStore) LookMessageByOffset(commitLogOffset int64) (*codec.Message, error) {
	b, err := s.AppendRecord(nil, commitLogOffset)
	if err != nil {
		return nil, err
	}
	m := new(codec.Message)
	if _, err := codec.DecodeRecord(b, m); err != nil {
		return nil, fmt.Errorf("record at %d: %w", commitLogOffset, err)
	}
	return m, nil
}

// QueryMessage finds records of topic whose UNIQ_KEY or a KEYS token equals key,
// stored within [begin, end] ms, and copies them one after another into body,
// in commitlog order.
// It stops before a record that would take body past maxBytes (but always
// takes the first one): clients refuse a larger frame, and each found record
// may be a 4 MiB message.
func (s *DefaultStore) QueryMessage(topic, key string, maxNum int32, maxBytes int, begin, end int64) (body []byte, count int, lastUpdateTimestamp, lastUpdatePhyOffset int64) {
	return s.queryMessage(topic, key, false, maxNum, maxBytes, begin, end)
}

// QueryMessageByTag is QueryMessage for the records whose TAGS equals tag,
// through Java 5.4's tag entries (indexType T).
func (s *DefaultStore) QueryMessageByTag(topic, tag string, maxNum int32, maxBytes int, begin, end int64) (body []byte, count int, lastUpdateTimestamp, lastUpdatePhyOffset int64) {
	return s.queryMessage(topic, tag, true, maxNum, maxBytes, begin, end)
}

func (s *DefaultStore) queryMessage(topic, key string, byTag bool, maxNum int32, maxBytes int, begin, end int64) (body []byte, count int, lastUpdateTimestamp, lastUpdatePhyOffset int64) {
	n := int(maxNum)
	if batch := s.live.Load().MaxMsgsNumBatch; n <= 0 || n > batch {
		n = batch
	}
	h, matches := keyHash(topic, key), hasKey
	if byTag {
		h, matches = tagHash(topic, key), hasTag
	}
	offs, lastTs, lastPhy := s.index.query(h, n, begin, end)
	if len(offs) == 0 {
		// Java tells the index's last update only with what it found.
		return nil, 0, 0, 0
	}
	// Oldest first, as Java sorts them (the index walks newest first), and
	// each record once: Java would repeat one whose KEYS names the key twice,
	// or that re-dispatch after a crash indexed again.
	slices.Sort(offs)
	offs = slices.Compact(offs)
	var m codec.Message
	for _, off := range offs {
		f, b := s.commitLog.readRecord(off, 0)
		if f == nil {
			continue
		}
		if count > 0 && len(body)+len(b) > maxBytes {
			f.release()
			break
		}
		if _, err := codec.DecodeRecord(b, &m); err == nil && m.Topic == topic && matches(&m, key) {
			body = append(body, b...)
			count++
		}
		f.release()
	}
	return body, count, lastTs, lastPhy
}

// hasTag compares the real tags: index hashes collide.
func hasTag(m *codec.Message, tag string) bool {
	t, ok := codec.PropertyValue(m.Properties, codec.PropTags)
	return ok && t == tag
}

// hasKey compares the real keys: index hashes collide.
func hasKey(m *codec.Message, key string) bool {
	if u, ok := codec.PropertyValue(m.Properties, codec.PropUniqKey); ok && u == key {
		return true
	}
	keys, _ := codec.PropertyValue(m.Properties, codec.PropKeys)
	for _, k := range strings.Split(keys, " ") {
		if k == key {
			return true
		}
	}
	return false
}

// makeRoom sizes Records once for a read of at most maxMsgNums records from
// the units the queue holds past the offset: a caught-up long poll reads one
// or two, so it gets room for those, not for the 32 asked (768 bytes a pull).
func (r *GetResult) makeRoom(maxMsgNums int32, units int) {
	if n := max(min(int(maxMsgNums), 64, units), 1); n <= len(r.recSlots) {
		r.Records = r.recSlots[:0]
	} else {
		r.Records = make([][]byte, 0, n)
	}
}
