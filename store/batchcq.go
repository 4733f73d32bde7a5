package store

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strconv"

	"rmqd/codec"
)

// Batch consume queues (Java 5's BatchConsumeQueue) serve queue.type=BatchCQ
// topics. A unit covers batchSize messages from msgBaseOffset on, so a record
// holding an inner batch (one commitlog record, INNER_BATCH_FLAG, INNER_NUM
// messages in its body) takes one unit however many messages it carries. Units
// are no longer at offset*unitSize: a message offset is found by a binary
// search on msgBaseOffset. Files live under batchconsumequeue/, where Java
// puts them, in Java's unit layout, so the two brokers read each other's
// stores.
const (
	// bcqUnitSize is commitlog offset(8), size(4), tags code(8), store
	// time(8), msgBaseOffset(8), batchSize(2), compactedOffset(4), reserved(4).
	bcqUnitSize = 46
	bcqDirName  = "batchconsumequeue"
)

// bcqUnit is one decoded batch consume-queue unit.
type bcqUnit struct {
	phy       int64
	size      int32
	tags      int64
	storeTime int64
	base      int64
	num       int16
}

func (u bcqUnit) end() int64 { return u.base + int64(u.num) }

func putBatchUnit(b []byte, u bcqUnit) {
	_ = b[bcqUnitSize-1]
	binary.BigEndian.PutUint64(b[12:], uint64(u.tags))
	binary.BigEndian.PutUint64(b[20:], uint64(u.storeTime))
	binary.BigEndian.PutUint64(b[28:], uint64(u.base))
	binary.BigEndian.PutUint16(b[36:], uint16(u.num))
	binary.BigEndian.PutUint32(b[38:], math.MaxUint32) // compactedOffset: INVALID_POS (-1)
	binary.BigEndian.PutUint32(b[42:], 0)
	binary.BigEndian.PutUint64(b[0:], uint64(u.phy))
	// The size goes last, as in a simple queue: a torn unit reads as the end.
	binary.BigEndian.PutUint32(b[8:], uint32(u.size))
}

func readBatchUnit(b []byte) bcqUnit {
	_ = b[bcqUnitSize-1]
	return bcqUnit{
		phy:       int64(binary.BigEndian.Uint64(b)),
		size:      int32(binary.BigEndian.Uint32(b[8:])),
		tags:      int64(binary.BigEndian.Uint64(b[12:])),
		storeTime: int64(binary.BigEndian.Uint64(b[20:])),
		base:      int64(binary.BigEndian.Uint64(b[28:])),
		num:       int16(binary.BigEndian.Uint16(b[36:])),
	}
}

// valid is Java's recovery test of a unit.
func (u bcqUnit) valid() bool { return u.phy >= 0 && u.size > 0 && u.base >= 0 && u.num > 0 }

func (c *Config) bcqFileSize() int {
	n := c.MapperFileSizeBatchConsumeQueue
	if n <= 0 {
		n = 300000 * bcqUnitSize
	}
	return max((n+bcqUnitSize-1)/bcqUnitSize*bcqUnitSize, bcqUnitSize)
}

func newBatchConsumeQueue(topic string, qid int32, dir string, fileSize int, log *slog.Logger, lazy *lazyMaps) *consumeQueue {
	c := newConsumeQueue(topic, qid, dir, fileSize, log, lazy)
	c.batch = true
	c.bMin.Store(-1)
	return c
}

// innerBatch reads the base offset and message count of a record for its batch
// unit: INNER_BASE and INNER_NUM of an inner batch, else the record's queue
// offset and 1 (DispatchRequest's defaults; CommitLog.setBatchSizeIfNeeded).
func innerBatch(m *codec.Message) (base int64, num int16) {
	base, num = m.QueueOffset, 1
	if m.SysFlag&codec.SysFlagInnerBatch == 0 {
		return base, num
	}
	var vals [2]string
	var found [2]bool
	codec.PropertyValues(m.Properties, []string{codec.PropInnerNum, codec.PropInnerBase}, vals[:], found[:])
	if !found[0] || !found[1] {
		return base, num
	}
	n, err1 := strconv.ParseInt(vals[0], 10, 16)
	b, err2 := strconv.ParseInt(vals[1], 10, 64)
	if err1 != nil || err2 != nil || n < 1 || b < 0 {
		return base, num
	}
	return b, int16(n)
}

// dispatchBatch writes a record's unit into its batch consume queue and tells
// the arriving listener of the messages it covers.
func (s *DefaultStore) dispatchBatch(cq *consumeQueue, m *codec.Message, size int, tags int64) error {
	base, num := innerBatch(m)
	u := bcqUnit{phy: m.CommitLogOffset, size: int32(size), tags: tags, storeTime: m.StoreTimestamp, base: base, num: num}
	if err := cq.putBatch(u); err != nil {
		return fmt.Errorf("batch consume queue %s/%d: %w", m.Topic, m.QueueID, err)
	}
	s.lastLogicTs.Store(m.StoreTimestamp)
	if l := s.listener.Load(); l != nil {
		(*l)(m.Topic, m.QueueID, u.end(), tags, m.StoreTimestamp, m.Properties)
	}
	return nil
}

// putBatch appends one unit (BatchConsumeQueue.putBatchMessagePositionInfo).
func (c *consumeQueue) putBatch(u bcqUnit) error {
	if u.phy+int64(u.size) <= c.maxPhysicOffset.Load() {
		return nil // already dispatched (re-dispatch during recovery)
	}
	f, err := c.q.lastForWrite(c.q.maxOffset())
	if err != nil {
		return err
	}
	if !f.hold() {
		return fmt.Errorf("batch consume queue %s/%d: file %s unavailable", c.topic, c.qid, f.name())
	}
	defer f.release()
	f.firstCreate = false
	w := f.wrote.Load()
	putBatchUnit(f.data[w:], u)
	if w == 0 {
		first := u // its own variable: taking u's address would move every unit to the heap
		f.bcqFirst.Store(&first)
	}
	f.wrote.Store(w + bcqUnitSize)
	c.maxPhysicOffset.Store(u.phy + int64(u.size))
	c.bMax.Store(u.end())
	if c.bMin.Load() < 0 {
		c.bMin.Store(u.base)
	}
	return nil
}

// unitIn reads unit i of a held file.
func unitIn(f *mappedFile, i int64) bcqUnit { return readBatchUnit(f.data[i*bcqUnitSize:]) }

// firstUnit is f's first unit, read once and cached (mappedFile.bcqFirst);
// false when f has none or cannot be mapped. The writer stores the unit it
// puts at position 0 before it moves wrote past it, so a cached unit is the
// file's while wrote covers it (a file cut to nothing and written again gets
// the new one).
func firstUnit(f *mappedFile) (bcqUnit, bool) {
	if f.wrote.Load() < bcqUnitSize {
		return bcqUnit{}, false
	}
	if u := f.bcqFirst.Load(); u != nil {
		return *u, true
	}
	if !f.hold() {
		return bcqUnit{}, false
	}
	u := unitIn(f, 0)
	f.release()
	f.bcqFirst.CompareAndSwap(nil, &u)
	return u, true
}

// bcqFileAt is the index in files of the last file whose first unit is at or
// below key by the given order (-1 when none is), by a binary search over the
// files' cached first units: a lookup maps only the file it lands in, not
// every file after it. Files without units (only a new last one has none)
// sort after every key.
func bcqFileAt(files []*mappedFile, after func(first bcqUnit) bool) int {
	return sort.Search(len(files), func(i int) bool {
		u, ok := firstUnit(files[i])
		if !ok {
			// Empty, or destroyed by retention (always the first files): either
			// way its units are not the ones looked for.
			return files[i].wrote.Load() < bcqUnitSize
		}
		return after(u)
	}) - 1
}

// bcqFind returns the held file and byte position of the unit covering
// msgOffset (the last unit whose base is at or below it), or of the next unit
// when msgOffset falls in a gap or below the first unit; nil when no unit is
// at or past it.
func (c *consumeQueue) bcqFind(msgOffset int64) (*mappedFile, int64) {
	files := c.q.view()
	i := bcqFileAt(files, func(u bcqUnit) bool { return u.base > msgOffset })
	if i >= 0 && files[i].hold() {
		f := files[i]
		n := f.wrote.Load() / bcqUnitSize
		lo := searchUnits(f, n, func(u bcqUnit) bool { return u.base > msgOffset }) - 1
		if lo >= 0 && unitIn(f, lo).end() > msgOffset {
			return f, lo * bcqUnitSize
		}
		if lo+1 < n {
			return f, (lo + 1) * bcqUnitSize
		}
		f.release()
	}
	// The first unit of the next file that has one.
	for _, f := range files[i+1:] {
		if f.wrote.Load() >= bcqUnitSize && f.hold() {
			return f, 0
		}
	}
	return nil, 0
}

// searchUnits is the index of the first of the n units of held file f for
// which after holds (n when none does); after must be false then true along
// the file.
func searchUnits(f *mappedFile, n int64, after func(u bcqUnit) bool) int64 {
	lo, hi := int64(0), n
	for lo < hi {
		mid := lo + (hi-lo)/2
		if after(unitIn(f, mid)) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// bcqOffsetByTime is the base of the first unit stored at or after timestamp
// whose record the commitlog still holds (phy at or above minPhy), the max
// offset when there is none: OffsetInQueueByTime read from the units' own
// store times, a binary search over files and then within one, as Java's
// BatchConsumeQueue does with its time cache.
func (c *consumeQueue) bcqOffsetByTime(timestamp, minPhy int64) int64 {
	atOrAfter := func(u bcqUnit) bool { return u.phy >= minPhy && u.storeTime >= timestamp }
	files := c.q.view()
	// The answer is in the last file starting before the time, or is the
	// first unit of the file after it.
	i := bcqFileAt(files, atOrAfter)
	if i >= 0 && files[i].hold() {
		f := files[i]
		n := f.wrote.Load() / bcqUnitSize
		k := searchUnits(f, n, atOrAfter)
		var base int64
		if k < n {
			base = unitIn(f, k).base
		}
		f.release()
		if k < n {
			return base
		}
	}
	for _, f := range files[i+1:] {
		if u, ok := firstUnit(f); ok {
			return u.base
		}
	}
	return c.maxOffset()
}

// bcqUnitAt is the unit covering msgOffset.
func (c *consumeQueue) bcqUnitAt(msgOffset int64) (bcqUnit, bool) {
	f, pos := c.bcqFind(msgOffset)
	if f == nil {
		return bcqUnit{}, false
	}
	defer f.release()
	u := readBatchUnit(f.data[pos:])
	return u, u.base <= msgOffset && msgOffset < u.end()
}

// batchUnitEnd is where a batch unit's record ends, and whether the unit is
// valid (recover).
func batchUnitEnd(b []byte) (int64, bool) {
	u := readBatchUnit(b)
	return u.phy + int64(u.size), u.valid()
}

// bcqRevise sets the min and max message offsets from the first unit of the
// first file and the last unit written (reviseMaxAndMinOffsetInQueue).
func (c *consumeQueue) bcqRevise() {
	c.bMin.Store(-1)
	c.bMax.Store(0)
	files := c.q.snapshot()
	for _, f := range files {
		if f.wrote.Load() >= bcqUnitSize && f.hold() {
			c.bMin.Store(unitIn(f, 0).base)
			f.release()
			break
		}
	}
	for i := len(files) - 1; i >= 0; i-- {
		f := files[i]
		n := f.wrote.Load() / bcqUnitSize
		if n > 0 && f.hold() {
			c.bMax.Store(unitIn(f, n-1).end())
			f.release()
			break
		}
	}
}

// bcqTruncateAbove drops the units that point at or past phyOffset.
func (c *consumeQueue) bcqTruncateAbove(phyOffset int64) error {
	files := c.q.snapshot()
	end := c.q.maxOffset()
	for i := len(files) - 1; i >= 0; i-- {
		f := files[i]
		n := f.wrote.Load() / bcqUnitSize
		if n == 0 {
			// A file made ahead of its first unit: it goes with the cut.
			end = f.from
			continue
		}
		if !f.hold() {
			return fmt.Errorf("batch consume queue %s/%d: cannot map %s", c.topic, c.qid, f.name())
		}
		k := searchUnits(f, n, func(u bcqUnit) bool { return u.phy >= phyOffset })
		f.release()
		if k == n {
			break // every unit of this file is below the cut
		}
		end = f.from + k*bcqUnitSize
		if k > 0 {
			break
		}
	}
	if end >= c.q.maxOffset() {
		return nil
	}
	if err := c.q.truncateDirty(end); err != nil {
		return err
	}
	c.maxPhysicOffset.Store(-1)
	if f := c.q.last(); f != nil && f.wrote.Load() >= bcqUnitSize && f.hold() {
		u := readBatchUnit(f.data[f.wrote.Load()-bcqUnitSize:])
		f.release()
		c.maxPhysicOffset.Store(u.phy + int64(u.size))
	}
	c.bcqRevise()
	return nil
}

// bcqCorrectMinOffset moves the min message offset past the units of the first
// file that point below the commitlog's min offset (correctMinOffset).
func (c *consumeQueue) bcqCorrectMinOffset(minPhy int64) {
	c.bcqRevise()
	f := c.q.first()
	if f == nil || !f.hold() {
		return
	}
	defer f.release()
	n := f.wrote.Load() / bcqUnitSize
	if k := searchUnits(f, n, func(u bcqUnit) bool { return u.phy >= minPhy }); k > 0 {
		c.bMin.Store(unitIn(f, k-1).end())
	}
}

// bcqDeleteExpired removes files (never the last) whose last unit points below
// minPhy.
func (c *consumeQueue) bcqDeleteExpired(minPhy int64) int {
	files := c.q.snapshot()
	var drop []*mappedFile
	for i := 0; i < len(files)-1; i++ {
		f := files[i]
		n := f.wrote.Load() / bcqUnitSize
		if n == 0 || !f.hold() {
			break
		}
		u := unitIn(f, n-1)
		f.release()
		if u.phy >= minPhy {
			break
		}
		drop = append(drop, f)
	}
	c.q.removeFiles(drop)
	return len(drop)
}

// getBatchMessages is getMessage for a batch consume queue, from the unit
// covering offset on: each unit's record goes whole (an offset inside an inner
// batch returns the whole batch, whose messages the client numbers from
// msgBaseOffset), the next offset is the end of the last unit taken, and a
// unit counts its batchSize messages against maxMsgNums (DefaultMessageStore
// getMessage over a BatchConsumeQueue iterator).
func (s *DefaultStore) getBatchMessages(r *GetResult, cq *consumeQueue, offset int64, maxMsgNums, maxTotalBytes int32, filter MessageFilter, touch bool) *GetResult {
	f, pos := cq.bcqFind(offset)
	if f == nil {
		r.Status, r.NextBeginOffset = GetOffsetFoundNull, s.correctOffset(offset, cq.maxOffset())
		return r
	}
	defer f.release()
	units := f.data[pos:f.wrote.Load()]
	if maxMsgNums <= 0 {
		maxMsgNums = 1
	}
	maxFilter := max(s.live.Load().MaxFilterMessageSize, int(maxMsgNums)*bcqUnitSize)
	maxPhy, hot := s.MaxPhyOffset(), s.HotCommitLogBytes()
	cold := s.coldWindow(maxPhy)
	r.Status = GetNoMatchedMessage
	r.makeRoom(maxMsgNums, len(units)/bcqUnitSize) // a unit is one record
	r.files = r.fileSlots[:0]
	next := offset
	count := 0
	var cur *mappedFile
	var lastPhy int64
	scanned := false
	for i := 0; i+bcqUnitSize <= len(units) && i < maxFilter; i += bcqUnitSize {
		u := readBatchUnit(units[i:])
		n := int(u.num)
		if count > 0 && count+n > int(maxMsgNums) ||
			s.batchFull(count, r.BufferTotalSize, int(u.size), math.MaxInt32, maxTotalBytes, maxPhy-u.phy <= hot) {
			break
		}
		lastPhy, scanned = u.phy, true
		next = u.end()
		if filter != nil && !filter.MatchTagsCode(u.tags) {
			continue
		}
		var rec []byte
		if cur != nil && u.phy >= cur.from && u.phy+int64(u.size) <= cur.from+cur.wrote.Load() {
			rec = cur.data[u.phy-cur.from : u.phy-cur.from+int64(u.size) : u.phy-cur.from+int64(u.size)]
		} else {
			rf, b := s.commitLog.readRecord(u.phy, int(u.size))
			if rf == nil {
				if r.BufferTotalSize == 0 {
					r.Status = GetMessageWasRemoving
				}
				continue
			}
			if rf == cur {
				rf.release()
			} else {
				r.files = append(r.files, rf)
				cur = rf
			}
			rec = b
		}
		if u.phy < cold.below && s.isCold(cold, u.phy, cur.data, rec) {
			r.ColdDataSum += int64(u.size)
		}
		if filter != nil && !filter.MatchRecord(rec) {
			continue
		}
		r.Records = append(r.Records, rec)
		if touch {
			r.touched += touchPages(rec)
		}
		r.BufferTotalSize += len(rec)
		r.InnerMessages += n - 1
		count += n
		r.Status = GetFound
	}
	r.NextBeginOffset = next
	r.SuggestPullingFromSlave = maxPhy-lastPhy > hot
	if scanned {
		r.FallBehind = maxPhy - lastPhy
	}
	return r
}
