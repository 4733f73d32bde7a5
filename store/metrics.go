package store

// FlushBehindBytes is CommitLog.remainHowManyDataToFlush: commitlog bytes
// written but not yet flushed (rocketmq_storage_flush_behind_bytes).
func (s *DefaultStore) FlushBehindBytes() int64 {
	return max(0, s.commitLog.q.maxOffset()-s.commitLog.q.flushedWhere.Load())
}

// EarliestStoreTime is the store time of the oldest record still on disk, -1
// when the commitlog is empty (getEarliestMessageTime, for
// rocketmq_storage_message_reserve_time).
func (s *DefaultStore) EarliestStoreTime() int64 {
	min := s.commitLog.q.minOffset()
	if min < 0 || min >= s.commitLog.q.maxOffset() {
		return -1
	}
	// 80 bytes cover the fixed fields up to the store timestamp for both
	// host address sizes; every record is longer.
	return s.storeTimeAt(min, 80)
}

// RootDir is storePathRootDir (the file system whose use rocketmq_storage_size
// reports).
func (s *DefaultStore) RootDir() string { return s.cfg.StorePathRootDir }
