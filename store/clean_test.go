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

	"rmqd/codec"
)

func TestRetentionDeletesOldFilesAndQueues(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MappedFileSizeCommitLog = 8192
	cfg.MappedFileSizeConsumeQueue = 20 * 10
	cfg.DeleteCommitLogFilesInterval = 0
	cfg.DeleteConsumeQueueFilesInterval = 0
	cfg.MaxHashSlotNum = 10
	cfg.MaxIndexNum = 20
	s := openStore(t, cfg)
	defer s.Shutdown()
	body := string(make([]byte, 1000))
	for i := 0; i < 60; i++ {
		require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("Old", 0, body, map[string]string{"KEYS": "k"})).Status)
	}
	waitDispatched(t, s, "Old", 0, 60)
	s.doReput()
	files := s.commitLog.q.snapshot()
	require.Greater(t, len(files), 5)
	// Age every file but the last past fileReservedTime.
	old := time.Now().Add(-100 * time.Hour)
	for _, f := range files {
		require.NoError(t, os.Chtimes(f.path, old, old))
	}
	before := len(files)
	n := s.cleanOnce(context.Background(), true)
	require.Equal(t, min(10, before-1), n)
	minPhy := s.MinPhyOffset()
	require.Equal(t, files[n].from, minPhy)
	// Queue files wholly below the new min are gone and the min offset moved.
	minOff := s.MinOffsetInQueue("Old", 0)
	require.Greater(t, minOff, int64(0))
	phy, _, _, ok := s.findCQ("Old", 0).unitAt(minOff)
	require.True(t, ok)
	require.GreaterOrEqual(t, phy, minPhy)
	if minOff > 0 {
		_, _, _, ok = s.findCQ("Old", 0).unitAt(minOff - 1)
		if ok {
			p, _, _, _ := s.findCQ("Old", 0).unitAt(minOff - 1)
			require.Less(t, p, minPhy)
		}
	}
	r := s.GetMessage("g", "Old", 0, 0, 32, 0, nil)
	require.Equal(t, GetOffsetTooSmall, r.Status)
	require.Equal(t, minOff, r.NextBeginOffset)
	r.Release()
	r = s.GetMessage("g", "Old", 0, minOff, 32, 1<<20, nil)
	require.Equal(t, GetFound, r.Status)
	r.Release()
	// Recent files are kept when not forced.
	require.Equal(t, 0, s.cleanOnce(context.Background(), false))
	ix, err := os.ReadDir(filepath.Join(cfg.StorePathRootDir, "index"))
	require.NoError(t, err)
	require.Less(t, len(ix), 4) // 60 keys at 19 per file made 4; old ones went
}

func TestReadersKeepDeletedFileMapped(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MappedFileSizeCommitLog = 8192
	cfg.DeleteCommitLogFilesInterval = 0
	s := openStore(t, cfg)
	defer s.Shutdown()
	body := string(make([]byte, 1000))
	for i := 0; i < 30; i++ {
		s.PutMessage(context.Background(), newMsg("Held", 0, body, nil))
	}
	waitDispatched(t, s, "Held", 0, 30)
	r := s.GetMessage("g", "Held", 0, 0, 4, 1<<20, nil)
	require.Equal(t, GetFound, r.Status)
	first := append([]byte(nil), r.Records[0]...)
	old := time.Now().Add(-100 * time.Hour)
	for _, f := range s.commitLog.q.snapshot() {
		require.NoError(t, os.Chtimes(f.path, old, old))
	}
	require.Greater(t, s.cleanOnce(context.Background(), true), 0)
	_, err := os.Stat(filepath.Join(cfg.commitLogDir(), fileName(0)))
	require.True(t, os.IsNotExist(err))
	// The file is unlinked but still mapped for the reader.
	require.Equal(t, first, r.Records[0])
	r.Release()
	_, err = s.ReadRecordByOffset(0)
	require.Error(t, err)
}

func TestDeleteTopics(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := openStore(t, cfg)
	defer s.Shutdown()
	putN(t, s, "Gone", 2, 10)
	putN(t, s, "Kept", 1, 3)
	waitDispatched(t, s, "Gone", 1, 5)
	waitDispatched(t, s, "Kept", 0, 3)
	s.DeleteTopics([]string{"Gone"})
	require.Equal(t, int64(0), s.MaxOffsetInQueue("Gone", 0))
	_, err := os.Stat(filepath.Join(cfg.StorePathRootDir, "consumequeue", "Gone"))
	require.True(t, os.IsNotExist(err))
	r := s.GetMessage("g", "Gone", 0, 0, 32, 0, nil)
	require.Equal(t, GetNoMatchedLogicQueue, r.Status)
	require.Equal(t, int64(3), s.MaxOffsetInQueue("Kept", 0))
	// A recreated topic starts again at 0.
	res := s.PutMessage(context.Background(), newMsg("Gone", 0, "again", nil))
	require.Equal(t, int64(0), res.QueueOffset)
	waitDispatched(t, s, "Gone", 0, 1)
}

func TestIsTimeToDelete(t *testing.T) {
	at := time.Date(2026, 1, 1, 4, 30, 0, 0, time.Local)
	require.True(t, isTimeToDelete("04", at))
	require.True(t, isTimeToDelete("03;04", at))
	require.False(t, isTimeToDelete("05", at))
}

// TestConcurrentPutGetCleanDelete runs producers, pulls, retention and topic
// deletion together for the race detector.
func TestConcurrentPutGetCleanDelete(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MappedFileSizeCommitLog = 16 * 1024
	cfg.MappedFileSizeConsumeQueue = 20 * 20
	cfg.DeleteCommitLogFilesInterval = 0
	cfg.DeleteConsumeQueueFilesInterval = 0
	s := openStore(t, cfg)
	defer s.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	done := make(chan struct{})
	var puts atomicCounter
	for g := 0; g < 3; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; ctx.Err() == nil; i++ {
				topic := "Busy"
				if i%5 == 0 {
					topic = "Churn"
				}
				if s.PutMessage(ctx, newMsg(topic, int32(g), string(make([]byte, 500)), map[string]string{"KEYS": "k"})).Status == PutOK {
					puts.add()
				}
			}
		}()
	}
	go func() {
		defer func() { done <- struct{}{} }()
		off := int64(0)
		for ctx.Err() == nil {
			r := s.GetMessage("g", "Busy", 0, off, 32, 1<<20, nil)
			for _, rec := range r.Records {
				var m codec.Message
				if _, err := codec.DecodeRecord(rec, &m); err != nil {
					t.Errorf("bad record: %v", err)
				}
			}
			off = r.NextBeginOffset
			r.Release()
		}
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		for ctx.Err() == nil {
			old := time.Now().Add(-100 * time.Hour)
			for _, f := range s.commitLog.q.snapshot() {
				_ = os.Chtimes(f.path, old, old)
			}
			s.cleanOnce(ctx, true)
			s.DeleteTopics([]string{"Churn"})
			time.Sleep(20 * time.Millisecond)
		}
	}()
	for i := 0; i < 5; i++ {
		<-done
	}
	require.Greater(t, puts.load(), int64(10))
}

type atomicCounter struct{ n atomic.Int64 }

func (c *atomicCounter) add()        { c.n.Add(1) }
func (c *atomicCounter) load() int64 { return c.n.Load() }

func TestGetMessageSkipsRemovedCommitLogFiles(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MappedFileSizeCommitLog = 8192
	s := openStore(t, cfg)
	defer s.Shutdown()
	body := string(make([]byte, 1000))
	for i := 0; i < 3; i++ { // all in the first commitlog file
		s.PutMessage(context.Background(), newMsg("Early", 0, body, nil))
	}
	for i := 0; i < 30; i++ {
		s.PutMessage(context.Background(), newMsg("Rm", 0, body, nil))
	}
	waitDispatched(t, s, "Rm", 0, 30)
	waitDispatched(t, s, "Early", 0, 3)
	files := s.commitLog.q.snapshot()
	// Remove the first commitlog file behind the queues' back (min offsets not yet
	// corrected, as between a commitlog and a queue cleanup).
	s.commitLog.q.removeFiles(files[:1])
	r := s.GetMessage("g", "Rm", 0, 0, 3, 1<<20, nil)
	defer r.Release()
	require.Equal(t, GetFound, r.Status)
	var m codec.Message
	_, err := codec.DecodeRecord(r.Records[0], &m)
	require.NoError(t, err)
	require.Equal(t, int64(8192), m.CommitLogOffset) // first record of the next file
	require.Equal(t, m.QueueOffset+3, r.NextBeginOffset)
	// Nothing left of a queue: MESSAGE_WAS_REMOVING, and the pull moves past it.
	r2 := s.GetMessage("g", "Early", 0, 0, 32, 1<<20, nil)
	defer r2.Release()
	require.Equal(t, GetMessageWasRemoving, r2.Status)
	require.Equal(t, int64(3), r2.NextBeginOffset)
}

// DELETE_EXPIRED_COMMITLOG: expired files stay until deleteWhen's hour, unless
// a manual request turns the next passes into deleting ones.
func TestDeleteExpiredFilesManually(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MappedFileSizeCommitLog = 8192
	cfg.DeleteCommitLogFilesInterval = 0
	cfg.DeleteWhen = strconv.Itoa((time.Now().Hour() + 12) % 24)
	s := openStore(t, cfg)
	defer s.Shutdown()
	body := string(make([]byte, 1000))
	for i := 0; i < 30; i++ {
		require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("Exp", 0, body, nil)).Status)
	}
	waitDispatched(t, s, "Exp", 0, 30)
	s.doReput()
	old := time.Now().Add(-100 * time.Hour)
	for _, f := range s.commitLog.q.snapshot() {
		require.NoError(t, os.Chtimes(f.path, old, old))
	}
	require.Equal(t, 0, s.cleanOnce(context.Background(), false), "not the hour: nothing goes")
	s.DeleteExpiredFilesManually()
	require.Positive(t, s.cleanOnce(context.Background(), false))
	require.EqualValues(t, manualDeletePasses-1, s.manualDeletes.Load())
	require.Positive(t, s.MinPhyOffset())
}
