package store

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// randomRead reports whether the kernel has path's mapping in this process
// marked for random reads (VmFlags "rr", set by MADV_RANDOM); found is false
// when nothing maps path.
func randomRead(t *testing.T, path string) (rr, found bool) {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "VmFlags:") {
			if in {
				return strings.Contains(" "+strings.TrimPrefix(line, "VmFlags:")+" ", " rr "), true
			}
			continue
		}
		if fs := strings.Fields(line); len(fs) >= 6 && strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":") {
			in = fs[5] == path
		}
	}
	require.NoError(t, sc.Err())
	return false, false
}

// requireReadMode checks that each file of the commitlog is mapped with the
// random-read flag exactly when random is set.
func requireReadMode(t *testing.T, s *DefaultStore, random bool, what string) {
	t.Helper()
	files := s.commitLog.q.snapshot()
	require.NotEmpty(t, files)
	for _, f := range files {
		path, err := filepath.EvalSymlinks(f.path)
		require.NoError(t, err)
		rr, found := randomRead(t, path)
		require.True(t, found, "%s: %s not mapped", what, path)
		require.Equal(t, random, rr, "%s: %s random-read flag", what, f.name())
	}
}

// skipWithoutVmFlags skips where smaps does not show VmFlags (old kernels,
// some sandboxes): the flag cannot be read back there.
func skipWithoutVmFlags(t *testing.T) {
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil || !strings.Contains(string(b), "VmFlags:") {
		t.Skip("no VmFlags in /proc/self/smaps")
	}
}

func readAheadConfig(t *testing.T) Config {
	cfg := testConfig(t.TempDir())
	cfg.MappedFileSizeCommitLog = 16 * 1024
	return cfg
}

// A store opened with dataReadAheadEnable=false advises the files it loads
// and each file it takes for writing (CommitLog.load, isCloseReadAhead);
// SET_COMMITLOG_READ_MODE's SetCommitLogReadAhead turns every mapped file
// back, and the files after it follow.
func TestReadAheadOffAtOpenAndSetMode(t *testing.T) {
	skipWithoutVmFlags(t)
	cfg := readAheadConfig(t)
	s := openStore(t, cfg)
	putN(t, s, "RA", 2, 300) // several 16 KiB files
	requireReadMode(t, s, false, "default")
	require.NoError(t, s.Shutdown())

	cfg.DataReadAheadEnable = false
	s = openStore(t, cfg)
	defer s.Shutdown()
	require.Greater(t, len(s.commitLog.q.snapshot()), 2)
	requireReadMode(t, s, true, "loaded with the key off")
	n := len(s.commitLog.q.snapshot())
	putN(t, s, "RA", 2, 300)
	require.Greater(t, len(s.commitLog.q.snapshot()), n)
	requireReadMode(t, s, true, "taken with the key off")

	require.NoError(t, s.SetCommitLogReadAhead(true))
	require.True(t, s.LiveConfig().DataReadAheadEnable)
	requireReadMode(t, s, false, "after mode 0")
	n = len(s.commitLog.q.snapshot())
	putN(t, s, "RA", 2, 300)
	require.Greater(t, len(s.commitLog.q.snapshot()), n)
	requireReadMode(t, s, false, "taken after mode 0")

	require.NoError(t, s.SetCommitLogReadAhead(false))
	require.False(t, s.LiveConfig().DataReadAheadEnable)
	requireReadMode(t, s, true, "after mode 1")
}

// dataReadAheadEnable changed as a live key (UPDATE_BROKER_CONFIG) decides
// the files taken afterwards only; the mapped ones keep their mode, as Java's
// Configuration.update sets the field and nothing rescans.
func TestReadAheadLiveKeyNewFilesOnly(t *testing.T) {
	skipWithoutVmFlags(t)
	s := openStore(t, readAheadConfig(t))
	defer s.Shutdown()
	putN(t, s, "RL", 1, 200)
	old := s.commitLog.q.snapshot()

	off := s.cfg
	off.DataReadAheadEnable = false
	s.ApplyLive(&off, "dataReadAheadEnable")
	require.False(t, s.LiveConfig().DataReadAheadEnable)
	putN(t, s, "RL", 1, 300)
	for _, f := range s.commitLog.q.snapshot() {
		path, err := filepath.EvalSymlinks(f.path)
		require.NoError(t, err)
		rr, found := randomRead(t, path)
		require.True(t, found)
		require.Equal(t, f.from > old[len(old)-1].from, rr, "file %s", f.name())
	}
}

// A file made ahead (the page keeper's spare) takes the mode in force when it
// becomes the last file, not the one of when it was made.
func TestReadAheadSpareTakesModeWhenTaken(t *testing.T) {
	skipWithoutVmFlags(t)
	q := newMappedFileQueue(t.TempDir(), 16*1024)
	defer q.destroyAll()
	f, err := q.lastForWrite(0)
	require.NoError(t, err)
	spare, err := q.prepareNext()
	require.NoError(t, err)
	spare.release()
	require.NoError(t, q.setRandomRead(true, true))
	path, err := filepath.EvalSymlinks(spare.path)
	require.NoError(t, err)
	rr, found := randomRead(t, path)
	require.True(t, found)
	require.False(t, rr, "spare advised before it is taken")

	f.wrote.Store(int64(f.size))
	next, err := q.lastForWrite(0)
	require.NoError(t, err)
	require.Same(t, spare, next)
	rr, _ = randomRead(t, path)
	require.True(t, rr, "spare not advised when taken")
}

// Mode changes while puts roll files and retention deletes old ones: nothing
// madvises an unmapped range (the race detector and a SIGSEGV would tell), no
// held file is refused, and every file ends with the mode set last.
func TestReadAheadConcurrentRollAndDelete(t *testing.T) {
	skipWithoutVmFlags(t)
	s := openStore(t, readAheadConfig(t))
	defer s.Shutdown()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	deleted, flips := 0, 0
	var last bool
	var flipErr error
	wg.Add(2)
	go func() { // retention: all but the last file, as far as dispatched
		defer wg.Done()
		for !stopped() {
			deleted += s.commitLog.q.deleteExpiredByTime(0, true, 2, 0, s.reputFrom.Load())
			time.Sleep(time.Millisecond)
		}
	}()
	go func() {
		defer wg.Done()
		for !stopped() {
			last = flips%2 == 1
			if err := s.SetCommitLogReadAhead(last); err != nil && flipErr == nil {
				flipErr = err
			}
			flips++
		}
	}()
	putN(t, s, "RC", 1, 2000) // about 20 files of 16 KiB
	close(stop)
	wg.Wait()
	require.NoError(t, flipErr)
	require.Positive(t, flips)
	t.Logf("%d mode changes, %d files deleted, %d left", flips, deleted, len(s.commitLog.q.snapshot()))
	requireReadMode(t, s, !last, "after the last change")
}
