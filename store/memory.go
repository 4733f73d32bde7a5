package store

import (
	"sync"

	"golang.org/x/sys/unix"
)

// physicalMemory is the machine's RAM in bytes, 0 if unknown (Java's
// StoreUtil.TOTAL_PHYSICAL_MEMORY_SIZE). Read once: it does not change.
var physicalMemory = sync.OnceValue(func() int64 {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil || si.Totalram == 0 {
		return 0
	}
	unit := max(int64(si.Unit), 1)
	return int64(si.Totalram) * unit
})

// HotCommitLogBytes is how far behind the commitlog's end a message may lie
// and still count as in memory: accessMessageInMemoryMaxRatio percent of
// physical memory (DefaultMessageStore.estimateInMemByCommitOffset). With the
// memory unknown everything counts as in memory.
func (s *DefaultStore) HotCommitLogBytes() int64 {
	return memoryShare(int64(s.live.Load().AccessMessageInMemoryMaxRatio))
}

// memoryShare is percent of physical memory in bytes; with the memory unknown,
// more than any commitlog (Java's figure would be 0, making every record
// count as out of memory).
func memoryShare(percent int64) int64 {
	m := physicalMemory()
	if m == 0 {
		return 1 << 62
	}
	return m * percent / 100
}
