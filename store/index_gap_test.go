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

// TestIndexGapSurvivesRestart: a gap left unindexed at shutdown is indexed by
// the next start, clean or after a crash, without waiting for a new record.
// Before the gap was kept in a file, its keys were lost for good.
func TestIndexGapSurvivesRestart(t *testing.T) {
	for _, crashed := range []bool{false, true} {
		t.Run(map[bool]string{false: "clean", true: "crashed"}[crashed], func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			s := openStore(t, cfg)
			require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("Gap", 0, "a", map[string]string{"KEYS": "ka"})).Status)
			waitDispatched(t, s, "Gap", 0, 1)
			block := filepath.Join(s.index.tmpPath(), "x")
			// Fill the index file (with copies of a's entry) so the next key
			// needs a new one, which cannot be made.
			a := readAll(t, s, "Gap", 0)[0]
			s.dispatchMu.Lock()
			x, err := s.index.writable()
			require.NoError(t, err)
			for !x.isFull() {
				require.True(t, x.putKey(keyHash("Gap", "ka"), a.CommitLogOffset, a.StoreTimestamp))
			}
			s.dispatchMu.Unlock()
			require.NoError(t, os.MkdirAll(block, 0o755))
			require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("Gap", 0, "b", map[string]string{"KEYS": "kb"})).Status)
			require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("Gap", 0, "c", map[string]string{"KEYS": "kc"})).Status)
			waitDispatched(t, s, "Gap", 0, 3)
			s.doReput()
			_, err = os.Stat(s.index.gapPath())
			require.NoError(t, err, "the gap is on disk")
			require.NoError(t, s.Shutdown())
			require.NoError(t, os.RemoveAll(filepath.Dir(block)))
			if crashed {
				markCrashed(t, cfg)
			}

			s = openStore(t, cfg)
			defer s.Shutdown()
			end := time.Now().Add(time.Hour).UnixMilli()
			for _, k := range []string{"ka", "kb", "kc"} {
				recs, _, _ := queryRecords(s, "Gap", k, 32, 0, end)
				require.Len(t, recs, 1, k)
			}
			_, err = os.Stat(s.index.gapPath())
			require.True(t, os.IsNotExist(err), "the gap file goes once indexed: %v", err)
		})
	}
}

// A damaged gap file re-indexes from the index's end.
func TestIndexGapFileDamaged(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := openStore(t, cfg)
	for _, k := range []string{"ka", "kb"} {
		require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("Gap", 0, k, map[string]string{"KEYS": k})).Status)
	}
	waitDispatched(t, s, "Gap", 0, 2)
	require.NoError(t, s.Shutdown())
	require.NoError(t, os.WriteFile(filepath.Join(cfg.StorePathRootDir, indexGapName), []byte("\x00\x00"), 0o644))
	s = openStore(t, cfg)
	defer s.Shutdown()
	end := time.Now().Add(time.Hour).UnixMilli()
	for _, k := range []string{"ka", "kb"} {
		recs, _, _ := queryRecords(s, "Gap", k, 32, 0, end)
		require.Len(t, recs, 1, k)
	}
	_, err := os.Stat(filepath.Join(cfg.StorePathRootDir, indexGapName))
	require.True(t, os.IsNotExist(err))
}
