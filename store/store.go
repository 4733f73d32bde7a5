package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"rmqd/codec"
)

// DefaultStore is the byte-compatible message store (DefaultMessageStore).
type DefaultStore struct {
	// cfg is the configuration Open was given; the settings a running store
	// takes (liveKeys) are read from live instead.
	cfg         Config
	live        atomic.Pointer[Config]
	liveMu      sync.Mutex    // one ApplyLive at a time
	cleanRetime chan struct{} // ApplyLive: the cleaner's interval may have changed
	log         *slog.Logger
	delayLevels []int64

	commitLog  *commitLog
	checkpoint *checkpoint
	index      *indexService

	cqMu sync.RWMutex
	cqs  map[tqKey]*consumeQueue
	// lazy maps consume-queue files on demand and unmaps idle ones (lazymap.go).
	lazy *lazyMaps
	// cleanedMinPhy is the commitlog min offset the last queue cleanup
	// worked to (-1: none yet).
	cleanedMinPhy atomic.Int64
	// manualDeletes counts the clean passes left that delete expired
	// commitlog files whatever the hour (DeleteExpiredFilesManually).
	manualDeletes atomic.Int32

	listener atomic.Pointer[ArrivingListener]
	// batchTopics says which topics are queue.type=BatchCQ (SetBatchTopics).
	batchTopics atomic.Pointer[func(topic string) bool]

	// reputFrom is the next commitlog offset to dispatch; only the dispatcher
	// goroutine (or recovery, before it starts) moves it.
	reputFrom atomic.Int64
	// The dispatcher, the page keeper, the flushers, the disk check and the
	// unmapping sweep sleep while they have nothing to do (idle.go); these
	// wake them. reputNap.idle also says the dispatcher is not dispatching.
	reputNap, keeperNap, clFlushNap, cqFlushNap, diskNap *napper
	cqFlushedAt                                          atomic.Int64 // reputFrom covered by the last full consume-queue flush
	// confirmOn bounds dispatch by confirmOffset (controller mode, autoswitch.go).
	confirmOn     atomic.Bool
	confirmOffset atomic.Int64
	dispatchMu    sync.Mutex // one dispatcher at a time
	// dispatchFailedAt is the record whose dispatch last failed (under dispatchMu).
	dispatchFailedAt int64
	group            *groupCommit
	replicas         replicaWaiters
	role             atomic.Pointer[string] // brokerRole; SetRole changes it at runtime (controller mode)
	appendHook       atomic.Pointer[func()]

	// lastLogicTs is the store time of the last record put into a consume queue;
	// it reaches the checkpoint only once the queues are flushed past it.
	lastLogicTs atomic.Int64
	// diskFull refuses puts while a store disk is above the warning level;
	// disk holds the last check's figures (admission.go).
	diskFull atomic.Bool
	disk     atomic.Pointer[DiskUsage]
	diskWake chan struct{}
	// statRatio measures a path's file system (diskRatio; a test fakes a full disk).
	statRatio func(path string) float64
	// cold is the live cold-data read check (coldread.go).
	cold coldCheck

	// compaction is Java's CompactionStore (compaction.go); nil without
	// enableCompaction.
	compaction *compactionService

	lockFile   *os.File
	lastExitOK bool

	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	started atomic.Bool
	closed  atomic.Bool
	closeMu sync.Mutex
}

// ErrLocked means another process holds the store's lock file.
var ErrLocked = errors.New("store: lock failed, MQ already started")

// Open loads and recovers the store under cfg.StorePathRootDir. Start begins the
// background services; Shutdown closes it.
func Open(cfg Config, logger *slog.Logger) (*DefaultStore, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	if cfg.recoverCRC() == crcProp && !cfg.EnabledAppendPropCRC {
		// As in Java: records this store writes will fail the next crash recovery.
		logger.Warn("forceVerifyPropCRC without enabledAppendPropCRC: crash recovery cuts the log at the first record written now")
	}
	levels, _ := parseDelayLevels(cfg.MessageDelayLevel)
	s := &DefaultStore{
		cfg:         cfg,
		log:         logger.With("component", "store"),
		delayLevels: levels,
		cqs:         make(map[tqKey]*consumeQueue),
		reputNap:    newNapper(),
		keeperNap:   newNapper(),
		diskWake:    make(chan struct{}, 1),
		cleanRetime: make(chan struct{}, 1),
		clFlushNap:  newNapper(),
		cqFlushNap:  newNapper(),
		diskNap:     newNapper(),
		lazy:        newLazyMaps(int64(cfg.MappedConsumeQueueFilesMax)),
		statRatio:   diskRatio,
	}
	s.live.Store(&cfg)
	s.role.Store(&cfg.BrokerRole)
	if cfg.BatchTopics != nil {
		s.SetBatchTopics(cfg.BatchTopics)
	}
	s.SetColdDataCheck(cfg.ColdDataFlowControlEnable, cfg.ColdDataScanEnable, cfg.AccessMessageInMemoryHotRatio)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.cleanedMinPhy.Store(-1)
	if err := os.MkdirAll(cfg.StorePathRootDir, 0o755); err != nil {
		return nil, fmt.Errorf("create store root: %w", err)
	}
	if err := s.lock(); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			s.closeFiles()
		}
	}()
	_, err := os.Stat(s.abortPath())
	s.lastExitOK = os.IsNotExist(err)
	// As Java's "last shutdown normally/abnormally": what the recovery below assumes.
	s.log.Info("store opened", "dir", cfg.StorePathRootDir, "lastShutdownClean", s.lastExitOK)
	// Made before recovery, not in Start as Java does: recovery cuts files and
	// rebuilds queues and index, and a crash in the middle of that must not be
	// taken for a clean exit.
	if err := createAbortFile(s.abortPath(), os.Getpid()); err != nil {
		return nil, err
	}
	s.commitLog = newCommitLog(cfg.commitLogDir(), &s.cfg)
	s.commitLog.onAppend = s.appended
	s.commitLog.onNoSpace = s.noSpace
	s.commitLog.q.adviseFailed = func(err error) { s.log.Error("set commitlog file read mode", "err", err) }
	if err := s.commitLog.q.load(); err != nil {
		return nil, fmt.Errorf("load commitlog: %w", err)
	}
	if !cfg.DataReadAheadEnable { // CommitLog.load's scanFileAndSetReadMode(MADV_RANDOM)
		if err := s.commitLog.q.setRandomRead(true, true); err != nil {
			s.log.Error("set commitlog read mode", "mode", "random", "err", err)
		}
	}
	if err := s.loadConsumeQueues(); err != nil {
		return nil, err
	}
	if s.checkpoint, err = openCheckpoint(filepath.Join(cfg.StorePathRootDir, "checkpoint")); err != nil {
		return nil, fmt.Errorf("load checkpoint: %w", err)
	}
	s.confirmOffset.Store(s.checkpoint.confirmPhyOffset.Load()) // loadCheckPoint's setConfirmOffset
	s.index = newIndexService(s)
	if err := s.index.load(s.lastExitOK); err != nil {
		return nil, err
	}
	s.index.loadGap()
	s.group = newGroupCommit(s)
	if err := s.recover(); err != nil {
		return nil, fmt.Errorf("recover store: %w", err)
	}
	if cfg.EnableCompaction {
		if s.compaction, err = openCompaction(s); err != nil {
			return nil, err
		}
	}
	ok = true
	return s, nil
}

func (s *DefaultStore) abortPath() string { return filepath.Join(s.cfg.StorePathRootDir, "abort") }

// lock takes the POSIX record lock Java's FileChannel.tryLock takes on byte 0, so
// a Java broker and rmqd exclude each other too.
func (s *DefaultStore) lock() error {
	f, err := os.OpenFile(filepath.Join(s.cfg.StorePathRootDir, "lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open lock file: %w", err)
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk); err != nil {
		f.Close()
		return fmt.Errorf("%w: %s: %v", ErrLocked, s.cfg.StorePathRootDir, err)
	}
	if _, err := f.WriteAt([]byte("lock"), 0); err != nil {
		f.Close()
		return fmt.Errorf("write lock file: %w", err)
	}
	s.lockFile = f
	return nil
}

func (s *DefaultStore) loadConsumeQueues() error {
	if err := s.loadQueuesUnder("consumequeue", false); err != nil {
		return err
	}
	return s.loadQueuesUnder(bcqDirName, true)
}

// loadQueuesUnder loads the queues under one directory of the root: simple
// ones under consumequeue/, batch ones under batchconsumequeue/ (Java's
// ConsumeQueueStore loads both; a queue's directory says its type).
func (s *DefaultStore) loadQueuesUnder(dir string, batch bool) error {
	root := filepath.Join(s.cfg.StorePathRootDir, dir)
	topics, err := os.ReadDir(root)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return fmt.Errorf("read consume queues: %w", err)
	}
	for _, t := range topics {
		if !t.IsDir() {
			continue
		}
		qdirs, err := os.ReadDir(filepath.Join(root, t.Name()))
		if err != nil {
			return fmt.Errorf("read consume queues of %s: %w", t.Name(), err)
		}
		for _, q := range qdirs {
			qid, err := strconv.ParseInt(q.Name(), 10, 32)
			if err != nil || !q.IsDir() {
				continue
			}
			if old := s.cqs[tqKey{t.Name(), int32(qid)}]; old != nil {
				s.log.Warn("queue has both a consume queue and a batch consume queue: the simple one is served",
					"topic", t.Name(), "queue", qid)
				continue
			}
			cq := s.newQueue(t.Name(), int32(qid), filepath.Join(root, t.Name(), q.Name()), batch)
			if err := cq.q.load(); err != nil {
				return fmt.Errorf("load consume queue %s/%d: %w", t.Name(), qid, err)
			}
			s.cqs[tqKey{cq.topic, cq.qid}] = cq
		}
	}
	return nil
}

func (s *DefaultStore) newQueue(topic string, qid int32, dir string, batch bool) *consumeQueue {
	if batch {
		return newBatchConsumeQueue(topic, qid, dir, s.cfg.bcqFileSize(), s.log, s.lazy)
	}
	return newConsumeQueue(topic, qid, dir, s.cfg.cqFileSize(), s.log, s.lazy)
}

// SetBatchTopics tells the store which topics are queue.type=BatchCQ: their
// queues made from now on are batch consume queues (QueueTypeUtils.isBatchCq
// on the topic config, which the broker owns). A queue that exists keeps its
// type, as in Java.
func (s *DefaultStore) SetBatchTopics(isBatch func(topic string) bool) {
	s.batchTopics.Store(&isBatch)
}

// isBatchTopic asks SetBatchTopics' function; false before it is set.
func (s *DefaultStore) isBatchTopic(topic string) bool {
	if f := s.batchTopics.Load(); f != nil {
		return (*f)(topic)
	}
	return false
}

func (s *DefaultStore) findCQ(topic string, qid int32) *consumeQueue {
	s.cqMu.RLock()
	cq := s.cqs[tqKey{topic, qid}]
	s.cqMu.RUnlock()
	return cq
}

// findOrCreateCQ returns nil for a topic that is not a safe directory name
// (checkTopicDir) or a negative queue id: nothing is created for them.
func (s *DefaultStore) findOrCreateCQ(topic string, qid int32) *consumeQueue {
	return s.findOrCreateQueue(topic, qid, false)
}

// findOrCreateQueue is findOrCreateCQ; a queue it makes is a batch one when
// innerBatch (the record is an inner batch) or the topic is BatchCQ.
func (s *DefaultStore) findOrCreateQueue(topic string, qid int32, innerBatch bool) *consumeQueue {
	if cq := s.findCQ(topic, qid); cq != nil {
		return cq
	}
	if qid < 0 || !safeTopicDir(topic) {
		return nil
	}
	batch := innerBatch || s.isBatchTopic(topic)
	s.cqMu.Lock()
	defer s.cqMu.Unlock()
	if cq := s.cqs[tqKey{topic, qid}]; cq != nil {
		return cq
	}
	topic = strings.Clone(topic)
	dirName := "consumequeue"
	if batch {
		dirName = bcqDirName
	}
	dir := filepath.Join(s.cfg.StorePathRootDir, dirName, topic, strconv.Itoa(int(qid)))
	cq := s.newQueue(topic, qid, dir, batch)
	s.cqs[tqKey{topic, qid}] = cq
	if s.compaction != nil {
		s.compaction.rescan.Store(true) // its topic may be compacted
		signal(s.compaction.wake)
	}
	return cq
}

// PrepareQueues makes the first consume-queue file of each of topic's queues
// 0..queues-1 that has never held a message, and faults its first page in. The
// first write into a new file costs milliseconds on some file systems (block
// reservation and an inode update under the journal); done here, when a topic is
// created, it is not paid on the dispatch path, where every queue's consumers
// would wait for it.
func (s *DefaultStore) PrepareQueues(topic string, queues int32) {
	if err := checkTopicDir(topic); err != nil {
		s.log.Warn("prepare consume queues refused", "err", err)
		return
	}
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed.Load() || !s.started.Load() {
		return
	}
	for qid := int32(0); qid < queues; qid++ {
		if cq := s.findCQ(topic, qid); cq != nil && cq.q.last() != nil {
			continue
		}
		if !s.commitLog.queueIsNew(tqKey{topic, qid}) {
			continue // records on their way to dispatch decide where the queue starts
		}
		cq := s.findOrCreateCQ(topic, qid)
		if cq == nil {
			return
		}
		f, err := cq.q.lastForWrite(0)
		if err != nil {
			s.log.Warn("prepare consume queue", "topic", topic, "queue", qid, "err", err)
			return
		}
		if f.wrote.Load() == 0 && f.hold() {
			_ = unix.Madvise(f.data[:min(osPageSize, f.size)], unix.MADV_POPULATE_WRITE)
			f.release()
		}
	}
}

func (s *DefaultStore) allCQs() []*consumeQueue {
	s.cqMu.RLock()
	defer s.cqMu.RUnlock()
	out := make([]*consumeQueue, 0, len(s.cqs))
	for _, cq := range s.cqs {
		out = append(out, cq)
	}
	return out
}

// Start runs the dispatcher, flush and cleanup services.
func (s *DefaultStore) Start() error {
	if !s.started.CompareAndSwap(false, true) {
		return nil
	}
	s.checkDisk()
	s.cqFlushedAt.Store(s.reputFrom.Load()) // recovery left the consume queues on disk
	s.goService(s.runDiskCheck)
	s.goService(s.runReput)
	if s.cfg.FlushDiskType == SyncFlush {
		s.goService(s.group.run)
	} else {
		s.goService(s.runFlushCommitLog)
	}
	s.goService(s.runFlushConsumeQueue)
	s.goService(s.runClean)
	s.goService(s.runPageKeeper)
	s.goService(s.runUnmapIdle)
	if s.compaction != nil {
		s.goService(s.compaction.run)
	}
	return nil
}

func (s *DefaultStore) goService(f func(ctx context.Context)) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f(s.ctx)
	}()
}

// Shutdown stops the services, dispatches what is left, flushes everything and
// removes the abort file (a clean exit).
func (s *DefaultStore) Shutdown() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed.Load() {
		return nil
	}
	s.commitLog.close()
	s.cancel()
	s.wg.Wait()
	s.reputNap.idle.Store(false) // no dispatch on an appender's goroutine from now on
	var errs []error
	if err := s.commitLog.q.flush(0); err != nil {
		errs = append(errs, err)
	}
	s.doReput()     // after the flush, which bounds it under SYNC_FLUSH
	s.group.serve() // answer SYNC_FLUSH puts that queued after the service stopped
	logicTs := s.lastLogicTs.Load()
	for _, cq := range s.allCQs() {
		if err := cq.q.flush(0); err != nil {
			errs = append(errs, err)
		}
	}
	if logicTs > 0 {
		s.checkpoint.logicsMsgTimestamp.Store(logicTs)
	}
	s.index.flush()
	if s.compaction != nil {
		if err := s.compaction.shutdown(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.commitLog.lastStoreTs.Load() > 0 {
		s.checkpoint.physicMsgTimestamp.Store(s.commitLog.lastStoreTs.Load())
	}
	if err := s.checkpoint.flush(); err != nil {
		errs = append(errs, err)
	}
	caughtUp := s.reputFrom.Load() >= s.commitLog.q.maxOffset()
	s.closed.Store(true)
	s.closeFiles()
	if caughtUp && len(errs) == 0 {
		if err := os.Remove(s.abortPath()); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (s *DefaultStore) closeFiles() {
	if s.commitLog != nil {
		s.commitLog.q.closeAll()
	}
	for _, cq := range s.allCQs() {
		cq.q.closeAll()
	}
	if s.index != nil {
		s.index.close()
	}
	if s.compaction != nil {
		s.compaction.close()
	}
	if s.checkpoint != nil {
		s.checkpoint.close()
	}
	if s.lockFile != nil {
		_ = s.lockFile.Close() // closing drops the fcntl lock
		s.lockFile = nil
	}
}

// SetArrivingListener installs the listener told of every dispatched message.
// Its properties argument aliases the mapped file: valid only during the call.
func (s *DefaultStore) SetArrivingListener(l ArrivingListener) {
	if l == nil {
		s.listener.Store(nil)
		return
	}
	s.listener.Store(&l)
}

// PutMessage appends one message (see processor.MessageStore).
func (s *DefaultStore) PutMessage(ctx context.Context, msg *codec.Message) PutResult {
	if st := s.admit(); st != PutOK {
		return PutResult{Status: st}
	}
	if msg.SysFlag&codec.SysFlagInnerBatch != 0 && !s.isBatchTopic(msg.Topic) {
		return PutResult{Status: PutMessageIllegal} // DefaultMessageStore.asyncPutMessage's check
	}
	props := msg.Properties // an LMQ put stores them without WAIT, which afterPut reads
	res := s.commitLog.put(msg)
	if res.Status != PutOK {
		return res
	}
	res.Status = s.afterPut(ctx, res.WroteOffset+int64(res.WroteBytes), props)
	return res
}

// PutMessages appends a client batch, one record per inner message.
func (s *DefaultStore) PutMessages(ctx context.Context, tmpl *codec.Message, batchBody []byte, fixProps func(props string) string) PutResult {
	if st := s.admit(); st != PutOK {
		return PutResult{Status: st}
	}
	res := s.commitLog.putBatch(tmpl, batchBody, fixProps)
	if res.Status != PutOK {
		return res
	}
	res.Status = s.afterPut(ctx, res.WroteOffset+int64(res.WroteBytes), tmpl.Properties)
	return res
}

// afterPut waits for the flush under SYNC_FLUSH, then for a slave's ack on a
// SYNC_MASTER, when the message asks to wait (WAIT absent or "true"). As in
// Java, a replication failure replaces a flush success.
func (s *DefaultStore) afterPut(ctx context.Context, end int64, props string) PutStatus {
	st := s.afterPutFlush(ctx, end, props)
	if s.needsReplica(props) {
		if rs := s.waitReplica(ctx, end, s.live.Load().slaveTimeout()); rs != PutOK {
			st = rs
		}
	}
	return st
}

func (s *DefaultStore) afterPutFlush(ctx context.Context, end int64, props string) PutStatus {
	if s.cfg.FlushDiskType != SyncFlush {
		return PutOK
	}
	if w, ok := codec.PropertyValue(props, codec.PropWait); ok && !strings.EqualFold(w, "true") {
		s.group.wakeup()
		return PutOK
	}
	if !s.started.Load() {
		// No flush service yet: flush inline.
		if err := s.commitLog.q.flush(0); err != nil {
			return PutFlushDiskTimeout
		}
		return PutOK
	}
	return s.group.wait(ctx, end, s.live.Load().syncFlushTimeout())
}

// FlushedPhyOffset is how far the commitlog is known to be on disk.
func (s *DefaultStore) FlushedPhyOffset() int64 { return s.commitLog.q.flushedWhere.Load() }

// SyncFlush reports whether puts may wait after the append: for the disk
// (flushDiskType=SYNC_FLUSH) or for a slave (brokerRole=SYNC_MASTER). Only then
// is the asynchronous put worth its closures.
func (s *DefaultStore) SyncFlush() bool {
	return s.cfg.FlushDiskType == SyncFlush || s.syncMaster()
}

// PutMessageAsync is PutMessage answering through done (Java's asyncPutMessage):
// done runs exactly once, inline unless the put must wait for a SYNC_FLUSH group
// commit, in which case it runs from the group-commit service after the msync
// (or after syncFlushTimeout with PutFlushDiskTimeout). No worker blocks meanwhile.
func (s *DefaultStore) PutMessageAsync(ctx context.Context, msg *codec.Message, done func(PutResult)) {
	if st := s.admit(); st != PutOK {
		done(PutResult{Status: st})
		return
	}
	if msg.SysFlag&codec.SysFlagInnerBatch != 0 && !s.isBatchTopic(msg.Topic) {
		done(PutResult{Status: PutMessageIllegal})
		return
	}
	props := msg.Properties // as in PutMessage
	res := s.commitLog.put(msg)
	if res.Status != PutOK {
		done(res)
		return
	}
	s.afterPutAsync(ctx, res, props, done)
}

// PutMessagesAsync is PutMessages answering through done, as PutMessageAsync.
func (s *DefaultStore) PutMessagesAsync(ctx context.Context, tmpl *codec.Message, batchBody []byte, fixProps func(props string) string, done func(PutResult)) {
	if st := s.admit(); st != PutOK {
		done(PutResult{Status: st})
		return
	}
	res := s.commitLog.putBatch(tmpl, batchBody, fixProps)
	if res.Status != PutOK {
		done(res)
		return
	}
	s.afterPutAsync(ctx, res, tmpl.Properties, done)
}

func (s *DefaultStore) afterPutAsync(ctx context.Context, res PutResult, props string, done func(PutResult)) {
	end := res.WroteOffset + int64(res.WroteBytes)
	if !s.needsReplica(props) {
		s.afterFlushAsync(ctx, res, props, done)
		return
	}
	// Flush first, then the slave: the slave's ack usually comes after the
	// master's own flush anyway, and one chain keeps done exactly-once.
	s.afterFlushAsync(ctx, res, props, func(res PutResult) {
		s.waitReplicaAsync(end, s.live.Load().slaveTimeout(), func(st PutStatus) {
			if st != PutOK {
				res.Status = st
			}
			done(res)
		})
	})
}

func (s *DefaultStore) afterFlushAsync(ctx context.Context, res PutResult, props string, done func(PutResult)) {
	if s.cfg.FlushDiskType != SyncFlush || !s.started.Load() {
		res.Status = s.afterPutFlush(ctx, res.WroteOffset+int64(res.WroteBytes), props)
		done(res)
		return
	}
	if w, ok := codec.PropertyValue(props, codec.PropWait); ok && !strings.EqualFold(w, "true") {
		s.group.wakeup()
		done(res)
		return
	}
	s.group.waitAsync(res.WroteOffset+int64(res.WroteBytes), s.live.Load().syncFlushTimeout(),
		func(st PutStatus) {
			res.Status = st
			done(res)
		})
}

// appended runs after every commitlog append of [start, end), outside the
// commitlog lock unless start < 0. Replication hears of it first (its wake-up
// then overlaps the dispatch); the record is dispatched right here when the
// dispatcher is idle and caught up to it, else the dispatcher is woken.
func (s *DefaultStore) appended(start, end int64) {
	s.appendedReplica()
	if s.flushBound() {
		return // not dispatchable before its flush, which wakes the dispatcher
	}
	if start < 0 || !s.dispatchInline(start, end) {
		s.wakeReput()
	}
}

// dispatchInline dispatches on the appender's goroutine what the dispatcher
// would have, when it waits idle and has dispatched everything before start:
// at low rates a put then costs no wake-up of the dispatcher (a futex and often
// a thread), while a busy dispatcher still batches. It reports false, leaving
// the record to the dispatcher, when another dispatch runs, the record is not
// confirmed yet, or dispatch stopped short (a bad record, a full disk: the
// dispatcher retries those on its own schedule).
func (s *DefaultStore) dispatchInline(start, end int64) bool {
	if !s.reputNap.idle.Load() || s.reputFrom.Load() != start || s.dispatchLimit() < end {
		return false
	}
	if !s.dispatchMu.TryLock() {
		return false
	}
	defer s.dispatchMu.Unlock()
	if !s.reputNap.idle.Load() {
		return false // shut down meanwhile (Shutdown clears it before its last dispatch)
	}
	stuck, held := s.doReputLocked()
	return !stuck && !held
}

// appendedReplica is appended without the dispatcher's wake-up: the
// replication client dispatches once per read (DispatchReplicated).
func (s *DefaultStore) appendedReplica() {
	s.clFlushNap.kick()
	s.diskNap.kick()
	s.keeperNap.kick()
	if h := s.appendHook.Load(); h != nil {
		(*h)()
	}
}

// SetAppendHook makes h run after every commitlog append (store/ha wakes its
// idle senders with it). h must not block; nil removes it.
func (s *DefaultStore) SetAppendHook(h func()) {
	if h == nil {
		s.appendHook.Store(nil)
		return
	}
	s.appendHook.Store(&h)
}

// wakeReput wakes an idle dispatcher; a busy one sees the new bytes before it waits.
func (s *DefaultStore) wakeReput() { s.reputNap.kick() }

// MinPhyOffset is the first commitlog offset still on disk.
func (s *DefaultStore) MinPhyOffset() int64 {
	m := s.commitLog.q.minOffset()
	if m < 0 {
		return 0
	}
	return m
}

// MaxPhyOffset is the end of the commitlog.
func (s *DefaultStore) MaxPhyOffset() int64 { return s.commitLog.q.maxOffset() }

// DispatchedPhyOffset is how far consume-queue and index dispatch has got: every
// record below it is in its consume queue. It equals MaxPhyOffset once dispatch
// has caught up.
func (s *DefaultStore) DispatchedPhyOffset() int64 { return s.reputFrom.Load() }

// CommitLogDiskRatio is the used fraction of the commitlog's file system.
func (s *DefaultStore) CommitLogDiskRatio() float64 {
	return s.statRatio(s.cfg.commitLogDir())
}

// ConsumeQueueDiskRatio is the used fraction of the consume queues' file
// system (the store root's until the folder exists).
func (s *DefaultStore) ConsumeQueueDiskRatio() float64 {
	return s.statRatio(existingDir(filepath.Join(s.cfg.StorePathRootDir, "consumequeue"), s.cfg.StorePathRootDir))
}

// diskRatio is UtilAll.getDiskPartitionSpaceUsedPercent: used over used plus
// what an unprivileged writer may still use (blocks reserved for root count as
// neither), rounded up to a whole percent. mqadmin clusterList shows it and
// retention compares it with diskMaxUsedSpaceRatio, so it must match Java's.
func diskRatio(path string) float64 {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil || st.Blocks == 0 {
		return -1
	}
	used := st.Blocks - st.Bfree
	entire := used + st.Bavail
	if entire == 0 {
		return -1
	}
	pct := used * 100 / entire
	if used*100%entire != 0 {
		pct++
	}
	return float64(pct) / 100
}

// DeleteTopics removes the consume queues (and queue offsets) of topics. Their
// records stay in the commitlog until retention removes them. Only queues the
// store has in its table are removed, by the directories it opened them from:
// no path is ever built from the names passed in, and a name that could not
// be a queue directory (checkTopicDir) is refused without touching anything.
func (s *DefaultStore) DeleteTopics(topics []string) {
	// The dispatcher writes queue files without holding them; keep it out.
	s.dispatchMu.Lock()
	defer s.dispatchMu.Unlock()
	for _, t := range topics {
		if err := checkTopicDir(t); err != nil {
			s.log.Warn("delete topic refused", "err", err)
			continue
		}
		s.dropQueuesLocked(t)
		s.commitLog.removeTopic(t)
	}
	if s.compaction != nil {
		if err := s.compaction.dropTopics(topics); err != nil {
			s.log.Warn("delete topic compaction files", "err", err)
		}
	}
}

// DeleteIdleQueues removes the one-queue topics (LMQs, lite topics) of idle
// whose queue still ends where the caller saw it end, and returns those
// removed: a message put since (dispatched or not) keeps its queue, where
// Java's lite expiry would delete it with the queue.
func (s *DefaultStore) DeleteIdleQueues(idle map[string]int64) []string {
	s.dispatchMu.Lock()
	defer s.dispatchMu.Unlock()
	var gone []string
	for t, end := range idle {
		if checkTopicDir(t) != nil || s.MaxOffsetInQueue(t, LMQQueueID) != end {
			continue
		}
		if !s.commitLog.forgetIfAt(t, end) {
			continue
		}
		s.dropQueuesLocked(t)
		gone = append(gone, t)
	}
	return gone
}

// dropQueuesLocked removes topic's consume queues and their files. Called
// with dispatchMu held.
func (s *DefaultStore) dropQueuesLocked(t string) {
	s.cqMu.Lock()
	var drop []*consumeQueue
	for k, cq := range s.cqs {
		if k.topic == t {
			drop = append(drop, cq)
			delete(s.cqs, k)
		}
	}
	s.cqMu.Unlock()
	topicDirs := map[string]bool{}
	for _, cq := range drop {
		cq.q.destroyAll()
		topicDirs[filepath.Dir(cq.q.dir)] = true
	}
	for dir := range topicDirs {
		_ = os.Remove(dir) // only when empty: a queue the table did not know keeps it
	}
}
