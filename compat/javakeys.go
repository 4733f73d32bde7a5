package compat

import (
	"fmt"
	"slices"
	"strings"
)

// The Java broker.conf / namesrv.conf keys rmqd binds to nothing, classified
// once: rmqd promises a Java broker.conf runs unchanged, so a key it does not
// bind must be either harmless to drop (KeyNoEffect, reported at info level),
// a behaviour rmqd does not give yet (KeyNotHonoured, warned about), or a
// feature rmqd lacks (KeyRefused: start fails when the value asks for it).
// cmd/rmqd's start-up report and the table in docs/compatibility.md are both
// made from this table; a key in none of the config structs and not here is
// reported as a typo.

// KeyClass is what rmqd does with a Java key it does not bind.
type KeyClass int

const (
	// KeyUnknown: no Java key rmqd knows of (a typo, or a newer Java key).
	KeyUnknown KeyClass = iota
	// KeyNoEffect: a Java setting with no meaning in rmqd (thread pools,
	// Netty and JVM tuning, exporters rmqd lacks, RocksDB tuning...).
	KeyNoEffect
	// KeyNotHonoured: a behaviour rmqd does not give (yet); Java's default
	// behaviour applies whatever the value.
	KeyNotHonoured
	// KeyRefused: a feature rmqd lacks; refused when the value asks for it,
	// otherwise (the feature off) it has no effect.
	KeyRefused
)

func (c KeyClass) String() string {
	switch c {
	case KeyNoEffect:
		return "no effect"
	case KeyNotHonoured:
		return "not honoured"
	case KeyRefused:
		return "refused"
	}
	return "unknown"
}

// JavaKey is one classified key.
type JavaKey struct {
	Class KeyClass
	Why   string
	// Refuses tells, for a KeyRefused key, whether a value asks for the feature.
	Refuses func(v string) bool
	// When says in words which values Refuses refuses (for the docs).
	When string
}

// ClassifyJavaKey tells what rmqd does with key=value: a refused key whose
// value does not ask for its feature has no effect.
func ClassifyJavaKey(key, value string) (KeyClass, string) {
	k, ok := javaKeys[key]
	if !ok {
		return KeyUnknown, ""
	}
	if k.Class == KeyRefused && !k.Refuses(strings.TrimSpace(value)) {
		return KeyNoEffect, "the feature is off (" + k.Why + ")"
	}
	return k.Class, k.Why
}

// LookupJavaKey returns the classification of key.
func LookupJavaKey(key string) (JavaKey, bool) {
	k, ok := javaKeys[key]
	return k, ok
}

// JavaKeyNames returns every classified key, sorted.
func JavaKeyNames() []string {
	out := make([]string, 0, len(javaKeys))
	for k := range javaKeys {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// RefusedSetting returns an error naming the first (sorted) key of props
// whose value asks for a feature rmqd lacks, or nil.
func RefusedSetting(props map[string]string) error {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if c, why := ClassifyJavaKey(k, props[k]); c == KeyRefused {
			return fmt.Errorf("%s=%s: %s; rmqd refuses to start rather than run without it", k, props[k], why)
		}
	}
	return nil
}

// whenTrue refuses Boolean.parseBoolean true; whenSet a non-empty value.
func whenTrue(v string) bool { return strings.EqualFold(v, "true") }
func whenSet(v string) bool  { return v != "" }

// Reasons shared by many no-effect keys (the docs group keys by them).
const (
	whyThreads = "thread pool, queue capacity or lock choice of Java's request executors: rmqd runs requests " +
		"on goroutines with its own bounds (maxHeldPullRequests, the fast-failure waits)"
	whyNetty = "Netty, socket or JVM tuning of Java's remoting layer: rmqd's network layer is Go's, with its own " +
		"keys (bindAddress, maxConns, writeBufferHighWaterMark...)"
	whyStore = "Java store mechanics (page-cache warming, mapped-file swapping, the transient store pool, " +
		"commit threads, recovery and cleanup batching): rmqd's store does these its own way, with the same files"
	whyRocks = "RocksDB store or metadata tuning: rmqd serves only the file store (storeType=defaultRocksDB is refused)"
	whyStats = "a metrics, statistics or logging switch of Java's: rmqd's counters are always kept and exported " +
		"through Prometheus only (docs/observability.md)"
	whyAbsent = "detail of a feature rmqd refuses or lacks (DLedger, broker container, " +
		"LMQ): with the feature off it tunes nothing"
	whyInternal = "an internal interval or registration detail of Java's background services: rmqd keeps its " +
		"own schedule for the same work"
	whyServices = "internal buffering, batching or threading of Java's POP, timer, schedule and transaction " +
		"services: rmqd's services deliver the same messages at the same times without it"
	whyFilterExt = "SQL92 filter bitmap tuning (consume-queue ext): rmqd evaluates the filter per message, with " +
		"the same result"
	whyUnused = "read by nothing in Java's broker either (only a getter)"
	whyProxy  = "for Java's proxy (broadcast offsets kept by the broker): rmqd has no proxy"
)

var javaKeys = buildJavaKeys()

func buildJavaKeys() map[string]JavaKey {
	m := map[string]JavaKey{}
	group := func(class KeyClass, why string, keys ...string) {
		for _, k := range keys {
			if _, dup := m[k]; dup {
				panic("compat: Java key classified twice: " + k)
			}
			m[k] = JavaKey{Class: class, Why: why}
		}
	}
	refuse := func(key, when string, refuses func(string) bool, why string) {
		if _, dup := m[key]; dup {
			panic("compat: Java key classified twice: " + key)
		}
		m[key] = JavaKey{Class: KeyRefused, Why: why, Refuses: refuses, When: when}
	}

	group(KeyNoEffect, whyThreads,
		"ackMessageThreadPoolNums", "ackThreadPoolQueueCapacity", "adminBrokerThreadPoolNums",
		"adminBrokerThreadPoolQueueCapacity", "asyncSendEnable", "batchDispatchRequestThreadPoolNums",
		"clientManageThreadPoolNums", "clientManagerThreadPoolQueueCapacity", "consumerManageThreadPoolNums",
		"consumerManagerThreadPoolQueueCapacity", "enableBuildConsumeQueueConcurrently",
		"endTransactionPoolQueueCapacity", "endTransactionThreadPoolNums", "heartbeatThreadPoolNums",
		"heartbeatThreadPoolQueueCapacity", "litePullMessageThreadPoolNums", "litePullThreadPoolQueueCapacity",
		"loadBalanceProcessorThreadPoolNums", "loadBalanceThreadPoolQueueCapacity", "maxAsyncPutMessageRequests",
		"processReplyMessageThreadPoolNums", "pullMessageThreadPoolNums", "pullThreadPoolQueueCapacity",
		"putMessageFutureThreadPoolNums", "putThreadPoolQueueCapacity", "queryMessageThreadPoolNums",
		"queryThreadPoolQueueCapacity", "recoverConcurrently", "recoverThreadPoolNums",
		"replyThreadPoolQueueCapacity", "sendMessageThreadPoolNums", "sendThreadPoolQueueCapacity",
		"spinLockCollisionRetreatOptimalDegree", "topicQueueLockNum", "useABSLock",
		"useReentrantLockWhenPutMessage", "waitTimeMillsInAckQueue", "waitTimeMillsInAdminBrokerQueue")
	group(KeyNoEffect, "one goroutine copies and compacts every compaction topic's queues; Java splits "+
		"maxOffsetMapSize across its compaction threads, rmqd's one pass has all of it", "compactionThreadNum")
	group(KeyNoEffect, whyNetty,
		"clientAsyncSemaphoreValue", "clientCallbackExecutorThreads", "clientChannelMaxIdleTimeSeconds",
		"clientCloseSocketIfTimeout", "clientOnewaySemaphoreValue", "clientPooledByteBufAllocatorEnable",
		"clientSocketRcvBufSize", "clientSocketSndBufSize", "clientWorkerThreads", "connectTimeoutMillis",
		"disableCallbackExecutor", "disableNettyWorkerGroup", "enableFastChannelEventProcess",
		"enableReconnectForGoAway", "maxReconnectIntervalTimeSeconds", "serverAsyncSemaphoreValue",
		"serverCallbackExecutorThreads", "serverNettyWorkerGroupEnable", "serverOnewaySemaphoreValue",
		"serverPooledByteBufAllocatorEnable", "serverSocketBacklog", "serverSocketRcvBufSize",
		"serverSocketSndBufSize", "serverWorkerThreads", "socksProxyConfig", "transferMsgByHeap",
		"useEpollNativeSelector")
	group(KeyNoEffect, whyStore,
		"commitCommitLogLeastPages", "commitCommitLogThoroughInterval", "commitIntervalCommitLog",
		"correctLogicMinOffsetForceInterval", "correctLogicMinOffsetSleepInterval",
		"deleteFileBatchMax", "enableAcceleratedRecovery", "enableRunningFlagsInFlush",
		"fastFailIfNoBufferInStorePool", "flushCommitLogTimed", "flushLeastPagesWhenWarmMapedFile",
		"putConsumeQueueDataByFileChannel", "recheckReputOffsetFromCq",
		"redeleteHangedFileInterval", "searchBcqByCacheEnable", "transientStorePoolEnable",
		"transientStorePoolSize", "travelCqFileNumWhenGetMessage", "wakeCommitWhenPutMessage",
		"wakeFlushWhenPutMessage", "warmMapedFileEnable", "writeWithoutMmap", "maxChecksumRange",
		"syncMasterFlushOffsetWhenStartup")
	group(KeyNoEffect, whyRocks,
		"bottomMostCompressionTypeForConsumeQueueStore", "cleanRocksDBDirtyCQIntervalMin",
		"combineAssignOffsetCQType", "combineCQEnableCheckSelf", "combineCQLoadingCQTypes",
		"combineCQMaxExtraSearchCommitLogFiles", "combineCQPreferCQType", "enableRocksDBLog",
		"memTableFlushIntervalMs", "popConsumerKVServiceEnable", "popConsumerKVServiceInit",
		"popConsumerKVServiceLog", "realTimePersistRocksDBConfig", "rocksdbCQDoubleWriteEnable",
		"rocksdbCompressionType", "rocksdbFlushWalFrequency", "rocksdbWalFileRollingThreshold",
		"statRocksDBCQIntervalSec")
	group(KeyNoEffect, whyStats,
		"accountStatsEnable", "accountStatsPrintZeroValues", "autoDeleteUnusedStats", "commercialBaseCount",
		"commercialSizePerMsg", "debugLockEnable", "diskFallRecorded", "enableConnectionMetrics",
		"enableDetailStat", "enableLagAndDlqMetrics", "enableLmqStats", "enableLogConsumeQueueRepeatedlyBuildWhenRecover",
		"enableMessageStoreMetrics", "enablePopLog", "enablePopMetrics", "enableRemotingMetrics",
		"enableRequestMetrics", "enableScheduleMessageStats", "enableStatsMetrics", "enableTransactionMetrics",
		"estimateAccumulation", "isolateLogEnable", "maxConsumeQueueScan", "maxStatsIdleTimeInMinutes",
		"metricGrpcExporterIntervalInMills", "metricGrpcExporterTimeOutInMills",
		"metricLoggingExporterIntervalInMills", "metricsGrpcExporterHeader", "metricsGrpcExporterTarget",
		"metricsOtelCardinalityLimit", "printChannelGroups", "printChannelGroupsMinNum", "sampleCountThreshold",
		"sampleSteps", "timerCheckMetricsWhen", "timerEnableCheckMetrics", "timerMetricSmallThreshold",
		"timerProgressLogIntervalMs", "transactionMetricFlushInterval", "useStaticSubscription")
	group(KeyNoEffect, whyAbsent,
		"controllerDLegerGroup", "controllerDLegerPeers", "controllerDLegerSelfId",
		"dLegerGroup", "dLegerPeers", "dLegerSelfId", "enableBatchPush",
		"logicalDiskSpaceCleanForciblyThreshold", "preferredLeaderId",
		"replicasPerDiskPartition", "storePathDLedgerCommitLog")
	group(KeyNoEffect, whyInternal,
		"channelNotActiveInterval", "consumerOffsetUpdateVersionStep",
		"delayOffsetUpdateVersionStep", "disappearTimeAfterStart", "enableShutdownGracefully",
		"enableSingleTopicRegister", "enableSplitMetadata", "forceRegister",
		"isScanAvailableNameSrv", "loadBalancePollNameServerInterval", "realTimeNotifyConsumerChange",
		"shutdownWaitTimeSeconds", "splitMetadataSize",
		"startAcceptSendRequestTimeStamp")
	group(KeyNoEffect, whyServices,
		"appendAckAsync", "appendCkAsync", "enableNotifyAfterPopOrderLockRelease", "enableNotifyBeforePopCalculateLag",
		"enablePopBatchAck", "enablePopBufferMerge", "enableScheduleAsyncDeliver", "enableSkipLongAwaitingAck",
		"initPopOffsetByCheckMsgInMem", "mappedFileSizeTimerLog", "popCkMaxBufferSize", "popCkOffsetMaxQueueSize",
		"popCkStayBufferTime", "popCkStayBufferTimeOut", "popConsumerFSServiceInit",
		"popLongPollingForceNotifyInterval", "popPollingMapExpireTimeSeconds", "popPollingMapSize",
		"popReviveMaxAttemptTimes", "popReviveMaxReturnSizePerRead", "reviveAckWaitMs", "reviveMaxSlow",
		"reviveScanTime", "scheduleAsyncDeliverMaxPendingLimit", "scheduleAsyncDeliverMaxResendNum2Blocked",
		"skipWhenCKRePutReachMaxTimes", "timerColdDataCheckIntervalMs", "timerEnableDisruptor",
		"timerEnableRetryUntilSuccess", "timerFlushIntervalMs", "timerGetMessageThreadNum",
		"timerInterceptDelayLevel", "timerPutMessageThreadNum", "timerSkipUnknownError", "timerWarmEnable",
		"transactionOpBatchInterval", "transactionOpMsgMaxSize")
	group(KeyNoEffect, whyFilterExt,
		"bitMapLengthConsumeQueueExt", "enableCalcFilterBitMap", "expectConsumerNumUseFilter",
		"filterDataCleanTimeSpan", "mappedFileSizeConsumeQueueExt", "maxErrorRateOfBloomFilter")
	group(KeyNoEffect, whyUnused,
		"cleanOfflineBrokerInterval", "cleanSwapedMapInterval", "commitLogForceSwapMapInterval",
		"commitLogSwapMapInterval", "commitLogSwapMapReserveFileNum", "dispatchCqCacheNum", "dispatchCqThreads",
		"dispatchFromSenderThread", "enableAsyncReput", "enableCleanExpiredOffset",
		"flushConsumerOffsetHistoryInterval", "highSpeedMode", "logicQueueForceSwapMapInterval",
		"logicQueueSwapMapInterval", "logicQueueSwapMapReserveFileNum", "mappedFileSwapEnable",
		"maxBatchDeleteFilesNum", "maxRecoveryCommitlogFiles", "maxSlaveResendLength",
		"maxTopicLength", "pullBatchMaxMessageCount", "putMessageTimeout", "putMsgIndexHightWater")
	group(KeyNoEffect, "caches of Java's ACL 2.0 metadata and decisions: rmqd holds every user and ACL in "+
		"memory, so each request is decided on the current ones",
		"aclCacheExpiredSecond", "aclCacheMaxNum", "aclCacheRefreshSecond", "statefulAuthenticationCacheExpiredSecond",
		"statefulAuthenticationCacheMaxNum", "statefulAuthorizationCacheExpiredSecond",
		"statefulAuthorizationCacheMaxNum", "userCacheExpiredSecond", "userCacheMaxNum", "userCacheRefreshSecond")
	group(KeyNoEffect, "set by Java's BrokerStartup from other keys (storePathRootDir, brokerName, "+
		"brokerClusterName), over any value the file gives", "authConfigPath", "clusterName", "configName")
	group(KeyNoEffect, whyProxy,
		"broadcastOffsetExpireMaxSecond", "broadcastOffsetExpireSecond", "enableBroadcastOffsetStore")

	// Keys Java 5.4.0 and 5.5.0 added (docs/compatibility.md, "Apache RocketMQ 5.5").
	group(KeyNoEffect, whyRocks,
		"combineCQUseRocksdbForLmq", "iteratorWhenUseRocksdbConsumeQueue", "maxRocksDBIndexQueryDays",
		"persistConsumerOffsetIncrementally", "timerRocksDBPrecisionMs", "timerRocksDBRollIntervalHours",
		"timerRocksDBRollMaxTps", "timerRocksDBRollRangeHours", "timerRocksDBStopScan",
		"timerRocksDBTimeExpiredMaxTps", "transWriteOriginTransHalfEnable", "transactionCheckRocksdbCoreThreads",
		"transactionCheckRocksdbMaxThreads", "transactionCheckRocksdbQueueCapacity",
		"useSeparateStorePathForRocksdbCQ", "useSingleRocksDBForAllConfigs")
	group(KeyNoEffect, "detail of Java 5.5's lite topics that rmqd does without: its event dispatcher and the lite lag its POPs record (rmqd reads the lag from offsets; docs/lite.md)",
		"enableLiteEventMode", "enableLitePopLog", "liteEventCheckInterval", "liteEventFullDispatchDelayTime",
		"liteEventFullDispatchDelayTimeForWildcardGroup", "liteLagLatencyCollectEnable", "liteLagLatencyTopK",
		"maxClientEventCount")
	group(KeyNoEffect, whyStats, "liteLagCountMetricsEnable", "liteLagLatencyMetricsEnable")
	group(KeyNoEffect, whyServices,
		"popReviveConcurrency", "timerRecallToTimeWheelEnable", "timerRecallToTimelineEnable",
		"timerReputServiceCorePoolSize", "timerReputServiceMaxPoolSize", "timerReputServiceQueueCapacity",
		"timerWheelSnapshotFlush", "timerWheelSnapshotIntervalMs")
	group(KeyNoEffect, whyStore, "checkCommitLogOffsetOnRecover", "commitLogRecoverMaxNum", "sharedByteBufferNum")
	group(KeyNoEffect, whyStats, "metricsExportBatchMaxDataPoints")
	refuse("timerRocksDBEnable", "true", whenTrue, "the RocksDB timer (Java 5.4) is not supported: rmqd's timer is the wheel")
	refuse("transRocksDBEnable", "true", whenTrue,
		"transactions kept in RocksDB (Java 5.4) are not supported: rmqd keeps half messages in the commitlog")
	refuse("indexRocksDBEnable", "true", whenTrue,
		"the RocksDB message index (Java 5.4) is not supported: rmqd keeps the index files")
	refuse("useSeparateRetryQueue", "true", whenTrue,
		"a retry queue per message queue (Java 5.4) is not supported: retries go to the group's retry topic")

	// Behaviours rmqd does not give: Java's default applies.
	for k, why := range map[string]string{
		"indexFileWriteEnable": "the index files are always written (Java 5.4 can leave them to its RocksDB index)",
		"indexFileReadEnable":  "the index files are always read (Java 5.4 can leave them to its RocksDB index)",
		"useMessageFilterForNotification": "NOTIFICATION reports any new message, not only those matching the " +
			"subscription Java 5.5 sends with it",
		"maxMessageFilterNumForNotification": "NOTIFICATION reports any new message, not only those matching the " +
			"subscription Java 5.5 sends with it",
		"popReviveSkipIfGroupAbsent":   "the reviver skips the checkpoints of a group that does not exist (and is not auto-created), as Java by default",
		"appendTopicForTimerDeleteKey": "a timer delete key is Java's default one, without the topic",
	} {
		group(KeyNotHonoured, why, k)
	}

	// Features rmqd lacks: refused when asked for. The first four were
	// processor's unsupportedKeys.
	refuse("enableDLegerCommitLog", "true", whenTrue, "the DLedger commitlog is not supported")
	refuse("storeType", "other than default", func(v string) bool { return v != "" && v != "default" },
		"only the file-based consume queue (storeType=default) is supported")
	refuse("duplicationEnable", "true", whenTrue,
		"duplication mode (a commitlog copied from another store, offsets kept) is not supported")
	refuse("readOnlyCommitLogStorePaths", "set", whenSet,
		"read-only commitlog paths are not read: their messages would be missing")
	refuse("enableConsumeQueueExt", "true", whenTrue,
		"the consume-queue ext (filter bitmaps) is not supported: its tag codes would be read as tag hashes")
	refuse("messageStorePlugIn", "set", whenSet, "Java message store plugins cannot be loaded")
	refuse("configManagerVersion", "other than v1", func(v string) bool { return v != "" && !strings.EqualFold(v, "v1") },
		"metadata in RocksDB (configManagerVersion=v2) is not read: rmqd keeps topics, groups and offsets in JSON files")
	refuse("brokerConfigPaths", "set", whenSet,
		"the broker container (several brokers in one process) is not supported: run one rmqd per broker")
	refuse("enableControllerInNamesrv", "true", whenTrue,
		"the controller inside the name server is not supported: run Java's controller (docs/ha.md)")
	return m
}
