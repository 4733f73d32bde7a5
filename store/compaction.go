package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"rmqd/codec"
	"rmqd/compat"
)

// compactionScanInterval is how often the topics are looked at for
// cleanup.policy=COMPACTION (Java's CompactionStore scanInterval).
const compactionScanInterval = 30 * time.Second

// compactionService is Java's CompactionStore, run by one goroutine that alone
// writes every compaction log: it copies each compacted queue's new messages
// from its consume queue (so nothing is lost to a crash between dispatch and
// the copy: the copy resumes from the last unit on disk) and compacts each log
// every compactionScheduleInternal. Pulls of a compacted topic read the log
// below what it has copied and the consume queue above it.
type compactionService struct {
	s        *DefaultStore
	root     string
	logSize  int64
	cqSize   int64
	mapBytes int
	interval time.Duration

	policy atomic.Pointer[func(topic string) bool]
	topics atomic.Pointer[map[string]bool] // compacted topics as of the last scan

	runMu     sync.Mutex // held by a pass and by dropTopics: one writer at a time
	mu        sync.Mutex // logs and positions
	logs      map[tqKey]*compactionLog
	positions map[string]int64 // "topic_queueId" -> last offset the key map reached
	lastScan  time.Time        // the goroutine's
	rescan    atomic.Bool      // a consume queue was made since the last scan
	wake      chan struct{}    // rescan set: a goroutine waiting without compacted topics looks

	reqs chan chan error
}

// compactionSizes are CompactionLog's file sizes: the cq file a whole number of
// units, the log file a multiple of it and at least five times it.
func compactionSizes(cfg *Config) (logSize, cqSize int64) {
	cqSize = int64(max(cfg.CompactionCqMappedFileSize/bcqUnitSize, 2) * bcqUnitSize)
	n, m := int64(cfg.CompactionMappedFileSize)/cqSize, int64(cfg.CompactionMappedFileSize)%cqSize
	switch {
	case n < 5:
		logSize = cqSize * 5
	case m > 0 && m < cqSize/2:
		logSize = n * cqSize
	default:
		logSize = (n + 1) * cqSize
	}
	return logSize, cqSize
}

func openCompaction(s *DefaultStore) (*compactionService, error) {
	cs := &compactionService{
		s:         s,
		root:      filepath.Join(s.cfg.StorePathRootDir, compactionDir),
		mapBytes:  max(s.cfg.MaxOffsetMapSize, 100*offsetMapEntry),
		interval:  time.Duration(max(s.cfg.CompactionScheduleInternal, 1000)) * time.Millisecond,
		logs:      map[tqKey]*compactionLog{},
		positions: map[string]int64{},
		reqs:      make(chan chan error),
		wake:      make(chan struct{}, 1),
	}
	cs.logSize, cs.cqSize = compactionSizes(&s.cfg)
	empty := map[string]bool{}
	cs.topics.Store(&empty)
	if err := cs.loadPositions(); err != nil {
		return nil, err
	}
	topics, err := os.ReadDir(filepath.Join(cs.root, compactionLogDir))
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("compaction: %w", err)
	}
	for _, t := range topics {
		if !t.IsDir() || checkTopicDir(t.Name()) != nil {
			continue
		}
		qs, err := os.ReadDir(filepath.Join(cs.root, compactionLogDir, t.Name()))
		if err != nil {
			return nil, fmt.Errorf("compaction: %w", err)
		}
		for _, q := range qs {
			qid, err := strconv.Atoi(q.Name())
			if !q.IsDir() || err != nil || qid < 0 {
				continue
			}
			if _, err := os.Stat(filepath.Join(cs.root, compactionCqDir, t.Name(), q.Name())); err != nil {
				s.log.Error("compactionLog mismatch with compactionCq", "topic", t.Name(), "queue", qid)
				continue
			}
			l, err := cs.openCompactionLog(t.Name(), int32(qid))
			if err != nil {
				cs.close()
				return nil, fmt.Errorf("load compactionLog %s:%d: %w", t.Name(), qid, err)
			}
			cs.logs[tqKey{t.Name(), int32(qid)}] = l
		}
	}
	return cs, nil
}

// positionsJSON is CompactionPositionMgr's file.
type positionsJSON struct {
	QueueOffsetMap map[string]int64 `json:"queueOffsetMap"`
}

func (cs *compactionService) positionsPath() string { return filepath.Join(cs.root, compactionPosFile) }

// loadPositions reads the checkpoint as Java's ConfigManager does: the file,
// else its .bak.
func (cs *compactionService) loadPositions() error {
	for _, p := range []string{cs.positionsPath(), cs.positionsPath() + ".bak"} {
		b, err := os.ReadFile(p)
		if err != nil || len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		var v positionsJSON
		if err := codec.UnmarshalBody(b, &v); err != nil {
			cs.s.log.Warn("compaction position checkpoint unreadable", "file", p, "err", err)
			continue
		}
		if v.QueueOffsetMap != nil {
			cs.positions = v.QueueOffsetMap
		}
		return nil
	}
	return nil
}

// persistPositions writes the checkpoint through tmp, fsync and rename.
func (cs *compactionService) persistPositions() error {
	cs.mu.Lock()
	b, err := codec.MarshalBody(positionsJSON{QueueOffsetMap: cs.positions})
	cs.mu.Unlock()
	if err != nil {
		return fmt.Errorf("compaction positions: %w", err)
	}
	return compat.WriteConfigFile(cs.positionsPath(), b)
}

func posKey(topic string, qid int32) string { return topic + "_" + strconv.Itoa(int(qid)) }

func (cs *compactionService) position(topic string, qid int32) int64 {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if p, ok := cs.positions[posKey(topic, qid)]; ok {
		return p
	}
	return -1
}

func (cs *compactionService) isCompacted(topic string) bool {
	m := *cs.topics.Load()
	return len(m) > 0 && m[topic]
}

func (cs *compactionService) log(topic string, qid int32) *compactionLog {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.logs[tqKey{topic, qid}]
}

// scan learns which topics are compacted and makes a log for each of their queues.
func (cs *compactionService) scan() error {
	p := cs.policy.Load()
	topics := map[string]bool{}
	var errs []error
	if p != nil {
		for _, cq := range cs.s.allCQs() {
			if !topics[cq.topic] && !(*p)(cq.topic) {
				continue
			}
			topics[cq.topic] = true
			if _, err := cs.logFor(cq.topic, cq.qid); err != nil {
				errs = append(errs, err)
			}
		}
	}
	cs.topics.Store(&topics)
	return errors.Join(errs...)
}

func (cs *compactionService) logFor(topic string, qid int32) (*compactionLog, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	k := tqKey{topic, qid}
	if l := cs.logs[k]; l != nil {
		return l, nil
	}
	l, err := cs.openCompactionLog(topic, qid)
	if err != nil {
		return nil, err
	}
	l.lastCompaction = time.Now().UnixMilli()
	cs.logs[k] = l
	return l, nil
}

func (cs *compactionService) run(ctx context.Context) {
	// Every second while some topic is compacted; otherwise only at a new
	// consume queue or the periodic scan, so an idle broker has no ticking timer.
	t := time.NewTimer(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case done := <-cs.reqs:
			done <- cs.pass(true)
		case <-cs.wake:
			if err := cs.pass(false); err != nil {
				cs.s.log.Warn("compaction", "err", err)
			}
		case <-t.C:
			if err := cs.pass(false); err != nil {
				cs.s.log.Warn("compaction", "err", err)
			}
		}
		next := time.Second
		if len(*cs.topics.Load()) == 0 {
			next = compactionScanInterval
		}
		t.Reset(next)
	}
}

// pass copies what the compacted queues received and compacts the logs that
// are due (all of them when forced).
func (cs *compactionService) pass(force bool) error {
	cs.runMu.Lock()
	defer cs.runMu.Unlock()
	var errs []error
	if force || cs.rescan.Swap(false) || time.Since(cs.lastScan) >= compactionScanInterval {
		cs.lastScan = time.Now()
		errs = append(errs, cs.scan())
	}
	cs.mu.Lock()
	logs := make([]*compactionLog, 0, len(cs.logs))
	for _, l := range cs.logs {
		if cs.isCompacted(l.topic) {
			logs = append(logs, l)
		}
	}
	cs.mu.Unlock()
	now := time.Now().UnixMilli()
	for _, l := range logs {
		if err := cs.copy(l); err != nil {
			errs = append(errs, fmt.Errorf("copy %s:%d: %w", l.topic, l.qid, err))
			continue
		}
		if force || now-l.lastCompaction >= cs.interval.Milliseconds() {
			l.lastCompaction = now
			if err := cs.compact(l); err != nil {
				errs = append(errs, fmt.Errorf("compact %s:%d: %w", l.topic, l.qid, err))
			}
		}
	}
	return errors.Join(errs...)
}

// compactNow runs a forced pass on the compaction goroutine (or here, before
// Start or after Shutdown has stopped it).
func (cs *compactionService) compactNow() error {
	if !cs.s.started.Load() || cs.s.closed.Load() {
		return cs.pass(true)
	}
	done := make(chan error, 1)
	select {
	case cs.reqs <- done:
		return <-done
	case <-cs.s.ctx.Done():
		return errors.New("compaction: store is shutting down")
	}
}

func (l *compactionLog) nextBase() int64 {
	if n := len(l.files); n > 0 {
		return l.files[n-1].base + l.logSize
	}
	return 0
}

// copy appends the queue's messages from copiedTo on; a message without
// KEYS is not copied, as in Java.
func (cs *compactionService) copy(l *compactionLog) error {
	w := clogWriter{l: l, logDir: l.logDir, cqDir: l.cqDir, files: &l.files, nextNew: l.nextBase()}
	from := l.copiedTo.Load()
	var m codec.Message
	for range 1024 { // a bounded turn; the next tick goes on
		r := cs.s.getMessageCQ(l.topic, l.qid, from, 32, 0, nil, false)
		var err error
		if r.Status == GetFound {
			for _, rec := range r.Records {
				if _, err = codec.DecodeRecord(rec, &m); err != nil {
					break
				}
				keys, _ := codec.PropertyValue(m.Properties, codec.PropKeys)
				if strings.TrimSpace(keys) == "" {
					continue
				}
				if int64(len(rec))+endFileMinBlank > l.logSize {
					// Java fails this put on every try; one such message must
					// not stop the queue's copy for good.
					cs.s.log.Warn("compaction: message larger than a compaction log file, not kept",
						"topic", l.topic, "queue", l.qid, "offset", m.QueueOffset, "size", len(rec))
					continue
				}
				var tags int64
				if t, _ := codec.PropertyValue(m.Properties, codec.PropTags); t != "" {
					tags = int64(compat.JavaStringHash(t))
				}
				if err = w.append(rec, m.QueueOffset, tags, m.StoreTimestamp, &l.mu); err != nil {
					break
				}
			}
		}
		next := r.NextBeginOffset
		if r.Status == GetOffsetTooSmall {
			next = r.MinOffset // a slave's answer keeps the offset asked
		}
		r.Release()
		if err != nil {
			return err
		}
		if next <= from {
			return nil
		}
		from = next
		l.copiedTo.Store(from)
	}
	return nil
}

// compact rewrites every file but the last, keeping per key (the whole KEYS
// value, as Java) the newest message the key map saw, and every message past
// the map's last offset; an empty body deletes its key. The map holds at
// most maxOffsetMapSize bytes: when it fills, this pass compacts up to there
// and the next one goes on (Java fails the whole pass instead).
func (cs *compactionService) compact(l *compactionLog) error {
	files := slices.Clone(l.files) // only this goroutine changes l.files
	if len(files) < 2 {
		return nil
	}
	old, tail := files[:len(files)-1], files[len(files)-1]
	pos := cs.position(l.topic, l.qid)
	total := 0
	for _, f := range old {
		if f.maxQ > pos {
			total += f.units
		}
	}
	if total == 0 {
		return nil
	}
	om := newOffsetMap(cs.mapBytes, total)
	var m codec.Message
	last := int64(0)
	fullAt := false
	for _, f := range old {
		if f.maxQ <= pos || fullAt {
			continue
		}
		err := eachRecord(f, &m, func(qoff int64, _ int64, _ int64, _ []byte) bool {
			if qoff <= pos {
				return true
			}
			keys, _ := codec.PropertyValue(m.Properties, codec.PropKeys)
			if !om.put(keys, qoff) {
				fullAt = true
				return false
			}
			last = qoff
			return true
		})
		if err != nil {
			return err
		}
	}
	outLog, outCq := filepath.Join(l.logDir, compactingSubdir), filepath.Join(l.cqDir, compactingSubdir)
	if err := errors.Join(os.RemoveAll(outLog), os.RemoveAll(outCq)); err != nil {
		return fmt.Errorf("compaction: %w", err)
	}
	var out []*clogFile
	w := clogWriter{l: l, logDir: outLog, cqDir: outCq, files: &out, nextNew: old[0].base}
	fail := func(err error) error {
		for _, f := range out {
			f.close()
		}
		_ = os.RemoveAll(outLog)
		_ = os.RemoveAll(outCq)
		return err
	}
	for _, f := range old {
		var werr error
		err := eachRecord(f, &m, func(qoff, tags, storeTs int64, rec []byte) bool {
			keys, _ := codec.PropertyValue(m.Properties, codec.PropKeys)
			if qoff > last || strings.TrimSpace(keys) != "" && qoff >= om.get(keys) && len(m.Body) > 0 {
				werr = w.append(rec, qoff, tags, storeTs, nil)
			}
			return werr == nil
		})
		if err = errors.Join(err, werr); err != nil {
			return fail(err)
		}
	}
	if n := len(out); n > 0 && !out[n-1].full {
		if err := w.endFile(out[n-1]); err != nil {
			return fail(err)
		}
	}
	names := make([]string, 0, len(out))
	for _, f := range out {
		if err := errors.Join(f.log.Sync(), f.cq.Sync()); err != nil {
			return fail(fmt.Errorf("compaction sync: %w", err))
		}
		names = append(names, fileName(f.base))
	}
	syncDir(outLog)
	syncDir(outCq)
	// From the marker on, a restart finishes the swap (finishReplace).
	marker := strconv.FormatInt(tail.base, 10) + "\n" + strings.Join(names, "\n")
	if err := writeFileSynced(filepath.Join(outLog, compactionMarker), []byte(marker)); err != nil {
		return fail(err)
	}
	l.mu.Lock()
	for _, f := range old {
		f.close()
	}
	err := l.finishReplace()
	l.files = append(out, l.files[len(old):]...)
	l.mu.Unlock()
	if err != nil {
		return err
	}
	cs.mu.Lock()
	cs.positions[posKey(l.topic, l.qid)] = last
	cs.mu.Unlock()
	return cs.persistPositions()
}

// eachRecord calls fn with each unit's record of f (and m decoded from it)
// until fn says stop.
func eachRecord(f *clogFile, m *codec.Message, fn func(qoff, tags, storeTs int64, rec []byte) bool) error {
	cq := make([]byte, f.units*bcqUnitSize)
	if _, err := f.cq.ReadAt(cq, 0); err != nil {
		return fmt.Errorf("compaction cq read: %w", err)
	}
	var rec []byte
	for i := 0; i < f.units; i++ {
		u := readBatchUnit(cq[i*bcqUnitSize:])
		phy, size, tags, storeTs, qoff := u.phy, u.size, u.tags, u.storeTime, u.base
		rec = slices.Grow(rec[:0], int(size))[:size]
		if _, err := f.log.ReadAt(rec, phy-f.base); err != nil {
			return fmt.Errorf("compaction log read: %w", err)
		}
		if _, err := codec.DecodeRecord(rec, m); err != nil {
			return fmt.Errorf("compaction log %s at %d: %w", f.log.Name(), phy, err)
		}
		if !fn(qoff, tags, storeTs, rec) {
			return nil
		}
	}
	return nil
}

// finishReplace completes a compaction whose output is whole (its marker
// exists): the output files replace theirs by rename, the other files below the
// tail go; without a marker an unfinished output is dropped. Idempotent, so a
// crash at any step is finished by the next load.
func (l *compactionLog) finishReplace() error {
	outLog, outCq := filepath.Join(l.logDir, compactingSubdir), filepath.Join(l.cqDir, compactingSubdir)
	b, err := os.ReadFile(filepath.Join(outLog, compactionMarker))
	if err != nil {
		if !os.IsNotExist(err) {
			return fmt.Errorf("compaction marker: %w", err)
		}
		return errors.Join(os.RemoveAll(outLog), os.RemoveAll(outCq))
	}
	lines := strings.Split(string(b), "\n")
	keepFrom, err := strconv.ParseInt(lines[0], 10, 64)
	if err != nil {
		return fmt.Errorf("compaction marker %s: %w", outLog, err)
	}
	keep := map[string]bool{}
	for _, n := range lines[1:] {
		if n == "" {
			continue
		}
		keep[n] = true
		for _, d := range [][2]string{{outLog, l.logDir}, {outCq, l.cqDir}} {
			if err := os.Rename(filepath.Join(d[0], n), filepath.Join(d[1], n)); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("compaction install: %w", err)
			}
		}
	}
	for _, d := range []string{l.logDir, l.cqDir} {
		bases, err := fileNames(d)
		if err != nil {
			return err
		}
		for _, base := range bases {
			if base < keepFrom && !keep[fileName(base)] {
				if err := os.Remove(filepath.Join(d, fileName(base))); err != nil && !os.IsNotExist(err) {
					return fmt.Errorf("compaction remove: %w", err)
				}
			}
		}
		syncDir(d)
	}
	if err := os.Remove(filepath.Join(outLog, compactionMarker)); err != nil {
		return fmt.Errorf("compaction marker: %w", err)
	}
	return errors.Join(os.RemoveAll(outLog), os.RemoveAll(outCq))
}

// serves reports a read that get answers from the compaction log.
func (cs *compactionService) serves(topic string, qid int32, offset int64) bool {
	if !cs.isCompacted(topic) {
		return false
	}
	l := cs.log(topic, qid)
	return l != nil && offset < l.copiedTo.Load()
}

// get serves a pull of a compacted queue below what the log holds: the kept
// messages at or after offset. Nil: the consume queue serves it.
func (cs *compactionService) get(topic string, qid int32, offset int64, maxMsgNums, maxTotalBytes int32, filter MessageFilter) *GetResult {
	if !cs.isCompacted(topic) {
		return nil
	}
	l := cs.log(topic, qid)
	if l == nil {
		return nil
	}
	copied := l.copiedTo.Load()
	if offset >= copied {
		return nil
	}
	if maxMsgNums <= 0 {
		maxMsgNums = 1
	}
	var match func(int64, []byte) bool
	if filter != nil {
		match = func(tags int64, rec []byte) bool { return filter.MatchTagsCode(tags) && filter.MatchRecord(rec) }
	}
	take := func(count, total, size int) bool {
		return !cs.s.batchFull(count, total, size, maxMsgNums, maxTotalBytes, true)
	}
	cr, err := l.read(offset, int(maxMsgNums), take, match)
	if err != nil {
		cs.s.log.Warn("compaction log read", "topic", topic, "queue", qid, "err", err)
		return nil
	}
	if len(cr.records) == 0 {
		// Nothing kept from offset to what the log holds: the queue goes on.
		return cs.s.getMessageCQ(topic, qid, max(copied, cr.next), maxMsgNums, maxTotalBytes, filter, true)
	}
	r := &GetResult{Status: GetFound, NextBeginOffset: cr.next, Records: cr.records, BufferTotalSize: cr.bytes,
		MinOffset: cs.s.MinOffsetInQueue(topic, qid), MaxOffset: cs.s.MaxOffsetInQueue(topic, qid)}
	return r
}

// minOffset is the compacted queue's first kept offset, if it has a log.
func (cs *compactionService) minOffset(topic string, qid int32) (int64, bool) {
	if !cs.isCompacted(topic) {
		return 0, false
	}
	if l := cs.log(topic, qid); l != nil {
		return l.minOffset()
	}
	return 0, false
}

// dropTopics removes deleted topics' compaction logs and positions (Java
// keeps them, and a topic made again under the name would read the old
// one's messages).
func (cs *compactionService) dropTopics(topics []string) error {
	cs.runMu.Lock()
	defer cs.runMu.Unlock()
	var errs []error
	for _, t := range topics {
		cs.mu.Lock()
		var drop []*compactionLog
		for k, l := range cs.logs {
			if k.topic == t {
				drop = append(drop, l)
				delete(cs.logs, k)
				delete(cs.positions, posKey(k.topic, k.qid))
			}
		}
		cs.mu.Unlock()
		for _, l := range drop {
			l.mu.Lock()
			l.close()
			l.mu.Unlock()
		}
		if checkTopicDir(t) == nil {
			errs = append(errs, os.RemoveAll(filepath.Join(cs.root, compactionLogDir, t)),
				os.RemoveAll(filepath.Join(cs.root, compactionCqDir, t)))
		}
		if len(drop) > 0 {
			errs = append(errs, cs.persistPositions())
		}
	}
	return errors.Join(errs...)
}

func (cs *compactionService) shutdown() error {
	cs.mu.Lock()
	var errs []error
	for _, l := range cs.logs {
		errs = append(errs, l.sync())
	}
	cs.mu.Unlock()
	errs = append(errs, cs.persistPositions())
	return errors.Join(errs...)
}

func (cs *compactionService) close() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, l := range cs.logs {
		l.close()
	}
}

// SetCompactionPolicy tells the store which topics are compacted
// (cleanup.policy=COMPACTION); the store asks it now, within a second of a
// new consume queue, every 30 s and at CompactNow. Without it, or with enableCompaction=false, nothing is.
func (s *DefaultStore) SetCompactionPolicy(compacted func(topic string) bool) {
	if s.compaction == nil {
		return
	}
	s.compaction.policy.Store(&compacted)
	if err := s.compaction.scan(); err != nil {
		s.log.Warn("compaction scan", "err", err)
	}
}

// CompactNow copies what the compacted queues received and compacts every
// log now, rather than at the next compactionScheduleInternal.
func (s *DefaultStore) CompactNow() error {
	if s.compaction == nil {
		return nil
	}
	return s.compaction.compactNow()
}
