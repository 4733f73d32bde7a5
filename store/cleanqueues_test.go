package store

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCleanExpiredQueues: queues whose messages all left the commitlog go,
// unless kept or holding an offset not dispatched yet; the others stay.
func TestCleanExpiredQueues(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MappedFileSizeCommitLog = 16 * 1024
	s := openStore(t, cfg)
	defer s.Shutdown()
	body := string(make([]byte, 1000))
	put := func(topic string, n int) {
		for i := 0; i < n; i++ {
			require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg(topic, 0, body, nil)).Status)
		}
		waitDispatched(t, s, topic, 0, int64(n))
	}
	put("Old", 3)
	put("Held", 3)
	put("Sys", 3)
	put("New", 40)
	s.doReput()
	old := time.Now().Add(-100 * time.Hour)
	for _, f := range s.commitLog.q.snapshot() {
		require.NoError(t, os.Chtimes(f.path, old, old))
	}
	require.Positive(t, s.cleanOnce(context.Background(), true))
	require.Greater(t, s.MinPhyOffset(), s.findCQ("Sys", 0).maxPhysicOffset.Load())
	require.ElementsMatch(t, []string{"Held", "New", "Old", "Sys"}, s.QueueTopics())

	// Held has an offset assigned that its queue does not show yet.
	s.commitLog.mu.Lock()
	*s.commitLog.table[tqKey{"Held", 0}]++
	s.commitLog.mu.Unlock()

	n := s.CleanExpiredQueues(func(topic string) bool { return topic == "Sys" })
	require.Equal(t, 1, n)
	require.Equal(t, []string{"Held", "New", "Sys"}, s.QueueTopics())
	require.Equal(t, int64(40), s.MaxOffsetInQueue("New", 0))
	_, err := os.Stat(s.cfg.StorePathRootDir + "/consumequeue/Old")
	require.True(t, os.IsNotExist(err), "the topic's directory goes with its last queue")

	// Old starts over at queue offset 0.
	put("Old", 1)
	require.Equal(t, int64(0), s.MinOffsetInQueue("Old", 0))
}
