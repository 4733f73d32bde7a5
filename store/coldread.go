package store

import "sync/atomic"

// coldCheck is the live state of cold-data read detection (Java's
// ColdDataCheckService with checkInColdAreaByCommitOffset). The broker
// changes it at runtime (UPDATE_BROKER_CONFIG), so it is kept apart from the
// config captured at start.
type coldCheck struct {
	on    atomic.Bool
	scan  atomic.Bool
	ratio atomic.Int32
	// resident reports whether part, a slice of the mapping m, is in the
	// page cache; nil is mincore (resident.go). Tests replace it.
	resident func(m, part []byte) bool
}

// SetColdDataCheck sets coldDataFlowControlEnable, coldDataScanEnable and
// accessMessageInMemoryHotRatio for the reads that follow.
func (s *DefaultStore) SetColdDataCheck(enable, scan bool, hotRatio int) {
	s.cold.ratio.Store(int32(min(max(hotRatio, 0), 100)))
	s.cold.scan.Store(scan)
	s.cold.on.Store(enable)
}

// coldAreaBytes is how far behind the commitlog's end a record may lie and
// still count as hot: accessMessageInMemoryHotRatio percent of physical memory.
func (s *DefaultStore) coldAreaBytes() int64 { return memoryShare(int64(s.cold.ratio.Load())) }

// coldWindow is what getMessage needs to tell cold records, taken once per
// read: the commitlog offset below which records lie in the cold area (-1
// when the check is off) and whether residency is asked as well.
type coldWindow struct {
	below int64
	scan  bool
}

func (s *DefaultStore) coldWindow(maxPhy int64) coldWindow {
	if !s.cold.on.Load() {
		return coldWindow{below: -1}
	}
	return coldWindow{below: maxPhy - s.coldAreaBytes(), scan: s.cold.scan.Load()}
}

// isCold is Java's !isDataInPageCache for the record rec at phy, a slice of
// the mapping m: in the cold area and, when coldDataScanEnable is on, out of
// the page cache. Java samples residency once a minute (one page in 32);
// mincore here asks about the record's own pages at the read, so the answer
// is exact.
func (s *DefaultStore) isCold(w coldWindow, phy int64, m, rec []byte) bool {
	if phy >= w.below {
		return false
	}
	if !w.scan {
		return true // Java: cold area without a scan counts as out of the cache
	}
	if s.cold.resident != nil {
		return !s.cold.resident(m, rec)
	}
	return !resident(m, rec)
}

// InColdArea is Java's ColdDataCheckService.isMsgInColdArea: whether the
// queue's unit at offset points into the cold area of the commitlog (false
// when the check is off or there is no such unit). The broker asks it before
// a read by a group that is over its cold-read threshold.
func (s *DefaultStore) InColdArea(topic string, queueID int32, offset int64) bool {
	if !s.cold.on.Load() {
		return false
	}
	cq := s.findCQ(topic, queueID)
	if cq == nil {
		return false
	}
	phy, _, _, ok := cq.unitAt(offset)
	if !ok {
		return false
	}
	return s.MaxPhyOffset()-phy > s.coldAreaBytes()
}
