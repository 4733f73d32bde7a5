package store

import (
	"context"
	"os"
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

// A queue whose every record retention deleted, and the same after a clean
// and an abnormal restart: min offset = max offset (Java's correctMinOffset
// "points to a future slot"), a pull below it is OFFSET_TOO_SMALL moved to it,
// a time search answers it, and neither its keys nor its offsets find the
// gone records. The live queue's min points at its first live record.
func TestRetentionAnswersAcrossRestart(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MappedFileSizeCommitLog = 8192
	cfg.MappedFileSizeConsumeQueue = 20 * 10
	cfg.DeleteCommitLogFilesInterval = 0
	cfg.DeleteConsumeQueueFilesInterval = 0
	cfg.MaxHashSlotNum = 10
	cfg.MaxIndexNum = 20
	s := openStore(t, cfg)
	body := string(make([]byte, 1000))
	put := func(topic string, n int) {
		for i := 0; i < n; i++ {
			require.Equal(t, PutOK, s.PutMessage(context.Background(),
				newMsg(topic, 0, body, map[string]string{"KEYS": topic + "-key"})).Status)
		}
	}
	put("Gone", 25) // files 0-3
	put("Pad", 10)  // Live starts in a later file than Gone ends
	put("Live", 30)
	waitDispatched(t, s, "Gone", 0, 25)
	waitDispatched(t, s, "Live", 0, 30)
	s.doReput()
	old := time.Now().Add(-100 * time.Hour)
	files := s.commitLog.q.snapshot()
	for _, f := range files {
		require.NoError(t, os.Chtimes(f.path, old, old))
	}
	firstLive := s.findCQ("Live", 0)
	livePhy, _, _, ok := firstLive.unitAt(0)
	require.True(t, ok)
	// Delete every file before the one holding Live's first record.
	keep := int(livePhy / 8192)
	require.Positive(t, keep)
	require.Equal(t, keep, s.commitLog.q.deleteExpiredByTime(time.Hour, false, keep, 0, livePhy+1))
	s.cleanQueues(context.Background())
	minPhy := s.MinPhyOffset()
	require.Equal(t, files[keep].from, minPhy)

	check := func(stage string) {
		t.Helper()
		require.Equal(t, minPhy, s.MinPhyOffset(), stage)
		require.EqualValues(t, 25, s.MaxOffsetInQueue("Gone", 0), stage)
		require.EqualValues(t, 25, s.MinOffsetInQueue("Gone", 0), stage)
		r := s.GetMessage("g", "Gone", 0, 3, 32, 1<<20, nil)
		require.Equal(t, GetOffsetTooSmall, r.Status, stage)
		require.EqualValues(t, 25, r.NextBeginOffset, stage)
		r.Release()
		r = s.GetMessage("g", "Gone", 0, 25, 32, 1<<20, nil)
		require.Equal(t, GetOffsetOverflowOne, r.Status, stage)
		r.Release()
		require.EqualValues(t, 25, s.OffsetInQueueByTime("Gone", 0, 0), stage)
		require.EqualValues(t, -1, s.EarliestMessageTime("Gone", 0), stage)
		_, n, _, _ := s.QueryMessage("Gone", "Gone-key", 32, 1<<20, 0, time.Now().Add(time.Hour).UnixMilli())
		require.Zero(t, n, stage)
		_, err := s.ReadRecordByOffset(0)
		require.ErrorIs(t, err, ErrNoRecord, stage)
		_, n, _, _ = s.QueryMessage("Live", "Live-key", 32, 1<<20, 0, time.Now().Add(time.Hour).UnixMilli())
		require.Positive(t, n, stage)

		liveMin := s.MinOffsetInQueue("Live", 0)
		phy, _, _, ok := s.findCQ("Live", 0).unitAt(liveMin)
		require.True(t, ok, stage)
		require.GreaterOrEqual(t, phy, minPhy, stage)
		if liveMin > 0 {
			prev, _, _, ok := s.findCQ("Live", 0).unitAt(liveMin - 1)
			require.True(t, !ok || prev < minPhy, stage)
		}
		r = s.GetMessage("g", "Live", 0, liveMin, 32, 1<<20, nil)
		require.Equal(t, GetFound, r.Status, stage)
		r.Release()
	}
	check("after clean")
	require.NoError(t, s.Shutdown())
	s = openStore(t, cfg)
	check("after a clean restart")
	require.NoError(t, s.Shutdown())
	require.NoError(t, os.WriteFile(filepath.Join(cfg.StorePathRootDir, "abort"), nil, 0o644))
	s = openStore(t, cfg)
	defer s.Shutdown()
	check("after an abnormal restart")
	// New messages still go on at the queue's offsets.
	res := s.PutMessage(context.Background(), newMsg("Gone", 0, "again", nil))
	require.EqualValues(t, 25, res.QueueOffset)
}

// A stop between deleting commitlog files and cleaning the queues: the
// reopened store's queue min offsets already skip the gone records, and the
// first clean pass removes the queue and index files that point there.
func TestRestartBetweenCommitLogAndQueueClean(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MappedFileSizeCommitLog = 8192
	cfg.MappedFileSizeConsumeQueue = 20 * 10
	cfg.DeleteCommitLogFilesInterval = 0
	cfg.DeleteConsumeQueueFilesInterval = 0
	cfg.MaxHashSlotNum = 10
	cfg.MaxIndexNum = 20
	s := openStore(t, cfg)
	body := string(make([]byte, 1000))
	for i := 0; i < 60; i++ {
		require.Equal(t, PutOK, s.PutMessage(context.Background(),
			newMsg("T", 0, body, map[string]string{"KEYS": "k" + strconv.Itoa(i)})).Status)
	}
	waitDispatched(t, s, "T", 0, 60)
	s.doReput()
	require.Equal(t, 4, s.commitLog.q.deleteExpiredByTime(0, true, 4, 0, s.reputFrom.Load()))
	minPhy := s.MinPhyOffset()
	require.NoError(t, s.Shutdown())
	require.NoError(t, os.WriteFile(filepath.Join(cfg.StorePathRootDir, "abort"), nil, 0o644))
	s = openStore(t, cfg)
	defer s.Shutdown()
	require.Equal(t, minPhy, s.MinPhyOffset())
	minOff := s.MinOffsetInQueue("T", 0)
	phy, _, _, ok := s.findCQ("T", 0).unitAt(minOff)
	require.True(t, ok)
	require.GreaterOrEqual(t, phy, minPhy)
	prev, _, _, _ := s.findCQ("T", 0).unitAt(minOff - 1)
	require.Less(t, prev, minPhy)
	r := s.GetMessage("g", "T", 0, 0, 32, 1<<20, nil)
	require.Equal(t, GetOffsetTooSmall, r.Status)
	require.Equal(t, minOff, r.NextBeginOffset)
	r.Release()
	require.EqualValues(t, 60, s.MaxOffsetInQueue("T", 0))

	s.cleanQueues(context.Background())
	require.Equal(t, minOff, s.MinOffsetInQueue("T", 0))
	cqFirst := s.findCQ("T", 0).q.minOffset() / cqUnitSize
	require.LessOrEqual(t, cqFirst, minOff)
	require.Greater(t, cqFirst+10, minOff, "no queue file wholly below the min is left")
	for i := 0; i < 60; i++ {
		_, n, _, _ := s.QueryMessage("T", "k"+strconv.Itoa(i), 32, 1<<20, 0, time.Now().Add(time.Hour).UnixMilli())
		require.Equal(t, i >= int(minOff), n == 1, "key %d", i)
	}
}

// correctMinOffset running while the dispatcher adds the first unit at or
// above the commitlog's min to a queue whose every unit was below it: the min
// must never step past that unit (a pull there would be OFFSET_TOO_SMALL and
// moved past it: the message would be lost to every consumer).
func TestCorrectMinOffsetRacesDispatch(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := openStore(t, cfg)
	defer s.Shutdown()
	put := func() {
		require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("Idle", 0, "m", nil)).Status)
	}
	put()
	waitDispatched(t, s, "Idle", 0, 1)
	cq := s.findCQ("Idle", 0)
	bad := 0
	deadline := time.Now().Add(3 * time.Second)
	for round := int64(1); round <= 300 && time.Now().Before(deadline); round++ {
		s.doReput()
		minPhy := s.MaxPhyOffset() // every unit so far points below it
		done := make(chan struct{})
		go func() { defer close(done); put() }()
		for i := 0; i < 100000 && cq.maxOffset() == round; i++ {
			cq.correctMinOffset(minPhy)
			if cq.minOffset() > round {
				bad++
			}
		}
		<-done
		waitDispatched(t, s, "Idle", 0, round+1)
		cq.correctMinOffset(minPhy)
		if cq.minOffset() > round {
			bad++
		}
	}
	require.Zero(t, bad, "min offset stepped past the first live unit")
}
