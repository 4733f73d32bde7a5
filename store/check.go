package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"rmqd/codec"
	"rmqd/compat"
)

// Problem is one inconsistency Check found.
type Problem struct {
	Path   string // the file concerned
	Offset int64  // byte offset in Path, -1 when the whole file is meant
	What   string
	// Repairable marks a torn tail recovery would cut: the end of the last
	// commitlog file, or consume-queue units past the commitlog's end.
	Repairable bool
}

func (p Problem) String() string {
	if p.Offset < 0 {
		return p.Path + ": " + p.What
	}
	return fmt.Sprintf("%s@%d: %s", p.Path, p.Offset, p.What)
}

// Check examines a store directory offline (no broker may have it open): every
// commitlog record's magic, length and body CRC, every consume-queue unit
// against the record it points to, every dispatched record indexed by exactly
// one unit of its queue, every index entry against the record's keys, the
// checkpoint and the JSON config files. It reads only.
func Check(dir string) []Problem { return Inspect(dir).Problems }

// Report is what Inspect found: the problems, and the counts a caller compares
// with what it sent (the chaos runs count records per topic).
type Report struct {
	Problems []Problem
	Records  int            // commitlog records read
	Units    int            // consume-queue units that point at their record
	PerTopic map[string]int // commitlog records per topic
}

// Inspect is Check with the counts of what it walked.
func Inspect(dir string) Report {
	c := &checker{dir: dir, perTopic: map[string]int{}, cqTopics: map[string]bool{}}
	c.commitLog()
	c.consumeQueues()
	c.batchQueues()
	c.unindexed()
	c.indexes()
	c.checkpoint()
	c.configs()
	return Report{Problems: c.problems, Records: len(c.recs), Units: c.units, PerTopic: c.perTopic}
}

// Repair cuts the torn tails Check reported as Repairable, as recovery would:
// it zeroes the last commitlog file from its first bad record on, zeroes
// consume-queue units from the first one pointing past the commitlog's end and
// removes index files reaching past it. Nothing else is touched. It returns
// the problems it repaired; run Check again afterwards.
func Repair(dir string, problems []Problem) ([]Problem, error) {
	var done []Problem
	for _, p := range problems {
		if !p.Repairable {
			continue
		}
		if p.Offset < 0 {
			if err := os.Remove(p.Path); err != nil {
				return done, fmt.Errorf("repair: %w", err)
			}
			done = append(done, p)
			continue
		}
		if err := zeroFrom(p.Path, p.Offset); err != nil {
			return done, fmt.Errorf("repair %s: %w", p.Path, err)
		}
		done = append(done, p)
	}
	return done, nil
}

func zeroFrom(path string, off int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if off >= st.Size() {
		return nil
	}
	// Keep the file's length (mapped files are preallocated); zeros read as
	// the end of data to recovery.
	if _, err := f.WriteAt(make([]byte, st.Size()-off), off); err != nil {
		return err
	}
	return f.Sync()
}

type clFile struct {
	path string
	from int64
	data []byte
}

// recRef is what the checker keeps of a commitlog record to match it with the
// consume-queue units that point at it.
type recRef struct {
	phy        int64
	topic      string
	qid        int32
	file       int  // index in checker.files
	dispatched bool // a type dispatch indexes (assignsQueueOffset)
	indexed    bool
}

type checker struct {
	dir      string
	problems []Problem
	files    []clFile // commitlog files, by offset
	minOff   int64
	endOff   int64    // end of the valid commitlog data
	recs     []recRef // by phy, as the commitlog walk meets them
	perTopic map[string]int
	cqTopics map[string]bool // topics that have a consumequeue folder
	units    int
}

func (c *checker) add(path string, off int64, repairable bool, format string, args ...any) {
	c.problems = append(c.problems, Problem{Path: path, Offset: off, What: fmt.Sprintf(format, args...), Repairable: repairable})
}

// numbered lists the files of dir named by a 20-digit offset, sorted.
func numbered(dir string) ([]string, []int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	var names []string
	var offs []int64
	for _, e := range ents {
		if e.IsDir() || len(e.Name()) != 20 {
			continue
		}
		off, err := strconv.ParseInt(e.Name(), 10, 64)
		if err != nil {
			continue
		}
		names = append(names, filepath.Join(dir, e.Name()))
		offs = append(offs, off)
	}
	return names, offs, nil
}

func (c *checker) commitLog() {
	dir := filepath.Join(c.dir, "commitlog")
	names, offs, err := numbered(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.add(dir, -1, false, "%v", err)
		}
		return
	}
	for i, p := range names {
		b, err := os.ReadFile(p)
		if err != nil {
			c.add(p, -1, false, "%v", err)
			return
		}
		if i > 0 {
			prev := c.files[len(c.files)-1]
			if want := prev.from + int64(len(prev.data)); offs[i] != want {
				c.add(p, -1, false, "file starts at %d, the previous one ends at %d", offs[i], want)
			}
		}
		c.files = append(c.files, clFile{path: p, from: offs[i], data: b})
	}
	if len(c.files) == 0 {
		return
	}
	c.minOff = c.files[0].from
	// Files after the last one holding anything are made ahead of need (Java's AllocateMappedFileService
	// makes the next file when it makes one): the log ends in the file before them.
	lastData := len(c.files) - 1
	for lastData > 0 && allZero(c.files[lastData].data) {
		lastData--
	}
	var m codec.Message
	for i, f := range c.files {
		if i > lastData {
			break
		}
		last := i == lastData
		pos := 0
		for pos+8 <= len(f.data) {
			size := int32(binary.BigEndian.Uint32(f.data[pos:]))
			magic := int32(binary.BigEndian.Uint32(f.data[pos+4:]))
			if magic == codec.MagicBlank {
				pos = len(f.data) // end-of-file filler
				break
			}
			if size == 0 && magic == 0 {
				if !last {
					c.add(f.path, int64(pos), false, "zeros before the file's end record, the next file follows")
				}
				break
			}
			n := checkRecord(f.data[pos:], &m, crcBody)
			if ok, found := codec.RecordPropCRC(f.data[pos:], &m); n > 0 && found && !ok {
				c.add(f.path, int64(pos), last, "commitlog offset %d: CRC property mismatch", f.from+int64(pos))
				break
			}
			if n <= 0 {
				what := "bad record"
				if _, err := codec.DecodeRecord(f.data[pos:], &m); err != nil {
					what = err.Error()
				} else if len(m.Body) > 0 && codec.BodyCRC(m.Body) != m.BodyCRC {
					what = "body CRC mismatch"
				}
				c.add(f.path, int64(pos), last, "commitlog offset %d: %s", f.from+int64(pos), what)
				break
			}
			if m.CommitLogOffset != f.from+int64(pos) {
				c.add(f.path, int64(pos), false, "record's PHYSICALOFFSET says %d, it sits at %d", m.CommitLogOffset, f.from+int64(pos))
			}
			c.recs = append(c.recs, recRef{phy: f.from + int64(pos), topic: m.Topic, qid: m.QueueID, file: i,
				dispatched: assignsQueueOffset(m.SysFlag)})
			c.perTopic[m.Topic]++
			pos += n
		}
		if last {
			c.endOff = f.from + int64(pos)
		}
	}
}

// record returns the decoded record at a commitlog offset, false if it is not
// in the files held.
func (c *checker) record(off int64, size int32, m *codec.Message) (string, bool) {
	i := sort.Search(len(c.files), func(i int) bool { return c.files[i].from+int64(len(c.files[i].data)) > off })
	if i == len(c.files) || off < c.files[i].from {
		return "not in any commitlog file", false
	}
	f := c.files[i]
	pos := off - f.from
	if size > 0 && pos+int64(size) > int64(len(f.data)) {
		return "runs past its commitlog file", false
	}
	n, err := codec.DecodeRecord(f.data[pos:], m)
	if err != nil {
		return err.Error(), false
	}
	if size > 0 && int32(n) != size {
		return fmt.Sprintf("record is %d bytes, unit says %d", n, size), false
	}
	return "", true
}

func (c *checker) consumeQueues() {
	c.eachQueueDir(filepath.Join(c.dir, "consumequeue"), c.consumeQueue)
}

// eachQueueDir calls check for each <root>/<topic>/<queueId> directory.
func (c *checker) eachQueueDir(root string, check func(dir, topic string, qid int32, m *codec.Message)) {
	topics, err := os.ReadDir(root)
	if err != nil {
		return
	}
	var m codec.Message
	for _, t := range topics {
		if !t.IsDir() {
			continue
		}
		c.cqTopics[t.Name()] = true
		qs, err := os.ReadDir(filepath.Join(root, t.Name()))
		if err != nil {
			c.add(filepath.Join(root, t.Name()), -1, false, "%v", err)
			continue
		}
		for _, q := range qs {
			if qid, err := strconv.Atoi(q.Name()); err == nil && q.IsDir() {
				check(filepath.Join(root, t.Name(), q.Name()), t.Name(), int32(qid), &m)
			}
		}
	}
}

func (c *checker) consumeQueue(dir, topic string, qid int32, m *codec.Message) {
	names, offs, err := numbered(dir)
	if err != nil {
		c.add(dir, -1, false, "%v", err)
		return
	}
	lmq := compat.IsLMQ(topic)
	ended := false
	for i, p := range names {
		b, err := os.ReadFile(p)
		if err != nil {
			c.add(p, -1, false, "%v", err)
			continue
		}
		if len(b)%cqUnitSize != 0 {
			c.add(p, -1, false, "length %d is not a multiple of %d", len(b), cqUnitSize)
		}
		for pos := 0; pos+cqUnitSize <= len(b); pos += cqUnitSize {
			phy, size, _ := readUnit(b[pos:])
			if phy == 0 && size == 0 {
				ended = true // units are written in order: zeros end the queue
				continue
			}
			if ended {
				c.add(p, int64(pos), false, "unit after the queue's end")
				ended = false
			}
			qoff := (offs[i] + int64(pos)) / cqUnitSize
			if phy < 0 || size <= 0 {
				c.add(p, int64(pos), false, "unit %d: offset %d size %d", qoff, phy, size)
				continue
			}
			if phy < c.minOff {
				continue // expired with the commitlog file it pointed into
			}
			if phy+int64(size) > c.endOff {
				c.add(p, int64(pos), true, "unit %d points past the commitlog's end (%d+%d > %d)", qoff, phy, size, c.endOff)
				return // the rest of the queue is the same torn tail
			}
			if why, ok := c.record(phy, size, m); !ok {
				c.add(p, int64(pos), false, "unit %d at commitlog %d: no record starts there (%s)", qoff, phy, why)
				continue
			}
			if lmq {
				c.units++ // an LMQ unit points at a record of another queue
				continue
			}
			r := c.recAt(phy)
			switch {
			case r == nil:
				c.add(p, int64(pos), false, "unit %d at commitlog %d: no record starts there", qoff, phy)
			case m.Topic != topic || m.QueueID != qid:
				c.add(p, int64(pos), false, "unit %d points to a record of %s/%d", qoff, m.Topic, m.QueueID)
			case m.QueueOffset != qoff:
				c.add(p, int64(pos), false, "unit %d points to a record of queue offset %d", qoff, m.QueueOffset)
			default:
				// Its queue offset matched, so no other unit of the queue can
				// point here: with unindexed() every record is indexed once.
				r.indexed = true
				c.units++
			}
		}
	}
}

// batchQueues checks the batch consume queues (batchcq.go): each unit points
// at a record of its queue whose queue offset is the unit's msgBaseOffset,
// batchSize is the record's INNER_NUM (1 without one), and each unit starts
// where the one before it ended.
func (c *checker) batchQueues() {
	c.eachQueueDir(filepath.Join(c.dir, bcqDirName), c.batchQueue)
}

func (c *checker) batchQueue(dir, topic string, qid int32, m *codec.Message) {
	names, _, err := numbered(dir)
	if err != nil {
		c.add(dir, -1, false, "%v", err)
		return
	}
	ended := false
	next := int64(-1) // the base the next unit must have
	for _, p := range names {
		b, err := os.ReadFile(p)
		if err != nil {
			c.add(p, -1, false, "%v", err)
			continue
		}
		if len(b)%bcqUnitSize != 0 {
			c.add(p, -1, false, "length %d is not a multiple of %d", len(b), bcqUnitSize)
		}
		for pos := 0; pos+bcqUnitSize <= len(b); pos += bcqUnitSize {
			u := readBatchUnit(b[pos:])
			if u.phy == 0 && u.size == 0 {
				ended = true
				continue
			}
			if ended {
				c.add(p, int64(pos), false, "unit after the queue's end")
				ended = false
			}
			if !u.valid() {
				c.add(p, int64(pos), false, "unit: offset %d size %d base %d batch %d", u.phy, u.size, u.base, u.num)
				continue
			}
			if next >= 0 && u.base != next {
				c.add(p, int64(pos), false, "unit of base %d follows one ending at %d", u.base, next)
			}
			next = u.end()
			if u.phy < c.minOff {
				continue
			}
			if u.phy+int64(u.size) > c.endOff {
				c.add(p, int64(pos), true, "unit %d points past the commitlog's end (%d+%d > %d)", u.base, u.phy, u.size, c.endOff)
				return
			}
			if why, ok := c.record(u.phy, u.size, m); !ok {
				c.add(p, int64(pos), false, "unit %d at commitlog %d: no record starts there (%s)", u.base, u.phy, why)
				continue
			}
			r := c.recAt(u.phy)
			_, num := innerBatch(m)
			switch {
			case r == nil:
				c.add(p, int64(pos), false, "unit %d at commitlog %d: no record starts there", u.base, u.phy)
			case m.Topic != topic || m.QueueID != qid:
				c.add(p, int64(pos), false, "unit %d points to a record of %s/%d", u.base, m.Topic, m.QueueID)
			case m.QueueOffset != u.base || num != u.num:
				c.add(p, int64(pos), false, "unit %d+%d points to a record of queue offset %d holding %d", u.base, u.num, m.QueueOffset, num)
			default:
				r.indexed = true
				c.units++
			}
		}
	}
}

// recAt returns the record the commitlog walk found starting at phy, nil if
// none does (a unit pointing into the middle of a record).
func (c *checker) recAt(phy int64) *recRef {
	i := sort.Search(len(c.recs), func(i int) bool { return c.recs[i].phy >= phy })
	if i == len(c.recs) || c.recs[i].phy != phy {
		return nil
	}
	return &c.recs[i]
}

// unindexed reports the dispatched records no unit of their queue points at.
// A store left without a clean shutdown (abort file present) is skipped:
// recovery dispatches its tail again. So are topics without a consumequeue
// folder: their queues were deleted with the topic, or dispatch could not
// make one for an unsafe name.
func (c *checker) unindexed() {
	if _, err := os.Stat(filepath.Join(c.dir, "abort")); err == nil {
		return
	}
	for _, r := range c.recs {
		if r.dispatched && !r.indexed && c.cqTopics[r.topic] && !compat.IsLMQ(r.topic) {
			f := c.files[r.file]
			c.add(f.path, r.phy-f.from, false, "record at commitlog %d (%s/%d) is in no consume queue", r.phy, r.topic, r.qid)
		}
	}
}

func (c *checker) indexes() {
	dir := filepath.Join(c.dir, "index")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	var m codec.Message
	for _, e := range ents {
		if e.IsDir() || !isIndexName(e.Name()) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			c.add(p, -1, false, "%v", err)
			continue
		}
		// Java's geometry keeps maxIndexNum = 4 x maxHashSlotNum (the defaults
		// and rmqd's tests); other geometries cannot be told from the file.
		if len(b) < indexHeaderSize || (len(b)-indexHeaderSize)%84 != 0 {
			c.add(p, -1, false, "length %d does not fit an index file with maxIndexNum = 4 x maxHashSlotNum", len(b))
			continue
		}
		slots := (len(b) - indexHeaderSize) / 84
		entries := 4 * slots
		be := binary.BigEndian
		count := int(int32(be.Uint32(b[36:])))
		if count < 0 || count > entries {
			c.add(p, 36, false, "header says %d entries, the file holds %d", count, entries)
			continue
		}
		for s := 0; s < slots; s++ {
			v := int(int32(be.Uint32(b[indexHeaderSize+4*s:])))
			if v < 0 || v >= max(count, 1) {
				c.add(p, int64(indexHeaderSize+4*s), false, "slot %d names entry %d of %d", s, v, count)
			}
		}
		base := indexHeaderSize + 4*slots
		for i := 1; i < count; i++ {
			at := base + 20*i
			hash := int32(be.Uint32(b[at:]))
			phy := int64(be.Uint64(b[at+4:]))
			prev := int(int32(be.Uint32(b[at+16:])))
			if prev < 0 || prev >= i {
				c.add(p, int64(at), false, "entry %d chains to %d", i, prev)
			}
			if phy < c.minOff {
				continue // expired
			}
			if phy >= c.endOff {
				// Recovery drops such an index file whole (truncateAbove).
				c.add(p, -1, true, "entry %d (at %d) points past the commitlog's end (%d >= %d)", i, at, phy, c.endOff)
				break
			}
			if why, ok := c.record(phy, 0, &m); !ok {
				c.add(p, int64(at), false, "entry %d at commitlog %d: %s", i, phy, why)
				continue
			}
			if !indexedBy(&m, hash) {
				c.add(p, int64(at), false, "entry %d: no key of the record at %d hashes to %d", i, phy, hash)
			}
		}
	}
}

// indexedBy reports whether one of the record's keys (UNIQ_KEY, KEYS, and
// TAGS as Java 5.5 indexes it) has the entry's hash.
func indexedBy(m *codec.Message, hash int32) bool {
	if v, ok := codec.PropertyValue(m.Properties, "UNIQ_KEY"); ok && keyHash(m.Topic, v) == hash {
		return true
	}
	if v, ok := codec.PropertyValue(m.Properties, codec.PropTags); ok && tagHash(m.Topic, v) == hash {
		return true
	}
	keys, _ := codec.PropertyValue(m.Properties, "KEYS")
	for _, k := range strings.Split(keys, " ") {
		if k != "" && keyHash(m.Topic, k) == hash {
			return true
		}
	}
	return false
}

func (c *checker) checkpoint() {
	p := filepath.Join(c.dir, "checkpoint")
	b, err := os.ReadFile(p)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.add(p, -1, false, "%v", err)
		}
		return
	}
	if len(b) < 24 {
		c.add(p, -1, false, "%d bytes, want at least 24", len(b))
		return
	}
	future := time.Now().Add(24 * time.Hour).UnixMilli()
	for i, name := range []string{"physicMsgTimestamp", "logicsMsgTimestamp", "indexMsgTimestamp"} {
		v := int64(binary.BigEndian.Uint64(b[8*i:]))
		if v < 0 || v > future {
			c.add(p, int64(8*i), false, "%s %d is not a time", name, v)
		}
	}
}

// configs checks that each config/*.json parses; what fastjson writes
// (bare numeric map keys, {0:12}) is read as the broker reads it.
func (c *checker) configs() {
	dir := filepath.Join(c.dir, "config")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			c.add(p, -1, false, "%v", err)
			continue
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue // Java leaves empty files for tables never written
		}
		var v any
		if err := codec.UnmarshalBody(b, &v); err != nil {
			c.add(p, -1, false, "not JSON: %v", err)
		}
	}
}
