package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

const ctopic = "ctopic"

// compactionConfig makes small compaction files: nine units per cq file.
func compactionConfig(dir string) Config {
	c := testConfig(dir)
	c.CompactionCqMappedFileSize = 10 * bcqUnitSize
	c.CompactionMappedFileSize = 1
	return c
}

func putKeyed(t *testing.T, s *DefaultStore, key, body string) {
	t.Helper()
	props := map[string]string{codec.PropTags: "t"}
	if key != "" {
		props[codec.PropKeys] = key
	}
	r := s.PutMessage(context.Background(), newMsg(ctopic, 0, body, props))
	require.Equal(t, PutOK, r.Status)
}

type kept struct {
	off  int64
	key  string
	body string
}

func readKept(t *testing.T, s *DefaultStore, from int64) []kept {
	t.Helper()
	var out []kept
	for range 100 {
		r := s.GetMessage("g", ctopic, 0, from, 32, 1<<20, nil)
		if r.Status != GetFound {
			r.Release()
			break
		}
		for _, rec := range r.Records {
			var m codec.Message
			_, err := codec.DecodeRecord(rec, &m)
			require.NoError(t, err)
			k, _ := codec.PropertyValue(m.Properties, codec.PropKeys)
			out = append(out, kept{m.QueueOffset, k, string(m.Body)})
		}
		require.Greater(t, r.NextBeginOffset, from)
		from = r.NextBeginOffset
		r.Release()
	}
	return out
}

func compacted(topic string) bool { return topic == ctopic }

// TestCompactionKeepsNewestPerKey: every file but the last is compacted to the
// newest message per key, offsets unchanged; a pull at an offset compacted away
// gets the next kept message; all of it survives a restart.
func TestCompactionKeepsNewestPerKey(t *testing.T) {
	dir := t.TempDir()
	cfg := compactionConfig(dir)
	s := openStore(t, cfg)
	s.SetCompactionPolicy(compacted)
	for i := range 30 {
		putKeyed(t, s, fmt.Sprintf("k%d", i%3), fmt.Sprintf("v%d", i))
	}
	waitDispatched(t, s, ctopic, 0, 30)
	require.NoError(t, s.CompactNow())

	// 30 keyed messages: files of 9, 9, 9 and 3; the first three compact to
	// 24, 25, 26; the last file is kept whole.
	want := []kept{{24, "k0", "v24"}, {25, "k1", "v25"}, {26, "k2", "v26"},
		{27, "k0", "v27"}, {28, "k1", "v28"}, {29, "k2", "v29"}}
	require.Equal(t, want, readKept(t, s, 0))
	require.Equal(t, want[1:], readKept(t, s, 25))
	require.Equal(t, want[:1], readKept(t, s, 5)[:1], "a compacted-away offset reads the next kept message")
	require.Equal(t, int64(0), s.MinOffsetInQueue(ctopic, 0))
	// Reads from the log use pread: never on the network loop.
	require.False(t, s.PullResident(ctopic, 0, 5, 32))

	// Java's files and checkpoint.
	logDir := filepath.Join(dir, "compaction", "compactionLog", ctopic, "0")
	cqDir := filepath.Join(dir, "compaction", "compactionCq", ctopic, "0")
	names, err := fileNames(logDir)
	require.NoError(t, err)
	cqNames, err := fileNames(cqDir)
	require.NoError(t, err)
	require.Equal(t, names, cqNames)
	require.Len(t, names, 2) // the compacted file and the tail
	pos, err := os.ReadFile(filepath.Join(dir, "compaction", "position-checkpoint"))
	require.NoError(t, err)
	require.Contains(t, string(pos), `"ctopic_0":26`)
	_, err = os.Stat(filepath.Join(logDir, "compacting"))
	require.True(t, os.IsNotExist(err))

	require.NoError(t, s.Shutdown())
	s = openStore(t, cfg)
	defer s.Shutdown()
	s.SetCompactionPolicy(compacted)
	require.Equal(t, want, readKept(t, s, 0))

	// More versions and a tombstone (empty body): the next compaction drops
	// k1 altogether and keeps only the newest k0 and k2.
	// Offsets 30..39: the tail file fills at 36 and is compacted with the
	// first; 37..39 are the new tail.
	putKeyed(t, s, "k0", "new0")
	putKeyed(t, s, "k1", "")
	for i := range 8 {
		putKeyed(t, s, "k2", fmt.Sprintf("n%d", i))
	}
	waitDispatched(t, s, ctopic, 0, 40)
	require.NoError(t, s.CompactNow())
	require.Equal(t, []kept{{30, "k0", "new0"}, {35, "k2", "n3"}, {36, "k2", "n4"}, {37, "k2", "n5"},
		{38, "k2", "n6"}, {39, "k2", "n7"}}, readKept(t, s, 0))
}

// TestCompactionBoundedKeyMap: a key map too small for the keys compacts in
// steps, each pass up to where its map filled, and loses nothing.
func TestCompactionBoundedKeyMap(t *testing.T) {
	cfg := compactionConfig(t.TempDir())
	cfg.MaxOffsetMapSize = 1 // 100 slots, 75 keys per pass
	s := openStore(t, cfg)
	defer s.Shutdown()
	s.SetCompactionPolicy(compacted)
	const keys, rounds = 90, 3
	for i := range keys * rounds {
		putKeyed(t, s, fmt.Sprintf("k%d", i%keys), fmt.Sprintf("v%d", i))
	}
	waitDispatched(t, s, ctopic, 0, keys*rounds)
	for range 6 {
		require.NoError(t, s.CompactNow())
	}
	got := readKept(t, s, 0)
	newest := map[string]string{}
	for _, k := range got {
		newest[k.key] = k.body
	}
	require.Len(t, newest, keys)
	for i := range keys {
		require.Equal(t, fmt.Sprintf("v%d", keys*(rounds-1)+i), newest[fmt.Sprintf("k%d", i)])
	}
	// At most the tail file (9) beyond one per key.
	require.LessOrEqual(t, len(got), keys+9)
}

// TestCompactionFinishesInterruptedReplace: a crash after the output was
// marked whole is finished at the next start; one before it is dropped.
func TestCompactionFinishesInterruptedReplace(t *testing.T) {
	dir := t.TempDir()
	cfg := compactionConfig(dir)
	s := openStore(t, cfg)
	s.SetCompactionPolicy(compacted)
	for i := range 20 {
		putKeyed(t, s, fmt.Sprintf("k%d", i%2), fmt.Sprintf("v%d", i))
	}
	waitDispatched(t, s, ctopic, 0, 20)
	require.NoError(t, s.CompactNow())
	want := readKept(t, s, 0)
	require.NoError(t, s.Shutdown())

	// Stage what a crash leaves: output in compacting/ without a marker
	// (dropped), then with one (installed).
	logDir := filepath.Join(dir, "compaction", "compactionLog", ctopic, "0")
	cqDir := filepath.Join(dir, "compaction", "compactionCq", ctopic, "0")
	for _, d := range []string{logDir, cqDir} {
		require.NoError(t, os.MkdirAll(filepath.Join(d, "compacting"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "compacting", fileName(0)), []byte("junk"), 0o644))
	}
	s = openStore(t, cfg)
	s.SetCompactionPolicy(compacted)
	require.Equal(t, want, readKept(t, s, 0))
	require.NoError(t, s.Shutdown())
	_, err := os.Stat(filepath.Join(logDir, "compacting"))
	require.True(t, os.IsNotExist(err))

	// A whole output: the first file copied into compacting/, the rest of the
	// files below the tail removed by the finish.
	names, err := fileNames(logDir)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(names), 2)
	tail := names[len(names)-1]
	for _, d := range []string{logDir, cqDir} {
		require.NoError(t, os.MkdirAll(filepath.Join(d, "compacting"), 0o755))
		b, err := os.ReadFile(filepath.Join(d, fileName(names[0])))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(d, "compacting", fileName(names[0])), b, 0o644))
	}
	marker := fmt.Sprintf("%d\n%s", tail, fileName(names[0]))
	require.NoError(t, os.WriteFile(filepath.Join(logDir, "compacting", "replace"), []byte(marker), 0o644))
	s = openStore(t, cfg)
	defer s.Shutdown()
	s.SetCompactionPolicy(compacted)
	require.Equal(t, want, readKept(t, s, 0))
	after, err := fileNames(logDir)
	require.NoError(t, err)
	require.Equal(t, names, after)
}

// TestCompactionOffWithoutEnable: enableCompaction=false serves the consume
// queue and writes no compaction files.
func TestCompactionOffWithoutEnable(t *testing.T) {
	dir := t.TempDir()
	cfg := compactionConfig(dir)
	cfg.EnableCompaction = false
	s := openStore(t, cfg)
	defer s.Shutdown()
	s.SetCompactionPolicy(compacted)
	for i := range 20 {
		putKeyed(t, s, "k", fmt.Sprintf("v%d", i))
	}
	waitDispatched(t, s, ctopic, 0, 20)
	require.NoError(t, s.CompactNow())
	require.Len(t, readKept(t, s, 0), 20)
	_, err := os.Stat(filepath.Join(dir, "compaction"))
	require.True(t, os.IsNotExist(err), "no compaction dir: %v", err)
	require.False(t, strings.Contains(dir, "compaction/"))
}

// TestCompactionDeleteTopic: deleting a topic removes its compaction files, so
// a topic made again under the name starts empty.
func TestCompactionDeleteTopic(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, compactionConfig(dir))
	defer s.Shutdown()
	s.SetCompactionPolicy(compacted)
	for i := range 20 {
		putKeyed(t, s, fmt.Sprintf("k%d", i%2), fmt.Sprintf("v%d", i))
	}
	waitDispatched(t, s, ctopic, 0, 20)
	require.NoError(t, s.CompactNow())
	require.NotEmpty(t, readKept(t, s, 0))
	s.DeleteTopics([]string{ctopic})
	_, err := os.Stat(filepath.Join(dir, "compaction", "compactionLog", ctopic))
	require.True(t, os.IsNotExist(err))
	pos, err := os.ReadFile(filepath.Join(dir, "compaction", "position-checkpoint"))
	require.NoError(t, err)
	require.NotContains(t, string(pos), ctopic)

	putKeyed(t, s, "k0", "again")
	waitDispatched(t, s, ctopic, 0, 1)
	require.NoError(t, s.CompactNow())
	require.Equal(t, []kept{{0, "k0", "again"}}, readKept(t, s, 0))
}

// TestCompactionReadsJavaPositions: Java's CompactionPositionMgr writes its
// map through fastjson, getters included ("empty"); the file, else its .bak,
// is read.
func TestCompactionReadsJavaPositions(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "compaction")
	require.NoError(t, os.MkdirAll(root, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "position-checkpoint.bak"),
		[]byte(`{"empty":false,"queueOffsetMap":{"ctopic_0":26,"other_3":7}}`), 0o644))
	s, err := Open(compactionConfig(dir), testLogger())
	require.NoError(t, err)
	defer s.Shutdown()
	require.Equal(t, int64(26), s.compaction.position(ctopic, 0))
	require.Equal(t, int64(7), s.compaction.position("other", 3))
	require.Equal(t, int64(-1), s.compaction.position(ctopic, 1))
}

// TestCompactionOnSchedule: the compaction goroutine finds a new queue of a
// compacted topic without waiting for its 30 s scan, copies it and compacts
// it every compactionScheduleInternal.
func TestCompactionOnSchedule(t *testing.T) {
	cfg := compactionConfig(t.TempDir())
	cfg.CompactionScheduleInternal = 1000
	s := openStore(t, cfg)
	defer s.Shutdown()
	s.SetCompactionPolicy(compacted) // before the queue exists
	for i := range 30 {
		putKeyed(t, s, fmt.Sprintf("k%d", i%3), fmt.Sprintf("v%d", i))
	}
	waitDispatched(t, s, ctopic, 0, 30)
	require.Eventually(t, func() bool {
		got := readKept(t, s, 0)
		return len(got) == 6 && got[0].off == 24
	}, 15*time.Second, 100*time.Millisecond)
}

// TestCompactionSkipsOversizedMessage: a message too big for a compaction log
// file is left out and the copy goes on past it.
func TestCompactionSkipsOversizedMessage(t *testing.T) {
	cfg := compactionConfig(t.TempDir())
	s := openStore(t, cfg)
	defer s.Shutdown()
	s.SetCompactionPolicy(compacted)
	logSize, _ := compactionSizes(&cfg)
	putKeyed(t, s, "big", strings.Repeat("x", int(logSize)))
	putKeyed(t, s, "k", "small")
	waitDispatched(t, s, ctopic, 0, 2)
	require.NoError(t, s.CompactNow())
	require.Equal(t, []kept{{1, "k", "small"}}, readKept(t, s, 0))
}

// TestCompactionOutlivesRetention: once retention deleted the commitlog files
// holding a compacted queue's first messages, a pull below the commitlog's
// min offset still gets the kept messages, from the next kept one on.
func TestCompactionOutlivesRetention(t *testing.T) {
	cfg := compactionConfig(t.TempDir())
	cfg.CompactionMappedFileSize = 100_000
	cfg.MappedFileSizeCommitLog = 8192
	cfg.MappedFileSizeConsumeQueue = 20 * 10
	cfg.DeleteCommitLogFilesInterval = 0
	cfg.DeleteConsumeQueueFilesInterval = 0
	s := openStore(t, cfg)
	defer s.Shutdown()
	s.SetCompactionPolicy(compacted)
	body := strings.Repeat("b", 1000)
	putKeyed(t, s, "solo", body) // offset 0, its key's only version
	for i := 1; i < 60; i++ {
		putKeyed(t, s, fmt.Sprintf("k%d", i%3), fmt.Sprintf("%s%d", body, i))
	}
	waitDispatched(t, s, ctopic, 0, 60)
	require.NoError(t, s.CompactNow()) // files of nine: 0..53 compact to 51, 52, 53
	s.doReput()
	require.Equal(t, 4, s.commitLog.q.deleteExpiredByTime(0, true, 4, 0, s.reputFrom.Load()))
	s.cleanQueues(context.Background())
	cqMin := s.findCQ(ctopic, 0).minOffset()
	require.Greater(t, cqMin, int64(20))

	r := s.GetMessage("g", ctopic, 0, 3, 32, 1<<20, nil)
	require.Equal(t, GetFound, r.Status)
	var m codec.Message
	_, err := codec.DecodeRecord(r.Records[0], &m)
	require.NoError(t, err)
	require.Equal(t, int64(51), m.QueueOffset)
	r.Release()
	require.Equal(t, int64(0), s.MinOffsetInQueue(ctopic, 0), "the first kept message, below the queue's min")
	got := readKept(t, s, 0)
	require.Len(t, got, 10)
	require.Equal(t, kept{0, "solo", body}, got[0])
	require.Equal(t, int64(51), got[1].off)
}

// TestCompactionConcurrentReads: pulls running while messages arrive and
// compactions swap files always see ascending offsets, and end with the
// newest message of every key.
func TestCompactionConcurrentReads(t *testing.T) {
	s := openStore(t, compactionConfig(t.TempDir()))
	defer s.Shutdown()
	s.SetCompactionPolicy(compacted)
	stop := make(chan struct{})
	errs := make(chan error, 1)
	go func() {
		defer close(errs)
		for {
			select {
			case <-stop:
				return
			default:
			}
			off, last := int64(0), int64(-1)
			for range 50 {
				r := s.GetMessage("g", ctopic, 0, off, 32, 1<<20, nil)
				if r.Status != GetFound {
					r.Release()
					break
				}
				for _, rec := range r.Records {
					var m codec.Message
					if _, err := codec.DecodeRecord(rec, &m); err != nil || m.QueueOffset <= last {
						r.Release()
						errs <- fmt.Errorf("offset %d after %d: %v", m.QueueOffset, last, err)
						return
					}
					last = m.QueueOffset
				}
				off = r.NextBeginOffset
				r.Release()
			}
		}
	}()
	const keys = 5
	for round := range 6 {
		for i := range 20 {
			putKeyed(t, s, fmt.Sprintf("k%d", i%keys), fmt.Sprintf("r%d-%d", round, i))
		}
		waitDispatched(t, s, ctopic, 0, int64(20*(round+1)))
		require.NoError(t, s.CompactNow())
	}
	close(stop)
	require.NoError(t, <-errs)
	newest := map[string]string{}
	for _, k := range readKept(t, s, 0) {
		newest[k.key] = k.body
	}
	for i := range keys {
		require.Equal(t, fmt.Sprintf("r5-%d", 15+i), newest[fmt.Sprintf("k%d", i)])
	}
}
