package store

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// openWithDisk opens a store with young commitlog files and deleteWhen twelve
// hours away, so only a full disk can make a clean pass delete anything. Its
// disk check reads ratio(path) instead of statfs once the files are written.
func openWithDisk(t *testing.T, mod func(*Config), ratio func(path string) float64) *DefaultStore {
	t.Helper()
	cfg := testConfig(t.TempDir())
	cfg.StorePathCommitLog = filepath.Join(t.TempDir(), "commitlog")
	cfg.MappedFileSizeCommitLog = 8192
	cfg.DeleteCommitLogFilesInterval = 0
	cfg.DeleteConsumeQueueFilesInterval = 0
	cfg.DeleteWhen = strconv.Itoa((time.Now().Hour() + 12) % 24)
	if mod != nil {
		mod(&cfg)
	}
	s, err := Open(cfg, testLogger())
	require.NoError(t, err)
	var filled atomic.Bool
	s.statRatio = func(path string) float64 {
		if filled.Load() {
			return ratio(path)
		}
		return 0.10
	}
	require.NoError(t, s.Start())
	t.Cleanup(func() { s.Shutdown() })
	body := string(make([]byte, 1000))
	for i := 0; i < 30; i++ {
		require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("Disk", 0, body, nil)).Status)
	}
	waitDispatched(t, s, "Disk", 0, 30)
	s.doReput()
	filled.Store(true)
	return s
}

// isSpaceToDelete looks at the consume queues' disk too: with it above the
// warning level puts are refused, and only deleting commitlog files (and the
// queue files that go with them) frees it, at once, however young they are.
func TestCleanFreesAFullConsumeQueueDisk(t *testing.T) {
	s := openWithDisk(t, nil, func(path string) float64 {
		if strings.Contains(path, "commitlog") {
			return 0.10
		}
		return 0.95 // the store root, where the consume queues live
	})
	require.True(t, s.checkDisk().Full, "puts are refused")
	require.Positive(t, s.cleanOnce(context.Background(), false))
	require.Positive(t, s.MinPhyOffset())
	require.Positive(t, s.MinOffsetInQueue("Disk", 0))
}

// Above diskSpaceWarningLevelRatio Java cleans at once (cleanImmediately) even
// when diskSpaceCleanForciblyRatio is set higher than it.
func TestCleanAboveWarningLevelIsImmediate(t *testing.T) {
	s := openWithDisk(t, func(c *Config) {
		c.DiskSpaceWarningLevelRatio = 40
		c.DiskSpaceCleanForciblyRatio = 85
	}, func(string) float64 { return 0.50 })
	require.True(t, s.checkDisk().Full, "puts are refused")
	require.Positive(t, s.cleanOnce(context.Background(), false))
}

// Between diskMaxUsedSpaceRatio and the forcibly ratio only expired files go:
// young ones stay.
func TestCleanBelowForciblyKeepsYoungFiles(t *testing.T) {
	s := openWithDisk(t, nil, func(string) float64 { return 0.80 })
	require.False(t, s.checkDisk().Full)
	require.Zero(t, s.cleanOnce(context.Background(), false))
	require.Zero(t, s.MinPhyOffset())
}
