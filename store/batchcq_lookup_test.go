package store

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// bcqSynthetic is a batch consume queue of four-unit files written directly
// (no commitlog behind it), with the units it holds.
type bcqSynthetic struct {
	cq    *consumeQueue
	units []bcqUnit
}

func newBCQSynthetic(t *testing.T) *bcqSynthetic {
	t.Helper()
	lazy := newLazyMaps(16)
	cq := newBatchConsumeQueue("B", 0, filepath.Join(t.TempDir(), "B", "0"), 4*bcqUnitSize, testLogger(), lazy)
	t.Cleanup(cq.q.closeAll)
	return &bcqSynthetic{cq: cq}
}

// put appends a unit of num messages from base, stored at storeTime.
func (b *bcqSynthetic) put(t *testing.T, base int64, num int16, storeTime int64) {
	t.Helper()
	phy := int64(0)
	if len(b.units) > 0 {
		last := b.units[len(b.units)-1]
		phy = last.phy + int64(last.size)
	}
	u := bcqUnit{phy: phy, size: 100, tags: 7, storeTime: storeTime, base: base, num: num}
	require.NoError(t, b.cq.putBatch(u))
	b.units = append(b.units, u)
}

// live is the units of the files still in the queue.
func (b *bcqSynthetic) live() []bcqUnit {
	files := b.cq.q.snapshot()
	if len(files) == 0 {
		return nil
	}
	skip := files[0].from / bcqUnitSize
	return b.units[skip:]
}

// wantAt is what a scan of every unit finds for msgOffset: the unit covering
// it, else the next one after it.
func wantAt(units []bcqUnit, msgOffset int64) (bcqUnit, bool) {
	for _, u := range units {
		if u.end() > msgOffset {
			return u, true
		}
	}
	return bcqUnit{}, false
}

// wantByTime is what a scan finds for a store time.
func wantByTime(units []bcqUnit, ts, minPhy, maxOffset int64) int64 {
	for _, u := range units {
		if u.phy >= minPhy && u.storeTime >= ts {
			return u.base
		}
	}
	return maxOffset
}

// check compares every lookup by offset and by time with a scan.
func (b *bcqSynthetic) check(t *testing.T) {
	t.Helper()
	units := b.live()
	last := units[len(units)-1]
	for off := int64(0); off <= last.end()+2; off++ {
		want, ok := wantAt(units, off)
		f, pos := b.cq.bcqFind(off)
		if !ok {
			require.Nil(t, f, "offset %d", off)
			continue
		}
		require.NotNil(t, f, "offset %d", off)
		got := readBatchUnit(f.data[pos:])
		f.release()
		require.Equal(t, want, bcqUnit{phy: got.phy, size: got.size, tags: got.tags, storeTime: got.storeTime,
			base: got.base, num: got.num}, "offset %d", off)
	}
	for _, minPhy := range []int64{0, units[0].phy + 1, units[len(units)/2].phy, last.phy, last.phy + 1} {
		for ts := units[0].storeTime - 2; ts <= last.storeTime+2; ts++ {
			require.Equal(t, wantByTime(units, ts, minPhy, b.cq.maxOffset()), b.cq.bcqOffsetByTime(ts, minPhy),
				"time %d, min phy %d", ts, minPhy)
		}
	}
}

// forget drops the cached first units, as after a restart.
func (b *bcqSynthetic) forget() {
	for _, f := range b.cq.q.snapshot() {
		f.bcqFirst.Store(nil)
	}
}

// TestBatchCQLookupEdges: finding the unit of a queue offset and the offset
// of a store time agrees with a scan of every unit at the first and last
// units, inside batches, in a gap of offsets, across file boundaries, with
// times repeated over a file boundary, with the cache of first units cold,
// after the queue's files are unmapped, and after retention removed the
// first files.
func TestBatchCQLookupEdges(t *testing.T) {
	b := newBCQSynthetic(t)
	base, ts := int64(0), int64(1000)
	for i := range 22 { // six files, the last one half full
		num := int16(1 + i%4)
		if i == 9 {
			base += 5 // a gap: offsets no unit covers
		}
		if i%4 != 3 && i != 7 { // times repeat, also across the boundary of files 1 and 2
			ts += 2
		}
		b.put(t, base, num, ts)
		base += int64(num)
	}
	require.Len(t, b.cq.q.snapshot(), 6)
	b.check(t)

	b.forget()
	b.cq.q.unmapUnheld()
	b.check(t)

	// Retention: the first two files go.
	files := b.cq.q.snapshot()
	b.cq.q.removeFiles(files[:2])
	b.check(t)
	b.forget()
	b.check(t)
	// Below the first live unit: that unit.
	f, pos := b.cq.bcqFind(0)
	require.NotNil(t, f)
	require.Equal(t, b.live()[0].base, readBatchUnit(f.data[pos:]).base)
	f.release()
	require.Equal(t, b.live()[0].base, b.cq.bcqOffsetByTime(0, 0))
}

// TestBatchCQLookupEmptyAndTruncated: an empty queue finds nothing; a new
// last file without units is passed over (and goes with a truncation, which
// stopped at it before); a file cut away and written again is searched by its
// new first unit.
func TestBatchCQLookupEmptyAndTruncated(t *testing.T) {
	b := newBCQSynthetic(t)
	f, _ := b.cq.bcqFind(0)
	require.Nil(t, f)
	require.Equal(t, int64(0), b.cq.bcqOffsetByTime(0, 0))

	for i := range 8 { // two full files
		b.put(t, int64(i*2), 2, int64(100+i))
	}
	// The next file made ahead of its first unit.
	_, err := b.cq.q.lastForWrite(b.cq.q.maxOffset())
	require.NoError(t, err)
	require.Len(t, b.cq.q.snapshot(), 3)
	b.check(t)
	f, _ = b.cq.bcqFind(16)
	require.Nil(t, f, "past the last unit")
	require.Equal(t, int64(16), b.cq.bcqOffsetByTime(200, 0))

	// Cut the second file away, then write it again from other offsets.
	require.NoError(t, b.cq.bcqTruncateAbove(b.units[4].phy))
	b.units = b.units[:4]
	require.Equal(t, int64(8), b.cq.maxOffset())
	for i := range 5 {
		b.put(t, int64(20+i*3), 3, int64(300+i))
	}
	b.check(t)
	f, pos := b.cq.bcqFind(9)
	require.NotNil(t, f)
	require.Equal(t, int64(20), readBatchUnit(f.data[pos:]).base, "in the gap: the first unit of the file written again")
	f.release()

	// A cut inside a file keeps the units below it.
	require.NoError(t, b.cq.bcqTruncateAbove(b.units[6].phy))
	b.units = b.units[:6]
	require.Equal(t, b.units[5].end(), b.cq.maxOffset())
	b.check(t)
}

// TestBatchCQCorrectMinOffset: the min offset moves past the first file's
// units whose records the commitlog no longer holds, and no further.
func TestBatchCQCorrectMinOffset(t *testing.T) {
	b := newBCQSynthetic(t)
	for i := range 4 {
		b.put(t, int64(i*3), 3, int64(100+i))
	}
	for k, u := range b.units {
		b.cq.bcqCorrectMinOffset(u.phy)
		require.Equal(t, u.base, b.cq.minOffset(), "first unit kept: %d", k)
		b.cq.bcqCorrectMinOffset(u.phy + 1)
		require.Equal(t, u.end(), b.cq.minOffset(), "unit %d gone", k)
	}
}
