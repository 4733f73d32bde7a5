package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/compat"
)

// messageStore copies processor.MessageStore (store must not import processor) so
// a contract drift breaks the store's own build of tests.
type messageStore interface {
	PutMessage(ctx context.Context, msg *codec.Message) PutResult
	PutMessages(ctx context.Context, tmpl *codec.Message, batchBody []byte, fixProps func(props string) string) PutResult
	GetMessage(group, topic string, queueID int32, offset int64, maxMsgNums int32, maxTotalBytes int32, filter MessageFilter) *GetResult
	MaxOffsetInQueue(topic string, queueID int32) int64
	MinOffsetInQueue(topic string, queueID int32) int64
	OffsetInQueueByTime(topic string, queueID int32, timestamp int64) int64
	EarliestMessageTime(topic string, queueID int32) int64
	MessageStoreTimestamp(topic string, queueID int32, queueOffset int64) int64
	LookMessageByOffset(commitLogOffset int64) (*codec.Message, error)
	ReadRecordByOffset(commitLogOffset int64) ([]byte, error)
	QueryMessage(topic, key string, maxNum int32, maxBytes int, begin, end int64) (body []byte, count int, lastUpdateTimestamp, lastUpdatePhyOffset int64)
	SetArrivingListener(l ArrivingListener)
	DeleteTopics(topics []string)
	MinPhyOffset() int64
	MaxPhyOffset() int64
	CommitLogDiskRatio() float64
	HotCommitLogBytes() int64
	Start() error
	Shutdown() error
}

var _ messageStore = (*DefaultStore)(nil)

func testConfig(dir string) Config {
	c := DefaultConfig()
	c.StorePathRootDir = dir
	c.MappedFileSizeCommitLog = 1 << 20
	c.MappedFileSizeConsumeQueue = 20 * 1000
	c.MaxHashSlotNum = 100
	c.MaxIndexNum = 400
	c.FlushIntervalCommitLog = 10
	c.FlushIntervalConsumeQueue = 10
	return c
}

func testLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func openStore(t testing.TB, cfg Config) *DefaultStore {
	t.Helper()
	s, err := Open(cfg, testLogger())
	require.NoError(t, err)
	require.NoError(t, s.Start())
	return s
}

func newMsg(topic string, qid int32, body string, props map[string]string) *codec.Message {
	return &codec.Message{
		Topic:         topic,
		QueueID:       qid,
		Body:          []byte(body),
		Properties:    codec.FormatProperties(props),
		BornTimestamp: time.Now().UnixMilli(),
		BornHost:      netip.MustParseAddrPort("127.0.0.1:40000"),
		StoreHost:     netip.MustParseAddrPort("127.0.0.1:10911"),
	}
}

// waitDispatched waits until the consume queue reaches want.
func waitDispatched(t testing.TB, s *DefaultStore, topic string, qid int32, want int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for s.MaxOffsetInQueue(topic, qid) < want {
		if time.Now().After(deadline) {
			t.Fatalf("%s-%d dispatched %d, want %d", topic, qid, s.MaxOffsetInQueue(topic, qid), want)
		}
		time.Sleep(time.Millisecond)
	}
}

func readAll(t testing.TB, s *DefaultStore, topic string, qid int32) []codec.Message {
	t.Helper()
	var out []codec.Message
	off := int64(0)
	for i := 0; i < 10000; i++ {
		r := s.GetMessage("g", topic, qid, off, 32, 1<<20, nil)
		if r.Status != GetFound {
			r.Release()
			break
		}
		for _, rec := range r.Records {
			var m codec.Message
			_, err := codec.DecodeRecord(rec, &m)
			require.NoError(t, err)
			out = append(out, *codec.CloneMessage(&m))
		}
		off = r.NextBeginOffset
		r.Release()
	}
	return out
}

func TestPutGetRoundTrip(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	defer s.Shutdown()
	ctx := context.Background()
	var arrived int
	s.SetArrivingListener(func(topic string, qid int32, logicOffset, tagsCode, storeTs int64, props string) {
		arrived++
	})
	for i := 0; i < 50; i++ {
		m := newMsg("TopicA", int32(i%2), fmt.Sprintf("body-%d", i), map[string]string{"TAGS": "TagA", "KEYS": fmt.Sprintf("k%d", i)})
		r := s.PutMessage(ctx, m)
		require.Equal(t, PutOK, r.Status)
		require.Equal(t, int64(i/2), r.QueueOffset)
		require.Equal(t, int32(1), r.MsgNum)
	}
	waitDispatched(t, s, "TopicA", 0, 25)
	waitDispatched(t, s, "TopicA", 1, 25)
	for q := int32(0); q < 2; q++ {
		got := readAll(t, s, "TopicA", q)
		require.Len(t, got, 25)
		for i, m := range got {
			require.Equal(t, int64(i), m.QueueOffset)
			require.Equal(t, fmt.Sprintf("body-%d", i*2+int(q)), string(m.Body))
			require.Equal(t, q, m.QueueID)
			v, _ := codec.PropertyValue(m.Properties, "TAGS")
			require.Equal(t, "TagA", v)
			look, err := s.LookMessageByOffset(m.CommitLogOffset)
			require.NoError(t, err)
			require.Equal(t, m.Body, look.Body)
			raw, err := s.ReadRecordByOffset(m.CommitLogOffset)
			require.NoError(t, err)
			require.Len(t, raw, int(m.StoreSize))
		}
	}
	require.Equal(t, int64(25), s.MaxOffsetInQueue("TopicA", 1))
	require.Equal(t, int64(0), s.MinOffsetInQueue("TopicA", 1))
	require.Equal(t, int64(0), s.MinPhyOffset())
	require.Greater(t, s.MaxPhyOffset(), int64(0))
	ratio := s.CommitLogDiskRatio()
	require.True(t, ratio >= 0 && ratio <= 1)
	// The consume queue unit carries the Java hash of the tag.
	cq := s.findCQ("TopicA", 0)
	phy, size, tags, ok := cq.unitAt(3)
	require.True(t, ok)
	require.Equal(t, int64(compat.JavaStringHash("TagA")), tags)
	look, err := s.LookMessageByOffset(phy)
	require.NoError(t, err)
	require.Equal(t, size, look.StoreSize)
	require.Equal(t, int64(3), look.QueueOffset)
	require.Eventually(t, func() bool { return arrived == 50 }, 5*time.Second, time.Millisecond)
}

func TestGetMessageStatuses(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	defer s.Shutdown()
	r := s.GetMessage("g", "Nope", 0, 5, 32, 0, nil)
	require.Equal(t, GetNoMatchedLogicQueue, r.Status)
	require.Equal(t, int64(0), r.NextBeginOffset)
	for i := 0; i < 10; i++ {
		require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("T", 0, "x", nil)).Status)
	}
	waitDispatched(t, s, "T", 0, 10)
	cases := []struct {
		offset int64
		status GetStatus
		next   int64
	}{
		{10, GetOffsetOverflowOne, 10},
		{12, GetOffsetOverflowBadly, 10},
		{0, GetFound, 4},
		{8, GetFound, 10},
	}
	for _, c := range cases {
		r := s.GetMessage("g", "T", 0, c.offset, 4, 0, nil)
		require.Equal(t, c.status, r.Status, "offset %d", c.offset)
		require.Equal(t, c.next, r.NextBeginOffset, "offset %d", c.offset)
		require.Equal(t, int64(0), r.MinOffset)
		require.Equal(t, int64(10), r.MaxOffset)
		r.Release()
	}
	// maxTotalBytes stops after the first record that fills it.
	r = s.GetMessage("g", "T", 0, 0, 32, 1, nil)
	require.Equal(t, GetFound, r.Status)
	require.Len(t, r.Records, 1)
	require.Equal(t, int64(1), r.NextBeginOffset)
	r.Release()
	r.Release()
}

type tagFilter struct{ code int64 }

func (f tagFilter) MatchTagsCode(c int64) bool { return c == f.code }
func (f tagFilter) MatchRecord([]byte) bool    { return true }

func TestGetMessageFilter(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	defer s.Shutdown()
	for i := 0; i < 10; i++ {
		tag := "A"
		if i%3 == 0 {
			tag = "B"
		}
		s.PutMessage(context.Background(), newMsg("T", 0, fmt.Sprint(i), map[string]string{"TAGS": tag}))
	}
	waitDispatched(t, s, "T", 0, 10)
	r := s.GetMessage("g", "T", 0, 0, 32, 0, tagFilter{int64(compat.JavaStringHash("B"))})
	require.Equal(t, GetFound, r.Status)
	require.Len(t, r.Records, 4)
	require.Equal(t, int64(10), r.NextBeginOffset)
	r.Release()
	r = s.GetMessage("g", "T", 0, 0, 32, 0, tagFilter{12345})
	require.Equal(t, GetNoMatchedMessage, r.Status)
	require.Equal(t, int64(10), r.NextBeginOffset)
	r.Release()
}

func TestBatchPut(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	defer s.Shutdown()
	var body []byte
	for i := 0; i < 5; i++ {
		body = codec.AppendBatchEntry(body, int32(i), []byte(fmt.Sprintf("batch-%d", i)), codec.FormatProperties(map[string]string{"KEYS": fmt.Sprintf("bk%d", i)}))
	}
	s.PutMessage(context.Background(), newMsg("B", 1, "first", nil))
	tmpl := newMsg("B", 1, "", nil)
	n := 0
	r := s.PutMessages(context.Background(), tmpl, body, func(p string) string {
		n++
		return codec.SetProperty(p, codec.PropUniqKey, fmt.Sprintf("U%d", n))
	})
	require.Equal(t, PutOK, r.Status)
	require.Equal(t, int32(5), r.MsgNum)
	require.Equal(t, int64(1), r.QueueOffset)
	require.Len(t, r.RecordOffsets, 5)
	waitDispatched(t, s, "B", 1, 6)
	got := readAll(t, s, "B", 1)
	require.Len(t, got, 6)
	for i := 1; i < 6; i++ {
		m := got[i]
		require.Equal(t, fmt.Sprintf("batch-%d", i-1), string(m.Body))
		require.Equal(t, int32(i-1), m.Flag)
		require.Equal(t, int64(i), m.QueueOffset)
		require.Equal(t, r.RecordOffsets[i-1], m.CommitLogOffset)
		require.Equal(t, got[1].StoreTimestamp, m.StoreTimestamp)
		require.Equal(t, codec.BodyCRC(m.Body), m.BodyCRC)
		u, _ := codec.PropertyValue(m.Properties, "UNIQ_KEY")
		require.Equal(t, fmt.Sprintf("U%d", i), u)
	}
	bad := s.PutMessages(context.Background(), tmpl, body[:len(body)-1], nil)
	require.Equal(t, PutMessageIllegal, bad.Status)
	require.Equal(t, int64(6), s.commitLog.nextOffset(tqKey{"B", 1}))
}

func TestPutRejects(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MaxMessageSize = 1000
	s := openStore(t, cfg)
	defer s.Shutdown()
	require.Equal(t, PutMessageIllegal, s.PutMessage(context.Background(), newMsg("T", 0, string(make([]byte, 1001)), nil)).Status)
	m := newMsg("T", 0, "x", nil)
	m.Properties = string(make([]byte, 40000))
	require.Equal(t, PutPropertiesSizeExceeded, s.PutMessage(context.Background(), m).Status)
	// What recovery would take for a torn record is refused up front.
	require.Equal(t, PutMessageIllegal, s.PutMessage(context.Background(), newMsg("", 0, "x", nil)).Status)
	require.Equal(t, PutMessageIllegal, s.PutMessage(context.Background(), newMsg("T\x00", 0, "x", nil)).Status)
	m = newMsg("T", 0, "x", nil)
	m.Properties = "A\x01b\x00"
	require.Equal(t, PutMessageIllegal, s.PutMessage(context.Background(), m).Status)
	m = newMsg(scheduleTopic, 0, "x", map[string]string{"DELAY": "x"})
	require.Equal(t, PutMessageIllegal, s.PutMessage(context.Background(), m).Status)
	// Prepared transaction records take queue offset 0 and no consume-queue unit.
	m = newMsg("T", 0, "half", nil)
	m.SysFlag = codec.SysFlagTransPrepared
	r := s.PutMessage(context.Background(), m)
	require.Equal(t, PutOK, r.Status)
	require.Equal(t, int64(0), r.QueueOffset)
	r = s.PutMessage(context.Background(), newMsg("T", 0, "normal", nil))
	require.Equal(t, int64(0), r.QueueOffset)
	waitDispatched(t, s, "T", 0, 1)
	require.Len(t, readAll(t, s, "T", 0), 1)
}

func TestFileRollWritesBlankRecord(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MappedFileSizeCommitLog = 8192
	cfg.MappedFileSizeConsumeQueue = 20 * 10
	s := openStore(t, cfg)
	body := string(make([]byte, 1000))
	for i := 0; i < 40; i++ {
		require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("Roll", 0, body, nil)).Status)
	}
	waitDispatched(t, s, "Roll", 0, 40)
	files := s.commitLog.q.snapshot()
	require.Greater(t, len(files), 4)
	for i, f := range files {
		require.Equal(t, fileName(int64(i)*8192), f.name())
		st, err := os.Stat(f.path)
		require.NoError(t, err)
		require.Equal(t, int64(8192), st.Size())
	}
	// Each full file ends with a blank record whose TOTALSIZE is the rest of the file.
	f := files[0]
	pos := 0
	var m codec.Message
	for {
		if codec.RecordMagic(f.data[pos:]) == codec.MagicBlank {
			break
		}
		n, err := codec.DecodeRecord(f.data[pos:], &m)
		require.NoError(t, err)
		pos += n
	}
	require.Equal(t, 8192-pos, int(int32(uint32(f.data[pos])<<24|uint32(f.data[pos+1])<<16|uint32(f.data[pos+2])<<8|uint32(f.data[pos+3]))))
	cqFiles, _ := os.ReadDir(filepath.Join(cfg.StorePathRootDir, "consumequeue", "Roll", "0"))
	require.Len(t, cqFiles, 4)
	require.Len(t, readAll(t, s, "Roll", 0), 40)
	require.NoError(t, s.Shutdown())

	s = openStore(t, cfg)
	defer s.Shutdown()
	require.Len(t, readAll(t, s, "Roll", 0), 40)
	r := s.PutMessage(context.Background(), newMsg("Roll", 0, body, nil))
	require.Equal(t, int64(40), r.QueueOffset)
}

func TestConfigApplyProperties(t *testing.T) {
	c := DefaultConfig()
	require.Equal(t, 1<<30, c.MappedFileSizeCommitLog)
	require.Equal(t, 6000000, c.MappedFileSizeConsumeQueue)
	require.Equal(t, AsyncFlush, c.FlushDiskType)
	err := c.ApplyProperties(map[string]string{
		"storePathRootDir": "/tmp/x", "flushDiskType": "SYNC_FLUSH", "fileReservedTime": "48",
		"messageIndexEnable": "false", "brokerName": "ignored", "maxMessageSize": " 1024 ",
	})
	require.NoError(t, err)
	require.Equal(t, "/tmp/x", c.StorePathRootDir)
	require.Equal(t, SyncFlush, c.FlushDiskType)
	require.Equal(t, 48, c.FileReservedTime)
	require.False(t, c.MessageIndexEnable)
	require.Equal(t, 1024, c.MaxMessageSize)
	require.Equal(t, "/tmp/x/commitlog", c.commitLogDir())
	err = c.ApplyProperties(map[string]string{"fileReservedTime": "abc"})
	require.ErrorContains(t, err, "fileReservedTime")
	err = c.ApplyProperties(map[string]string{"flushDiskType": "SOMETIMES"})
	require.ErrorContains(t, err, "flushDiskType")
	c = DefaultConfig()
	c.MappedFileSizeConsumeQueue = 6000001
	require.Equal(t, 6000020, c.cqFileSize())
}

func TestLockAbortAndCheckpointFiles(t *testing.T) {
	// fcntl locks are per process, so exclusion is tested against a child process
	// in TestCrashRecovery; here the files' content and life cycle.
	cfg := testConfig(t.TempDir())
	s := openStore(t, cfg)
	b, err := os.ReadFile(filepath.Join(cfg.StorePathRootDir, "lock"))
	require.NoError(t, err)
	require.Equal(t, "lock", string(b))
	_, err = os.Stat(filepath.Join(cfg.StorePathRootDir, "abort"))
	require.NoError(t, err)
	require.NoError(t, s.Shutdown())
	_, err = os.Stat(filepath.Join(cfg.StorePathRootDir, "abort"))
	require.True(t, os.IsNotExist(err))
	st, err := os.Stat(filepath.Join(cfg.StorePathRootDir, "checkpoint"))
	require.NoError(t, err)
	require.Equal(t, int64(4096), st.Size())
}

func TestReadByOffsetRejectsNonRecords(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	defer s.Shutdown()
	r := s.PutMessage(context.Background(), newMsg("T", 0, "x", nil))
	_, err := s.ReadRecordByOffset(r.WroteOffset + 4)
	require.ErrorIs(t, err, ErrNoRecord)
	_, err = s.LookMessageByOffset(r.WroteOffset + int64(r.WroteBytes))
	require.ErrorIs(t, err, ErrNoRecord)
	_, err = s.LookMessageByOffset(-5)
	require.ErrorIs(t, err, ErrNoRecord)
	m, err := s.LookMessageByOffset(r.WroteOffset)
	require.NoError(t, err)
	require.Equal(t, "x", string(m.Body))
}

func TestAsyncFlushAndCheckpoint(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.FlushCommitLogLeastPages = 0
	cfg.FlushConsumeQueueThoroughInterval = 0 // every queue flush is thorough
	s := openStore(t, cfg)
	defer s.Shutdown()
	r := s.PutMessage(context.Background(), newMsg("F", 0, "flush me", nil))
	require.Eventually(t, func() bool {
		return s.commitLog.q.flushedWhere.Load() >= r.WroteOffset+int64(r.WroteBytes)
	}, 5*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool {
		return s.checkpoint.physicMsgTimestamp.Load() == r.StoreTimestamp &&
			s.checkpoint.logicsMsgTimestamp.Load() == r.StoreTimestamp
	}, 5*time.Second, 5*time.Millisecond)
	// The checkpoint file carries them big-endian at offsets 0 and 8.
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(cfg.StorePathRootDir, "checkpoint"))
		return err == nil && int64(binary.BigEndian.Uint64(b[0:])) == r.StoreTimestamp &&
			int64(binary.BigEndian.Uint64(b[8:])) == r.StoreTimestamp
	}, 5*time.Second, 5*time.Millisecond)
}

func TestLoadRequiresExactFileSizes(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := openStore(t, cfg)
	putN(t, s, "Size", 1, 3)
	require.NoError(t, s.Shutdown())
	// An empty last file is dropped, as Java's doLoad does.
	empty := filepath.Join(cfg.commitLogDir(), fileName(int64(cfg.MappedFileSizeCommitLog)))
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	s = openStore(t, cfg)
	require.NoError(t, s.Shutdown())
	_, err := os.Stat(empty)
	require.True(t, os.IsNotExist(err))
	// Any other size mismatch refuses to start.
	require.NoError(t, os.Truncate(filepath.Join(cfg.commitLogDir(), fileName(0)), 4096))
	_, err = Open(cfg, testLogger())
	require.ErrorContains(t, err, "want 1048576")
}

func TestDispatchedPhyOffsetFollowsDispatch(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s, err := Open(cfg, testLogger()) // not started: nothing dispatches on its own
	require.NoError(t, err)
	defer func() { _ = s.Shutdown() }()
	r := s.PutMessage(t.Context(), newMsg("D", 0, "x", nil))
	require.Equal(t, PutOK, r.Status)
	require.Less(t, s.DispatchedPhyOffset(), s.MaxPhyOffset())
	require.Equal(t, int64(0), s.MaxOffsetInQueue("D", 0))
	s.doReput()
	require.Equal(t, s.MaxPhyOffset(), s.DispatchedPhyOffset())
	require.Equal(t, int64(1), s.MaxOffsetInQueue("D", 0))
}

func TestPrepareQueuesMakesNewQueuesOnly(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := openStore(t, cfg)
	defer func() { _ = s.Shutdown() }()
	// Queue 1 already holds a message: it is left to dispatch.
	r := s.PutMessage(t.Context(), newMsg("P", 1, "old", nil))
	require.Equal(t, PutOK, r.Status)
	waitDispatched(t, s, "P", 1, 1)

	s.PrepareQueues("P", 3)
	for _, qid := range []int32{0, 2} {
		_, err := os.Stat(filepath.Join(cfg.StorePathRootDir, "consumequeue", "P", fmt.Sprint(qid), fileName(0)))
		require.NoError(t, err, "queue %d prepared", qid)
		require.Equal(t, int64(0), s.MaxOffsetInQueue("P", qid))
	}
	// Messages land in the prepared files, at offsets from 0; queue 1 goes on from 1.
	for i, qid := range []int32{0, 2, 1, 0} {
		r := s.PutMessage(t.Context(), newMsg("P", qid, fmt.Sprint("m", i), nil))
		require.Equal(t, PutOK, r.Status)
	}
	waitDispatched(t, s, "P", 0, 2)
	waitDispatched(t, s, "P", 1, 2)
	waitDispatched(t, s, "P", 2, 1)
	got := readAll(t, s, "P", 0)
	require.Len(t, got, 2)
	require.Equal(t, "m0", string(got[0].Body))
	require.Equal(t, "m3", string(got[1].Body))
	require.Len(t, readAll(t, s, "P", 1), 2)

	// A prepared queue that never got a message is gone after a restart, as Java
	// drops a consume queue file without units.
	s.PrepareQueues("Q", 1)
	require.NoError(t, s.Shutdown())
	s = openStore(t, cfg)
	require.Equal(t, int64(0), s.MaxOffsetInQueue("Q", 0))
	require.Equal(t, int64(2), s.MaxOffsetInQueue("P", 0))
}

// TestConsumeQueueFileEnd: the end of the file holding an offset, with the file
// size rounded up to whole units as the files are made.
func TestConsumeQueueFileEnd(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MappedFileSizeConsumeQueue = 6010 // 301 units once rounded up
	s := openStore(t, cfg)
	defer s.Shutdown()
	for _, c := range [][2]int64{{0, 301}, {300, 301}, {301, 602}, {-5, 301}} {
		require.Equal(t, c[1], s.ConsumeQueueFileEnd(c[0]), "offset %d", c[0])
	}
}
