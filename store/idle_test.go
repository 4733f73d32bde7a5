package store

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The waits below are bounded under idleSafetyNet: work that arrives after
// an idle spell is done because its arrival kicked the sleeping service, not
// because the safety net fired.
const idleTestWait = idleSafetyNet / 2

func waitIdle(t *testing.T, n *napper) {
	t.Helper()
	require.Eventually(t, n.idle.Load, idleTestWait, 5*time.Millisecond, "the service never went idle")
}

func TestFlushersWakeAfterIdle(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.FlushCommitLogThoroughInterval = 50
	cfg.FlushConsumeQueueThoroughInterval = 50
	s := openStore(t, cfg)
	defer s.Shutdown()
	for round := 0; round < 2; round++ {
		// Idle: both flushers sleep with nothing left to flush.
		waitIdle(t, s.clFlushNap)
		waitIdle(t, s.cqFlushNap)
		require.False(t, s.commitLogDirty())
		require.False(t, s.consumeQueuesDirty())
		time.Sleep(100 * time.Millisecond) // an idle spell longer than both thorough intervals
		r := s.PutMessage(context.Background(), newMsg("Idle", 0, "after a nap", nil))
		require.Equal(t, PutOK, r.Status)
		end := r.WroteOffset + int64(r.WroteBytes)
		require.Eventually(t, func() bool { return s.commitLog.q.flushedWhere.Load() >= end },
			idleTestWait, 5*time.Millisecond, "the append did not wake the commitlog flusher")
		require.Eventually(t, func() bool {
			b, err := os.ReadFile(filepath.Join(cfg.StorePathRootDir, "checkpoint"))
			return err == nil && s.cqFlushedAt.Load() >= end &&
				int64(binary.BigEndian.Uint64(b[0:])) == r.StoreTimestamp &&
				int64(binary.BigEndian.Uint64(b[8:])) == r.StoreTimestamp
		}, idleTestWait, 5*time.Millisecond, "the dispatch did not wake the consume-queue flusher")
	}
}

func TestDiskCheckWakesOnAppend(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	defer s.Shutdown()
	waitIdle(t, s.diskNap)
	before := s.disk.Load()
	require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("Disk", 0, "x", nil)).Status)
	require.Eventually(t, func() bool { return s.disk.Load() != before },
		idleTestWait, 5*time.Millisecond, "the append did not wake the disk check")
	// While it sleeps, DiskUsage looks afresh.
	waitIdle(t, s.diskNap)
	before = s.disk.Load()
	u := s.DiskUsage()
	require.NotSame(t, before, s.disk.Load())
	require.GreaterOrEqual(t, u.CommitLog, 0.0)
}

func TestUnmapSweeperWakesOnMapping(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	defer s.Shutdown()
	r := s.lazy
	waitIdle(t, r.nap) // nothing mapped yet
	// A long sleep stops the sweeper's clock; a file mapped now must not
	// look unused for that long.
	r.now.Store(time.Now().Unix() - 3600)
	require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("Lazy", 0, "x", nil)).Status)
	waitDispatched(t, s, "Lazy", 0, 1)
	require.Positive(t, r.count.Load())
	// The sweeper is awake again: its clock moves.
	require.Eventually(t, func() bool { return r.now.Load() >= time.Now().Unix()-2 && !r.nap.idle.Load() },
		idleTestWait, 5*time.Millisecond, "the mapping did not wake the sweeper")
	sweeps := 0
	for last := r.now.Load(); sweeps < 2; {
		require.Eventually(t, func() bool { return r.now.Load() != last }, idleTestWait, 5*time.Millisecond)
		last = r.now.Load()
		sweeps++
	}
	require.Positive(t, r.count.Load(), "a file used a moment ago was unmapped")
}

// A full disk found while the disk check sleeps (by the retention service,
// say) wakes it, so that it looks every second until space is freed.
func TestDiskCheckWakesWhenFullFoundElsewhere(t *testing.T) {
	mnt := mountTmpfs(t, 16<<20)
	cfg := testConfig(filepath.Join(mnt, "store"))
	cfg.MappedFileSizeCommitLog = 256 << 10
	s := openStore(t, cfg)
	defer s.Shutdown()
	waitIdle(t, s.diskNap)
	filler := filepath.Join(mnt, "filler")
	fill(t, filler, 1<<20) // 16 MiB with 1 free: 94%
	require.True(t, s.checkDisk().Full)
	require.NoError(t, os.Remove(filler))
	require.Eventually(t, func() bool { return !s.diskFull.Load() }, idleTestWait, 5*time.Millisecond,
		"the disk check did not clear the full state")
	waitIdle(t, s.diskNap)
}
