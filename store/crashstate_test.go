package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The on-disk states a SIGKILL (or a damaged disk) can leave behind, made
// directly so each is tested every run instead of once in a few hundred random
// kills (TestCrashRecovery). Every case must open, serve every message, answer
// a key query for every message and take new appends that are indexed too.

const crashStateMsgs = 240

func crashStateConfig(dir string) Config {
	cfg := testConfig(dir)
	cfg.MappedFileSizeCommitLog = 16 * 1024
	cfg.MappedFileSizeConsumeQueue = 20 * 50
	cfg.MaxHashSlotNum = 16
	cfg.MaxIndexNum = 60 // an index file every 59 keys: several files
	return cfg
}

func crashStateKey(i int) string { return fmt.Sprintf("key-%04d", i) }

// fillCrashState writes crashStateMsgs messages over two queues, each with a
// unique key, and shuts down cleanly.
func fillCrashState(t *testing.T, cfg Config) {
	t.Helper()
	s := openStore(t, cfg)
	for i := 0; i < crashStateMsgs; i++ {
		m := newMsg("CS", int32(i%2), fmt.Sprintf("body-%d-%s", i, strings.Repeat("y", 100)),
			map[string]string{"TAGS": "t", "KEYS": crashStateKey(i)})
		require.Equal(t, PutOK, s.PutMessage(context.Background(), m).Status)
	}
	waitDispatched(t, s, "CS", 1, crashStateMsgs/2)
	require.NoError(t, s.Shutdown())
}

// checkCrashState opens the store and checks every message and every key.
func checkCrashState(t *testing.T, cfg Config) {
	t.Helper()
	s, err := Open(cfg, testLogger())
	require.NoError(t, err)
	require.NoError(t, s.Start())
	defer s.Shutdown()
	for q := int32(0); q < 2; q++ {
		require.Equal(t, int64(crashStateMsgs/2), s.MaxOffsetInQueue("CS", q))
		got := readAll(t, s, "CS", q)
		require.Len(t, got, crashStateMsgs/2)
		for j, m := range got {
			require.True(t, strings.HasPrefix(string(m.Body), fmt.Sprintf("body-%d-", j*2+int(q))), "queue %d offset %d", q, j)
		}
	}
	requireKeys(t, s, crashStateMsgs)
	_, err = os.Stat(filepath.Join(cfg.StorePathRootDir, "index.tmp"))
	require.True(t, os.IsNotExist(err), "unfinished index file removed")
	for _, f := range indexFiles(t, cfg) {
		st, err := os.Stat(f)
		require.NoError(t, err)
		require.Equal(t, int64(s.index.size), st.Size(), f)
	}
	// New appends continue the queues and are indexed.
	r := s.PutMessage(context.Background(), newMsg("CS", 0, "after", map[string]string{"KEYS": crashStateKey(crashStateMsgs)}))
	require.Equal(t, PutOK, r.Status)
	require.Equal(t, int64(crashStateMsgs/2), r.QueueOffset)
	waitDispatched(t, s, "CS", 0, crashStateMsgs/2+1)
	s.doReput()
	requireKeys(t, s, crashStateMsgs+1)
}

func requireKeys(t *testing.T, s *DefaultStore, n int) {
	t.Helper()
	until := time.Now().UnixMilli() + 60_000
	for i := 0; i < n; i++ {
		_, n, _, _ := s.QueryMessage("CS", crashStateKey(i), 32, 1<<20, 0, until)
		require.Equal(t, 1, n, "key %d", i)
	}
}

func indexFiles(t *testing.T, cfg Config) []string {
	t.Helper()
	dir := filepath.Join(cfg.StorePathRootDir, "index")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, filepath.Join(dir, e.Name()))
	}
	sort.Strings(out)
	return out
}

func cqFiles(t *testing.T, cfg Config, qid int) []string {
	t.Helper()
	dir := filepath.Join(cfg.StorePathRootDir, "consumequeue", "CS", fmt.Sprint(qid))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, filepath.Join(dir, e.Name()))
	}
	sort.Strings(out)
	return out
}

// newerIndexName is an index file name after every existing one.
func newerIndexName(t *testing.T, cfg Config) string {
	files := indexFiles(t, cfg)
	require.NotEmpty(t, files)
	n, err := strconv.ParseInt(filepath.Base(files[len(files)-1]), 10, 64)
	require.NoError(t, err)
	return filepath.Join(cfg.StorePathRootDir, "index", strconv.FormatInt(n+1, 10))
}

func TestCrashStatesRecover(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, cfg Config)
	}{
		{"index: a new file of 0 bytes (killed between create and size)", func(t *testing.T, cfg Config) {
			require.NoError(t, os.WriteFile(newerIndexName(t, cfg), nil, 0o644))
		}},
		{"index: the last file cut short", func(t *testing.T, cfg Config) {
			files := indexFiles(t, cfg)
			require.GreaterOrEqual(t, len(files), 3)
			require.NoError(t, os.Truncate(files[len(files)-1], 1000))
		}},
		{"index: the last file emptied", func(t *testing.T, cfg Config) {
			files := indexFiles(t, cfg)
			require.NoError(t, os.Truncate(files[len(files)-1], 0))
		}},
		{"index: a creation left under its temporary name", func(t *testing.T, cfg Config) {
			require.NoError(t, os.WriteFile(filepath.Join(cfg.StorePathRootDir, "index.tmp"), []byte("x"), 0o644))
			require.NoError(t, os.WriteFile(newerIndexName(t, cfg)+".tmp", []byte("x"), 0o644)) // older rmqd
		}},
		{"consume queue: a new trailing file of 0 bytes", func(t *testing.T, cfg Config) {
			files := cqFiles(t, cfg, 1)
			from, ok := parseFileName(filepath.Base(files[len(files)-1]))
			require.True(t, ok)
			next := filepath.Join(filepath.Dir(files[0]), fileName(from+int64(cfg.MappedFileSizeConsumeQueue)))
			require.NoError(t, os.WriteFile(next, nil, 0o644))
		}},
		{"commitlog: a new trailing file of 0 bytes", func(t *testing.T, cfg Config) {
			files := commitLogFiles(t, cfg)
			from, ok := parseFileName(filepath.Base(files[len(files)-1]))
			require.True(t, ok)
			next := filepath.Join(cfg.commitLogDir(), fileName(from+int64(cfg.MappedFileSizeCommitLog)))
			require.NoError(t, os.WriteFile(next, nil, 0o644))
		}},
		{"checkpoint: 0 bytes", func(t *testing.T, cfg Config) {
			require.NoError(t, os.Truncate(filepath.Join(cfg.StorePathRootDir, "checkpoint"), 0))
		}},
		{"checkpoint: cut to 12 bytes", func(t *testing.T, cfg Config) {
			require.NoError(t, os.Truncate(filepath.Join(cfg.StorePathRootDir, "checkpoint"), 12))
		}},
		{"checkpoint: missing", func(t *testing.T, cfg Config) {
			require.NoError(t, os.Remove(filepath.Join(cfg.StorePathRootDir, "checkpoint")))
		}},
	}
	for _, tc := range cases {
		for _, crashed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/abort=%v", tc.name, crashed), func(t *testing.T) {
				cfg := crashStateConfig(t.TempDir())
				fillCrashState(t, cfg)
				require.GreaterOrEqual(t, len(commitLogFiles(t, cfg)), 3)
				tc.damage(t, cfg)
				if crashed {
					markCrashed(t, cfg) // an empty abort file: a kill right after its creation
				}
				checkCrashState(t, cfg)
				// And once more after that recovery's own clean exit.
				checkCrashStateReopen(t, cfg)
			})
		}
	}
}

// checkCrashStateReopen reopens after checkCrashState's clean shutdown: the
// repaired store must be whole on its own.
func checkCrashStateReopen(t *testing.T, cfg Config) {
	t.Helper()
	s := openStore(t, cfg)
	defer s.Shutdown()
	require.Equal(t, int64(crashStateMsgs/2+1), s.MaxOffsetInQueue("CS", 0))
	requireKeys(t, s, crashStateMsgs+1)
}

// After a crash the index files newer than the checkpoint's index time are
// deleted (IndexService.load). Java loses the keys they held unless the
// commitlog replay happens to cover them; rmqd re-indexes from where the kept
// files end.
func TestCrashDroppedIndexIsRebuilt(t *testing.T) {
	cfg := crashStateConfig(t.TempDir())
	cfg.MaxIndexNum = 10_000 // one index file holds every key
	fillCrashState(t, cfg)
	require.GreaterOrEqual(t, len(commitLogFiles(t, cfg)), 3)
	require.Len(t, indexFiles(t, cfg), 1)
	// A checkpoint of a store that has run a while: the replay starts at the
	// last commitlog file, not at the first.
	ts := make([]byte, 16)
	binary.BigEndian.PutUint64(ts[0:], uint64(time.Now().UnixMilli()+10_000))
	binary.BigEndian.PutUint64(ts[8:], uint64(time.Now().UnixMilli()+10_000))
	writeAt(t, filepath.Join(cfg.StorePathRootDir, "checkpoint"), 0, ts)
	markCrashed(t, cfg)
	checkCrashState(t, cfg)
	checkCrashStateReopen(t, cfg)
}

// BenchmarkIndexRebuildAfterCrash is the cost of re-indexing what a crash
// deleted: one open after a kill, with the whole log under one index file.
func BenchmarkIndexRebuildAfterCrash(b *testing.B) {
	cfg := testConfig(b.TempDir())
	cfg.MappedFileSizeCommitLog = 64 << 20
	cfg.MaxHashSlotNum = 500_000
	cfg.MaxIndexNum = 2_000_000
	const n = 200_000
	s := openStore(b, cfg)
	body := strings.Repeat("z", 200)
	for i := 0; i < n; i++ {
		m := newMsg("RB", int32(i%4), body, map[string]string{"UNIQ_KEY": fmt.Sprintf("U%08d", i), "KEYS": fmt.Sprintf("order-%d", i)})
		if s.PutMessage(context.Background(), m).Status != PutOK {
			b.Fatal("put")
		}
	}
	waitDispatched(b, s, "RB", 3, n/4)
	if err := s.Shutdown(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		// A checkpoint newer than every record: only the index is rebuilt.
		ts := make([]byte, 16)
		binary.BigEndian.PutUint64(ts[0:], uint64(time.Now().UnixMilli()+10_000))
		binary.BigEndian.PutUint64(ts[8:], uint64(time.Now().UnixMilli()+10_000))
		f, err := os.OpenFile(filepath.Join(cfg.StorePathRootDir, "checkpoint"), os.O_RDWR, 0)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = f.WriteAt(ts, 0)
		_ = f.Close()
		if err := os.WriteFile(filepath.Join(cfg.StorePathRootDir, "abort"), nil, 0o644); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		s, err := Open(cfg, testLogger())
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if _, n, _, _ := s.QueryMessage("RB", "order-7", 4, 1<<20, 0, time.Now().UnixMilli()+60_000); n != 1 {
			b.Fatalf("order-7: %d records", n)
		}
		_ = s.Shutdown()
		b.StartTimer()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
}
