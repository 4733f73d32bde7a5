package store

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// maxResidentSpan bounds the commitlog bytes PullResident asks the kernel
// about: the records of a queue that are further apart than this (a quiet
// queue among busy ones) are read on a worker.
const maxResidentSpan = 8 << 20

// PullResident reports whether reading up to n messages of the queue from
// offset touches only pages in the page cache, so that a pull can run on the
// network event loop without waiting for the disk (mincore(2) of the
// consume-queue units and of the commitlog span their records lie in). An
// answer that reads nothing (unknown queue, offset out of range) is resident.
// A page evicted between the check and the read costs one fault; nothing
// else.
func (s *DefaultStore) PullResident(topic string, queueID int32, offset int64, n int32) bool {
	if s.closed.Load() {
		return true
	}
	// A compacted queue below what its log copied is read from the log with
	// pread, which may wait for the disk.
	if s.compaction != nil && s.compaction.serves(topic, queueID, offset) {
		return false
	}
	cq := s.findCQ(topic, queueID)
	if cq == nil || offset < cq.minOffset() || offset >= cq.maxOffset() {
		return true
	}
	if cq.batch {
		return false // not looked at: such a pull goes to a worker
	}
	cqFile, units := cq.unitsHeld(offset)
	if cqFile == nil {
		return true
	}
	defer cqFile.release()
	if m := int32(s.live.Load().MaxTransferCountOnMessageInMemory); m > 0 && n > m {
		n = m
	}
	units = units[:min(len(units)/cqUnitSize, max(int(n), 1))*cqUnitSize]
	if len(units) == 0 {
		return true
	}
	if !resident(cqFile.data, units) {
		return false
	}
	lo, hi := int64(-1), int64(0)
	for i := 0; i+cqUnitSize <= len(units); i += cqUnitSize {
		phy, size, _ := readUnit(units[i:])
		if lo < 0 || phy < lo {
			lo = phy
		}
		hi = max(hi, phy+int64(size))
	}
	if hi-lo > maxResidentSpan {
		return false
	}
	f := s.commitLog.q.findHeld(lo)
	if f == nil {
		return true // removed meanwhile: the pull reads nothing there
	}
	defer f.release()
	if hi > f.from+f.wrote.Load() {
		return false // across two files, or past what is written
	}
	return resident(f.data, f.data[lo-f.from:hi-f.from])
}

// resident reports whether every page of part, a slice of the mapping m, is
// in the page cache.
func resident(m, part []byte) bool {
	if len(part) == 0 {
		return true
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(part))) - uintptr(unsafe.Pointer(unsafe.SliceData(m)))
	first := int(start) &^ (osPageSize - 1)
	last := int(start) + len(part)
	pages := (last - first + osPageSize - 1) / osPageSize
	var small [256]byte
	vec := small[:]
	if pages > len(small) {
		vec = make([]byte, pages)
	}
	// mincore never blocks: the raw call skips the scheduler's bookkeeping.
	if _, _, e := unix.RawSyscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[first])), uintptr(last-first),
		uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		return false
	}
	for _, v := range vec[:pages] {
		if v&1 == 0 {
			return false
		}
	}
	return true
}
