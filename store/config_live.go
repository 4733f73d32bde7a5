package store

import "time"

// liveKeys are the settings a running store takes at once (ApplyLive): those
// Java's store reads from MessageStoreConfig at each use, so that
// Configuration.update (mqadmin updateBrokerConfig) changes them in place.
// Their readers load the snapshot in DefaultStore.live; every other key is
// read from DefaultStore.cfg, fixed by Open, and takes effect at the next
// start (file sizes, flushDiskType, paths, the index's sizes, maxMessageSize
// and the other settings Java captures when it builds a service).
//
// messageIndexEnable stays fixed although Java's dispatcher reads it per
// record: the index's crash recovery (messageIndexSafe, indexgap) assumes it
// did not change while the store ran. cleanResourceInterval is read each round
// here; Java schedules its cleaner with it once, at start.
var liveKeys = map[string]func(d, s *Config){
	// Retention (CleanCommitLogService, CleanConsumeQueueService).
	"fileReservedTime":                func(d, s *Config) { d.FileReservedTime = s.FileReservedTime },
	"deleteWhen":                      func(d, s *Config) { d.DeleteWhen = s.DeleteWhen },
	"diskMaxUsedSpaceRatio":           func(d, s *Config) { d.DiskMaxUsedSpaceRatio = s.DiskMaxUsedSpaceRatio },
	"cleanResourceInterval":           func(d, s *Config) { d.CleanResourceInterval = s.CleanResourceInterval },
	"deleteCommitLogFilesInterval":    func(d, s *Config) { d.DeleteCommitLogFilesInterval = s.DeleteCommitLogFilesInterval },
	"deleteConsumeQueueFilesInterval": func(d, s *Config) { d.DeleteConsumeQueueFilesInterval = s.DeleteConsumeQueueFilesInterval },
	"cleanFileForciblyEnable":         func(d, s *Config) { d.CleanFileForciblyEnable = s.CleanFileForciblyEnable },
	"diskSpaceWarningLevelRatio":      func(d, s *Config) { d.DiskSpaceWarningLevelRatio = s.DiskSpaceWarningLevelRatio },
	"diskSpaceCleanForciblyRatio":     func(d, s *Config) { d.DiskSpaceCleanForciblyRatio = s.DiskSpaceCleanForciblyRatio },

	// Flushing (FlushRealTimeService, FlushConsumeQueueService, the put's waits).
	"flushIntervalCommitLog":            func(d, s *Config) { d.FlushIntervalCommitLog = s.FlushIntervalCommitLog },
	"flushCommitLogLeastPages":          func(d, s *Config) { d.FlushCommitLogLeastPages = s.FlushCommitLogLeastPages },
	"flushCommitLogThoroughInterval":    func(d, s *Config) { d.FlushCommitLogThoroughInterval = s.FlushCommitLogThoroughInterval },
	"flushIntervalConsumeQueue":         func(d, s *Config) { d.FlushIntervalConsumeQueue = s.FlushIntervalConsumeQueue },
	"flushConsumeQueueLeastPages":       func(d, s *Config) { d.FlushConsumeQueueLeastPages = s.FlushConsumeQueueLeastPages },
	"flushConsumeQueueThoroughInterval": func(d, s *Config) { d.FlushConsumeQueueThoroughInterval = s.FlushConsumeQueueThoroughInterval },
	"syncFlushTimeout":                  func(d, s *Config) { d.SyncFlushTimeout = s.SyncFlushTimeout },
	"slaveTimeout":                      func(d, s *Config) { d.SlaveTimeout = s.SlaveTimeout },
	"osPageCacheBusyTimeOutMills":       func(d, s *Config) { d.OsPageCacheBusyTimeOutMills = s.OsPageCacheBusyTimeOutMills },
	"haMaxGapNotInSync":                 func(d, s *Config) { d.HaMaxGapNotInSync = s.HaMaxGapNotInSync },
	"enableAutoInSyncReplicas":          func(d, s *Config) { d.EnableAutoInSyncReplicas = s.EnableAutoInSyncReplicas },

	// Reading (getMessage, queryMessage).
	"maxTransferBytesOnMessageInMemory": func(d, s *Config) { d.MaxTransferBytesOnMessageInMemory = s.MaxTransferBytesOnMessageInMemory },
	"maxTransferCountOnMessageInMemory": func(d, s *Config) { d.MaxTransferCountOnMessageInMemory = s.MaxTransferCountOnMessageInMemory },
	"maxTransferBytesOnMessageInDisk":   func(d, s *Config) { d.MaxTransferBytesOnMessageInDisk = s.MaxTransferBytesOnMessageInDisk },
	"maxTransferCountOnMessageInDisk":   func(d, s *Config) { d.MaxTransferCountOnMessageInDisk = s.MaxTransferCountOnMessageInDisk },
	"accessMessageInMemoryMaxRatio":     func(d, s *Config) { d.AccessMessageInMemoryMaxRatio = s.AccessMessageInMemoryMaxRatio },
	"maxFilterMessageSize":              func(d, s *Config) { d.MaxFilterMessageSize = s.MaxFilterMessageSize },
	"offsetCheckInSlave":                func(d, s *Config) { d.OffsetCheckInSlave = s.OffsetCheckInSlave },
	"maxMsgsNumBatch":                   func(d, s *Config) { d.MaxMsgsNumBatch = s.MaxMsgsNumBatch },
	"defaultQueryMaxNum":                func(d, s *Config) { d.DefaultQueryMaxNum = s.DefaultQueryMaxNum },

	// Classic and controller-mode replication (store/ha reads them through
	// LiveConfig at each frame, report and heartbeat, as Java's HA connections,
	// clients and FlowMonitor read MessageStoreConfig).
	"haSendHeartbeatInterval":   func(d, s *Config) { d.HaSendHeartbeatInterval = s.HaSendHeartbeatInterval },
	"haHousekeepingInterval":    func(d, s *Config) { d.HaHousekeepingInterval = s.HaHousekeepingInterval },
	"haTransferBatchSize":       func(d, s *Config) { d.HaTransferBatchSize = s.HaTransferBatchSize },
	"haFlowControlEnable":       func(d, s *Config) { d.HaFlowControlEnable = s.HaFlowControlEnable },
	"maxHaTransferByteInSecond": func(d, s *Config) { d.MaxHaTransferByteInSecond = s.MaxHaTransferByteInSecond },

	// The commitlog's read mode for the files taken from now on (Java's
	// isCloseReadAhead at each new file; readahead.go). Files already mapped
	// keep theirs: only SET_COMMITLOG_READ_MODE rescans, as in Java.
	"dataReadAheadEnable": func(d, s *Config) { d.DataReadAheadEnable = s.DataReadAheadEnable },
}

// IsLiveKey reports whether a running store takes key at once (ApplyLive).
func IsLiveKey(key string) bool { _, ok := liveKeys[key]; return ok }

// CopyLiveKey copies the setting of a live key from src to dst; false for any
// other key.
func CopyLiveKey(key string, dst, src *Config) bool {
	cp, ok := liveKeys[key]
	if ok {
		cp(dst, src)
	}
	return ok
}

// ApplyLive puts c's settings of keys in force; keys that are not live are
// ignored. Readers see the old snapshot or the new one whole. The commitlog
// files taken from now on follow dataReadAheadEnable. The cleaner
// retimes its wait to the cleanResourceInterval in force and the disk-full
// state is judged again against the ratios in force, both at once; the
// flushers take new settings at their next round.
func (s *DefaultStore) ApplyLive(c *Config, keys ...string) {
	s.liveMu.Lock()
	defer s.liveMu.Unlock()
	next := *s.live.Load()
	readMode := false
	for _, k := range keys {
		CopyLiveKey(k, &next, c)
		readMode = readMode || k == "dataReadAheadEnable"
	}
	s.live.Store(&next)
	if readMode {
		_ = s.commitLog.q.setRandomRead(!next.DataReadAheadEnable, false) // no scan: no madvise to fail
	}
	signal(s.cleanRetime)
	if s.started.Load() && !s.closed.Load() {
		s.checkDisk()
	}
}

// LiveConfig is the snapshot of the settings in force (the live keys' readers
// see it change with ApplyLive); never modify what it returns.
func (s *DefaultStore) LiveConfig() *Config { return s.live.Load() }

// cleanInterval is cleanResourceInterval in force, at least 10 ms.
func (c *Config) cleanInterval() time.Duration {
	return time.Duration(max(c.CleanResourceInterval, 10)) * time.Millisecond
}
