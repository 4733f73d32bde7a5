package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/compat"
)

// innerBatchMsg is what the broker puts for a batch sent to a BatchCQ topic:
// one record whose body is the client's batch body, INNER_BATCH and
// NEED_UNWRAP set, INNER_NUM the count of messages.
func innerBatchMsg(topic string, qid int32, first, n int) *codec.Message {
	var body []byte
	for i := range n {
		body = codec.AppendBatchEntry(body, 0, []byte(fmt.Sprint("m", first+i)), "")
	}
	m := newMsg(topic, qid, "", map[string]string{codec.PropTags: "tb", codec.PropInnerNum: strconv.Itoa(n),
		codec.PropUniqKey: fmt.Sprint("U", first)})
	m.Body = body
	m.SysFlag = codec.SysFlagInnerBatch | codec.SysFlagNeedUnwrap
	return m
}

type wantUnit struct {
	phy       int64
	size      int32
	base      int64
	num       int16
	storeTime int64
}

func bcqConfig(dir string) Config {
	c := testConfig(dir)
	c.MapperFileSizeBatchConsumeQueue = 4 * bcqUnitSize // several files for a few units
	return c
}

// TestBatchCQUnitsAndLookup puts inner batches (and one plain message) to a
// BatchCQ topic and checks the units against Java's layout and path, the queue
// offsets put assigns, and that a pull at any offset inside a batch returns
// that batch's record with the next offset past it.
func TestBatchCQUnitsAndLookup(t *testing.T) {
	cfg := bcqConfig(t.TempDir())
	s := openStore(t, cfg)
	s.SetBatchTopics(func(topic string) bool { return topic == "B" })
	ctx := context.Background()
	sizes := []int{3, 1, 2, 5, 1, 4, 2, 3, 1, 2} // 10 units: three files of 4
	var units []wantUnit
	next := 0
	for i, n := range sizes {
		m := innerBatchMsg("B", 0, next, n)
		if i == 4 {
			m = newMsg("B", 0, "plain", map[string]string{codec.PropTags: "tb"}) // a single send: one offset
		}
		r := s.PutMessage(ctx, m)
		require.Equal(t, PutOK, r.Status)
		require.Equal(t, int64(next), r.QueueOffset)
		require.Equal(t, int32(n), r.MsgNum)
		if i != 4 {
			// INNER_BASE holds the offset, as Java's assignQueueOffset writes it.
			require.Equal(t, strconv.Itoa(next), storedProps(t, s, r.WroteOffset)[codec.PropInnerBase])
		}
		units = append(units, wantUnit{r.WroteOffset, r.WroteBytes, int64(next), int16(n), r.StoreTimestamp})
		next += n
	}
	total := int64(next)
	waitDispatched(t, s, "B", 0, total)
	require.Equal(t, int64(0), s.MinOffsetInQueue("B", 0))
	require.Equal(t, total, s.MaxOffsetInQueue("B", 0))

	checkFiles := func() {
		t.Helper()
		_, err := os.Stat(filepath.Join(cfg.StorePathRootDir, "consumequeue", "B"))
		require.True(t, os.IsNotExist(err), "no simple consume queue for a BatchCQ topic")
		dir := filepath.Join(cfg.StorePathRootDir, "batchconsumequeue", "B", "0")
		var raw []byte
		for f := int64(0); f < 3; f++ {
			b, err := os.ReadFile(filepath.Join(dir, fileName(f*4*bcqUnitSize)))
			require.NoError(t, err)
			require.Len(t, b, 4*bcqUnitSize)
			raw = append(raw, b...)
		}
		tags := int64(compat.JavaStringHash("tb"))
		for i, w := range units {
			u := raw[i*bcqUnitSize:]
			be := binary.BigEndian
			require.Equal(t, w.phy, int64(be.Uint64(u)), "unit %d", i)
			require.Equal(t, w.size, int32(be.Uint32(u[8:])))
			require.Equal(t, tags, int64(be.Uint64(u[12:])))
			require.Equal(t, w.storeTime, int64(be.Uint64(u[20:])))
			require.Equal(t, w.base, int64(be.Uint64(u[28:])))
			require.Equal(t, w.num, int16(be.Uint16(u[36:])))
			require.Equal(t, int32(-1), int32(be.Uint32(u[38:])), "compactedOffset INVALID_POS")
			require.Equal(t, uint32(0), be.Uint32(u[42:]))
		}
		require.True(t, allZero(raw[len(units)*bcqUnitSize:]))
	}
	checkFiles()

	checkPulls := func() {
		t.Helper()
		for _, w := range units {
			for off := w.base; off < w.base+int64(w.num); off++ {
				r := s.GetMessage("g", "B", 0, off, 1, 1<<20, nil)
				require.Equal(t, GetFound, r.Status, "offset %d", off)
				require.Len(t, r.Records, 1)
				var m codec.Message
				_, err := codec.DecodeRecord(r.Records[0], &m)
				require.NoError(t, err)
				require.Equal(t, w.phy, m.CommitLogOffset, "offset %d is in the batch at %d", off, w.base)
				require.Equal(t, w.base, m.QueueOffset)
				require.Equal(t, w.base+int64(w.num), r.NextBeginOffset)
				r.Release()
			}
		}
		// maxMsgNums counts messages: 6 takes the units of 3, 1 and 2.
		r := s.GetMessage("g", "B", 0, 1, 6, 1<<20, nil)
		require.Equal(t, GetFound, r.Status)
		require.Len(t, r.Records, 3)
		require.Equal(t, int64(6), r.NextBeginOffset)
		r.Release()
		r = s.GetMessage("g", "B", 0, total, 32, 1<<20, nil)
		require.Equal(t, GetOffsetOverflowOne, r.Status)
		r.Release()
		// Reading the whole queue walks every file.
		got, off := 0, int64(0)
		for i := 0; i < 20 && off < total; i++ {
			r := s.GetMessage("g", "B", 0, off, 32, 1<<20, nil)
			require.Equal(t, GetFound, r.Status)
			got += len(r.Records)
			off = r.NextBeginOffset
			r.Release()
		}
		require.Equal(t, len(units), got)
		require.Equal(t, total, off)
		require.Equal(t, units[3].storeTime, s.MessageStoreTimestamp("B", 0, units[3].base+2))
	}
	checkPulls()

	// A clean restart loads the queue from batchconsumequeue/ without the
	// topic lookup, and goes on numbering from its end.
	require.NoError(t, s.Shutdown())
	s = openStore(t, cfg)
	require.Equal(t, total, s.MaxOffsetInQueue("B", 0))
	checkPulls()
	s.SetBatchTopics(func(topic string) bool { return topic == "B" })
	r := s.PutMessage(ctx, innerBatchMsg("B", 0, int(total), 2))
	require.Equal(t, PutOK, r.Status)
	require.Equal(t, total, r.QueueOffset)
	units = append(units, wantUnit{r.WroteOffset, r.WroteBytes, total, 2, r.StoreTimestamp})
	total += 2
	waitDispatched(t, s, "B", 0, total)
	require.NoError(t, s.Shutdown())

	// After a crash with the batch queue gone, recovery rebuilds it from the
	// commitlog, byte for byte.
	require.NoError(t, os.RemoveAll(filepath.Join(cfg.StorePathRootDir, "batchconsumequeue")))
	markCrashed(t, cfg)
	s = openStore(t, cfg)
	defer s.Shutdown()
	s.SetBatchTopics(func(topic string) bool { return topic == "B" })
	waitDispatched(t, s, "B", 0, total)
	checkFiles()
	checkPulls()
	r = s.PutMessage(ctx, innerBatchMsg("B", 0, int(total), 1))
	require.Equal(t, PutOK, r.Status)
	require.Equal(t, total, r.QueueOffset, "the offset table is rebuilt from the batch queue")
}

// TestBatchCQRefusals: an inner batch to a topic that is not BatchCQ is
// illegal (DefaultMessageStore.asyncPutMessage), as is an INNER_NUM that is
// not a short.
func TestBatchCQRefusals(t *testing.T) {
	s := openStore(t, bcqConfig(t.TempDir()))
	defer s.Shutdown()
	s.SetBatchTopics(func(topic string) bool { return topic == "B" })
	ctx := context.Background()
	require.Equal(t, PutMessageIllegal, s.PutMessage(ctx, innerBatchMsg("S", 0, 0, 2)).Status)
	m := innerBatchMsg("B", 0, 0, 2)
	m.Properties = codec.SetProperty(m.Properties, codec.PropInnerNum, "40000")
	require.Equal(t, PutMessageIllegal, s.PutMessage(ctx, m).Status)
	// A plain topic's queue stays a simple one.
	require.Equal(t, PutOK, s.PutMessage(ctx, newMsg("S", 0, "x", nil)).Status)
	waitDispatched(t, s, "S", 0, 1)
	require.False(t, s.findCQ("S", 0).batch)
}

// TestBatchCQRecoveryKnowsTopicsFromOpen: recovery runs inside Open, before
// the broker can call SetBatchTopics; with Config.BatchTopics a lost queue
// whose first record is a plain message (no INNER_BATCH flag to go by) is
// rebuilt as a batch queue all the same.
func TestBatchCQRecoveryKnowsTopicsFromOpen(t *testing.T) {
	cfg := bcqConfig(t.TempDir())
	cfg.BatchTopics = func(topic string) bool { return topic == "B" }
	s := openStore(t, cfg)
	ctx := context.Background()
	require.Equal(t, PutOK, s.PutMessage(ctx, newMsg("B", 0, "plain", nil)).Status)
	require.Equal(t, PutOK, s.PutMessage(ctx, innerBatchMsg("B", 0, 1, 3)).Status)
	waitDispatched(t, s, "B", 0, 4)
	require.NoError(t, s.Shutdown())
	require.NoError(t, os.RemoveAll(filepath.Join(cfg.StorePathRootDir, "batchconsumequeue")))
	markCrashed(t, cfg)

	s = openStore(t, cfg)
	defer s.Shutdown()
	cq := s.findCQ("B", 0)
	require.NotNil(t, cq)
	require.True(t, cq.batch)
	require.Equal(t, int64(4), s.MaxOffsetInQueue("B", 0))
	r := s.GetMessage("g", "B", 0, 2, 32, 1<<20, nil)
	defer r.Release()
	require.Equal(t, GetFound, r.Status)
	require.Len(t, r.Records, 1)
	require.Equal(t, int64(4), r.NextBeginOffset)
}

// TestBatchCQCutWithCommitLog: a crash that loses the commitlog's last
// record drops the batch unit that points at it (truncateDirtyLogicFiles), and
// the queue numbers on from where the surviving units end.
func TestBatchCQCutWithCommitLog(t *testing.T) {
	cfg := bcqConfig(t.TempDir())
	cfg.BatchTopics = func(topic string) bool { return topic == "B" }
	s := openStore(t, cfg)
	ctx := context.Background()
	var last PutResult
	for i, n := range []int{2, 3, 4, 2, 3} {
		last = s.PutMessage(ctx, innerBatchMsg("B", 0, i*10, n))
		require.Equal(t, PutOK, last.Status)
	}
	waitDispatched(t, s, "B", 0, 14)
	require.NoError(t, s.Shutdown())
	files := commitLogFiles(t, cfg)
	writeAt(t, files[len(files)-1], last.WroteOffset, make([]byte, last.WroteBytes))
	markCrashed(t, cfg)

	s = openStore(t, cfg)
	defer s.Shutdown()
	require.Equal(t, int64(11), s.MaxOffsetInQueue("B", 0), "the lost batch's unit is gone")
	r := s.GetMessage("g", "B", 0, 12, 32, 1<<20, nil)
	require.Equal(t, GetOffsetOverflowBadly, r.Status)
	r.Release()
	r = s.GetMessage("g", "B", 0, 10, 32, 1<<20, nil)
	require.Equal(t, GetFound, r.Status)
	require.Len(t, r.Records, 1)
	require.Equal(t, int64(11), r.NextBeginOffset)
	r.Release()
	p := s.PutMessage(ctx, innerBatchMsg("B", 0, 99, 2))
	require.Equal(t, PutOK, p.Status)
	require.Equal(t, int64(11), p.QueueOffset)
	waitDispatched(t, s, "B", 0, 13)
}

// TestBatchCQRetention: when old commitlog files go, batch-queue files whose
// units all point below the new min go too, and the min message offset moves
// to the first unit at or above it (deleteExpiredFile, correctMinOffset).
func TestBatchCQRetention(t *testing.T) {
	cfg := bcqConfig(t.TempDir())
	cfg.MappedFileSizeCommitLog = 8192
	cfg.DeleteCommitLogFilesInterval = 0
	cfg.DeleteConsumeQueueFilesInterval = 0
	cfg.BatchTopics = func(topic string) bool { return topic == "B" }
	s := openStore(t, cfg)
	defer s.Shutdown()
	ctx := context.Background()
	for i := range 30 {
		m := innerBatchMsg("B", 0, i*3, 2)
		// A third, large message: a few records per commitlog file.
		m.Body = codec.AppendBatchEntry(m.Body, 0, make([]byte, 850), "")
		m.Properties = codec.SetProperty(m.Properties, codec.PropInnerNum, "3")
		require.Equal(t, PutOK, s.PutMessage(ctx, m).Status)
	}
	waitDispatched(t, s, "B", 0, 90)
	s.doReput()
	files := s.commitLog.q.snapshot()
	require.Greater(t, len(files), 4)
	old := time.Now().Add(-100 * time.Hour)
	for _, f := range files {
		require.NoError(t, os.Chtimes(f.path, old, old))
	}
	require.Positive(t, s.cleanOnce(ctx, true))
	minPhy := s.MinPhyOffset()
	minOff := s.MinOffsetInQueue("B", 0)
	require.Positive(t, minOff)
	require.Zero(t, minOff%3, "a batch boundary")
	u, ok := s.findCQ("B", 0).bcqUnitAt(minOff)
	require.True(t, ok)
	require.GreaterOrEqual(t, u.phy, minPhy)
	prev, ok := s.findCQ("B", 0).bcqUnitAt(minOff - 1)
	if ok {
		require.Less(t, prev.phy, minPhy)
	}
	require.Less(t, len(s.findCQ("B", 0).q.snapshot()), 8, "expired batch-queue files deleted")
	r := s.GetMessage("g", "B", 0, 0, 32, 0, nil)
	require.Equal(t, GetOffsetTooSmall, r.Status)
	require.Equal(t, minOff, r.NextBeginOffset)
	r.Release()
	r = s.GetMessage("g", "B", 0, minOff, 32, 0, nil)
	require.Equal(t, GetFound, r.Status)
	r.Release()
}

// TestCheckBatchQueues: `rmqd check` reads batchconsumequeue/ too: a clean
// store passes, a unit whose base or batch size disagrees with its record is
// reported, and a torn tail pointing past the commitlog is repairable.
func TestCheckBatchQueues(t *testing.T) {
	build := func(t *testing.T) (string, PutResult) {
		cfg := bcqConfig(t.TempDir())
		cfg.BatchTopics = func(topic string) bool { return topic == "B" }
		s := openStore(t, cfg)
		ctx := context.Background()
		var last PutResult
		for i, n := range []int{2, 1, 3, 2, 4, 1} {
			m := innerBatchMsg("B", 0, i*10, n)
			if n == 1 {
				m = newMsg("B", 0, "plain", nil)
			}
			last = s.PutMessage(ctx, m)
			require.Equal(t, PutOK, last.Status)
		}
		waitDispatched(t, s, "B", 0, 13)
		require.NoError(t, s.Shutdown())
		return cfg.StorePathRootDir, last
	}
	dir, _ := build(t)
	require.Empty(t, Check(dir))
	rep := Inspect(dir)
	require.Equal(t, 6, rep.Units)

	q := filepath.Join(dir, "batchconsumequeue", "B", "0")
	first := filepath.Join(q, fileName(0))
	b, err := os.ReadFile(first)
	require.NoError(t, err)
	binary.BigEndian.PutUint16(b[bcqUnitSize+36:], 2) // unit 1 (a plain message) claims two offsets
	require.NoError(t, os.WriteFile(first, b, 0o644))
	probs := Check(dir)
	require.NotEmpty(t, probs)
	require.Equal(t, first, probs[0].Path)

	dir, last := build(t)
	files := commitLogFiles(t, Config{StorePathRootDir: dir})
	writeAt(t, files[len(files)-1], last.WroteOffset, make([]byte, last.WroteBytes)) // the commitlog lost its last record
	probs = Check(dir)
	var torn []Problem
	for _, p := range probs {
		if p.Repairable && strings.Contains(p.Path, "batchconsumequeue") {
			torn = append(torn, p)
		}
	}
	require.Len(t, torn, 1, "%v", probs)
	_, err = Repair(dir, torn)
	require.NoError(t, err)
	for _, p := range Check(dir) {
		require.NotContains(t, p.Path, "batchconsumequeue", "after repair: %v", p)
	}
}

// TestBatchCQReadWhileWriting: a reader following the queue while batches are
// put and dispatched (files rolling under it) sees every batch once, in order.
func TestBatchCQReadWhileWriting(t *testing.T) {
	cfg := bcqConfig(t.TempDir())
	cfg.BatchTopics = func(topic string) bool { return topic == "B" }
	s := openStore(t, cfg)
	defer s.Shutdown()
	const batches = 200
	done := make(chan error, 1)
	go func() {
		for i := range batches {
			if r := s.PutMessage(context.Background(), innerBatchMsg("B", 0, i*3, 1+i%3)); r.Status != PutOK {
				done <- fmt.Errorf("put %d: %v", i, r.Status)
				return
			}
		}
		done <- nil
	}()
	total := int64(0)
	for i := range batches {
		total += int64(1 + i%3)
	}
	off, seen := int64(0), 0
	deadline := time.Now().Add(20 * time.Second)
	for off < total && time.Now().Before(deadline) {
		r := s.GetMessage("g", "B", 0, off, 8, 1<<20, nil)
		for _, rec := range r.Records {
			var m codec.Message
			_, err := codec.DecodeRecord(rec, &m)
			require.NoError(t, err)
			require.Equal(t, off, m.QueueOffset, "batches in order, none skipped")
			_, n := innerBatch(&m)
			off += int64(n)
			seen++
		}
		require.Equal(t, off, r.NextBeginOffset)
		r.Release()
	}
	require.NoError(t, <-done)
	require.Equal(t, total, off)
	require.Equal(t, batches, seen)
}
