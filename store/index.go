package store

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"rmqd/codec"
	"rmqd/compat"
)

const indexHeaderSize = 40

// indexFile is one IndexFile: a 40-byte header, a hash slot table and chained
// 20-byte entries, all big-endian in one mapping. The header is written through.
type indexFile struct {
	mf       *mappedFile
	slotNum  int
	indexNum int
}

func (x *indexFile) i64(off int) int64 { return int64(binary.BigEndian.Uint64(x.mf.data[off:])) }
func (x *indexFile) i32(off int) int32 { return int32(binary.BigEndian.Uint32(x.mf.data[off:])) }
func (x *indexFile) put64(off int, v int64) {
	binary.BigEndian.PutUint64(x.mf.data[off:], uint64(v))
}
func (x *indexFile) put32(off int, v int32) {
	binary.BigEndian.PutUint32(x.mf.data[off:], uint32(v))
}

func (x *indexFile) beginTimestamp() int64 { return x.i64(0) }
func (x *indexFile) endTimestamp() int64   { return x.i64(8) }
func (x *indexFile) endPhyOffset() int64   { return x.i64(24) }

// indexCount is the next entry number; a stored value <= 0 means 1.
func (x *indexFile) indexCount() int32 { return max(x.i32(36), 1) }

func (x *indexFile) isFull() bool { return int(x.indexCount()) >= x.indexNum }

// keyHash is abs(String.hashCode()) of "topic#key", with MIN_VALUE mapped to 0.
func keyHash(topic, key string) int32 {
	return absHash(javaHashConcat(javaHashConcat(compat.JavaStringHash(topic), "#"), key))
}

// tagHash is keyHash of Java 5.4's tag entry, "topic#T#tags".
func tagHash(topic, tags string) int32 {
	return absHash(javaHashConcat(javaHashConcat(compat.JavaStringHash(topic), "#T#"), tags))
}

func absHash(h int32) int32 {
	if h < 0 {
		h = -h
	}
	if h < 0 {
		return 0
	}
	return h
}

// javaHashConcat extends the Java hash h of a string by s, without building the
// concatenation: h*31^len16(s) + hash(s).
func javaHashConcat(h int32, s string) int32 {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	p := int32(1)
	for i := 0; i < n; i++ {
		p *= 31
	}
	return h*p + compat.JavaStringHash(s)
}

func (x *indexFile) putKey(hash int32, phy, storeTs int64) bool {
	count := x.indexCount()
	if int(count) >= x.indexNum {
		return false
	}
	slotPos := indexHeaderSize + int(hash%int32(x.slotNum))*4
	slotValue := x.i32(slotPos)
	if slotValue <= 0 || slotValue > count {
		slotValue = 0
	}
	begin := x.beginTimestamp()
	diff := (storeTs - begin) / 1000
	switch {
	case begin <= 0:
		diff = 0
	case diff > 0x7FFFFFFF:
		diff = 0x7FFFFFFF
	case diff < 0:
		diff = 0
	}
	pos := indexHeaderSize + x.slotNum*4 + int(count)*20
	x.put32(pos, hash)
	x.put64(pos+4, phy)
	x.put32(pos+12, int32(diff))
	x.put32(pos+16, slotValue)
	x.put32(slotPos, count)
	if count <= 1 {
		x.put64(16, phy)
		x.put64(0, storeTs)
	}
	if slotValue == 0 {
		x.put32(32, x.i32(32)+1)
	}
	x.put32(36, count+1)
	x.put64(24, phy)
	x.put64(8, storeTs)
	return true
}

func (x *indexFile) timeMatched(begin, end int64) bool {
	b, e := x.beginTimestamp(), x.endTimestamp()
	return (begin < b && end > e) || (begin >= b && begin <= e) || (end >= b && end <= e)
}

// selectPhyOffsets walks the slot's chain (IndexFile.selectPhyOffset),
// collecting up to maxNum distinct offsets.
func (x *indexFile) selectPhyOffsets(out []int64, hash int32, maxNum int, begin, end int64) []int64 {
	count := x.indexCount()
	slotValue := x.i32(indexHeaderSize + int(hash%int32(x.slotNum))*4)
	if slotValue <= 0 || slotValue > count || count <= 1 {
		return out
	}
	fileBegin := x.beginTimestamp()
	for next := slotValue; len(out) < maxNum; {
		pos := indexHeaderSize + x.slotNum*4 + int(next)*20
		h := x.i32(pos)
		phy := x.i64(pos + 4)
		diff := int64(x.i32(pos + 12))
		prev := x.i32(pos + 16)
		if diff < 0 {
			break
		}
		t := fileBegin + diff*1000
		// A record's entries for one key lie next to each other in the walk
		// (one chain, then the next older file): it is counted once.
		if h == hash && t >= begin && t <= end && (len(out) == 0 || out[len(out)-1] != phy) {
			out = append(out, phy)
		}
		// Each entry points to an older one; Java stops only a chain that points
		// at itself, and walks a damaged file's loop forever.
		if prev <= 0 || prev > count || prev >= next || t < begin {
			break
		}
		next = prev
	}
	return out
}

// indexService keeps the index files (IndexService).
type indexService struct {
	s        *DefaultStore
	dir      string
	slotNum  int
	indexNum int
	size     int

	mu    sync.RWMutex
	files []*indexFile
	// dropped says load or truncateAbove deleted index files whose keys the
	// commitlog still holds: recovery re-indexes from the end of the kept ones.
	dropped bool
	// missFrom is the first record left (partly) unindexed because no index
	// file could be made (a full disk), or -1: the next record that gets a
	// file indexes the gap first. Under dispatchMu, as every build is.
	missFrom int64
}

func newIndexService(s *DefaultStore) *indexService {
	return &indexService{
		s:        s,
		dir:      filepath.Join(s.cfg.StorePathRootDir, "index"),
		slotNum:  s.cfg.MaxHashSlotNum,
		indexNum: s.cfg.MaxIndexNum,
		size:     indexHeaderSize + s.cfg.MaxHashSlotNum*4 + s.cfg.MaxIndexNum*20,
		missFrom: -1,
	}
}

func (ix *indexService) open(path string, create bool) (*indexFile, error) {
	mf, err := newMappedFile(path, 0, ix.size, create, false)
	if err != nil {
		return nil, err
	}
	return &indexFile{mf: mf, slotNum: ix.slotNum, indexNum: ix.indexNum}, nil
}

// load maps the index files in name order. After a crash, files newer than the
// checkpoint's index time are deleted (IndexService.load). A last file shorter
// than an index file is one whose creation a crash cut short (rmqd before
// 2026-12-01 made it in place, open then ftruncate) or a damaged one: it is
// deleted, where Java would map it grown with zeros. An index file holds nothing
// the commitlog lacks, so whatever is deleted here recovery builds again
// (rebuildFrom); every file after a deleted one goes too, so the kept ones stay
// a prefix. A shorter file that is not the last, or a longer one, is an index of
// another size (a changed maxHashSlotNum or maxIndexNum) and stops the load, as
// a misfit commitlog file does.
func (ix *indexService) load(lastExitOK bool) error {
	if err := os.Remove(ix.tmpPath()); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("delete unfinished index file: %w", err)
	}
	entries, err := os.ReadDir(ix.dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return fmt.Errorf("read index dir: %w", err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			_ = os.Remove(filepath.Join(ix.dir, e.Name()))
			continue
		}
		if e.Type().IsRegular() && isIndexName(e.Name()) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for i, name := range names {
		path := filepath.Join(ix.dir, name)
		if ix.dropped {
			if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("delete index file: %w", err)
			}
			continue
		}
		st, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("load index: %w", err)
		}
		if i == len(names)-1 && st.Size() < int64(ix.size) {
			ix.s.log.Warn("index file short, deleted; recovery rebuilds it", "file", name, "size", st.Size(), "want", ix.size)
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("delete short index file: %w", err)
			}
			ix.dropped = true
			continue
		}
		x, err := ix.open(path, false)
		if err != nil {
			return fmt.Errorf("load index: %w", err)
		}
		if !lastExitOK && x.endTimestamp() > ix.s.checkpoint.indexMsgTimestamp.Load() {
			if err := x.mf.destroy(); err != nil {
				return fmt.Errorf("delete index file: %w", err)
			}
			ix.dropped = true
			continue
		}
		ix.files = append(ix.files, x)
	}
	return nil
}

// rebuildFrom is the commitlog offset to re-index from when files were
// deleted at open: the last record the kept files index (indexed again; queries
// drop the duplicate), or 0 when none is kept; or where a gap left before the
// restart begins (loadGap), if earlier.
func (ix *indexService) rebuildFrom() (int64, bool) {
	at, ok := ix.missFrom, ix.missFrom >= 0
	if !ix.dropped {
		return at, ok
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	from := int64(0)
	if n := len(ix.files); n > 0 {
		from = ix.files[n-1].endPhyOffset()
	}
	if ok {
		from = min(from, at)
	}
	return from, true
}

// gapFilled is told that the gap was indexed again: its file goes unless a
// record of it still found no index file (missFrom set anew).
func (ix *indexService) gapFilled() {
	if ix.missFrom >= 0 {
		return
	}
	if err := ix.saveGap(-1); err != nil {
		ix.s.log.Warn("index gap indexed, its file stays: the next start indexes it again", "err", err)
	}
}

// isIndexName accepts yyyyMMddHHmmssSSS.
func isIndexName(name string) bool {
	if len(name) != 17 {
		return false
	}
	for _, c := range name {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// truncateAbove drops index files that reach past the end of the commitlog, so the
// endPhyOffset guard does not skip the records written there next.
func (ix *indexService) truncateAbove(phy int64) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.missFrom >= phy {
		ix.setMiss(-1) // the unindexed records are cut away
	}
	for len(ix.files) > 0 {
		last := ix.files[len(ix.files)-1]
		if last.endPhyOffset() < phy {
			break
		}
		ix.files = ix.files[:len(ix.files)-1]
		ix.dropped = true
		if err := last.mf.destroy(); err != nil {
			return err
		}
	}
	return nil
}

// writable returns the last file, rolling to a new one when it is full.
func (ix *indexService) writable() (*indexFile, error) {
	ix.mu.RLock()
	var last *indexFile
	if n := len(ix.files); n > 0 {
		last = ix.files[n-1]
	}
	ix.mu.RUnlock()
	if last != nil && !last.isFull() {
		return last, nil
	}
	if err := os.MkdirAll(ix.dir, 0o755); err != nil {
		return nil, fmt.Errorf("create index dir: %w", err)
	}
	if last != nil {
		// The full file goes to disk and the checkpoint vouches for it before
		// its successor exists, so a crash from here on keeps it.
		_ = unix.Msync(last.mf.data, unix.MS_SYNC)
		ix.s.checkpoint.indexMsgTimestamp.Store(last.endTimestamp())
		_ = ix.s.checkpoint.flush()
		ix.s.cqWork() // the consume-queue flusher retries a failed checkpoint sync
	}
	x, err := ix.create(last)
	if err != nil {
		return nil, err
	}
	ix.mu.Lock()
	ix.files = append(ix.files, x)
	ix.mu.Unlock()
	return x, nil
}

// tmpPath is where create makes an index file before renaming it into the
// index directory. It lies outside that directory because Java's
// IndexService.load takes every file there for an index file.
func (ix *indexService) tmpPath() string { return filepath.Join(filepath.Dir(ix.dir), "index.tmp") }

// create makes the next index file whole before it has its name: sized and
// given its header (the end of last, which the build guard needs) under
// tmpPath, which load deletes, then renamed. A crash leaves no index file of
// the wrong size or with an empty header. Only the dispatcher (or recovery
// before it starts) creates index files, so one temporary name does.
func (ix *indexService) create(last *indexFile) (*indexFile, error) {
	now := time.Now()
	var path string
	for {
		path = filepath.Join(ix.dir, strings.Replace(now.Format("20060102150405.000"), ".", "", 1))
		if _, err := os.Stat(path); os.IsNotExist(err) {
			break
		}
		now = now.Add(time.Millisecond)
	}
	tmp := ix.tmpPath()
	_ = os.Remove(tmp) // a leftover would be mapped with its old bytes
	x, err := ix.open(tmp, true)
	if err != nil {
		return nil, err
	}
	if last != nil {
		if t := last.endTimestamp(); t > 0 {
			x.put64(0, t)
			x.put64(8, t)
		}
		if p := last.endPhyOffset(); p > 0 {
			x.put64(16, p)
			x.put64(24, p)
		}
	}
	err = unix.Msync(x.mf.data[:indexHeaderSize], unix.MS_SYNC)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = x.mf.destroy()
		return nil, fmt.Errorf("create index file %s: %w", path, err)
	}
	x.mf.path = path
	syncDir(ix.dir)
	return x, nil
}

// syncDir makes a directory's new and renamed entries durable; a failure only
// costs durability of the name across a power loss, which recovery tolerates.
func syncDir(dir string) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	_ = unix.Fsync(fd)
	_ = unix.Close(fd)
}

// build indexes UNIQ_KEY, each KEYS token and, as Java 5.5 does, TAGS of a
// dispatched record.
func (ix *indexService) build(m *codec.Message, uniq, keys, tags string) {
	if tranType(m.SysFlag) == codec.SysFlagTransRollback {
		return
	}
	x, err := ix.writable()
	if err != nil {
		ix.missed(m, err)
		return
	}
	if m.CommitLogOffset < x.endPhyOffset() {
		return // indexed before the restart
	}
	if from := ix.missFrom; from >= 0 && from < m.CommitLogOffset {
		ix.missFrom = -1 // a record of the gap that still finds no file notes it again
		ix.s.rebuildIndex(max(from, ix.s.commitLog.q.minOffset()), m.CommitLogOffset)
		ix.gapFilled()
		if x, err = ix.writable(); err != nil {
			ix.missed(m, err)
			return
		}
	}
	if uniq != "" && !ix.put(x, m, keyHash(m.Topic, uniq)) {
		return
	}
	for keys != "" {
		k := keys
		if i := strings.IndexByte(keys, ' '); i >= 0 {
			k, keys = keys[:i], keys[i+1:]
		} else {
			keys = ""
		}
		if k != "" && !ix.put(x, m, keyHash(m.Topic, k)) {
			return
		}
	}
	if tags != "" {
		ix.put(x, m, tagHash(m.Topic, tags))
	}
}

// missed notes a record whose keys could not all be indexed; the first of a
// gap is logged, not each record of it.
func (ix *indexService) missed(m *codec.Message, err error) {
	if ix.missFrom >= 0 {
		return
	}
	ix.setMiss(m.CommitLogOffset)
	ix.s.log.Error("no index file: records from this offset are indexed once one can be made", "offset", m.CommitLogOffset, "err", err)
}

func (ix *indexService) put(x *indexFile, m *codec.Message, h int32) bool {
	for i := 0; i < 3; i++ {
		if x.putKey(h, m.CommitLogOffset, m.StoreTimestamp) {
			return true
		}
		var err error
		if x, err = ix.writable(); err != nil {
			ix.missed(m, err)
			return false
		}
	}
	return false
}

// query returns commitlog offsets whose entry hash is h, newest files first.
func (ix *indexService) query(h int32, maxNum int, begin, end int64) (offs []int64, lastTs, lastPhy int64) {
	ix.mu.RLock()
	files := make([]*indexFile, 0, len(ix.files))
	for _, f := range ix.files {
		if f.mf.hold() {
			files = append(files, f)
		}
	}
	ix.mu.RUnlock()
	defer func() {
		for _, f := range files {
			f.mf.release()
		}
	}()
	for i := len(files) - 1; i >= 0; i-- {
		f := files[i]
		if i == len(files)-1 {
			lastTs, lastPhy = f.endTimestamp(), f.endPhyOffset()
		}
		if f.timeMatched(begin, end) {
			offs = f.selectPhyOffsets(offs, h, maxNum, begin, end)
		}
		if f.beginTimestamp() < begin || len(offs) >= maxNum {
			break
		}
	}
	return offs, lastTs, lastPhy
}

// deleteBelow removes files (not the last) whose entries all point below minPhy.
func (ix *indexService) deleteBelow(minPhy int64) {
	ix.mu.Lock()
	var drop []*indexFile
	for len(ix.files) > 1 && ix.files[0].endPhyOffset() < minPhy {
		drop = append(drop, ix.files[0])
		ix.files = ix.files[1:]
	}
	ix.mu.Unlock()
	for _, f := range drop {
		_ = f.mf.destroy()
	}
}

func (ix *indexService) flush() {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	for _, f := range ix.files {
		_ = unix.Msync(f.mf.data, unix.MS_SYNC)
	}
}

func (ix *indexService) close() {
	ix.mu.Lock()
	files := ix.files
	ix.files = nil
	ix.mu.Unlock()
	for _, f := range files {
		_ = unix.Msync(f.mf.data, unix.MS_SYNC)
		f.mf.close()
	}
}

// writeFileSynced replaces path with data whole or not at all: tmp, fsync,
// rename, then the directory synced.
func writeFileSynced(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	syncDir(filepath.Dir(path))
	return nil
}
