package meta

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLoadKeepsStoreAttributes: a topics.json from a Java broker may hold
// BatchCQ and COMPACTION topics; rmqd honours both (store/batchcq.go,
// store/compaction.go), so they load as they are, without a warning.
func TestLoadKeepsStoreAttributes(t *testing.T) {
	cfg := testConfig(t)
	java := `{"topicConfigTable":{` +
		`"BatchT":{"topicName":"BatchT","readQueueNums":4,"writeQueueNums":4,"perm":6,"attributes":{"queue.type":"BatchCQ"}},` +
		`"CompactT":{"topicName":"CompactT","readQueueNums":4,"writeQueueNums":4,"perm":6,"attributes":{"cleanup.policy":"COMPACTION"}},` +
		`"PlainT":{"topicName":"PlainT","readQueueNums":4,"writeQueueNums":4,"perm":6,"attributes":{"queue.type":"SimpleCQ","message.type":"FIFO"}}}}`
	require.NoError(t, os.MkdirAll(cfg.ConfigDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cfg.ConfigDir, "topics.json"), []byte(java), 0o644))
	var logs bytes.Buffer
	m := NewTopicConfigManager(fixedConf(&cfg), slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, m.Load())
	tc, ok := m.Select("BatchT")
	require.True(t, ok, "kept, as loaded")
	require.Equal(t, "BatchCQ", tc.Attributes["queue.type"])
	tc, ok = m.Select("CompactT")
	require.True(t, ok)
	require.True(t, Compacted(&tc))
	require.NotContains(t, logs.String(), "WARN")
}
