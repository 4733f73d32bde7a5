package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/compat"
)

func lmqConfig(dir string) Config {
	c := testConfig(dir)
	c.EnableLmq = true
	c.EnableMultiDispatch = true
	return c
}

func putLMQ(t testing.TB, s *DefaultStore, topic, list, body string) PutResult {
	t.Helper()
	m := newMsg(topic, 1, body, map[string]string{codec.PropTags: "tg", codec.PropWait: "true",
		codec.PropInnerMultiDispatch: list})
	return s.PutMessage(context.Background(), m)
}

// storedProps reads back the properties of the record at offset.
func storedProps(t testing.TB, s *DefaultStore, offset int64) map[string]string {
	t.Helper()
	m, err := s.LookMessageByOffset(offset)
	require.NoError(t, err)
	return codec.ParseProperties(m.Properties)
}

// TestLMQPutStoresJavaOffsets checks the record against what Java's
// LmqDispatch.wrapLmqDispatch makes: INNER_MULTI_QUEUE_OFFSET is
// StringUtils.join(Long[] offsets, ","), each LMQ's offset before this message
// and an empty element for a name that is not an LMQ (a null Long); names are
// split as String.split(",") does (trailing empties dropped); WAIT is not
// stored (removeWaitStorePropertyString); everything else is kept.
func TestLMQPutStoresJavaOffsets(t *testing.T) {
	s := openStore(t, lmqConfig(t.TempDir()))
	defer s.Shutdown()
	cases := []struct{ list, want string }{
		{"%LMQ%a,%LMQ%b", "0,0"},
		{"%LMQ%a", "1"},
		{"%LMQ%b,plain,%LMQ%a", "1,,2"},
		{"%LMQ%c,", "0"},
		{"%LMQ%a,%LMQ%a", "3,3"}, // Java: "3,3" too, but it bumps twice and leaves a hole
		{"%LMQ%a", "4"},
	}
	var offs []int64
	for i, c := range cases {
		r := putLMQ(t, s, "T", c.list, fmt.Sprint("m", i))
		require.Equal(t, PutOK, r.Status, c.list)
		got := storedProps(t, s, r.WroteOffset)
		require.Equal(t, map[string]string{codec.PropTags: "tg", codec.PropInnerMultiDispatch: c.list,
			codec.PropInnerMultiQueueOffset: c.want}, got, c.list)
		offs = append(offs, r.WroteOffset)
	}
	// The raw property bytes: the client's pairs in order, WAIT gone, the
	// offsets appended as one more NAME 0x01 VALUE 0x02 pair.
	raw, err := s.ReadRecordByOffset(offs[2])
	require.NoError(t, err)
	var m codec.Message
	_, err = codec.DecodeRecord(raw, &m)
	require.NoError(t, err)
	require.Contains(t, m.Properties, "INNER_MULTI_QUEUE_OFFSET\x011,,2\x02")
	require.NotContains(t, m.Properties, "WAIT\x01")

	waitDispatched(t, s, "%LMQ%a", 0, 5)
	waitDispatched(t, s, "%LMQ%b", 0, 2)
	waitDispatched(t, s, "%LMQ%c", 0, 1)
	bodies := func(topic string) []string {
		var out []string
		for _, m := range readAll(t, s, topic, 0) {
			require.Equal(t, "T", m.Topic) // the record is the one in T
			out = append(out, string(m.Body))
		}
		return out
	}
	require.Equal(t, []string{"m0", "m1", "m2", "m4", "m5"}, bodies("%LMQ%a"))
	require.Equal(t, []string{"m0", "m2"}, bodies("%LMQ%b"))
	require.Equal(t, []string{"m3"}, bodies("%LMQ%c"))
	require.Len(t, readAll(t, s, "T", 1), 6)
	require.Equal(t, int64(0), s.MaxOffsetInQueue("plain", 0)) // not an LMQ: not dispatched
}

func TestLMQRefusesUnsafeNamesAndTooMany(t *testing.T) {
	cfg := lmqConfig(t.TempDir())
	cfg.MaxLmqConsumeQueueNum = 2
	s := openStore(t, cfg)
	defer s.Shutdown()
	for _, bad := range []string{"%LMQ%a/../../x", "%LMQ%ok,%LMQ%/etc", "%LMQ%a\\b"} {
		require.Equal(t, PutMessageIllegal, putLMQ(t, s, "T", bad, "x").Status, bad)
	}
	require.Equal(t, PutOK, putLMQ(t, s, "T", "%LMQ%a,%LMQ%b", "x").Status)
	r := putLMQ(t, s, "T", "%LMQ%a,%LMQ%c", "x")
	require.Equal(t, PutLMQConsumeQueueNumExceeded, r.Status)
	require.Equal(t, "LMQ_CONSUME_QUEUE_NUM_EXCEEDED", r.Status.String())
	require.Equal(t, PutOK, putLMQ(t, s, "T", "%LMQ%b,%LMQ%a", "x").Status)
	_, err := os.Stat(filepath.Join(cfg.StorePathRootDir, "x"))
	require.True(t, os.IsNotExist(err))
	// The bound counts what the restarted store finds too.
	waitDispatched(t, s, "%LMQ%a", 0, 2)
	require.NoError(t, s.Shutdown())
	s = openStore(t, cfg)
	defer s.Shutdown()
	require.Equal(t, PutLMQConsumeQueueNumExceeded, putLMQ(t, s, "T", "%LMQ%d", "x").Status)
	require.Equal(t, PutOK, putLMQ(t, s, "T", "%LMQ%a", "x").Status)
}

// Retry, system and schedule topics keep the properties of the message they
// copy and must not dispatch it again (MixAll.topicAllowsLMQ); without
// enableLmq nothing is assigned.
func TestLMQOnlyWhereJavaDispatches(t *testing.T) {
	s := openStore(t, lmqConfig(t.TempDir()))
	for _, topic := range []string{"%RETRY%g", "rmq_sys_x", scheduleTopic} {
		r := putLMQ(t, s, topic, "%LMQ%a", "x")
		require.Equal(t, PutOK, r.Status)
		require.NotContains(t, storedProps(t, s, r.WroteOffset), codec.PropInnerMultiQueueOffset)
	}
	require.NoError(t, s.Shutdown())

	cfg := testConfig(t.TempDir())
	s = openStore(t, cfg)
	defer s.Shutdown()
	r := putLMQ(t, s, "T", "%LMQ%a", "x")
	require.Equal(t, PutOK, r.Status)
	props := storedProps(t, s, r.WroteOffset)
	require.NotContains(t, props, codec.PropInnerMultiQueueOffset)
	require.Equal(t, "true", props[codec.PropWait])
	waitDispatched(t, s, "T", 1, 1)
	require.Equal(t, int64(0), s.MaxOffsetInQueue("%LMQ%a", 0))
}

// A batch is not multi-dispatched (Java's batch append does not wrap LMQ), and
// an INNER_MULTI_QUEUE_OFFSET a client put in it is dropped so dispatch does
// not take the client's offsets.
func TestLMQBatchCarriesNoClientOffsets(t *testing.T) {
	s := openStore(t, lmqConfig(t.TempDir()))
	defer s.Shutdown()
	body := codec.AppendBatchEntry(nil, 0, []byte("b"), codec.FormatProperties(map[string]string{
		codec.PropInnerMultiDispatch: "%LMQ%a", codec.PropInnerMultiQueueOffset: "7"}))
	r := s.PutMessages(context.Background(), newMsg("B", 0, "", nil), body, nil)
	require.Equal(t, PutOK, r.Status)
	require.NotContains(t, storedProps(t, s, r.WroteOffset), codec.PropInnerMultiQueueOffset)
	// A single put overwrites a forged value with the store's.
	m := newMsg("B", 0, "s", map[string]string{codec.PropInnerMultiDispatch: "%LMQ%a", codec.PropInnerMultiQueueOffset: "7"})
	r = s.PutMessage(context.Background(), m)
	require.Equal(t, "0", storedProps(t, s, r.WroteOffset)[codec.PropInnerMultiQueueOffset])
	waitDispatched(t, s, "%LMQ%a", 0, 1)
	require.Equal(t, int64(1), s.MaxOffsetInQueue("%LMQ%a", 0))
}

func TestLMQArrivingListenerToldOfEachQueue(t *testing.T) {
	s := openStore(t, lmqConfig(t.TempDir()))
	defer s.Shutdown()
	var mu sync.Mutex
	seen := map[string]int64{}
	s.SetArrivingListener(func(topic string, qid int32, next int64, _ int64, _ int64, _ string) {
		mu.Lock()
		seen[fmt.Sprint(topic, "/", qid)] = next
		mu.Unlock()
	})
	putLMQ(t, s, "T", "%LMQ%a,%LMQ%b", "x")
	putLMQ(t, s, "T", "%LMQ%b", "y")
	waitDispatched(t, s, "%LMQ%b", 0, 2)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return seen["%LMQ%a/0"] == 1 && seen["%LMQ%b/0"] == 2 && seen["T/1"] == 2
	}, 5e9, 1e6)
}

func TestLMQSurvivesRestartAndCrash(t *testing.T) {
	cfg := lmqConfig(t.TempDir())
	cfg.MappedFileSizeCommitLog = 16 * 1024
	s := openStore(t, cfg)
	for i := 0; i < 60; i++ {
		list := "%LMQ%a"
		if i%3 == 0 {
			list += ",%LMQ%b"
		}
		require.Equal(t, PutOK, putLMQ(t, s, "T", list, fmt.Sprint("m", i)).Status)
	}
	waitDispatched(t, s, "%LMQ%a", 0, 60)
	require.NoError(t, s.Shutdown())

	check := func(s *DefaultStore) {
		t.Helper()
		require.Equal(t, int64(60), s.MaxOffsetInQueue("%LMQ%a", 0))
		require.Equal(t, int64(20), s.MaxOffsetInQueue("%LMQ%b", 0))
		b := readAll(t, s, "%LMQ%b", 0)
		require.Len(t, b, 20)
		for i, m := range b {
			require.Equal(t, fmt.Sprint("m", i*3), string(m.Body))
		}
	}
	s = openStore(t, cfg)
	check(s)
	r := putLMQ(t, s, "T", "%LMQ%b,%LMQ%a", "after")
	require.Equal(t, "20,60", storedProps(t, s, r.WroteOffset)[codec.PropInnerMultiQueueOffset])
	waitDispatched(t, s, "%LMQ%a", 0, 61)
	require.NoError(t, s.Shutdown())

	// A crash that lost every consume queue: recovery replays the commitlog
	// and rebuilds the LMQ queues from the stored offsets.
	require.NoError(t, os.RemoveAll(filepath.Join(cfg.StorePathRootDir, "consumequeue")))
	markCrashed(t, cfg)
	s = openStore(t, cfg)
	defer s.Shutdown()
	waitDispatched(t, s, "%LMQ%a", 0, 61)
	require.Equal(t, int64(21), s.MaxOffsetInQueue("%LMQ%b", 0))
	a := readAll(t, s, "%LMQ%a", 0)
	require.Len(t, a, 61)
	require.Equal(t, "after", string(a[60].Body))
	r = putLMQ(t, s, "T", "%LMQ%a", "again")
	require.Equal(t, "61", storedProps(t, s, r.WroteOffset)[codec.PropInnerMultiQueueOffset])
}

// A slave rebuilds the LMQ queues from the replicated records with its own
// dispatch, and a promoted one numbers new LMQ messages on from them.
func TestLMQReplicatedToSlave(t *testing.T) {
	mcfg := lmqConfig(t.TempDir())
	mcfg.MappedFileSizeCommitLog = 64 * 1024
	master := openStore(t, mcfg)
	defer master.Shutdown()
	scfg := lmqConfig(t.TempDir())
	scfg.MappedFileSizeCommitLog = mcfg.MappedFileSizeCommitLog
	scfg.BrokerRole = RoleSlave
	slave := openStore(t, scfg)
	defer slave.Shutdown()
	for i := 0; i < 100; i++ {
		list := "%LMQ%a"
		if i%4 == 0 {
			list = "%LMQ%b,%LMQ%a"
		}
		require.Equal(t, PutOK, putLMQ(t, master, "T", list, fmt.Sprint("m", i)).Status)
	}
	copyLog(t, master, slave, 3000)
	waitDispatched(t, slave, "%LMQ%a", 0, 100)
	require.Equal(t, int64(25), slave.MaxOffsetInQueue("%LMQ%b", 0))
	b := readAll(t, slave, "%LMQ%b", 0)
	require.Len(t, b, 25)
	require.Equal(t, "m96", string(b[24].Body))

	slave.RecoverTopicQueueTable()
	slave.commitLog.mu.Lock()
	next := slave.commitLog.nextOffset(tqKey{"%LMQ%b", 0})
	lmqs := slave.commitLog.lmqQueues
	slave.commitLog.mu.Unlock()
	require.Equal(t, int64(25), next)
	require.Equal(t, 2, lmqs)
}

// An LMQ whose messages all left the commitlog is removed like any expired
// queue (Java's cleanExpired) and stops counting against maxLmqConsumeQueueNum.
func TestLMQExpiredQueueFreesItsSlot(t *testing.T) {
	cfg := lmqConfig(t.TempDir())
	cfg.MappedFileSizeCommitLog = 16 * 1024
	cfg.MaxLmqConsumeQueueNum = 1
	s := openStore(t, cfg)
	defer s.Shutdown()
	body := string(make([]byte, 1000))
	for i := 0; i < 3; i++ {
		require.Equal(t, PutOK, putLMQ(t, s, "T", "%LMQ%old", body).Status)
	}
	for i := 0; i < 40; i++ {
		require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("N", 0, body, nil)).Status)
	}
	waitDispatched(t, s, "N", 0, 40)
	waitDispatched(t, s, "%LMQ%old", 0, 3)
	old := time.Now().Add(-100 * time.Hour)
	for _, f := range s.commitLog.q.snapshot() {
		require.NoError(t, os.Chtimes(f.path, old, old))
	}
	require.Positive(t, s.cleanOnce(context.Background(), true))
	require.Positive(t, s.CleanExpiredQueues(func(string) bool { return false }))
	require.NotContains(t, s.QueueTopics(), "%LMQ%old")
	require.Equal(t, PutOK, putLMQ(t, s, "T", "%LMQ%new", "x").Status)
}

// A transaction's half (stored NOT_TYPE in RMQ_SYS_TRANS_HALF_TOPIC, as Java
// does) is not put into the LMQs before its commit, and a message going to a
// DLQ is not put into them a second time; Java's topicAllowsLMQ lets both
// through.
func TestLMQNotFromHalvesOrDLQ(t *testing.T) {
	s := openStore(t, lmqConfig(t.TempDir()))
	defer s.Shutdown()
	for _, topic := range []string{compat.SysTopicTransHalf, compat.SysTopicTransOpHalf, compat.SysTopicTransCheckMax, "%DLQ%g"} {
		r := putLMQ(t, s, topic, "%LMQ%a", "x")
		require.Equal(t, PutOK, r.Status, topic)
		require.NotContains(t, storedProps(t, s, r.WroteOffset), codec.PropInnerMultiQueueOffset, topic)
	}
	require.Equal(t, PutOK, putLMQ(t, s, "T", "%LMQ%a", "committed").Status)
	waitDispatched(t, s, "%LMQ%a", 0, 1)
	got := readAll(t, s, "%LMQ%a", 0)
	require.Len(t, got, 1)
	require.Equal(t, "committed", string(got[0].Body))
}

// An idle LMQ goes with its files and frees its slot; one that got a message
// after the caller looked (even one not dispatched yet) stays.
func TestDeleteIdleQueues(t *testing.T) {
	cfg := lmqConfig(t.TempDir())
	cfg.MaxLmqConsumeQueueNum = 2
	s := openStore(t, cfg)
	defer s.Shutdown()
	require.Equal(t, PutOK, putLMQ(t, s, "T", "%LMQ%idle,%LMQ%busy", "a").Status)
	waitDispatched(t, s, "%LMQ%idle", 0, 1)
	waitDispatched(t, s, "%LMQ%busy", 0, 1)
	require.Equal(t, PutOK, putLMQ(t, s, "T", "%LMQ%busy", "b").Status)
	gone := s.DeleteIdleQueues(map[string]int64{"%LMQ%idle": 1, "%LMQ%busy": 1, "../x": 0})
	require.Equal(t, []string{"%LMQ%idle"}, gone)
	require.NotContains(t, s.QueueTopics(), "%LMQ%idle")
	_, err := os.Stat(filepath.Join(cfg.StorePathRootDir, "consumequeue", "%LMQ%idle"))
	require.True(t, os.IsNotExist(err))
	waitDispatched(t, s, "%LMQ%busy", 0, 2)
	// The freed slot takes a new LMQ; the deleted one starts again at 0.
	require.Equal(t, PutOK, putLMQ(t, s, "T", "%LMQ%idle", "c").Status)
	waitDispatched(t, s, "%LMQ%idle", 0, 1)
	r := s.GetMessage("g", "%LMQ%idle", 0, 0, 32, 0, nil)
	defer r.Release()
	require.Equal(t, GetFound, r.Status)
	require.Len(t, r.Records, 1)
}
