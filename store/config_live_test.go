package store

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/compat"
)

// Each live key copies its own field and nothing else: a value bound under the
// key in src shows in dst under the key, and dst's other settings stay.
func TestLiveKeysCopyTheirOwnField(t *testing.T) {
	for key := range liveKeys {
		t.Run(key, func(t *testing.T) {
			src, dst := DefaultConfig(), DefaultConfig()
			was, ok := src.Properties()[key]
			require.True(t, ok, "not a store key")
			v := "true"
			if b, err := strconv.ParseBool(was); err == nil {
				v = strconv.FormatBool(!b)
			} else if n, err := strconv.Atoi(was); err == nil {
				v = strconv.Itoa(n + 1)
			}
			_, err := compat.BindConfig(map[string]string{key: v}, &src)
			require.NoError(t, err)
			require.True(t, CopyLiveKey(key, &dst, &src))
			require.Equal(t, src.Properties(), dst.Properties())
		})
	}
	require.False(t, IsLiveKey("mappedFileSizeCommitLog"))
	require.False(t, IsLiveKey("flushDiskType"))
	require.False(t, IsLiveKey("messageIndexEnable"))
}

// ApplyLive takes only the live keys: a captured setting in c is ignored.
func TestApplyLiveIgnoresCapturedKeys(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	t.Cleanup(func() { require.NoError(t, s.Shutdown()) })
	c := s.cfg
	c.FileReservedTime = 5
	c.MaxMessageSize = 1024
	c.FlushDiskType = SyncFlush
	s.ApplyLive(&c, "fileReservedTime", "maxMessageSize", "flushDiskType")
	require.Equal(t, 5, s.live.Load().FileReservedTime)
	require.Equal(t, s.cfg.MaxMessageSize, s.live.Load().MaxMessageSize)
	require.Equal(t, AsyncFlush, s.live.Load().FlushDiskType)
}

// agedStore is a started store with several commitlog files, all but the
// newest last modified two hours ago, and deleteWhen the hour now (and the next,
// should the test cross one).
func agedStore(t *testing.T, mod func(*Config)) *DefaultStore {
	t.Helper()
	cfg := testConfig(t.TempDir())
	cfg.MappedFileSizeCommitLog = 8192
	cfg.DeleteCommitLogFilesInterval = 0
	cfg.DeleteConsumeQueueFilesInterval = 0
	h := time.Now().Hour()
	cfg.DeleteWhen = strconv.Itoa(h) + ";" + strconv.Itoa((h+1)%24)
	if mod != nil {
		mod(&cfg)
	}
	s := openStore(t, cfg)
	t.Cleanup(func() { require.NoError(t, s.Shutdown()) })
	body := string(make([]byte, 1000))
	for range 30 {
		require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("Aged", 0, body, nil)).Status)
	}
	waitDispatched(t, s, "Aged", 0, 30)
	s.doReput()
	old := time.Now().Add(-2 * time.Hour)
	files := s.commitLog.q.snapshot()
	require.Greater(t, len(files), 2)
	for _, f := range files {
		require.NoError(t, os.Chtimes(f.path, old, old))
	}
	return s
}

// Lowering fileReservedTime takes effect at the next clean pass, and moving
// deleteWhen away stops deleting, without a restart.
func TestApplyLiveRetention(t *testing.T) {
	s := agedStore(t, nil) // fileReservedTime 72: two-hour-old files stay
	require.Zero(t, s.cleanOnce(context.Background(), false))
	require.Zero(t, s.MinPhyOffset())

	c := s.cfg
	c.FileReservedTime = 1
	c.DeleteWhen = strconv.Itoa((time.Now().Hour() + 12) % 24)
	s.ApplyLive(&c, "fileReservedTime", "deleteWhen")
	require.Zero(t, s.cleanOnce(context.Background(), false), "not the hour to delete")

	c.DeleteWhen = s.cfg.DeleteWhen
	s.ApplyLive(&c, "deleteWhen")
	require.Positive(t, s.cleanOnce(context.Background(), false))
	require.Positive(t, s.MinPhyOffset())
	require.Positive(t, s.MinOffsetInQueue("Aged", 0))
}

// A cleaner waiting out a long cleanResourceInterval (and its first minute)
// takes a shorter one at once.
func TestApplyLiveRetimesTheCleaner(t *testing.T) {
	s := agedStore(t, func(c *Config) {
		c.FileReservedTime = 1
		c.CleanResourceInterval = int(time.Hour / time.Millisecond)
	})
	require.Zero(t, s.MinPhyOffset())
	c := s.cfg
	c.CleanResourceInterval = 20
	s.ApplyLive(&c, "cleanResourceInterval")
	require.Eventually(t, func() bool { return s.MinPhyOffset() > 0 }, 30*time.Second, 10*time.Millisecond,
		"no clean pass after cleanResourceInterval went from an hour to 20 ms")
}

// Raising the disk's fill above a lowered diskSpaceWarningLevelRatio refuses
// puts at once; raising it back accepts them.
func TestApplyLiveDiskWarningLevel(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.StorePathCommitLog = filepath.Join(t.TempDir(), "commitlog")
	s, err := Open(cfg, testLogger())
	require.NoError(t, err)
	s.statRatio = func(string) float64 { return 0.50 }
	require.NoError(t, s.Start())
	t.Cleanup(func() { require.NoError(t, s.Shutdown()) })
	require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("W", 0, "a", nil)).Status)

	c := s.cfg
	c.DiskSpaceWarningLevelRatio = 40
	s.ApplyLive(&c, "diskSpaceWarningLevelRatio")
	require.Equal(t, PutServiceNotAvailable, s.PutMessage(context.Background(), newMsg("W", 0, "b", nil)).Status)
	c.DiskSpaceWarningLevelRatio = 90
	s.ApplyLive(&c, "diskSpaceWarningLevelRatio")
	require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("W", 0, "c", nil)).Status)
}

// The transfer limits and maxMsgsNumBatch bound the next read.
func TestApplyLiveTransferLimits(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := openStore(t, cfg)
	t.Cleanup(func() { require.NoError(t, s.Shutdown()) })
	putN(t, s, "L", 1, 20)
	waitDispatched(t, s, "L", 0, 20)
	get := func() int {
		r := s.GetMessage("g", "L", 0, 0, 32, 1<<20, nil)
		defer r.Release()
		require.Equal(t, GetFound, r.Status)
		return len(r.Records)
	}
	require.Equal(t, 20, get())
	c := s.cfg
	c.MaxTransferCountOnMessageInMemory = 3
	c.MaxTransferCountOnMessageInDisk = 3
	s.ApplyLive(&c, "maxTransferCountOnMessageInMemory", "maxTransferCountOnMessageInDisk")
	require.Equal(t, 3, get())
}

// The flushers read their settings each round.
func TestFlushPeriodicallyReadsSettingsEachRound(t *testing.T) {
	var least atomic.Int64
	least.Store(4)
	var thorough atomic.Int64
	thorough.Store(int64(time.Hour / time.Millisecond))
	seen := make(chan int, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		flushPeriodically(ctx, func() (int64, int64, int) { return 1, thorough.Load(), int(least.Load()) },
			newNapper(), func(l int) {
				select {
				case seen <- l:
				default:
				}
			}, func() bool { return true })
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitSeen := func(want int) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case l := <-seen:
				if l == want {
					return
				}
			case <-deadline:
				t.Fatalf("no flush with leastPages %d", want)
			}
		}
	}
	waitSeen(4)
	least.Store(7)
	waitSeen(7)
	thorough.Store(0)
	waitSeen(0)
}

// Updates race with puts, reads, flushes and cleaning without tearing a
// reader's settings (run with -race).
func TestApplyLiveWhileBusy(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.CleanResourceInterval = 10
	s := openStore(t, cfg)
	t.Cleanup(func() { require.NoError(t, s.Shutdown()) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c := s.cfg
		for i := 0; ctx.Err() == nil; i++ {
			c.MaxTransferCountOnMessageInMemory = 1 + i%32
			c.FlushIntervalCommitLog = 1 + i%20
			c.CleanResourceInterval = 10 + i%50
			c.DeleteWhen = strconv.Itoa(i % 24)
			s.ApplyLive(&c, "maxTransferCountOnMessageInMemory", "flushIntervalCommitLog", "cleanResourceInterval", "deleteWhen")
			time.Sleep(time.Millisecond)
		}
	}()
	for i := range 200 {
		require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("Busy", 0, "x", nil)).Status)
		if i%20 == 0 {
			r := s.GetMessage("g", "Busy", 0, 0, 32, 1<<20, nil)
			require.LessOrEqual(t, len(r.Records), 32)
			r.Release()
		}
	}
	cancel()
	<-done
}
