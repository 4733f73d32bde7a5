package meta

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLoadWarnsUnhonouredAttributes: a topics.json from a Java broker may hold
// a COMPACTION topic, which rmqd serves as a plain DELETE topic; the load says
// so instead of changing its behaviour silently. A BatchCQ topic is honoured
// (store/batchcq.go) and loads without a warning.
func TestLoadWarnsUnhonouredAttributes(t *testing.T) {
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
	require.NotContains(t, logs.String(), "topic=BatchT")
	require.Contains(t, logs.String(), "topic=CompactT")
	require.Contains(t, logs.String(), "no compaction store")
	require.NotContains(t, logs.String(), "topic=PlainT")
}
