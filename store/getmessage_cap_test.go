package store

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// A pull asking for more than maxTransferCountOnMessageInMemory gets that many,
// as from the Java store.
func TestGetMessageCapsBatch(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	defer s.Shutdown()
	for i := 0; i < 50; i++ {
		require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("Cap", 0, "x", nil)).Status)
	}
	waitDispatched(t, s, "Cap", 0, 50)
	r := s.GetMessage("g", "Cap", 0, 0, 50, 0, nil)
	defer r.Release()
	require.Equal(t, GetFound, r.Status)
	require.Len(t, r.Records, 32)
	require.Equal(t, int64(32), r.NextBeginOffset)
}
