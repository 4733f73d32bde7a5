package store

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// unsafeTopics are names a store must never turn into a path.
var unsafeTopics = []string{"", ".", "..", "../x", "../../victim.txt", "../checkpoint", "/tmp/x", "x/../../y",
	`..\x`, "x\x00y", strings.Repeat("t", 256), strings.Repeat("../", 100)}

// treeOf lists every path under root (relative, "/" for directories).
func treeOf(t *testing.T, root string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			rel += "/"
		}
		out[rel] = true
		return nil
	})
	require.NoError(t, err)
	return out
}

func TestStoreRefusesUnsafeTopics(t *testing.T) {
	top := t.TempDir()
	root := filepath.Join(top, "a", "store")
	victim := filepath.Join(top, "a", "victim.txt")
	require.NoError(t, os.MkdirAll(root, 0o755))
	require.NoError(t, os.WriteFile(victim, []byte("keep"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(top, "x"), 0o755))
	s := openStore(t, testConfig(root))
	defer s.Shutdown()

	// A real topic, so the store has queues and a checkpoint worth deleting.
	res := s.PutMessage(context.Background(), newMsg("Real", 0, "b", nil))
	require.Equal(t, PutOK, res.Status)
	waitDispatched(t, s, "Real", 0, 1)
	before := treeOf(t, top)

	for _, topic := range unsafeTopics {
		require.Error(t, checkTopicDir(topic), "%q", topic)
		res := s.PutMessage(context.Background(), newMsg(topic, 0, "b", nil))
		require.Equal(t, PutMessageIllegal, res.Status, "put to %q", topic)
		require.Nil(t, s.findOrCreateCQ(topic, 0), "queue for %q", topic)
		s.PrepareQueues(topic, 2)
		s.DeleteTopics([]string{topic})
	}
	require.Nil(t, s.findOrCreateCQ("Real2", -1))
	require.Equal(t, PutMessageIllegal, s.PutMessage(context.Background(), newMsg("Real", -1, "b", nil)).Status)

	after := treeOf(t, top)
	for p := range before {
		if !strings.HasPrefix(p, "a/store/") || strings.Contains(p, "consumequeue/Real") || strings.HasSuffix(p, "checkpoint") {
			require.True(t, after[p], "%s was removed", p)
		}
	}
	for p := range after {
		require.True(t, before[p] || strings.HasPrefix(p, "a/store/"), "%s was created outside the store", p)
		require.NotContains(t, p, "..")
	}
	data, err := os.ReadFile(victim)
	require.NoError(t, err)
	require.Equal(t, "keep", string(data))
	require.Equal(t, int64(1), s.MaxOffsetInQueue("Real", 0), "a refused delete left the real queue alone")
}

// DeleteTopics removes a known topic's queue directories and nothing else; a
// name the table does not hold removes nothing even when a directory of that
// name exists.
func TestDeleteTopicsOnlyKnownQueues(t *testing.T) {
	root := t.TempDir()
	s := openStore(t, testConfig(root))
	defer s.Shutdown()
	require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("Gone", 1, "b", nil)).Status)
	waitDispatched(t, s, "Gone", 1, 1)
	stray := filepath.Join(root, "consumequeue", "Stray")
	require.NoError(t, os.MkdirAll(stray, 0o755))

	s.DeleteTopics([]string{"Gone", "Stray", "checkpoint"})
	_, err := os.Stat(filepath.Join(root, "consumequeue", "Gone"))
	require.True(t, os.IsNotExist(err), "Gone's directory stays: %v", err)
	_, err = os.Stat(stray)
	require.NoError(t, err, "a directory the store never opened was removed")
	_, err = os.Stat(filepath.Join(root, "checkpoint"))
	require.NoError(t, err)
	require.Equal(t, int64(0), s.MaxOffsetInQueue("Gone", 1))
}
