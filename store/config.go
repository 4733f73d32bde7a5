package store

import (
	"fmt"
	"os"
	"path/filepath"
	"rmqd/compat"
	"strconv"
	"strings"
	"time"
)

// Flush disk types (FlushDiskType.java).
const (
	AsyncFlush = "ASYNC_FLUSH"
	SyncFlush  = "SYNC_FLUSH"
)

// Config holds the MessageStoreConfig settings the store uses. The prop tag is the
// Java field name, which is also the broker.conf key.
type Config struct {
	StorePathRootDir   string `prop:"storePathRootDir"`
	StorePathCommitLog string `prop:"storePathCommitLog"` // empty: <root>/commitlog
	// Controller mode's epoch checkpoint and broker identity files; empty:
	// <root>/epochFileCheckpoint and <root>/brokerIdentity, as Java.
	StorePathEpochFile      string `prop:"storePathEpochFile,omitempty"`
	StorePathBrokerIdentity string `prop:"storePathBrokerIdentity,omitempty"`

	MappedFileSizeCommitLog    int `prop:"mappedFileSizeCommitLog"`
	MappedFileSizeConsumeQueue int `prop:"mappedFileSizeConsumeQueue"`
	// MapperFileSizeBatchConsumeQueue sizes the files of queue.type=BatchCQ
	// topics' queues (batchcq.go), rounded up to whole units.
	MapperFileSizeBatchConsumeQueue int `prop:"mapperFileSizeBatchConsumeQueue"`
	// BatchTopics, when set, says which topics are queue.type=BatchCQ from Open
	// on, so that recovery rebuilds their lost queues as batch ones (Java's
	// store is given the topic table when made); SetBatchTopics replaces it.
	BatchTopics func(topic string) bool

	FlushDiskType                     string `prop:"flushDiskType"`
	FlushIntervalCommitLog            int    `prop:"flushIntervalCommitLog"`
	FlushCommitLogLeastPages          int    `prop:"flushCommitLogLeastPages"`
	FlushCommitLogThoroughInterval    int    `prop:"flushCommitLogThoroughInterval"`
	FlushIntervalConsumeQueue         int    `prop:"flushIntervalConsumeQueue"`
	FlushConsumeQueueLeastPages       int    `prop:"flushConsumeQueueLeastPages"`
	FlushConsumeQueueThoroughInterval int    `prop:"flushConsumeQueueThoroughInterval"`
	SyncFlushTimeout                  int64  `prop:"syncFlushTimeout"`
	// SlaveTimeout (ms) is how long a SYNC_MASTER put waits for its slaves
	// before FLUSH_SLAVE_TIMEOUT; SyncFlushTimeout bounds only the disk
	// flush (CommitLog.handleHA, 4.9 and 5.x alike).
	SlaveTimeout int64 `prop:"slaveTimeout"`
	// FlushDelayOffsetInterval (ms) is how often the broker writes
	// delayOffset.json; the store does not read it (MessageStoreConfig has it).
	FlushDelayOffsetInterval int64 `prop:"flushDelayOffsetInterval"`

	FileReservedTime                 int    `prop:"fileReservedTime"`
	DeleteWhen                       string `prop:"deleteWhen"`
	DiskMaxUsedSpaceRatio            int    `prop:"diskMaxUsedSpaceRatio"`
	CleanResourceInterval            int    `prop:"cleanResourceInterval"`
	DeleteCommitLogFilesInterval     int    `prop:"deleteCommitLogFilesInterval"`
	DeleteConsumeQueueFilesInterval  int    `prop:"deleteConsumeQueueFilesInterval"`
	DestroyMapedFileIntervalForcibly int    `prop:"destroyMapedFileIntervalForcibly"`
	CleanFileForciblyEnable          bool   `prop:"cleanFileForciblyEnable"`
	// DiskSpaceWarningLevelRatio (%, clamped to 35-90 as Java does): above it
	// the store refuses puts until space is freed. DiskSpaceCleanForciblyRatio
	// (%, 30-85): above it retention deletes files however young.
	// DiskMaxUsedSpaceRatio only starts retention early.
	DiskSpaceWarningLevelRatio  int `prop:"diskSpaceWarningLevelRatio"`
	DiskSpaceCleanForciblyRatio int `prop:"diskSpaceCleanForciblyRatio"`
	// OsPageCacheBusyTimeOutMills: a put that has held the commitlog lock
	// longer makes the store report busy (isOSPageCacheBusy): new puts are
	// refused with SYSTEM_BUSY instead of queueing behind it.
	OsPageCacheBusyTimeOutMills int64 `prop:"osPageCacheBusyTimeOutMills"`

	MaxMessageSize    int  `prop:"maxMessageSize"`
	CheckCRCOnRecover bool `prop:"checkCRCOnRecover"`
	// EnabledAppendPropCRC appends the "__CRC32#" property, a CRC of the whole
	// record, to every record written. ForceVerifyPropCRC makes recovery (with
	// CheckCRCOnRecover) check that property instead of the body CRC: a record
	// without it or with a wrong one ends the log, as in Java.
	EnabledAppendPropCRC bool `prop:"enabledAppendPropCRC"`
	ForceVerifyPropCRC   bool `prop:"forceVerifyPropCRC"`
	// AutoMessageVersionOnTopicLen writes a record whose topic is longer than
	// 127 as V2 (2-byte topic length). Off, every record is V1, readable by a
	// store that knows no V2: Java then writes the long topic's length
	// truncated into the V1 byte, a record no reader decodes; rmqd refuses
	// the message as MESSAGE_ILLEGAL instead (docs/compatibility.md).
	AutoMessageVersionOnTopicLen bool `prop:"autoMessageVersionOnTopicLen"`

	MessageIndexEnable bool `prop:"messageIndexEnable"`
	// MessageIndexSafe makes crash recovery replay from the last flushed index
	// file, so no key is lost, at the cost of replaying more of the commitlog.
	MessageIndexSafe bool `prop:"messageIndexSafe"`
	MaxHashSlotNum   int  `prop:"maxHashSlotNum"`
	MaxIndexNum      int  `prop:"maxIndexNum"`
	MaxMsgsNumBatch  int  `prop:"maxMsgsNumBatch"`
	// DefaultQueryMaxNum is how many records a QUERY_MESSAGE by unique key
	// answers with, whatever it asked (the broker reads it; Java's default 32).
	DefaultQueryMaxNum int32 `prop:"defaultQueryMaxNum"`

	MaxTransferBytesOnMessageInMemory int `prop:"maxTransferBytesOnMessageInMemory"`
	MaxTransferCountOnMessageInMemory int `prop:"maxTransferCountOnMessageInMemory"`
	// A pull of messages more than AccessMessageInMemoryMaxRatio percent of
	// physical memory behind the commitlog's end (likely out of the page
	// cache) is bounded by the smaller on-disk limits, as in Java.
	MaxTransferBytesOnMessageInDisk int `prop:"maxTransferBytesOnMessageInDisk"`
	MaxTransferCountOnMessageInDisk int `prop:"maxTransferCountOnMessageInDisk"`
	AccessMessageInMemoryMaxRatio   int `prop:"accessMessageInMemoryMaxRatio"`
	// Cold-data read flow control (coldread.go): a record further than
	// AccessMessageInMemoryHotRatio percent of physical memory behind the
	// commitlog's end is cold (with ColdDataScanEnable, only if it is also out
	// of the page cache); the broker throttles groups that read too much of it.
	ColdDataFlowControlEnable     bool `prop:"coldDataFlowControlEnable"`
	ColdDataScanEnable            bool `prop:"coldDataScanEnable"`
	AccessMessageInMemoryHotRatio int  `prop:"accessMessageInMemoryHotRatio"`
	// MaxFilterMessageSize bounds the consume-queue bytes one filtered read
	// scans (at least maxMsgNums units).
	MaxFilterMessageSize int `prop:"maxFilterMessageSize"`

	// MessageDelayLevel gives the delay of each level of SCHEDULE_TOPIC_XXXX; the
	// consume queue of that topic stores the deliver time as its tags code.
	MessageDelayLevel string `prop:"messageDelayLevel"`
	BrokerRole        string `prop:"brokerRole"`
	// OffsetCheckInSlave lets a slave correct a pull's offset (to the queue's
	// min or max) as a master does. Off, as in Java: a slave behind its master,
	// or one that lost its store, would otherwise move consumers back.
	OffsetCheckInSlave bool `prop:"offsetCheckInSlave"`
	// ReadUnCommitted dispatches in controller mode past the confirm offset,
	// so consumers may read messages the replicas do not hold yet (Java's
	// key, default false).
	ReadUnCommitted bool `prop:"readUnCommitted"`

	// Classic HA (store/ha serves them; the store itself opens no socket).
	HaListenPort            int    `prop:"haListenPort"`
	HaMasterAddress         string `prop:"haMasterAddress"`
	HaSendHeartbeatInterval int    `prop:"haSendHeartbeatInterval"`
	HaHousekeepingInterval  int    `prop:"haHousekeepingInterval"`
	HaTransferBatchSize     int    `prop:"haTransferBatchSize"`
	HaMaxGapNotInSync       int64  `prop:"haMaxGapNotInSync"`
	// EnableAutoInSyncReplicas lets a SYNC_MASTER put with no slave in sync
	// settle for fewer acks, down to MinInSyncReplicas (the master counts),
	// instead of answering SLAVE_NOT_AVAILABLE (CommitLog.calcNeedAckNums).
	EnableAutoInSyncReplicas bool `prop:"enableAutoInSyncReplicas"`
	// MinInSyncReplicas is BrokerConfig's minInSyncReplicas (the processor
	// owns the key; the broker's wiring copies it here). 0 reads as 1.
	MinInSyncReplicas int
	// HaFlowControlEnable caps what a master sends each slave at
	// MaxHaTransferByteInSecond per second (Java's FlowMonitor, off by default).
	HaFlowControlEnable       bool  `prop:"haFlowControlEnable"`
	MaxHaTransferByteInSecond int64 `prop:"maxHaTransferByteInSecond"`
	// rmqd's own HA pacing (store/ha.Config): the least time between two data
	// frames to a slave while SYNC_MASTER puts wait / while none does, and how
	// long new bytes wait for the ack of the frame before while puts wait.
	HaSyncFrameIntervalMicros  int `prop:"haSyncFrameIntervalMicros"`
	HaAsyncFrameIntervalMicros int `prop:"haAsyncFrameIntervalMicros"`
	HaSyncAckHoldMicros        int `prop:"haSyncAckHoldMicros"`

	// rmqd's own keys (a Java broker ignores them). PrefaultAheadBytes of the
	// commitlog past the write position are populated ahead of the appends (0:
	// off); MappedResidentBytes behind the flushed and dispatched position stay
	// mapped, older pages are unmapped and live on in the page cache only (<0:
	// keep everything mapped, as Java does). See residency.go.
	PrefaultAheadBytes  int   `prop:"prefaultAheadBytes"`
	MappedResidentBytes int64 `prop:"mappedResidentBytes"`
	// DataReadAheadEnable off gives every commitlog file madvise(MADV_RANDOM):
	// no kernel read-ahead around a read (Java's key, default on; readahead.go).
	DataReadAheadEnable bool `prop:"dataReadAheadEnable"`
	// CommitLogWriteThrough: "true" appends to the commitlog with pwrite and
	// flushes with fdatasync, "false" stores into the mapping and msyncs,
	// "auto" (the default) writes through under SYNC_FLUSH only. See
	// mappedFile.pwrite.
	CommitLogWriteThrough string `prop:"commitLogWriteThrough"`
	// MappedConsumeQueueFilesMax is how many consume-queue files may stay
	// mapped: files are mapped when read or written and unmapped after 30 s
	// untouched, or sooner, least recently used first, beyond this many
	// (vm.max_map_count is 65530 by default). See lazymap.go.
	MappedConsumeQueueFilesMax int `prop:"mappedConsumeQueueFilesMax"`

	// EnableLmq assigns each light message queue (%LMQ%...) a message's
	// INNER_MULTI_DISPATCH names its offset at put (INNER_MULTI_QUEUE_OFFSET);
	// EnableMultiDispatch writes the units into those queues. Both are needed
	// for LMQ, as in Java. MaxLmqConsumeQueueNum bounds how many LMQs exist
	// (Java 5 enforces it only with 5.5's EnableLmqQuota, which here picks
	// the answer: 5.5's LMQ_QUOTA_EXCEEDED, else 4.9's SYSTEM_ERROR). See
	// docs/lmq.md.
	EnableLmq             bool `prop:"enableLmq"`
	EnableMultiDispatch   bool `prop:"enableMultiDispatch"`
	MaxLmqConsumeQueueNum int  `prop:"maxLmqConsumeQueueNum"`
	EnableLmqQuota        bool `prop:"enableLmqQuota"`

	// Compaction topics (cleanup.policy=COMPACTION; compaction.go,
	// docs/compaction.md): Java's keys and defaults. The log and cq file sizes,
	// how often each queue's log is compacted (ms; Java's spelling), and the
	// bytes the key map of one compaction may take.
	EnableCompaction           bool `prop:"enableCompaction"`
	CompactionMappedFileSize   int  `prop:"compactionMappedFileSize"`
	CompactionCqMappedFileSize int  `prop:"compactionCqMappedFileSize"`
	CompactionScheduleInternal int  `prop:"compactionScheduleInternal"`
	MaxOffsetMapSize           int  `prop:"maxOffsetMapSize"`
}

// writeThrough resolves CommitLogWriteThrough.
// syncFlushTimeout is how long a SYNC_FLUSH put waits for its flush.
func (c *Config) syncFlushTimeout() time.Duration { return compat.Millis(c.SyncFlushTimeout) }

// slaveTimeout is how long a SYNC_MASTER put waits for its slaves.
func (c *Config) slaveTimeout() time.Duration { return compat.Millis(c.SlaveTimeout) }

func (c *Config) writeThrough() bool {
	switch c.CommitLogWriteThrough {
	case "true":
		return true
	case "false":
		return false
	}
	return c.FlushDiskType == SyncFlush
}

// DefaultConfig returns the Java defaults, rooted at ~/store.
func DefaultConfig() Config {
	home, err := os.UserHomeDir()
	if err != nil {
		home = "."
	}
	return Config{
		StorePathRootDir:                  filepath.Join(home, "store"),
		MappedFileSizeCommitLog:           1 << 30,
		MappedFileSizeConsumeQueue:        300000 * cqUnitSize,
		MapperFileSizeBatchConsumeQueue:   300000 * bcqUnitSize,
		FlushDiskType:                     AsyncFlush,
		FlushIntervalCommitLog:            500,
		FlushCommitLogLeastPages:          4,
		FlushCommitLogThoroughInterval:    10000,
		FlushIntervalConsumeQueue:         1000,
		FlushConsumeQueueLeastPages:       2,
		FlushConsumeQueueThoroughInterval: 60000,
		SyncFlushTimeout:                  5000,
		SlaveTimeout:                      3000,
		DefaultQueryMaxNum:                32,
		FlushDelayOffsetInterval:          10000,
		FileReservedTime:                  72,
		DeleteWhen:                        "04",
		DiskMaxUsedSpaceRatio:             75,
		CleanResourceInterval:             10000,
		DeleteCommitLogFilesInterval:      100,
		DeleteConsumeQueueFilesInterval:   100,
		DestroyMapedFileIntervalForcibly:  120000,
		CleanFileForciblyEnable:           true,
		DiskSpaceWarningLevelRatio:        90,
		DiskSpaceCleanForciblyRatio:       85,
		OsPageCacheBusyTimeOutMills:       1000,
		MaxLmqConsumeQueueNum:             20000,
		MaxMessageSize:                    4 << 20,
		CheckCRCOnRecover:                 true,
		AutoMessageVersionOnTopicLen:      true,
		MessageIndexEnable:                true,
		MaxHashSlotNum:                    5000000,
		MaxIndexNum:                       5000000 * 4,
		MaxMsgsNumBatch:                   64,
		MaxTransferBytesOnMessageInMemory: 256 * 1024,
		MaxTransferCountOnMessageInMemory: 32,
		MaxTransferBytesOnMessageInDisk:   64 * 1024,
		MaxTransferCountOnMessageInDisk:   8,
		AccessMessageInMemoryMaxRatio:     40,
		AccessMessageInMemoryHotRatio:     26,
		MaxFilterMessageSize:              16000,
		MessageDelayLevel:                 "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h",
		BrokerRole:                        "ASYNC_MASTER",
		HaListenPort:                      10912,
		HaSendHeartbeatInterval:           5000,
		HaHousekeepingInterval:            20000,
		HaTransferBatchSize:               32 * 1024,
		MaxHaTransferByteInSecond:         100 * 1024 * 1024,
		HaAsyncFrameIntervalMicros:        5000,
		HaSyncAckHoldMicros:               1000,
		HaMaxGapNotInSync:                 256 * 1024 * 1024,
		PrefaultAheadBytes:                4 << 20,
		MappedResidentBytes:               32 << 20,
		DataReadAheadEnable:               true,
		CommitLogWriteThrough:             "auto",
		MappedConsumeQueueFilesMax:        16384,
		EnableCompaction:                  true,
		CompactionMappedFileSize:          100 << 20,
		CompactionCqMappedFileSize:        10 << 20,
		CompactionScheduleInternal:        15 * 60 * 1000,
		MaxOffsetMapSize:                  100 << 20,
	}
}

// ApplyProperties sets fields from broker.conf keys through the one config
// binder (compat.BindConfig) and checks them. Keys that are not the store's are
// ignored here: the broker binds this config inline with its own and reports
// what neither knows.
func (c *Config) ApplyProperties(props map[string]string) error {
	if _, err := compat.BindConfig(props, c); err != nil {
		return fmt.Errorf("store config: %w", err)
	}
	return c.Validate()
}

// Properties returns the settings under their broker.conf keys.
func (c *Config) Properties() map[string]string { return compat.ConfigProperties(c) }

// Validate checks values the binder cannot: enumerations, sizes, formats.
func (c *Config) Validate() error {
	switch c.BrokerRole {
	case RoleAsyncMaster, RoleSyncMaster, RoleSlave:
	default:
		return fmt.Errorf("store config brokerRole=%q: want ASYNC_MASTER, SYNC_MASTER or SLAVE", c.BrokerRole)
	}
	switch c.FlushDiskType {
	case AsyncFlush, SyncFlush:
	default:
		return fmt.Errorf("store config flushDiskType=%q: want ASYNC_FLUSH or SYNC_FLUSH", c.FlushDiskType)
	}
	switch c.CommitLogWriteThrough {
	case "auto", "true", "false", "":
	default:
		return fmt.Errorf("store config commitLogWriteThrough=%q: want auto, true or false", c.CommitLogWriteThrough)
	}
	if c.MappedFileSizeCommitLog < 4096 {
		return fmt.Errorf("store config mappedFileSizeCommitLog=%d: too small", c.MappedFileSizeCommitLog)
	}
	if c.MappedFileSizeConsumeQueue < cqUnitSize {
		return fmt.Errorf("store config mappedFileSizeConsumeQueue=%d: too small", c.MappedFileSizeConsumeQueue)
	}
	if c.MaxHashSlotNum <= 0 || c.MaxIndexNum <= 1 {
		return fmt.Errorf("store config maxHashSlotNum/maxIndexNum must be positive")
	}
	if _, err := parseDelayLevels(c.MessageDelayLevel); err != nil {
		return fmt.Errorf("store config messageDelayLevel=%q: %w", c.MessageDelayLevel, err)
	}
	return nil
}

// warningRatio is getDiskSpaceWarningLevelRatio: the configured percentage
// as a fraction, clamped to [0.35, 0.90].
func (c *Config) warningRatio() float64 {
	return float64(min(max(c.DiskSpaceWarningLevelRatio, 35), 90)) / 100
}

// forciblyRatio is getDiskSpaceCleanForciblyRatio, clamped to [0.30, 0.85].
func (c *Config) forciblyRatio() float64 {
	return float64(min(max(c.DiskSpaceCleanForciblyRatio, 30), 85)) / 100
}

// cqFileSize rounds the consume queue file size up to whole units, as Java does.
func (c *Config) cqFileSize() int {
	n := c.MappedFileSizeConsumeQueue
	return (n + cqUnitSize - 1) / cqUnitSize * cqUnitSize
}

func (c *Config) commitLogDir() string {
	if c.StorePathCommitLog != "" {
		return c.StorePathCommitLog
	}
	return filepath.Join(c.StorePathRootDir, "commitlog")
}

// EpochFile is where the epoch checkpoint is kept (storePathEpochFile).
func (c *Config) EpochFile() string {
	if c.StorePathEpochFile != "" {
		return c.StorePathEpochFile
	}
	return filepath.Join(c.StorePathRootDir, "epochFileCheckpoint")
}

// BrokerIdentityFile is where controller mode keeps the broker's id
// (storePathBrokerIdentity).
func (c *Config) BrokerIdentityFile() string {
	if c.StorePathBrokerIdentity != "" {
		return c.StorePathBrokerIdentity
	}
	return filepath.Join(c.StorePathRootDir, "brokerIdentity")
}

// parseDelayLevels parses "1s 5s 1m 2h 1d" into durations in ms, level = index+1.
func parseDelayLevels(s string) ([]int64, error) {
	var out []int64
	for _, tok := range strings.Split(s, " ") {
		if tok == "" {
			continue
		}
		unit := map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}[tok[len(tok)-1]]
		if unit == 0 {
			return nil, fmt.Errorf("delay level %q: unknown unit", tok)
		}
		n, err := strconv.ParseInt(tok[:len(tok)-1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("delay level %q: %w", tok, err)
		}
		out = append(out, n*int64(unit/time.Millisecond))
	}
	return out, nil
}
