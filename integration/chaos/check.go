package chaos

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"rmqd/codec"
)

// This is the smallest store checker the chaos runs need (issue #19 asks for an `rmqd check` command; this
// is not it): it reads a stopped broker's commitlog and consume queues (the format rmqd shares with Apache,
// so it checks both) and reports every inconsistency it finds.

// CheckStats is what CheckStore walked.
type CheckStats struct {
	Records  int // commitlog records
	Units    int // consume-queue units pointing at records
	MinPhy   int64
	EndPhy   int64          // end of the last record
	PerTopic map[string]int // records per topic
	Problems []string
}

// OK is true when nothing was wrong.
func (s CheckStats) OK() bool { return len(s.Problems) == 0 }

func (s CheckStats) String() string {
	if s.OK() {
		return fmt.Sprintf("ok (%d records, %d units)", s.Records, s.Units)
	}
	more := ""
	p := s.Problems
	if len(p) > 5 {
		more = fmt.Sprintf(" (+%d more)", len(p)-5)
		p = p[:5]
	}
	return fmt.Sprintf("%d problems%s: %v", len(s.Problems), more, p)
}

type recordInfo struct {
	size       int32
	topic      string
	qid        int32
	qoff       int64
	referenced bool
	dispatched bool // a type the consume queues index (not a prepared or rolled-back half)
}

const maxProblems = 100

// CheckStore checks the store under root (storePathRootDir, commitlog in root/commitlog): every commitlog
// record decodes, its body CRC matches, its PHYSICALOFFSET is where it lies, records follow one another
// without a gap up to the end of the data; every consume-queue unit points at a record of its topic and
// queue with its queue offset and size; and every record of a dispatched type is indexed by one unit.
func CheckStore(root string) (CheckStats, error) {
	st := CheckStats{MinPhy: -1, PerTopic: map[string]int{}}
	problem := func(format string, args ...any) {
		if len(st.Problems) < maxProblems {
			st.Problems = append(st.Problems, fmt.Sprintf(format, args...))
		}
	}
	recs := map[int64]*recordInfo{}
	topics := map[string]string{} // interned topic names

	files, err := numbered(filepath.Join(root, "commitlog"))
	if err != nil {
		return st, err
	}
	ended := false
	for _, f := range files {
		if st.MinPhy < 0 {
			st.MinPhy = f.start
		}
		if ended {
			if nonEmpty, err := hasData(f.path); err != nil {
				return st, err
			} else if nonEmpty {
				problem("commitlog file %s holds data after the end of the log at %d", filepath.Base(f.path), st.EndPhy)
			}
			continue
		}
		end, more, err := walkCommitLog(f, func(phy int64, m *codec.Message) {
			st.Records++
			if got := codec.BodyCRC(m.Body); got != m.BodyCRC {
				problem("record at %d: body CRC %d, stored %d", phy, got, m.BodyCRC)
			}
			if m.CommitLogOffset != phy {
				problem("record at %d says PHYSICALOFFSET %d", phy, m.CommitLogOffset)
			}
			t, ok := topics[m.Topic]
			if !ok {
				t = string([]byte(m.Topic))
				topics[t] = t
			}
			st.PerTopic[t]++
			tt := m.SysFlag & codec.SysFlagTransMask
			recs[phy] = &recordInfo{size: m.StoreSize, topic: t, qid: m.QueueID, qoff: m.QueueOffset,
				dispatched: tt != codec.SysFlagTransPrepared && tt != codec.SysFlagTransRollback}
		}, problem)
		if err != nil {
			return st, err
		}
		st.EndPhy = end
		ended = !more
	}

	cqRoot := filepath.Join(root, "consumequeue")
	topicDirs, err := os.ReadDir(cqRoot)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return st, fmt.Errorf("check: %w", err)
	}
	for _, td := range topicDirs {
		qdirs, err := os.ReadDir(filepath.Join(cqRoot, td.Name()))
		if err != nil {
			return st, fmt.Errorf("check: %w", err)
		}
		for _, qd := range qdirs {
			qid, err := strconv.Atoi(qd.Name())
			if err != nil {
				continue
			}
			cqFiles, err := numbered(filepath.Join(cqRoot, td.Name(), qd.Name()))
			if err != nil {
				return st, err
			}
			err = walkConsumeQueue(cqFiles, func(idx, phy int64, size int32) {
				where := fmt.Sprintf("%s/%d unit %d", td.Name(), qid, idx)
				r := recs[phy]
				switch {
				case r == nil && phy < st.MinPhy:
					// The commitlog file it pointed into was deleted.
				case r == nil:
					problem("%s points at %d (size %d): no record starts there", where, phy, size)
				case r.size != size:
					problem("%s: size %d, record at %d has %d", where, size, phy, r.size)
				case r.topic != td.Name() || int(r.qid) != qid:
					problem("%s: record at %d is %s/%d", where, phy, r.topic, r.qid)
				case r.qoff != idx:
					problem("%s: record at %d has QUEUEOFFSET %d", where, phy, r.qoff)
				case r.referenced:
					problem("%s: record at %d indexed twice", where, phy)
				default:
					st.Units++
					r.referenced = true
				}
			})
			if err != nil {
				return st, err
			}
		}
	}
	var unindexed []int64
	for phy, r := range recs {
		if r.dispatched && !r.referenced {
			unindexed = append(unindexed, phy)
		}
	}
	slices.Sort(unindexed)
	for _, phy := range unindexed {
		r := recs[phy]
		problem("record at %d (%s/%d offset %d) is in no consume queue", phy, r.topic, r.qid, r.qoff)
	}
	return st, nil
}

type numberedFile struct {
	path  string
	start int64
	size  int64
}

// numbered lists a folder of files named by their 20-digit start offset, in order.
func numbered(dir string) ([]numberedFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("check: %w", err)
	}
	var out []numberedFile
	for _, e := range ents {
		start, err := strconv.ParseInt(e.Name(), 10, 64)
		if err != nil || e.IsDir() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("check: %w", err)
		}
		out = append(out, numberedFile{path: filepath.Join(dir, e.Name()), start: start, size: info.Size()})
	}
	slices.SortFunc(out, func(a, b numberedFile) int { return int(a.start - b.start) })
	return out, nil
}

func hasData(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("check: %w", err)
	}
	defer f.Close()
	var h [8]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return false, nil
	}
	return h != [8]byte{}, nil
}

// walkCommitLog reads one commitlog file's records; it returns the end of the last record and whether the
// log goes on in the next file (this one was closed by a blank record or filled exactly).
func walkCommitLog(f numberedFile, each func(phy int64, m *codec.Message), problem func(string, ...any)) (int64, bool, error) {
	fh, err := os.Open(f.path)
	if err != nil {
		return 0, false, fmt.Errorf("check: %w", err)
	}
	defer fh.Close()
	r := bufio.NewReaderSize(fh, 1<<20)
	buf := make([]byte, 0, 64<<10)
	var m codec.Message
	pos := int64(0)
	for pos < f.size {
		var h [8]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return f.start + pos, false, nil
		}
		size := int32(binary.BigEndian.Uint32(h[:]))
		magic := int32(binary.BigEndian.Uint32(h[4:]))
		switch {
		case size == 0 && magic == 0:
			return f.start + pos, false, nil
		case magic == codec.MagicBlank:
			return f.start + pos, true, nil
		case size < 8 || int64(size) > f.size-pos:
			problem("%s at %d: bad TOTALSIZE %d (magic %#x)", filepath.Base(f.path), pos, size, uint32(magic))
			return f.start + pos, false, nil
		}
		buf = append(buf[:0], h[:]...)
		buf = slices.Grow(buf, int(size))[:size]
		if _, err := io.ReadFull(r, buf[8:]); err != nil {
			problem("%s at %d: record of %d bytes cut short", filepath.Base(f.path), pos, size)
			return f.start + pos, false, nil
		}
		if _, err := codec.DecodeRecord(buf, &m); err != nil {
			problem("%s at %d: %v", filepath.Base(f.path), pos, err)
			return f.start + pos, false, nil
		}
		each(f.start+pos, &m)
		pos += int64(size)
	}
	return f.start + pos, true, nil
}

const cqUnit = 20

// walkConsumeQueue reads one queue's units up to the first empty one, skipping the blank units a queue
// that starts above 0 is filled with.
func walkConsumeQueue(files []numberedFile, each func(idx, phy int64, size int32)) error {
	for _, f := range files {
		b, err := os.ReadFile(f.path)
		if err != nil {
			return fmt.Errorf("check: %w", err)
		}
		for p := 0; p+cqUnit <= len(b); p += cqUnit {
			phy := int64(binary.BigEndian.Uint64(b[p:]))
			size := int32(binary.BigEndian.Uint32(b[p+8:]))
			if size == 0 {
				return nil
			}
			if phy == 0 && size == math.MaxInt32 {
				continue
			}
			each((f.start+int64(p))/cqUnit, phy, size)
		}
	}
	return nil
}
