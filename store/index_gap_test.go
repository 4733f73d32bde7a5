package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestIndexCatchesUpAfterCreateFails: records dispatched while no index file
// can be made (a full disk) are indexed once one can, instead of never.
// Java stops the store's writes for good (makeIndexFileError) after a
// three-second retry per record; rmqd keeps storing and fills the gap.
func TestIndexCatchesUpAfterCreateFails(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := openStore(t, cfg)
	defer s.Shutdown()
	// A non-empty directory where create makes its file: every create fails.
	block := filepath.Join(s.index.tmpPath(), "x")
	require.NoError(t, os.MkdirAll(block, 0o755))
	require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("Gap", 0, "a", map[string]string{"KEYS": "ka"})).Status)
	require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("Gap", 0, "b", map[string]string{"KEYS": "kb"})).Status)
	waitDispatched(t, s, "Gap", 0, 2)
	s.doReput()
	end := time.Now().Add(time.Hour).UnixMilli()
	recs, _, _ := queryRecords(s, "Gap", "ka", 32, 0, end)
	require.Empty(t, recs)

	require.NoError(t, os.RemoveAll(s.index.tmpPath()))
	require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("Gap", 0, "c", map[string]string{"KEYS": "kc"})).Status)
	waitDispatched(t, s, "Gap", 0, 3)
	s.doReput()
	for _, k := range []string{"ka", "kb", "kc"} {
		recs, _, _ = queryRecords(s, "Gap", k, 32, 0, end)
		require.Len(t, recs, 1, k)
	}
}
