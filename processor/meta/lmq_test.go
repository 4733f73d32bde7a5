package meta

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Under enableLmq an LMQ has Java's synthetic config (LmqTopicConfigManager:
// 1/1 queues, perm 6) and an LMQ group the defaults; neither is ever stored.
func TestLMQTopicsAndGroupsAreSynthetic(t *testing.T) {
	cfg := testConfig(t)
	cfg.AutoCreateSubscriptionGroup = false
	topics := NewTopicConfigManager(fixedConf(&cfg), quietLog())
	groups := NewSubscriptionGroupManager(fixedConf(&cfg), quietLog())
	_, ok := topics.Select("%LMQ%a")
	require.False(t, ok, "enableLmq off: an LMQ is an unknown topic")
	require.False(t, topics.Exists("%LMQ%a"))
	_, ok = groups.Find("%LMQ%g")
	require.False(t, ok)

	cfg.EnableLmq = true
	tc, ok := topics.Select("%LMQ%a")
	require.True(t, ok)
	require.Equal(t, "%LMQ%a", tc.TopicName)
	require.Equal(t, int32(1), tc.ReadQueueNums)
	require.Equal(t, int32(1), tc.WriteQueueNums)
	require.Equal(t, PermRead|PermWrite, tc.Perm)
	require.True(t, topics.Exists("%LMQ%b"))
	for _, bad := range []string{"%LMQ%a/../../x", "%LMQ%a\\b", "%LMQ%\x00"} {
		_, ok = topics.Select(bad)
		require.False(t, ok, "stricter than Java: %q cannot be a queue directory", bad)
		require.False(t, topics.Exists(bad))
	}
	topics.Update(NewTopicConfig("%LMQ%a"), NewTopicConfig("Plain"))
	require.NotContains(t, topics.Snapshot().TopicConfigTable, "%LMQ%a")
	require.Contains(t, topics.Snapshot().TopicConfigTable, "Plain")

	g, ok := groups.Find("%LMQ%g")
	require.True(t, ok)
	require.Equal(t, NewSubscriptionGroupConfig("%LMQ%g"), g)
	require.NoError(t, groups.Update(NewSubscriptionGroupConfig("%LMQ%g")))
	require.NotContains(t, groups.Snapshot().SubscriptionGroupTable, "%LMQ%g")
}

// LmqConsumerOffsetManager: an LMQ group's offset is one per topic@group
// (queue id ignored) in lmqOffsetTable, and the whole table lives in
// lmqConsumerOffset.json.
func TestLMQConsumerOffsets(t *testing.T) {
	cfg := testConfig(t)
	// Offsets from before LMQ was turned on are kept (Java would start empty).
	old := NewConsumerOffsetManager(cfg.ConfigDir, quietLog())
	old.Commit("g0", "T", 1, 5)
	require.NoError(t, old.Persist())

	m := NewConsumerOffsetManager(cfg.ConfigDir, quietLog())
	m.UseLMQ()
	require.NoError(t, m.Load())
	require.Equal(t, int64(5), m.Query("g0", "T", 1))
	m.Commit("%LMQ%g", "%LMQ%a", 0, 10)
	m.Commit("%LMQ%g", "%LMQ%a", 3, 11) // the queue id does not matter
	m.Commit("%LMQ%h", "%LMQ%b", 0, 2)
	m.Commit("g1", "%LMQ%a", 0, 4) // a plain group: the usual table
	require.Equal(t, int64(11), m.Query("%LMQ%g", "%LMQ%a", 0))
	require.Equal(t, int64(11), m.Query("%LMQ%g", "%LMQ%a", 7))
	require.Equal(t, int64(-1), m.Query("%LMQ%g", "%LMQ%other", 0))
	require.Equal(t, map[int32]int64{0: 11}, m.QueryAll("%LMQ%g", "%LMQ%a"))
	require.Equal(t, map[int32]int64{0: 4}, m.QueryAll("g1", "%LMQ%a"))
	require.NoError(t, m.Persist())

	data, err := os.ReadFile(filepath.Join(cfg.ConfigDir, "lmqConsumerOffset.json"))
	require.NoError(t, err)
	require.Contains(t, string(data), "\"lmqOffsetTable\":{\n\t\t\"%LMQ%a@%LMQ%g\":11,\n\t\t\"%LMQ%b@%LMQ%h\":2\n\t}")
	require.Contains(t, string(data), `"%LMQ%a@g1":{0:4}`)
	require.Contains(t, string(data), `"T@g0":{1:5}`)
	// A Java-written file: fastjson's form, read back.
	java := `{"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1700000000000},` +
		`"lmqOffsetTable":{"%LMQ%x@%LMQ%gx":42},"offsetTable":{"MqttTest@GID_test1":{0:10}}}`
	require.NoError(t, os.WriteFile(filepath.Join(cfg.ConfigDir, "lmqConsumerOffset.json"), []byte(java), 0o644))
	m2 := NewConsumerOffsetManager(cfg.ConfigDir, quietLog())
	m2.UseLMQ()
	require.NoError(t, m2.Load())
	require.Equal(t, int64(42), m2.Query("%LMQ%gx", "%LMQ%x", 0))
	require.Equal(t, int64(10), m2.Query("GID_test1", "MqttTest", 0))
	require.Equal(t, int64(-1), m2.Query("g0", "T", 1), "the LMQ file wins once it exists")
	m2.DeleteGroup("%LMQ%gx")
	require.Equal(t, int64(-1), m2.Query("%LMQ%gx", "%LMQ%x", 0))
}

// A slave takes the master's LMQ group offsets too (GET_ALL_CONSUMER_OFFSET
// carries lmqOffsetTable; Java's slave reads only offsetTable from it).
func TestLMQOffsetsSyncToSlave(t *testing.T) {
	master := NewConsumerOffsetManager(t.TempDir(), quietLog())
	master.UseLMQ()
	master.Commit("%LMQ%g", "%LMQ%a", 0, 9)
	master.Commit("g", "T", 2, 3)
	slave := NewConsumerOffsetManager(t.TempDir(), quietLog())
	slave.UseLMQ()
	require.NoError(t, slave.PutAllFromMaster(master.Encode()))
	require.Equal(t, int64(3), slave.Query("g", "T", 2))
	require.Equal(t, int64(9), slave.Query("%LMQ%g", "%LMQ%a", 0))
}
