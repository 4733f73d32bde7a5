package store

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// mappedRSS is the resident size, in bytes, of this process's mappings of path
// (from /proc/self/smaps): pages mapped into the process, not page cache.
func mappedRSS(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	var total int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		fields := strings.Fields(l)
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			in = len(fields) >= 6 && fields[len(fields)-1] == path
			continue
		}
		if in && len(fields) == 3 && fields[0] == "Rss:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			require.NoError(t, err)
			total += kb << 10
		}
	}
	require.NoError(t, sc.Err())
	return total
}

func residencyConfig(dir string) Config {
	cfg := testConfig(dir)
	cfg.MappedFileSizeCommitLog = 16 << 20
	cfg.PrefaultAheadBytes = 1 << 20
	cfg.MappedResidentBytes = 1 << 20
	return cfg
}

// putBytes appends about n bytes of 4 KiB messages over 4 queues.
func putBytes(t *testing.T, s *DefaultStore, n int) int {
	t.Helper()
	body := strings.Repeat("r", 4000)
	count := 0
	for written := 0; written < n; written += 4096 {
		r := s.PutMessage(t.Context(), newMsg("Res", int32(count%4), body, nil))
		require.Equal(t, PutOK, r.Status)
		count++
	}
	return count
}

func TestPageKeeperUnmapsFlushedDispatchedPages(t *testing.T) {
	dir := t.TempDir()
	cfg := residencyConfig(dir)
	s, err := Open(cfg, testLogger())
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Shutdown() })
	k := newPageKeeper(s)

	n := putBytes(t, s, 12<<20)
	s.doReput()
	require.NoError(t, s.commitLog.q.flush(0))
	path := filepath.Join(cfg.commitLogDir(), fileName(0))
	before := mappedRSS(t, path)
	require.Greater(t, before, int64(11<<20), "written pages are mapped")

	k.tick()
	after := mappedRSS(t, path)
	// behind (1 MiB) + the unflushed tail page + ahead (1 MiB) + rounding.
	require.Less(t, after, int64(3<<20)+2*osPageSize, "resident %d bytes after release", after)
	require.GreaterOrEqual(t, s.commitLog.q.last().populated.Load(), s.commitLog.q.last().wrote.Load()+int64(cfg.PrefaultAheadBytes)-osPageSize)

	// Unmapped pages are still the file's: every message reads back whole.
	total := 0
	for q := int32(0); q < 4; q++ {
		for _, m := range readAll(t, s, "Res", q) {
			require.Len(t, m.Body, 4000)
			total++
		}
	}
	require.Equal(t, n, total)
}

// openSmallFilesKeeper opens (without starting) a store of 1 MiB commitlog files
// and a keeper that only prefaults.
func openSmallFilesKeeper(t *testing.T, cfg *Config) (*DefaultStore, *pageKeeper) {
	t.Helper()
	cfg.MappedFileSizeCommitLog = 1 << 20
	cfg.MappedResidentBytes = -1
	s, err := Open(*cfg, testLogger())
	require.NoError(t, err)
	return s, newPageKeeper(s)
}

func TestPageKeeperPreparesNextFile(t *testing.T) {
	dir := t.TempDir()
	cfg := residencyConfig(dir)
	s, k := openSmallFilesKeeper(t, &cfg)

	putBytes(t, s, 600<<10)
	k.tick()
	next := filepath.Join(cfg.commitLogDir(), fileName(1<<20))
	require.FileExists(t, next, "the file after the tail is made ahead of need")

	// The append that crosses into it takes the prepared file.
	n := putBytes(t, s, 600<<10)
	require.Len(t, s.commitLog.q.snapshot(), 2)
	require.Equal(t, int64(1<<20), s.commitLog.q.last().from)
	require.Greater(t, n, 0)

	// A spare never written is deleted at shutdown, not left for recovery.
	k.tick()
	require.FileExists(t, filepath.Join(cfg.commitLogDir(), fileName(2<<20)))
	require.NoError(t, s.Shutdown())
	entries, err := os.ReadDir(cfg.commitLogDir())
	require.NoError(t, err)
	require.Len(t, entries, 2, "%v", entries)
}

func TestSpareFileLeftByCrashIsDropped(t *testing.T) {
	dir := t.TempDir()
	cfg := residencyConfig(dir)
	s, k := openSmallFilesKeeper(t, &cfg)
	n := putBytes(t, s, 700<<10)
	k.tick()
	s.doReput()
	require.NoError(t, s.commitLog.q.flush(0))
	// A crash: the spare stays on disk, the abort file says the exit was not clean.
	q := s.commitLog.q
	q.mu.Lock()
	spare := q.spare
	q.spare = nil
	q.mu.Unlock()
	require.NotNil(t, spare)
	spare.close()
	s.closeFiles()
	markCrashed(t, cfg)
	require.FileExists(t, filepath.Join(cfg.commitLogDir(), fileName(1<<20)))

	s = openStore(t, cfg)
	defer func() { _ = s.Shutdown() }()
	require.Equal(t, int64(1<<20), s.commitLog.q.last().from+int64(s.commitLog.q.fileSize))
	require.NoFileExists(t, filepath.Join(cfg.commitLogDir(), fileName(1<<20)))
	total := 0
	for q := int32(0); q < 4; q++ {
		total += len(readAll(t, s, "Res", q))
	}
	require.Equal(t, n, total)
	r := s.PutMessage(t.Context(), newMsg("Res", 0, "after", nil))
	require.Equal(t, PutOK, r.Status, fmt.Sprint(r))
}

// Once appends stop for a while the running keeper drops its windows ahead
// and behind; appends after that spell are populated ahead again.
func TestPageKeeperDropsWindowsWhenIdle(t *testing.T) {
	dir := t.TempDir()
	cfg := residencyConfig(dir)
	cfg.PrefaultAheadBytes = 4 << 20
	cfg.MappedResidentBytes = 4 << 20
	s := openStore(t, cfg)
	defer s.Shutdown()
	path := filepath.Join(cfg.commitLogDir(), fileName(0))
	putBytes(t, s, 6<<20)
	tail := s.commitLog.q.last()
	// The keeper tops the window up once a quarter of it is missing, so three quarters are what it keeps.
	populatedAhead := func() bool { return tail.populated.Load() >= tail.wrote.Load()+(3<<20)-osPageSize }
	require.Eventually(t, populatedAhead, 10*time.Second, 5*time.Millisecond, "the keeper never populated ahead")
	require.Eventually(t, func() bool { return mappedRSS(t, path) < 1<<20 }, 20*time.Second, 20*time.Millisecond,
		"idle, the keeper kept %d bytes mapped", mappedRSS(t, path))
	require.Less(t, tail.populated.Load(), tail.wrote.Load()+osPageSize)
	putBytes(t, s, 64<<10)
	require.Eventually(t, populatedAhead, 10*time.Second, 5*time.Millisecond,
		"appends after the idle spell were not populated ahead")
}

// The keeper sleeps about as long as appends take to use a quarter of the
// window ahead, within [pageKeeperTick, pageKeeperBusyMax]: a slow stream wakes
// it a few times a second, a fast one every tick.
func TestPageKeeperBusyWaitFollowsTheAppendRate(t *testing.T) {
	k := &pageKeeper{ahead: 4 << 20} // a quarter: 1 MiB
	ms := time.Millisecond
	for _, c := range []struct {
		n    int64
		d    time.Duration
		want time.Duration
	}{
		{0, 5 * ms, pageKeeperTick},            // nothing appended: look again soon
		{2 << 10, 5 * ms, pageKeeperBusyMax},   // 400 KiB/s
		{4 << 20, 10 * ms, pageKeeperTick},     // 400 MiB/s: a quarter in 2.5 ms
		{1 << 20, 50 * ms, 50 * ms},            // 20 MiB/s
		{256 << 10, 5 * ms, 20 * ms},           // 50 MiB/s
		{1 << 40, time.Second, pageKeeperTick}, // no overflow
		{1, time.Hour, pageKeeperBusyMax},      // no overflow
	} {
		require.Equal(t, c.want, k.busyWait(c.n, c.d), "%d bytes in %v", c.n, c.d)
	}
	k.ahead = 0 // populate off: the behind window still wants looks
	require.Equal(t, 20*ms, k.busyWait(256<<10, 5*ms))
}

// The idle keeper drops its windows pageKeeperDropAfter after the last append,
// not at whichever doubling look comes after that.
func TestNextIdleLookMeetsTheDropTime(t *testing.T) {
	require.Equal(t, 1500*time.Millisecond, nextIdleLook(2*time.Second, 500*time.Millisecond, false))
	require.Equal(t, time.Second, nextIdleLook(time.Second, 10*time.Millisecond, false))
	require.Equal(t, 4*time.Second, nextIdleLook(4*time.Second, 500*time.Millisecond, true), "nothing left to drop")
	require.Equal(t, 2*time.Second, nextIdleLook(2*time.Second, pageKeeperDropAfter, false), "dropped at this look")
}
