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
// a BatchCQ topic, which rmqd serves as a plain SimpleCQ topic; the load says
// so instead of changing its behaviour silently. A COMPACTION topic is
// compacted, as in Java: nothing to say.
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
	require.Contains(t, logs.String(), "topic=BatchT")
	require.NotContains(t, logs.String(), "topic=CompactT")
	tc, ok = m.Select("CompactT")
	require.True(t, ok)
	require.True(t, Compacted(&tc))
	require.Contains(t, logs.String(), "no batch consume queue")
	require.NotContains(t, logs.String(), "topic=PlainT")
}
