package store

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"sync/atomic"
)

// cqUnitSize is one consume-queue unit: commitlog offset, size, tags code.
const cqUnitSize = 20

// consumeQueue is the index of one topic queue into the commitlog. Only the
// dispatcher writes it; readers see units below the file's wrote position.
type consumeQueue struct {
	topic string
	qid   int32
	q     *mappedFileQueue
	log   *slog.Logger

	// maxPhysicOffset is offset+size of the last unit written (duplicate guard).
	maxPhysicOffset atomic.Int64
	// minLogicOffset is the byte position of the first live unit.
	minLogicOffset atomic.Int64

	// batch marks a batch consume queue (batchcq.go); bMin and bMax are its
	// first live and next message offsets (Java's minOffsetInQueue and
	// maxOffsetInQueue), which its byte positions no longer give.
	batch      bool
	bMin, bMax atomic.Int64
}

func newConsumeQueue(topic string, qid int32, dir string, fileSize int, log *slog.Logger, lazy *lazyMaps) *consumeQueue {
	c := &consumeQueue{topic: topic, qid: qid, q: newMappedFileQueue(dir, fileSize), log: log}
	c.q.lazy = lazy
	c.maxPhysicOffset.Store(-1)
	return c
}

func putUnit(b []byte, phy int64, size int32, tags int64) {
	// The size goes last: recovery takes a unit with size 0 as the end.
	binary.BigEndian.PutUint64(b[12:], uint64(tags))
	binary.BigEndian.PutUint64(b[0:], uint64(phy))
	binary.BigEndian.PutUint32(b[8:], uint32(size))
}

func readUnit(b []byte) (phy int64, size int32, tags int64) {
	return int64(binary.BigEndian.Uint64(b)), int32(binary.BigEndian.Uint32(b[8:])), int64(binary.BigEndian.Uint64(b[12:]))
}

// put writes the unit of logical offset cqOffset (ConsumeQueue.putMessagePositionInfo).
func (c *consumeQueue) put(phy int64, size int32, tags int64, cqOffset int64) error {
	if phy+int64(size) <= c.maxPhysicOffset.Load() {
		return nil // already dispatched (re-dispatch during recovery)
	}
	expected := cqOffset * cqUnitSize
	f, err := c.q.lastForWrite(expected)
	if err != nil {
		return err
	}
	// The writer holds the file too: a lazy one is mapped only while held.
	if !f.hold() {
		return fmt.Errorf("consume queue %s/%d: file %s unavailable", c.topic, c.qid, f.name())
	}
	defer f.release()
	if f.firstCreate && cqOffset != 0 && f.wrote.Load() == 0 {
		// A queue that starts above 0: fill the head with blank units.
		pos := expected - f.from
		for p := int64(0); p < pos; p += cqUnitSize {
			putUnit(f.data[p:], 0, math.MaxInt32, 0)
		}
		f.wrote.Store(pos)
		f.flushed.Store(0)
		c.q.flushedWhere.Store(f.from)
		c.minLogicOffset.Store(expected)
	}
	f.firstCreate = false
	cur := f.from + f.wrote.Load()
	if expected < cur {
		return nil // duplicate position
	}
	if expected > cur {
		c.log.Warn("consume queue gap", "topic", c.topic, "queue", c.qid, "expected", expected, "current", cur)
	}
	w := f.wrote.Load()
	putUnit(f.data[w:], phy, size, tags)
	f.wrote.Store(w + cqUnitSize)
	c.maxPhysicOffset.Store(phy + int64(size))
	return nil
}

func (c *consumeQueue) maxOffset() int64 {
	if c.batch {
		return c.bMax.Load()
	}
	return c.q.maxOffset() / cqUnitSize
}

func (c *consumeQueue) minOffset() int64 {
	if c.batch {
		return max(c.bMin.Load(), 0)
	}
	return c.minLogicOffset.Load() / cqUnitSize
}

// recover finds the valid end, scanning from the third-last file
// (ConsumeQueue.recover, BatchConsumeQueue.recover): a simple unit is valid
// with offset >= 0 and size > 0, a batch unit as bcqUnit.valid says; a batch
// queue then revises its message offsets.
func (c *consumeQueue) recover() error {
	unitSize, unitEnd := int64(cqUnitSize), simpleUnitEnd
	if c.batch {
		unitSize, unitEnd = bcqUnitSize, batchUnitEnd
	}
	files := c.q.snapshot()
	if len(files) == 0 {
		return nil
	}
	idx := max(0, len(files)-3)
	process := files[idx].from
	maxPhy := int64(-1)
	for i := idx; i < len(files); i++ {
		f := files[i]
		if !f.hold() {
			return fmt.Errorf("consume queue %s/%d: cannot map %s", c.topic, c.qid, f.name())
		}
		pos := int64(0)
		for ; pos+unitSize <= int64(f.size); pos += unitSize {
			end, valid := unitEnd(f.data[pos:])
			if !valid {
				break
			}
			if end >= 0 {
				maxPhy = end
			}
		}
		f.release()
		process = f.from + pos
		if pos+unitSize <= int64(f.size) {
			break
		}
	}
	if err := c.q.truncateDirty(process); err != nil {
		return err
	}
	c.maxPhysicOffset.Store(maxPhy)
	if c.batch {
		c.bcqRevise()
	}
	return nil
}

// simpleUnitEnd is where a simple unit's record ends (-1 for a unit of size
// MaxInt32, which names no record end), and whether the unit is valid.
func simpleUnitEnd(b []byte) (int64, bool) {
	phy, size, _ := readUnit(b)
	if phy < 0 || size <= 0 {
		return 0, false
	}
	if size == math.MaxInt32 {
		return -1, true
	}
	return phy + int64(size), true
}

// truncateAbove drops units that point at or past phyOffset (the commitlog was
// cut there).
func (c *consumeQueue) truncateAbove(phyOffset int64) error {
	if c.batch {
		return c.bcqTruncateAbove(phyOffset)
	}
	files := c.q.snapshot()
	end := c.q.maxOffset()
	for i := len(files) - 1; i >= 0; i-- {
		f := files[i]
		wrote := f.wrote.Load()
		if !f.hold() {
			return fmt.Errorf("consume queue %s/%d: cannot map %s", c.topic, c.qid, f.name())
		}
		pos := int64(0)
		for ; pos+cqUnitSize <= wrote; pos += cqUnitSize {
			phy, size, _ := readUnit(f.data[pos:])
			if size != math.MaxInt32 && phy >= phyOffset {
				break
			}
		}
		f.release()
		if pos+cqUnitSize > wrote {
			break // every unit of this file is below the cut
		}
		end = f.from + pos
		if pos > 0 {
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
	if f := c.q.last(); f != nil && f.wrote.Load() >= cqUnitSize && f.hold() {
		phy, size, _ := readUnit(f.data[f.wrote.Load()-cqUnitSize:])
		f.release()
		if size != math.MaxInt32 {
			c.maxPhysicOffset.Store(phy + int64(size))
		}
	}
	return nil
}

// correctMinOffset sets minLogicOffset to the first unit pointing at or above the
// commitlog's min offset.
// With none, it is the end of the units looked at (Java's "future slot"), not
// the queue's end read afterwards: a unit the dispatcher adds meanwhile is live
// and must stay at or above the min.
func (c *consumeQueue) correctMinOffset(minPhy int64) {
	if c.batch {
		c.bcqCorrectMinOffset(minPhy)
		return
	}
	files := c.q.snapshot()
	end := int64(-1)
	for _, f := range files {
		if !f.hold() {
			continue // deleted under us (topic deletion)
		}
		pos, wrote, found := firstUnitAtOrAbove(f, minPhy)
		f.release()
		if found {
			c.minLogicOffset.Store(f.from + pos)
			return
		}
		end = f.from + wrote
	}
	if end < 0 {
		return // no file to look at: nothing to correct
	}
	c.minLogicOffset.Store(end)
}

// firstUnitAtOrAbove binary-searches a held file for the first unit pointing at or
// above minPhy. wrote is the end of the units it looked at.
func firstUnitAtOrAbove(f *mappedFile, minPhy int64) (pos, wrote int64, found bool) {
	wrote = f.wrote.Load()
	n := int(wrote / cqUnitSize)
	if n == 0 {
		return 0, wrote, false
	}
	phy, size, _ := readUnit(f.data[(n-1)*cqUnitSize:])
	if size != math.MaxInt32 && phy < minPhy {
		return 0, wrote, false
	}
	lo, hi := 0, n-1
	for lo < hi {
		mid := (lo + hi) / 2
		p, s, _ := readUnit(f.data[mid*cqUnitSize:])
		if s != math.MaxInt32 && p >= minPhy {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return int64(lo * cqUnitSize), wrote, true
}

// unitsHeld returns the units from logical offset to the end of written data in
// that offset's file, with the file held.
func (c *consumeQueue) unitsHeld(offset int64) (*mappedFile, []byte) {
	pos := offset * cqUnitSize
	f := c.q.findHeld(pos)
	if f == nil {
		return nil, nil
	}
	rel := pos - f.from
	wrote := f.wrote.Load()
	if rel >= wrote {
		f.release()
		return nil, nil
	}
	return f, f.data[rel:wrote]
}

// unitAt reads one unit.
func (c *consumeQueue) unitAt(offset int64) (phy int64, size int32, tags int64, ok bool) {
	if c.batch {
		u, ok := c.bcqUnitAt(offset)
		return u.phy, u.size, u.tags, ok
	}
	f, b := c.unitsHeld(offset)
	if f == nil {
		return 0, 0, 0, false
	}
	defer f.release()
	if len(b) < cqUnitSize {
		return 0, 0, 0, false
	}
	phy, size, tags = readUnit(b)
	return phy, size, tags, true
}

// deleteExpired removes files (never the last) whose last unit points below minPhy.
func (c *consumeQueue) deleteExpired(minPhy int64) int {
	if c.batch {
		return c.bcqDeleteExpired(minPhy)
	}
	files := c.q.snapshot()
	var drop []*mappedFile
	for i := 0; i < len(files)-1; i++ {
		f := files[i]
		wrote := f.wrote.Load()
		if wrote < cqUnitSize || !f.hold() {
			break
		}
		phy, _, _ := readUnit(f.data[wrote-cqUnitSize:])
		f.release()
		if phy >= minPhy {
			break
		}
		drop = append(drop, f)
	}
	c.q.removeFiles(drop)
	return len(drop)
}
