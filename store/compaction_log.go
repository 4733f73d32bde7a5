package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"rmqd/codec"
)

// Java's compaction files (store/kv/CompactionLog, SparseConsumeQueue):
// compaction/compactionLog/<topic>/<queueId>/<20-digit offset> holds copies of
// the queue's records (PHYSICALOFFSET rewritten to their place here), and
// compaction/compactionCq/<topic>/<queueId>/<same name> the batch-consume-queue
// units that point at them, one cq file per log file.
const (
	compactionDir      = "compaction"
	compactionLogDir   = "compactionLog"
	compactionCqDir    = "compactionCq"
	compactingSubdir   = "compacting"
	compactionPosFile  = "position-checkpoint"
	compactionMarker   = "replace" // in the log's compacting dir: the output is whole
	recQueueOffsetPos  = 20
	recPhysicOffsetPos = 28
)

// clogFile is one log file and its cq file. units, logWrote and the queue
// offsets change only under compactionLog.mu (write) by the compaction goroutine.
type clogFile struct {
	base       int64
	log, cq    *os.File
	logWrote   int64
	units      int
	minQ, maxQ int64 // queue offsets of the first and last unit (units > 0)
	full       bool
}

func (f *clogFile) close() {
	_ = f.log.Close()
	_ = f.cq.Close()
}

// compactionLog is one queue's compaction log. Only the compaction goroutine
// writes; readers copy records out under mu.RLock, so a compaction that
// swaps the files (under mu.Lock) never pulls bytes from under a reader.
type compactionLog struct {
	topic          string
	qid            int32
	logDir, cqDir  string
	logSize        int64
	cqSize         int64
	mu             sync.RWMutex
	files          []*clogFile
	copiedTo       atomic.Int64 // next queue offset to copy from the consume queue
	lastCompaction int64        // unix ms, compaction goroutine only
}

func (s *compactionService) logPaths(topic string, qid int32) (string, string) {
	q := strconv.Itoa(int(qid))
	return filepath.Join(s.root, compactionLogDir, topic, q), filepath.Join(s.root, compactionCqDir, topic, q)
}

// openCompactionLog loads a queue's files, finishing or dropping an
// interrupted compaction first, and cuts the tail back to its last whole unit.
func (s *compactionService) openCompactionLog(topic string, qid int32) (*compactionLog, error) {
	l := &compactionLog{topic: topic, qid: qid, logSize: s.logSize, cqSize: s.cqSize}
	l.logDir, l.cqDir = s.logPaths(topic, qid)
	if err := l.finishReplace(); err != nil {
		return nil, err
	}
	names, err := fileNames(l.logDir)
	if err != nil {
		return nil, err
	}
	for _, base := range names {
		f, err := l.openFile(l.logDir, l.cqDir, base, false)
		if err != nil {
			l.close()
			return nil, err
		}
		l.files = append(l.files, f)
	}
	if err := l.recoverTail(); err != nil {
		l.close()
		return nil, err
	}
	next := int64(0)
	if f := l.lastWithUnits(); f != nil {
		next = f.maxQ + 1
	}
	l.copiedTo.Store(next)
	return l, nil
}

// fileNames lists the 20-digit offset names in dir, sorted; none if it is missing.
func fileNames(dir string) ([]int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("compaction dir: %w", err)
	}
	var out []int64
	for _, e := range ents {
		if e.IsDir() || len(e.Name()) != 20 {
			continue
		}
		if n, err := strconv.ParseInt(e.Name(), 10, 64); err == nil {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// openFile opens (create: makes, sized whole as Java's mapped files are) one
// log file and its cq file, and reads the cq's units up to the first invalid one.
func (l *compactionLog) openFile(logDir, cqDir string, base int64, create bool) (*clogFile, error) {
	flags := os.O_RDWR
	if create {
		flags |= os.O_CREATE | os.O_TRUNC
		for _, d := range []string{logDir, cqDir} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return nil, fmt.Errorf("compaction dir: %w", err)
			}
		}
	}
	lf, err := os.OpenFile(filepath.Join(logDir, fileName(base)), flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("compaction log file: %w", err)
	}
	cf, err := os.OpenFile(filepath.Join(cqDir, fileName(base)), flags, 0o644)
	if err != nil {
		_ = lf.Close()
		// Java's sanityCheck: every log file has its cq file.
		return nil, fmt.Errorf("compaction log %s/%d: log file mismatch with consumeQueue file: %w", l.topic, l.qid, err)
	}
	f := &clogFile{base: base, log: lf, cq: cf}
	if create {
		err = errors.Join(lf.Truncate(l.logSize), cf.Truncate(l.cqSize))
	} else {
		err = f.scanUnits()
	}
	if err != nil {
		f.close()
		return nil, fmt.Errorf("compaction file %s: %w", lf.Name(), err)
	}
	return f, nil
}

// scanUnits counts the valid units (SparseConsumeQueue.recover's test); an
// end unit (offset -1) marks a file that was rolled.
func (f *clogFile) scanUnits() error {
	b, err := os.ReadFile(f.cq.Name())
	if err != nil {
		return err
	}
	for i := 0; i+bcqUnitSize <= len(b); i += bcqUnitSize {
		u := readBatchUnit(b[i:])
		phy, size, qoff, batch := u.phy, u.size, u.base, u.num
		if phy == -1 && size == 0 {
			f.full = true
			break
		}
		if phy < 0 || size <= 0 || qoff < 0 || batch <= 0 {
			break
		}
		if f.units == 0 {
			f.minQ = qoff
		}
		f.maxQ = qoff
		f.units++
		f.logWrote = phy - f.base + int64(size)
	}
	return nil
}

// recoverTail drops tail units whose record is not whole (a crash between the
// record and its unit, or a page the kernel never wrote) and zeroes what lies
// past the last good one, so a later crash cannot bring stale units back.
func (l *compactionLog) recoverTail() error {
	if len(l.files) == 0 {
		return nil
	}
	f := l.files[len(l.files)-1]
	if f.full {
		return nil
	}
	hdr := make([]byte, recPhysicOffsetPos)
	unit := make([]byte, bcqUnitSize)
	for f.units > 0 {
		if _, err := f.cq.ReadAt(unit, int64(f.units-1)*bcqUnitSize); err != nil {
			return fmt.Errorf("compaction cq %s: %w", f.cq.Name(), err)
		}
		u := readBatchUnit(unit)
		phy, size, qoff := u.phy, u.size, u.base
		_, err := f.log.ReadAt(hdr, phy-f.base)
		if err == nil && int32(binary.BigEndian.Uint32(hdr)) == size &&
			int64(binary.BigEndian.Uint64(hdr[recQueueOffsetPos:])) == qoff {
			f.logWrote = phy - f.base + int64(size)
			break
		}
		f.units--
		f.logWrote = 0
	}
	if f.units > 0 {
		f.maxQ = readBatchUnit(unit).base
	}
	// Shrink and regrow: the kernel zeroes the rest of each file.
	return errors.Join(f.log.Truncate(f.logWrote), f.log.Truncate(l.logSize),
		f.cq.Truncate(int64(f.units)*bcqUnitSize), f.cq.Truncate(l.cqSize))
}

func (l *compactionLog) lastWithUnits() *clogFile {
	for i := len(l.files) - 1; i >= 0; i-- {
		if l.files[i].units > 0 {
			return l.files[i]
		}
	}
	return nil
}

func (l *compactionLog) minOffset() (int64, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, f := range l.files {
		if f.units > 0 {
			return f.minQ, true
		}
	}
	return 0, false
}

func (l *compactionLog) close() {
	for _, f := range l.files {
		f.close()
	}
	l.files = nil
}

func (l *compactionLog) sync() error {
	var errs []error
	for _, f := range l.files {
		errs = append(errs, f.log.Sync(), f.cq.Sync())
	}
	return errors.Join(errs...)
}

// clogWriter appends records to a list of files, rolling as Java's
// CompactionAppendMessageCallback does: a record that does not fit with room
// for the end blank, or a cq file one unit from full, ends the file.
type clogWriter struct {
	l       *compactionLog
	logDir  string
	cqDir   string
	files   *[]*clogFile // the live log's own list, or a compaction's output
	nextNew int64
	buf     []byte
}

// append writes rec (queue offset qoff) and its unit; lock says whether
// readers may see files (the live log) and so need the write lock.
func (w *clogWriter) append(rec []byte, qoff, tags, storeTs int64, lock *sync.RWMutex) error {
	size := int64(len(rec))
	if size+endFileMinBlank > w.l.logSize {
		return fmt.Errorf("compaction: record of %d bytes exceeds compactionMappedFileSize", size)
	}
	var f *clogFile
	if n := len(*w.files); n > 0 && !(*w.files)[n-1].full {
		f = (*w.files)[n-1]
	}
	if f != nil && (f.logWrote+size+endFileMinBlank > w.l.logSize || int64(f.units+2)*bcqUnitSize > w.l.cqSize) {
		if err := w.endFile(f); err != nil {
			return err
		}
		f = nil
	}
	if f == nil {
		nf, err := w.l.openFile(w.logDir, w.cqDir, w.nextNew, true)
		if err != nil {
			return err
		}
		w.nextNew += w.l.logSize
		if lock != nil {
			lock.Lock()
		}
		*w.files = append(*w.files, nf)
		if lock != nil {
			lock.Unlock()
		}
		f = nf
	}
	phy := f.base + f.logWrote
	w.buf = append(w.buf[:0], rec...)
	binary.BigEndian.PutUint64(w.buf[recPhysicOffsetPos:], uint64(phy))
	if _, err := f.log.WriteAt(w.buf, f.logWrote); err != nil {
		return fmt.Errorf("compaction log write: %w", err)
	}
	var u [bcqUnitSize]byte
	putBatchUnit(u[:], bcqUnit{phy: phy, size: int32(size), tags: tags, storeTime: storeTs, base: qoff, num: 1})
	if _, err := f.cq.WriteAt(u[:], int64(f.units)*bcqUnitSize); err != nil {
		return fmt.Errorf("compaction cq write: %w", err)
	}
	if lock != nil {
		lock.Lock()
	}
	if f.units == 0 {
		f.minQ = qoff
	}
	f.maxQ = qoff
	f.units++
	f.logWrote += size
	if lock != nil {
		lock.Unlock()
	}
	return nil
}

// endFile writes the blank end record and the end unit (putEndPositionInfo).
func (w *clogWriter) endFile(f *clogFile) error {
	var b [endFileMinBlank]byte
	binary.BigEndian.PutUint32(b[:], uint32(w.l.logSize-f.logWrote))
	blank := codec.MagicBlank
	binary.BigEndian.PutUint32(b[4:], uint32(blank))
	var u [bcqUnitSize]byte
	binary.BigEndian.PutUint64(u[:], ^uint64(0))
	binary.BigEndian.PutUint32(u[38:], 0xFFFFFFFF)
	if _, err := f.log.WriteAt(b[:], f.logWrote); err != nil {
		return fmt.Errorf("compaction log end: %w", err)
	}
	if _, err := f.cq.WriteAt(u[:], int64(f.units)*bcqUnitSize); err != nil {
		return fmt.Errorf("compaction cq end: %w", err)
	}
	f.full = true
	return nil
}

// clogRead is what one read of a compaction log found.
type clogRead struct {
	records [][]byte
	tags    []int64
	next    int64 // queue offset after the last unit scanned
	bytes   int
}

// read copies the units at or after offset (the next kept message when offset
// itself was compacted away) while take says the batch has room.
func (l *compactionLog) read(offset int64, limit int, take func(count, total, size int) bool,
	match func(tags int64, rec []byte) bool) (clogRead, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	r := clogRead{next: offset}
	unit := make([]byte, bcqUnitSize)
	for _, f := range l.files {
		if f.units == 0 || f.maxQ < offset {
			continue
		}
		// First unit with queue offset >= offset (units ascend).
		lo, hi := 0, f.units
		for lo < hi {
			mid := (lo + hi) / 2
			if _, err := f.cq.ReadAt(unit, int64(mid)*bcqUnitSize); err != nil {
				return r, fmt.Errorf("compaction cq read: %w", err)
			}
			if readBatchUnit(unit).base < offset {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		for i := lo; i < f.units; i++ {
			if _, err := f.cq.ReadAt(unit, int64(i)*bcqUnitSize); err != nil {
				return r, fmt.Errorf("compaction cq read: %w", err)
			}
			u := readBatchUnit(unit)
			phy, size, tags, q := u.phy, u.size, u.tags, u.base
			if len(r.records) >= limit || !take(len(r.records), r.bytes, int(size)) {
				return r, nil
			}
			rec := make([]byte, size)
			if _, err := f.log.ReadAt(rec, phy-f.base); err != nil {
				return r, fmt.Errorf("compaction log read: %w", err)
			}
			r.next = q + 1
			if match != nil && !match(tags, rec) {
				continue
			}
			r.records = append(r.records, rec)
			r.tags = append(r.tags, tags)
			r.bytes += int(size)
		}
	}
	return r, nil
}
