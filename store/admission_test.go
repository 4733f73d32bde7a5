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
	"golang.org/x/sys/unix"
)

// mountTmpfs mounts a tmpfs of size bytes on a temporary directory, or skips
// the test when this process may not mount (not root, no CAP_SYS_ADMIN).
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Skipf("skipping: cannot mount a tmpfs to fill (needs root / CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// fill writes a filler file until the file system has at most keep bytes free.
func fill(t *testing.T, path string, keep int64) {
	t.Helper()
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(filepath.Dir(path), &st))
	free := int64(st.Bavail) * st.Bsize
	n := free - keep
	if n <= 0 {
		return
	}
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, 64<<10)
	for n > 0 {
		w, err := f.Write(buf[:min(int64(len(buf)), n)])
		if err != nil {
			break // ENOSPC: as full as it gets
		}
		n -= int64(w)
	}
}

// bodies pulls every message of the queue and returns their bodies.
func bodies(t *testing.T, s *DefaultStore, topic string, qid int32) []string {
	t.Helper()
	var out []string
	for _, m := range readAll(t, s, topic, qid) {
		out = append(out, string(m.Body))
	}
	require.Equal(t, s.MaxOffsetInQueue(topic, qid), int64(len(out)), "every unit reads")
	return out
}

// A disk that fills between two checks: appends fail cleanly (no SIGBUS,
// nothing half visible), everything acknowledged stays readable, and appends
// succeed again once space is freed. Both append modes: stores into the
// mapping and write-through.
func TestDiskActuallyFull(t *testing.T) {
	for _, wt := range []string{"false", "true"} {
		t.Run("writeThrough="+wt, func(t *testing.T) {
			mnt := mountTmpfs(t, 8<<20)
			cfg := testConfig(filepath.Join(mnt, "store"))
			cfg.MappedFileSizeCommitLog = 256 << 10
			cfg.CommitLogWriteThrough = wt
			cfg.PrefaultAheadBytes = 0
			s, err := Open(cfg, testLogger())
			require.NoError(t, err)
			// Not started: no disk check marks the disk full first; the
			// appends themselves must meet the full file system.
			defer s.Shutdown()
			filler := filepath.Join(mnt, "filler")
			fill(t, filler, 1<<20)

			body := strings.Repeat("x", 4000)
			var acked []string
			var last PutStatus
			for i := 0; i < 2000; i++ {
				b := fmt.Sprintf("%05d-%s", i, body)
				res := s.PutMessage(context.Background(), newMsg("T", 0, b, nil))
				if res.Status != PutOK {
					last = res.Status
					break
				}
				acked = append(acked, b)
				s.doReput() // as the running dispatcher would
			}
			t.Logf("%d puts acknowledged, then %d", len(acked), last)
			require.NotEmpty(t, acked)
			require.Contains(t, []PutStatus{PutCreateMappedFileFailed, PutUnknownError}, last,
				"a full disk refuses with a clean status")
			s.doReput()
			// What reached the consume queue before the disk filled reads
			// back; the rest waits for dispatch (its queue page may have no
			// room either).
			got := bodies(t, s, "T", 0)
			require.LessOrEqual(t, len(got), len(acked))
			sameBodies(t, acked[:len(got)], got)

			require.NoError(t, os.Remove(filler))
			for i := 0; i < 20; i++ {
				b := fmt.Sprintf("after-%d", i)
				require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("T", 0, b, nil)).Status)
				acked = append(acked, b)
			}
			s.doReput()
			sameBodies(t, acked, bodies(t, s, "T", 0))
		})
	}
}

// Above diskSpaceWarningLevelRatio the store refuses puts with
// PutServiceNotAvailable and says which disk; once the check finds space
// again, puts are accepted.
func TestDiskWarningLevelRefusesPuts(t *testing.T) {
	mnt := mountTmpfs(t, 16<<20)
	cfg := testConfig(filepath.Join(mnt, "store"))
	cfg.MappedFileSizeCommitLog = 256 << 10
	s := openStore(t, cfg)
	defer s.Shutdown()
	require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("T", 0, "before", nil)).Status)
	filler := filepath.Join(mnt, "filler")
	fill(t, filler, 1<<20) // 16 MiB with 1 free: 94%
	u := s.checkDisk()
	require.True(t, u.Full, "%+v", u)
	require.Equal(t, cfg.commitLogDir(), u.CommitLogPath)
	require.Greater(t, u.CommitLog, 0.9)
	require.Equal(t, PutServiceNotAvailable, s.PutMessage(context.Background(), newMsg("T", 0, "refused", nil)).Status)
	done := make(chan PutStatus, 1)
	s.PutMessageAsync(context.Background(), newMsg("T", 0, "refused", nil), func(r PutResult) { done <- r.Status })
	require.Equal(t, PutServiceNotAvailable, <-done)

	require.NoError(t, os.Remove(filler))
	// The disk check service sees the space within a second or two.
	deadline := time.Now().Add(10 * time.Second)
	for s.DiskUsage().Full && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	require.False(t, s.DiskUsage().Full)
	require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("T", 0, "after", nil)).Status)
}

// The warning and forcibly ratios are clamped as Java's getters clamp them.
func TestDiskRatiosClamped(t *testing.T) {
	c := DefaultConfig()
	require.InDelta(t, 0.90, c.warningRatio(), 1e-9)
	require.InDelta(t, 0.85, c.forciblyRatio(), 1e-9)
	c.DiskSpaceWarningLevelRatio, c.DiskSpaceCleanForciblyRatio = 99, 99
	require.InDelta(t, 0.90, c.warningRatio(), 1e-9)
	require.InDelta(t, 0.85, c.forciblyRatio(), 1e-9)
	c.DiskSpaceWarningLevelRatio, c.DiskSpaceCleanForciblyRatio = 1, 1
	require.InDelta(t, 0.35, c.warningRatio(), 1e-9)
	require.InDelta(t, 0.30, c.forciblyRatio(), 1e-9)
}

// A put holding the commitlog lock longer than osPageCacheBusyTimeOutMills
// makes the store busy: other puts fail fast with PutOSPageCacheBusy instead
// of waiting for the lock, and LockTimeMills reports the hold.
func TestPageCacheBusy(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	defer s.Shutdown()
	require.False(t, s.IsOSPageCacheBusy())
	require.Zero(t, s.LockTimeMills())

	now := s.commitLog.lock()
	s.commitLog.lockBegin.Store(now - 1500) // as if held for 1.5 s
	require.True(t, s.IsOSPageCacheBusy())
	require.GreaterOrEqual(t, s.LockTimeMills(), int64(1500))
	require.Equal(t, PutOSPageCacheBusy, s.PutMessage(context.Background(), newMsg("T", 0, "busy", nil)).Status)
	s.commitLog.unlock()

	require.False(t, s.IsOSPageCacheBusy())
	require.Zero(t, s.LockTimeMills())
	require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("T", 0, "ok", nil)).Status)
}

// DispatchBehindBytes counts what the dispatcher has not reached.
func TestDispatchBehindBytes(t *testing.T) {
	s, err := Open(testConfig(t.TempDir()), testLogger())
	require.NoError(t, err)
	defer s.Shutdown()
	require.Zero(t, s.DispatchBehindBytes())
	res := s.PutMessage(context.Background(), newMsg("T", 0, "x", nil))
	require.Equal(t, PutOK, res.Status)
	require.Equal(t, int64(res.WroteBytes), s.DispatchBehindBytes())
	s.doReput()
	require.Zero(t, s.DispatchBehindBytes())
}

// sameBodies compares without printing kilobytes of bodies.
func sameBodies(t *testing.T, want, got []string) {
	t.Helper()
	require.Equal(t, len(want), len(got), "message count")
	for i := range want {
		if want[i] != got[i] {
			t.Fatalf("message %d differs: want %.20q, got %.20q", i, want[i], got[i])
		}
	}
}

// guardFault turns the SIGBUS of a store into a hole the full file system
// cannot fill into an error; the process goes on.
func TestGuardFaultOnFullDisk(t *testing.T) {
	mnt := mountTmpfs(t, 1<<20)
	fill(t, filepath.Join(mnt, "filler"), 0)
	f, err := newMappedFile(filepath.Join(mnt, "sparse"), 0, 1<<20, true, false)
	require.NoError(t, err)
	defer f.close()
	err = guardFault(func() { f.data[4096] = 1 })
	require.ErrorIs(t, err, errMappedFault)
	require.NoError(t, guardFault(func() {}))
	require.Panics(t, func() { _ = guardFault(func() { panic("not a fault") }) }, "other panics go on")
}
