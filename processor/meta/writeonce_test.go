package meta

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFindAllAndCreateAllWriteOnce: a heartbeat's worth of new groups and retry
// topics is one write of each file; the .bak a write leaves (the file before
// it) holds none of them.
func TestFindAllAndCreateAllWriteOnce(t *testing.T) {
	cfg := testConfig(t)
	groups := NewSubscriptionGroupManager(fixedConf(&cfg), quietLog())
	topics := NewTopicConfigManager(fixedConf(&cfg), quietLog())
	require.NoError(t, groups.Persist())
	require.NoError(t, topics.Persist())
	var changes [][]TopicConfig
	topics.SetOnChange(func(tcs []TopicConfig) { changes = append(changes, tcs) })

	names := []string{"GID_known"}
	_, ok := groups.Find("GID_known")
	require.True(t, ok)
	for i := range 200 {
		names = append(names, fmt.Sprintf("GID_new_%d", i))
	}
	names = append(names, "bad/name")
	found := groups.FindAll(names)
	require.Len(t, found, len(names))
	var specs []TopicSpec
	for i, f := range found[:len(found)-1] {
		require.True(t, f.OK, names[i])
		require.Equal(t, names[i], f.Config.GroupName)
		specs = append(specs, TopicSpec{Name: RetryGroupTopicPrefix + names[i], QueueNums: 1, Perm: PermRead | PermWrite})
	}
	require.False(t, found[len(found)-1].OK, "an invalid name is not created")
	topics.CreateAllInSendMessageBack(specs)
	require.Len(t, changes, 1, "one change notice for all the topics")
	require.Len(t, changes[0], len(specs))

	for _, f := range []string{"subscriptionGroup.json", "topics.json"} {
		cur, err := os.ReadFile(filepath.Join(cfg.ConfigDir, f))
		require.NoError(t, err)
		bak, err := os.ReadFile(filepath.Join(cfg.ConfigDir, f+".bak"))
		require.NoError(t, err)
		require.Contains(t, string(cur), "GID_new_199", f)
		require.False(t, strings.Contains(string(bak), "GID_new_"), "%s was written more than once", f)
	}
	reloaded := NewTopicConfigManager(fixedConf(&cfg), quietLog())
	require.NoError(t, reloaded.Load())
	_, ok = reloaded.Select(RetryGroupTopicPrefix + "GID_new_7")
	require.True(t, ok)
}
