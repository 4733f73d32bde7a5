package store

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// A pull asking for more than maxTransferCountOnMessageInMemory gets that many,
// as from the Java store.
func TestGetMessageCapsBatch(t *testing.T) {
	s := storeHolding(t, "Cap", 50)
	r := s.GetMessage("g", "Cap", 0, 0, 50, 0, nil)
	defer r.Release()
	require.Equal(t, GetFound, r.Status)
	require.Len(t, r.Records, 32)
	require.Equal(t, int64(32), r.NextBeginOffset)
}

// GetMessageOnLoop reads what GetMessage reads; only the touch of the pages differs.
func TestGetMessageOnLoopReadsTheSame(t *testing.T) {
	s := storeHolding(t, "Loop", 20)
	for _, off := range []int64{0, 7, 19, 20} {
		a := s.GetMessage("g", "Loop", 0, off, 8, 0, nil)
		b := s.GetMessageOnLoop("Loop", 0, off, 8, 0, nil)
		require.Equal(t, a.Status, b.Status, "offset %d", off)
		require.Equal(t, a.NextBeginOffset, b.NextBeginOffset)
		require.Equal(t, a.Records, b.Records)
		require.Zero(t, b.touched)
		a.Release()
		b.Release()
	}
}

// storeHolding opens a store with n dispatched messages in queue 0 of topic.
func storeHolding(t *testing.T, topic string, n int) *DefaultStore {
	t.Helper()
	s := openStore(t, testConfig(t.TempDir()))
	t.Cleanup(func() { s.Shutdown() })
	for i := 0; i < n; i++ {
		require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg(topic, 0, "x", nil)).Status)
	}
	waitDispatched(t, s, topic, 0, int64(n))
	return s
}
