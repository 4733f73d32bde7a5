package meta

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testConfig is the broker's defaults (processor.DefaultBrokerConfig) over a
// temporary config directory.
func testConfig(t testing.TB) Config {
	return Config{ConfigDir: t.TempDir(), BrokerName: "broker-a", BrokerClusterName: "DefaultCluster",
		AutoCreateTopicEnable: true, AutoCreateSubscriptionGroup: true, ClusterTopicEnable: true, BrokerTopicEnable: true,
		DefaultTopicQueueNums: 8, MsgTraceTopicName: "RMQ_SYS_TRACE_TOPIC", ReviveQueueNum: 8, TimerWheelEnable: true}
}

// fixedConf serves one configuration to a manager under test; a change to *c
// applies from the next call, as UPDATE_BROKER_CONFIG does.
func fixedConf(c *Config) func() Config { return func() Config { return *c } }

func TestConsumerOffsetPersistAndLoadJavaFile(t *testing.T) {
	cfg := testConfig(t)
	m := NewConsumerOffsetManager(cfg.ConfigDir, quietLog())
	m.Commit("g1", "TopicTest", 0, 12)
	m.Commit("g1", "TopicTest", 3, 7)
	m.Commit("g2", "%RETRY%g2", 0, 0)
	require.NoError(t, m.Persist())
	data, err := os.ReadFile(filepath.Join(cfg.ConfigDir, "consumerOffset.json"))
	require.NoError(t, err)
	require.Contains(t, string(data), `"TopicTest@g1":{0:12,3:7}`)

	st, err := os.Stat(filepath.Join(cfg.ConfigDir, "consumerOffset.json"))
	require.NoError(t, err)
	require.NoError(t, m.PersistIfChanged())
	st2, err := os.Stat(filepath.Join(cfg.ConfigDir, "consumerOffset.json"))
	require.NoError(t, err)
	require.True(t, os.SameFile(st, st2), "unchanged offsets are not rewritten")
	m.Commit("g1", "TopicTest", 0, 12)
	require.NoError(t, m.PersistIfChanged())
	st2, err = os.Stat(filepath.Join(cfg.ConfigDir, "consumerOffset.json"))
	require.NoError(t, err)
	require.True(t, os.SameFile(st, st2), "the same offset committed again is no change")
	// A commit that moves an offset is what the periodic flush writes (it
	// wrote none from 2026-11-30: only resets marked the table changed).
	m.Commit("g1", "TopicTest", 0, 13)
	require.NoError(t, m.PersistIfChanged())
	data, err = os.ReadFile(filepath.Join(cfg.ConfigDir, "consumerOffset.json"))
	require.NoError(t, err)
	require.Contains(t, string(data), `"TopicTest@g1":{0:13,3:7}`)
	m.Commit("g1", "TopicTest", 0, 12)
	require.NoError(t, m.Persist())

	m2 := NewConsumerOffsetManager(cfg.ConfigDir, quietLog())
	require.NoError(t, m2.Load())
	require.EqualValues(t, 12, m2.Query("g1", "TopicTest", 0))
	require.EqualValues(t, 7, m2.Query("g1", "TopicTest", 3))
	require.EqualValues(t, -1, m2.Query("g1", "TopicTest", 1))

	// A file as a 4.9 Java broker writes it, and a broken main file with a good .bak.
	java := "{\n\t\"offsetTable\":{\n\t\t\"TopicTest@g\":{0:250,1:250,2:250,3:250\n\t\t}\n\t}\n}"
	path := filepath.Join(cfg.ConfigDir, "consumerOffset.json")
	require.NoError(t, os.WriteFile(path+".bak", []byte(java), 0o644))
	require.NoError(t, os.WriteFile(path, []byte("{broken"), 0o644))
	m3 := NewConsumerOffsetManager(cfg.ConfigDir, quietLog())
	require.NoError(t, m3.Load())
	require.EqualValues(t, 250, m3.Query("g", "TopicTest", 3))
}

func TestTopicConfigManager(t *testing.T) {
	cfg := testConfig(t)
	m := NewTopicConfigManager(fixedConf(&cfg), quietLog())
	tbw, ok := m.Select(TopicAutoCreate)
	require.True(t, ok)
	require.EqualValues(t, 7, tbw.Perm)
	require.EqualValues(t, 8, tbw.WriteQueueNums)
	for _, name := range []string{TopicSelfTest, TopicSchedule, TopicTransHalf, TopicTransOpHalf, TopicOffsetMovedEvent,
		TopicBenchmark, "DefaultCluster", "broker-a", "DefaultCluster_REPLY_TOPIC"} {
		_, ok := m.Select(name)
		require.True(t, ok, name)
	}
	sched, _ := m.Select(TopicSchedule)
	require.EqualValues(t, 18, sched.ReadQueueNums)

	var changed int
	m.SetOnChange(func([]TopicConfig) { changed++ })
	tc, ok := m.CreateInSendMessage("NewTopic", TopicAutoCreate, 4, 0)
	require.True(t, ok)
	require.EqualValues(t, 4, tc.WriteQueueNums)
	require.EqualValues(t, 6, tc.Perm, "INHERIT is dropped")
	require.Equal(t, 1, changed)
	_, ok = m.CreateInSendMessage("Other", "NoSuchDefault", 4, 0)
	require.False(t, ok)

	// Persisted in Java's layout and read back.
	data, err := os.ReadFile(filepath.Join(cfg.ConfigDir, "topics.json"))
	require.NoError(t, err)
	require.Contains(t, string(data), `"topicFilterType": "SINGLE_TAG"`)
	m2 := NewTopicConfigManager(fixedConf(&cfg), quietLog())
	require.NoError(t, m2.Load())
	tc2, ok := m2.Select("NewTopic")
	require.True(t, ok)
	require.Equal(t, tc, tc2)
	require.Equal(t, m.DataVersion(), m2.DataVersion())

	cfg2 := testConfig(t)
	cfg2.AutoCreateTopicEnable = false
	m3 := NewTopicConfigManager(fixedConf(&cfg2), quietLog())
	_, ok = m3.Select(TopicAutoCreate)
	require.False(t, ok)
}

func TestSubscriptionGroupManager(t *testing.T) {
	cfg := testConfig(t)
	m := NewSubscriptionGroupManager(fixedConf(&cfg), quietLog())
	g, ok := m.Find("GID_test")
	require.True(t, ok)
	require.EqualValues(t, 16, g.RetryMaxTimes)
	require.EqualValues(t, 1, g.RetryQueueNums)
	require.True(t, g.NotifyConsumerIdsChangedEnable)
	m2 := NewSubscriptionGroupManager(fixedConf(&cfg), quietLog())
	require.NoError(t, m2.Load())
	_, ok = m2.Get("GID_test")
	require.True(t, ok)

	cfg.AutoCreateSubscriptionGroup = false
	m3 := NewSubscriptionGroupManager(fixedConf(&cfg), quietLog())
	_, ok = m3.Find("GID_other")
	require.False(t, ok)
	_, ok = m3.Find("TOOLS_CONSUMER")
	require.True(t, ok)
}

// TestCreateBackClampsQueueNums: a retry topic takes its group's
// retryQueueNums, which a Java subscriptionGroup.json may hold at any size.
func TestCreateBackClampsQueueNums(t *testing.T) {
	cfg := testConfig(t)
	m := NewTopicConfigManager(fixedConf(&cfg), quietLog())
	m.CreateAllInSendMessageBack([]TopicSpec{{Name: "%RETRY%big", QueueNums: 1 << 30, Perm: PermRead | PermWrite},
		{Name: "%RETRY%neg", QueueNums: -4, Perm: PermRead | PermWrite}})
	tc, ok := m.Select("%RETRY%big")
	require.True(t, ok)
	require.EqualValues(t, 65535, tc.WriteQueueNums)
	require.EqualValues(t, 65535, tc.ReadQueueNums)
	tc = m.CreateInSendMessageBack("%RETRY%neg", 1, PermRead|PermWrite, 0)
	require.EqualValues(t, 0, tc.WriteQueueNums)
}

// TestTopicTakeChanged: the topics created or updated since the last take,
// current and sorted, with the version that covers them; a deletion is flagged.
func TestTopicTakeChanged(t *testing.T) {
	cfg := testConfig(t)
	m := NewTopicConfigManager(fixedConf(&cfg), quietLog())
	got, _, deleted := m.TakeChanged()
	require.Empty(t, got, "the built-in topics are not changes")
	require.False(t, deleted)

	m.Update(NewTopicConfig("B"), NewTopicConfig("A"))
	m.CreateInSendMessageBack("%RETRY%G", 1, PermRead|PermWrite, 0)
	upd := NewTopicConfig("A")
	upd.WriteQueueNums = 3
	m.Update(upd)
	got, v, deleted := m.TakeChanged()
	require.False(t, deleted)
	require.Equal(t, m.DataVersion(), v)
	require.Len(t, got, 3)
	require.Equal(t, []string{"%RETRY%G", "A", "B"}, []string{got[0].TopicName, got[1].TopicName, got[2].TopicName})
	require.EqualValues(t, 3, got[1].WriteQueueNums, "the current config")

	got, _, _ = m.TakeChanged()
	require.Empty(t, got, "cleared")
	m.Update(NewTopicConfig("C"))
	require.True(t, m.Delete("C"))
	got, _, deleted = m.TakeChanged()
	require.Empty(t, got)
	require.True(t, deleted)
}

// CLONE_GROUP_OFFSET: the destination's table on the topic becomes a copy of
// the source's, persisted, and later commits to either stay apart.
func TestCloneOffsets(t *testing.T) {
	cfg := testConfig(t)
	m := NewConsumerOffsetManager(cfg.ConfigDir, quietLog())
	m.Commit("src", "T", 0, 5)
	m.Commit("src", "T", 1, 7)
	m.Commit("dst", "T", 2, 9)
	require.False(t, m.Clone("none", "dst", "T"))
	require.Equal(t, map[int32]int64{2: 9}, m.QueryAll("dst", "T"))
	require.True(t, m.Clone("src", "dst", "T"))
	require.Equal(t, map[int32]int64{0: 5, 1: 7}, m.QueryAll("dst", "T"))
	m.Commit("dst", "T", 0, 6)
	require.EqualValues(t, 5, m.Query("src", "T", 0))
	require.NoError(t, m.PersistIfChanged())
	m2 := NewConsumerOffsetManager(cfg.ConfigDir, quietLog())
	require.NoError(t, m2.Load())
	require.Equal(t, map[int32]int64{0: 6, 1: 7}, m2.QueryAll("dst", "T"))
}
