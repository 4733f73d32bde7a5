package store

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// With cold-data flow control off (the default) a read counts nothing.
func TestColdDataSumOffByDefault(t *testing.T) {
	s := storeHolding(t, "Cold", 6)
	s.cold.ratio.Store(0) // everything behind the end would be cold
	r := s.GetMessage("g", "Cold", 0, 0, 6, 0, nil)
	defer r.Release()
	require.Equal(t, GetFound, r.Status)
	require.Zero(t, r.ColdDataSum)
	require.False(t, s.InColdArea("Cold", 0, 0))
}

// A record further than accessMessageInMemoryHotRatio percent of memory from
// the commitlog's end counts whole; without coldDataScanEnable residency is
// not asked (Java treats the cold area as out of the cache). Both read paths
// count, the event loop's too.
func TestColdDataSumCountsTheColdArea(t *testing.T) {
	s := storeHolding(t, "Cold", 6)
	s.SetColdDataCheck(true, false, 0) // a hot window of 0 bytes
	for _, loop := range []bool{false, true} {
		var r *GetResult
		if loop {
			r = s.GetMessageOnLoop("Cold", 0, 0, 6, 0, nil)
		} else {
			r = s.GetMessage("g", "Cold", 0, 0, 6, 0, nil)
		}
		require.Len(t, r.Records, 6)
		require.Equal(t, int64(r.BufferTotalSize), r.ColdDataSum, "on loop: %v", loop)
		r.Release()
	}
	require.True(t, s.InColdArea("Cold", 0, 0))
	require.False(t, s.InColdArea("Cold", 0, 6), "no unit there")

	s.SetColdDataCheck(true, false, 100) // all of memory: nothing this small is cold
	r := s.GetMessage("g", "Cold", 0, 0, 6, 0, nil)
	defer r.Release()
	require.Zero(t, r.ColdDataSum)
	require.False(t, s.InColdArea("Cold", 0, 0))
}

// With coldDataScanEnable a record of the cold area counts only when its pages
// are out of the page cache.
func TestColdDataSumAsksResidencyWithScan(t *testing.T) {
	s := storeHolding(t, "Cold", 6)
	probe := s.GetMessage("g", "Cold", 0, 0, 6, 0, nil)
	recs := make([]uintptr, len(probe.Records))
	for i, rec := range probe.Records {
		recs[i] = uintptr(unsafe.Pointer(unsafe.SliceData(rec)))
	}
	sizes := make([]int, len(probe.Records))
	for i, rec := range probe.Records {
		sizes[i] = len(rec)
	}
	probe.Release()
	// Records 1 and 4 have left the page cache; the rest are resident.
	evicted := map[uintptr]bool{recs[1]: true, recs[4]: true}
	s.cold.resident = func(_, part []byte) bool { return !evicted[uintptr(unsafe.Pointer(unsafe.SliceData(part)))] }
	s.SetColdDataCheck(true, true, 0)
	r := s.GetMessageOnLoop("Cold", 0, 0, 6, 0, nil)
	defer r.Release()
	require.Len(t, r.Records, 6)
	require.Equal(t, int64(sizes[1]+sizes[4]), r.ColdDataSum)
}

// The real mincore answer: records just written are in the page cache.
func TestColdDataSumScanFindsFreshRecordsResident(t *testing.T) {
	s := storeHolding(t, "Cold", 3)
	s.SetColdDataCheck(true, true, 0)
	r := s.GetMessage("g", "Cold", 0, 0, 3, 0, nil)
	defer r.Release()
	require.Len(t, r.Records, 3)
	require.Zero(t, r.ColdDataSum)
}
