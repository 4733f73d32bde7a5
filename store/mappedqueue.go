package store

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// mappedFileQueue is a directory of equal-size segments forming one byte stream.
type mappedFileQueue struct {
	dir      string
	fileSize int

	mu    sync.RWMutex
	files []*mappedFile
	// spare is the file after the last one, made ahead of need by prepareNext so
	// that the append that fills the last file does not create and map its
	// successor under the commitlog lock (Java's AllocateMappedFileService).
	spare *mappedFile
	// createMu serialises making files, so the writer and prepareNext never
	// create (and one of them later delete) the same path.
	createMu sync.Mutex

	flushedWhere atomic.Int64
	// writeThrough files are appended with pwrite and synced with fdatasync
	// (mappedFile.pwrite): new files keep their descriptor, loaded ones get it
	// at their first append. Set before the first file is made.
	writeThrough bool
	// reserve allocates every new file's blocks when it is made (the
	// commitlog's): a full disk then fails the creation, which is refused
	// cleanly, instead of a later store into the mapping (SIGBUS).
	reserve bool
	// lazy, when set, maps the files on demand (consume queues, lazymap.go).
	lazy *lazyMaps

	// randomRead gives each file MADV_RANDOM as it becomes the last one (the
	// commitlog with dataReadAheadEnable off, readahead.go). Guarded by
	// createMu; adviseMu serialises setRandomRead.
	randomRead bool
	adviseMu   sync.Mutex
	// adviseFailed is told of a failed madvise: logged, never fatal (nil: dropped).
	adviseFailed func(error)
}

func newMappedFileQueue(dir string, fileSize int) *mappedFileQueue {
	return &mappedFileQueue{dir: dir, fileSize: fileSize}
}

// load maps every segment of the directory. Each must be exactly fileSize bytes,
// except that an empty last file is deleted (MappedFileQueue.doLoad). Loaded files
// count as full; recovery sets the tail.
func (q *mappedFileQueue) load() error {
	entries, err := os.ReadDir(q.dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return fmt.Errorf("read %s: %w", q.dir, err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			// A file whose creation was cut short (rmqd before 2026-11-30 made files
			// under a .tmp name); Java would choke on it.
			_ = os.Remove(filepath.Join(q.dir, e.Name()))
			continue
		}
		if _, ok := parseFileName(e.Name()); ok && e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for i, name := range names {
		path := filepath.Join(q.dir, name)
		st, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("stat %s: %w", path, err)
		}
		if st.Size() == 0 && i == len(names)-1 {
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("remove empty %s: %w", path, err)
			}
			continue
		}
		from, _ := parseFileName(name)
		var mf *mappedFile
		if q.lazy != nil {
			mf, err = newLazyMappedFile(path, from, q.fileSize, false, q.lazy)
		} else {
			mf, err = newMappedFile(path, from, q.fileSize, false, false)
		}
		if err != nil {
			return err
		}
		mf.wrote.Store(int64(q.fileSize))
		mf.flushed.Store(int64(q.fileSize))
		q.files = append(q.files, mf)
	}
	return nil
}

func (q *mappedFileQueue) snapshot() []*mappedFile {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return append([]*mappedFile(nil), q.files...)
}

// view is the file list as it is now, without the copy snapshot makes: the
// list is never changed in place (appends go past its length, removals and
// truncation build a new one), so a view stays as it was. Read-only.
func (q *mappedFileQueue) view() []*mappedFile {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return q.files
}

func (q *mappedFileQueue) first() *mappedFile {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if len(q.files) == 0 {
		return nil
	}
	return q.files[0]
}

func (q *mappedFileQueue) last() *mappedFile {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if len(q.files) == 0 {
		return nil
	}
	return q.files[len(q.files)-1]
}

// lastForWrite returns the file to append to, creating the next one when the queue
// is empty or the last file is full. startOffset places the first file of an empty
// queue.
func (q *mappedFileQueue) lastForWrite(startOffset int64) (*mappedFile, error) {
	last := q.last()
	if last != nil && !last.isFull() {
		return last, nil
	}
	q.createMu.Lock()
	defer q.createMu.Unlock()
	// Look again: a consume queue may have been prepared meanwhile
	// (DefaultStore.PrepareQueues).
	if last = q.last(); last != nil && !last.isFull() {
		return last, nil
	}
	var from int64
	if last == nil {
		from = startOffset - startOffset%int64(q.fileSize)
	} else {
		from = last.from + int64(q.fileSize)
	}
	mf, err := q.takeSpareOrCreate(from)
	if err != nil {
		return nil, err
	}
	mf.firstCreate = last == nil
	q.adviseTaken(mf)
	q.mu.Lock()
	if last == nil {
		q.flushedWhere.Store(from)
	}
	q.files = append(q.files, mf)
	q.mu.Unlock()
	return mf, nil
}

// takeSpareOrCreate returns the spare when it starts at from, else a new file.
// Called with createMu held.
func (q *mappedFileQueue) takeSpareOrCreate(from int64) (*mappedFile, error) {
	q.mu.Lock()
	spare := q.spare
	q.spare = nil
	q.mu.Unlock()
	if spare != nil {
		if spare.from == from {
			return spare, nil
		}
		_ = spare.destroy()
	}
	if err := os.MkdirAll(q.dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", q.dir, err)
	}
	if q.lazy != nil {
		return newLazyMappedFile(filepath.Join(q.dir, fileName(from)), from, q.fileSize, true, q.lazy)
	}
	mf, err := newMappedFile(filepath.Join(q.dir, fileName(from)), from, q.fileSize, true, q.writeThrough)
	if err != nil || !q.reserve {
		return mf, err
	}
	if err := mf.reserveFrom(0); err != nil {
		_ = mf.destroy()
		return nil, err
	}
	return mf, nil
}

// prepareNext makes sure the file after the last one exists and returns it held
// (the caller releases it), or nil when the queue is empty. A crash leaves the
// spare as an all-zero last file, which recovery deletes as it does Java's.
func (q *mappedFileQueue) prepareNext() (*mappedFile, error) {
	q.createMu.Lock()
	defer q.createMu.Unlock()
	last := q.last()
	if last == nil {
		return nil, nil
	}
	from := last.from + int64(q.fileSize)
	q.mu.RLock()
	spare := q.spare
	q.mu.RUnlock()
	if spare == nil || spare.from != from {
		mf, err := q.takeSpareOrCreate(from)
		if err != nil {
			return nil, err
		}
		q.mu.Lock()
		q.spare = mf
		q.mu.Unlock()
		spare = mf
	}
	if !spare.hold() {
		return nil, nil
	}
	return spare, nil
}

// dropSpare deletes the prepared successor (it lies past a truncated end).
func (q *mappedFileQueue) dropSpare() {
	q.createMu.Lock()
	defer q.createMu.Unlock()
	q.mu.Lock()
	spare := q.spare
	q.spare = nil
	q.mu.Unlock()
	if spare != nil {
		_ = spare.destroy()
	}
}

// findHeld returns the file containing offset with a reader reference taken, or nil.
func (q *mappedFileQueue) findHeld(offset int64) *mappedFile {
	q.mu.RLock()
	defer q.mu.RUnlock()
	f := q.findLocked(offset)
	if f == nil || !f.hold() {
		return nil
	}
	return f
}

// find is findHeld without the reference: only for what needs no mapping
// (a lazy file's flush).
func (q *mappedFileQueue) find(offset int64) *mappedFile {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return q.findLocked(offset)
}

// findLocked looks offset up. Called with mu held.
func (q *mappedFileQueue) findLocked(offset int64) *mappedFile {
	if len(q.files) == 0 {
		return nil
	}
	first := q.files[0]
	if offset < first.from {
		return nil
	}
	i := int((offset - first.from) / int64(q.fileSize))
	if i >= len(q.files) || q.files[i].from > offset || offset >= q.files[i].from+int64(q.fileSize) {
		// Files are contiguous; fall back to a search if they ever are not.
		i = sort.Search(len(q.files), func(j int) bool { return q.files[j].from+int64(q.fileSize) > offset })
		if i >= len(q.files) || q.files[i].from > offset {
			return nil
		}
	}
	return q.files[i]
}

func (q *mappedFileQueue) minOffset() int64 {
	f := q.first()
	if f == nil {
		return -1
	}
	return f.from
}

// maxOffset is the end of written data.
func (q *mappedFileQueue) maxOffset() int64 {
	f := q.last()
	if f == nil {
		return 0
	}
	return f.from + f.wrote.Load()
}

// flush flushes from flushedWhere on. With leastPages 0 it flushes everything
// written, across files; otherwise only the file holding flushedWhere, as Java does.
func (q *mappedFileQueue) flush(leastPages int) error {
	for {
		where := q.flushedWhere.Load()
		// A lazy file is synced through a descriptor, never its mapping:
		// holding it would map every idle queue once a flush interval.
		var f *mappedFile
		if q.lazy != nil {
			f = q.find(where)
		} else {
			f = q.findHeld(where)
		}
		if f == nil {
			// flushedWhere sits at the start of a file not yet created, or the
			// queue is empty.
			return nil
		}
		pos, err := f.flush(leastPages)
		full := pos >= int64(f.size)
		end := f.from + pos
		if q.lazy == nil {
			f.release()
		}
		if err != nil {
			return err
		}
		if end > where {
			q.flushedWhere.Store(end)
		}
		if leastPages > 0 || !full {
			return nil
		}
	}
}

// truncateDirty sets the end of the stream to offset: files starting at or after it
// are deleted, the file holding it is cut there and zeroed above.
func (q *mappedFileQueue) truncateDirty(offset int64) error {
	q.mu.Lock()
	var keep []*mappedFile
	var drop []*mappedFile
	for _, f := range q.files {
		end := f.from + int64(q.fileSize)
		switch {
		case end <= offset:
			keep = append(keep, f)
		case f.from >= offset:
			drop = append(drop, f)
		default:
			pos := offset - f.from
			f.wrote.Store(pos)
			f.flushed.Store(pos)
			if f.hold() {
				f.zeroFrom(pos)
				f.release()
			}
			keep = append(keep, f)
		}
	}
	q.files = keep
	q.mu.Unlock()
	q.dropSpare()
	q.flushedWhere.Store(offset)
	for _, f := range drop {
		if err := f.destroy(); err != nil {
			return err
		}
	}
	return nil
}

// removeFiles takes files out of the queue and deletes them.
func (q *mappedFileQueue) removeFiles(drop []*mappedFile) {
	if len(drop) == 0 {
		return
	}
	set := make(map[*mappedFile]bool, len(drop))
	for _, f := range drop {
		set[f] = true
	}
	q.mu.Lock()
	keep := q.files[:0:0]
	for _, f := range q.files {
		if !set[f] {
			keep = append(keep, f)
		}
	}
	q.files = keep
	q.mu.Unlock()
	for _, f := range drop {
		_ = f.destroy()
	}
}

// deleteExpiredByTime deletes files, oldest first and never the last, whose
// modification time is older than reserved (or all but the last when force). It
// stops at the first file it keeps and deletes at most maxFiles. Files reaching
// past limit are kept.
func (q *mappedFileQueue) deleteExpiredByTime(reserved time.Duration, force bool, maxFiles int, interval time.Duration, limit int64) int {
	files := q.snapshot()
	var drop []*mappedFile
	now := time.Now()
	for i := 0; i < len(files)-1 && len(drop) < maxFiles; i++ {
		if files[i].from+int64(q.fileSize) > limit {
			break
		}
		if force || !files[i].modTime().Add(reserved).After(now) {
			drop = append(drop, files[i])
			continue
		}
		break
	}
	for _, f := range drop {
		q.removeFiles([]*mappedFile{f})
		if interval > 0 {
			time.Sleep(interval)
		}
	}
	return len(drop)
}

func (q *mappedFileQueue) closeAll() {
	q.mu.Lock()
	files := q.files
	q.files = nil
	q.mu.Unlock()
	// An unused spare is deleted rather than left for recovery to find.
	q.dropSpare()
	for _, f := range files {
		f.close()
	}
}

func (q *mappedFileQueue) destroyAll() {
	q.mu.Lock()
	files := q.files
	q.files = nil
	q.mu.Unlock()
	q.dropSpare()
	for _, f := range files {
		_ = f.destroy()
	}
	_ = os.Remove(q.dir)
}
