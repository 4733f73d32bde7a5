package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/compat"
)

func TestKeyHashMatchesJava(t *testing.T) {
	for _, c := range []struct{ topic, key string }{{"TopicTest", "k1"}, {"T", "ключ"}, {"%RETRY%g", "😀x"}, {"", ""}} {
		want := compat.JavaStringHash(c.topic + "#" + c.key)
		if want < 0 {
			want = -want
		}
		if want < 0 {
			want = 0
		}
		require.Equal(t, want, keyHash(c.topic, c.key), "%q", c)
	}
}

func TestIndexQueryAndRoll(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MaxHashSlotNum = 10
	cfg.MaxIndexNum = 50 // rolls every 49 entries
	s := openStore(t, cfg)
	for i := 0; i < 100; i++ {
		m := newMsg("IdxTopic", 0, fmt.Sprint(i), map[string]string{
			"UNIQ_KEY": fmt.Sprintf("U%03d", i), "KEYS": fmt.Sprintf("k%d  shared", i%10)})
		require.Equal(t, PutOK, s.PutMessage(context.Background(), m).Status)
	}
	waitDispatched(t, s, "IdxTopic", 0, 100)
	s.doReput()
	now := time.Now().UnixMilli()
	recs, lastTs, lastPhy := queryRecords(s, "IdxTopic", "U042", 32, 0, now+1000)
	require.Len(t, recs, 1)
	var m codec.Message
	_, err := codec.DecodeRecord(recs[0], &m)
	require.NoError(t, err)
	require.Equal(t, "42", string(m.Body))
	require.Greater(t, lastTs, int64(0))
	require.Greater(t, lastPhy, int64(0))
	recs, _, _ = queryRecords(s, "IdxTopic", "k3", 32, 0, now+1000)
	require.Len(t, recs, 10)
	recs, _, _ = queryRecords(s, "IdxTopic", "shared", 5, 0, now+1000)
	require.Len(t, recs, 5)
	recs, _, _ = queryRecords(s, "Other", "k3", 32, 0, now+1000)
	require.Empty(t, recs)
	recs, _, _ = queryRecords(s, "IdxTopic", "k3", 32, now+60_000, now+120_000)
	require.Empty(t, recs)

	// 300 keys at 49 per file: seven files named by local time, each of the Java size.
	names, err := os.ReadDir(filepath.Join(cfg.StorePathRootDir, "index"))
	require.NoError(t, err)
	require.Len(t, names, 7)
	re := regexp.MustCompile(`^\d{17}$`)
	for _, n := range names {
		require.Regexp(t, re, n.Name())
		st, err := os.Stat(filepath.Join(cfg.StorePathRootDir, "index", n.Name()))
		require.NoError(t, err)
		require.Equal(t, int64(40+10*4+50*20), st.Size())
	}
	// Header of the first file: 49 entries used, indexCount 50.
	b, err := os.ReadFile(filepath.Join(cfg.StorePathRootDir, "index", names[0].Name()))
	require.NoError(t, err)
	require.Equal(t, int32(50), int32(binary.BigEndian.Uint32(b[36:])))
	require.Equal(t, int64(0), int64(binary.BigEndian.Uint64(b[16:]))) // beginPhyOffset
	require.Greater(t, s.checkpoint.indexMsgTimestamp.Load(), int64(0))
	require.NoError(t, s.Shutdown())

	// The index survives a restart, clean or not.
	markCrashed(t, cfg)
	s = openStore(t, cfg)
	defer s.Shutdown()
	recs, _, _ = queryRecords(s, "IdxTopic", "k3", 32, 0, now+1000)
	require.Len(t, recs, 10)
	recs, _, _ = queryRecords(s, "IdxTopic", "U099", 32, 0, now+1000)
	require.Len(t, recs, 1)
}

func TestQueueTimeLookups(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	defer s.Shutdown()
	var times []int64
	for i := 0; i < 5; i++ {
		r := s.PutMessage(context.Background(), newMsg("Time", 0, "x", nil))
		times = append(times, r.StoreTimestamp)
		time.Sleep(3 * time.Millisecond)
	}
	waitDispatched(t, s, "Time", 0, 5)
	require.Equal(t, times[0], s.EarliestMessageTime("Time", 0))
	require.Equal(t, times[3], s.MessageStoreTimestamp("Time", 0, 3))
	require.Equal(t, int64(-1), s.MessageStoreTimestamp("Time", 0, 9))
	require.Equal(t, int64(-1), s.EarliestMessageTime("None", 0))
	require.Equal(t, int64(2), s.OffsetInQueueByTime("Time", 0, times[2]))
	require.Equal(t, int64(0), s.OffsetInQueueByTime("Time", 0, times[0]-100000))
	require.Equal(t, int64(5), s.OffsetInQueueByTime("Time", 0, times[4]+100000))
	require.Equal(t, int64(3), s.OffsetInQueueByTime("Time", 0, times[2]+1))
	require.Equal(t, int64(0), s.OffsetInQueueByTime("None", 0, times[0]))
}

func TestScheduleTopicTagsCodeIsDeliverTime(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	defer s.Shutdown()
	r := s.PutMessage(context.Background(), newMsg(scheduleTopic, 2, "d", map[string]string{"DELAY": "3", "TAGS": "x"}))
	waitDispatched(t, s, scheduleTopic, 2, 1)
	_, _, tags, ok := s.findCQ(scheduleTopic, 2).unitAt(0)
	require.True(t, ok)
	require.Equal(t, r.StoreTimestamp+10_000, tags)
}

// queryRecords is QueryMessage with room for every record, its body split
// back into records.
func queryRecords(s *DefaultStore, topic, key string, maxNum int32, begin, end int64) (recs [][]byte, lastTs, lastPhy int64) {
	body, n, lastTs, lastPhy := s.QueryMessage(topic, key, maxNum, math.MaxInt, begin, end)
	for len(body) >= 4 {
		size := int(binary.BigEndian.Uint32(body))
		recs, body = append(recs, body[:size]), body[size:]
	}
	if len(recs) != n {
		panic("QueryMessage: count does not match its body")
	}
	return recs, lastTs, lastPhy
}

// TestQueryMessageOrderAndHeaders: records come back oldest first, each once
// (Java sorts the index's offsets, which walks newest first; a key twice in
// KEYS is two entries), and the index's last update is told only when the
// index found an entry (Java's QueryMessageResult keeps 0 and 0 otherwise).
func TestQueryMessageOrderAndHeaders(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	defer s.Shutdown()
	for i := range 5 {
		m := newMsg("Ord", 0, fmt.Sprint(i), map[string]string{"KEYS": "dup x dup"})
		require.Equal(t, PutOK, s.PutMessage(context.Background(), m).Status)
	}
	waitDispatched(t, s, "Ord", 0, 5)
	s.doReput()
	end := time.Now().Add(time.Hour).UnixMilli()
	recs, lastTs, lastPhy := queryRecords(s, "Ord", "dup", 32, 0, end)
	require.Len(t, recs, 5)
	var m codec.Message
	for i, r := range recs {
		_, err := codec.DecodeRecord(r, &m)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprint(i), string(m.Body), "commitlog order")
	}
	require.Positive(t, lastTs)
	require.Positive(t, lastPhy)
	recs, lastTs, lastPhy = queryRecords(s, "Ord", "missing", 32, 0, end)
	require.Empty(t, recs)
	require.Zero(t, lastTs)
	require.Zero(t, lastPhy)
}

// Java 5.5 also indexes each tagged record under "topic#T#tags"
// (IndexService.buildIndex); QueryMessageByTag finds records by those
// entries, a key query does not, and the checker takes them for the
// record's own (a store Java 5.5 wrote must not read as damaged).
func TestTagIndex(t *testing.T) {
	for _, c := range []struct{ topic, tags string }{{"TopicTest", "TagA"}, {"T", "ключ"}, {"%RETRY%g", "a||b"}} {
		want := compat.JavaStringHash(c.topic + "#T#" + c.tags)
		if want < 0 {
			want = -want
		}
		require.Equal(t, max(want, 0), tagHash(c.topic, c.tags), "%q", c)
	}
	dir := t.TempDir()
	cfg := testConfig(dir)
	s := openStore(t, cfg)
	for i := 0; i < 6; i++ {
		m := newMsg("TagIdx", 0, fmt.Sprint(i), map[string]string{"TAGS": fmt.Sprintf("tag%d", i%2), "KEYS": "k"})
		require.Equal(t, PutOK, s.PutMessage(context.Background(), m).Status)
	}
	waitDispatched(t, s, "TagIdx", 0, 6)
	s.doReput()
	end := time.Now().UnixMilli() + 1000
	body, n, _, _ := s.QueryMessageByTag("TagIdx", "tag1", 32, math.MaxInt, 0, end)
	require.Equal(t, 3, n)
	var got []string
	for len(body) > 0 {
		var m codec.Message
		size, err := codec.DecodeRecord(body, &m)
		require.NoError(t, err)
		got, body = append(got, string(m.Body)), body[size:]
	}
	require.Equal(t, []string{"1", "3", "5"}, got)
	_, n, _, _ = s.QueryMessage("TagIdx", "tag1", 32, math.MaxInt, 0, end)
	require.Zero(t, n, "a tag is no key")
	_, n, _, _ = s.QueryMessageByTag("TagIdx", "k", 32, math.MaxInt, 0, end)
	require.Zero(t, n, "a key is no tag")
	require.NoError(t, s.Shutdown())
	require.Empty(t, Check(dir))
}

// BenchmarkIndexBuild is the dispatcher's index work for one record with a
// UNIQ_KEY and a key, without and with the tag entry Java 5.5 adds.
func BenchmarkIndexBuild(b *testing.B) {
	for _, tags := range []string{"", "TagA"} {
		b.Run("tags="+tags, func(b *testing.B) {
			cfg := testConfig(b.TempDir())
			cfg.MaxHashSlotNum = 500000
			cfg.MaxIndexNum = 2000000
			s := openStore(b, cfg)
			defer s.Shutdown()
			m := newMsg("Bench", 0, "x", nil)
			m.StoreTimestamp = time.Now().UnixMilli()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m.CommitLogOffset = int64(i) * 100
				s.index.build(m, "0A0B0C0D0E0F0001", "key", tags)
			}
		})
	}
}
