package store

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// tableSizes are the store's per-queue tables: consume queues, queue
// offsets of the commitlog, mapped lazy files.
func (s *DefaultStore) tableSizes() [3]int {
	s.cqMu.RLock()
	cqs := len(s.cqs)
	s.cqMu.RUnlock()
	s.commitLog.mu.Lock()
	offsets := len(s.commitLog.table)
	s.commitLog.mu.Unlock()
	s.lazy.mu.Lock()
	mapped := len(s.lazy.mapped)
	s.lazy.mu.Unlock()
	return [3]int{cqs, offsets, mapped}
}

// 200 topics written, read and deleted leave no queue, queue offset, mapped
// file or directory behind.
func TestTopicChurnLeavesNoQueues(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := openStore(t, cfg)
	defer s.Shutdown()
	putN(t, s, "Kept", 1, 3)
	waitDispatched(t, s, "Kept", 0, 3)
	base := s.tableSizes()
	for i := range 200 {
		topic := fmt.Sprintf("Churn%d", i)
		putN(t, s, topic, 2, 4)
		waitDispatched(t, s, topic, 1, 2)
		require.Len(t, readAll(t, s, topic, 0), 2)
		s.DeleteTopics([]string{topic})
	}
	require.Equal(t, base, s.tableSizes(), "consume queues, queue offsets, mapped files")
	require.Equal(t, []string{"Kept"}, s.QueueTopics())
	dirs, err := os.ReadDir(filepath.Join(cfg.StorePathRootDir, "consumequeue"))
	require.NoError(t, err)
	require.Len(t, dirs, 1)
}
