package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
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

// An offset from the wire (VIEW_MESSAGE_BY_ID, END_TRANSACTION) may point into
// a body made to look like a record header; its size field must not make the
// store copy more than any record it writes can hold.
func TestReadRecordByOffsetRefusesAForgedSize(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MaxMessageSize = 1024
	s := openStore(t, cfg)
	t.Cleanup(func() { s.Shutdown() })
	forged := make([]byte, 16)
	binary.BigEndian.PutUint32(forged, uint32(cfg.MaxMessageSize+64*1024+1))
	magic := codec.MagicV1
	binary.BigEndian.PutUint32(forged[4:], uint32(magic))
	r := s.PutMessage(context.Background(), newMsg("Forge", 0, string(forged), nil))
	require.Equal(t, PutOK, r.Status)
	for i := 0; i < 80; i++ { // enough bytes behind it for the forged size
		require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("Forge", 0, strings.Repeat("x", 1000), nil)).Status)
	}
	rec, err := s.ReadRecordByOffset(r.WroteOffset)
	require.NoError(t, err)
	at := r.WroteOffset + int64(bytes.Index(rec, forged))
	_, err = s.ReadRecordByOffset(at)
	require.ErrorIs(t, err, ErrNoRecord)

	// One byte less is a size the store could have written: read as before.
	binary.BigEndian.PutUint32(forged, uint32(cfg.MaxMessageSize+64*1024))
	r = s.PutMessage(context.Background(), newMsg("Forge", 0, string(forged), nil))
	for i := 0; i < 80; i++ {
		require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("Forge", 0, strings.Repeat("x", 1000), nil)).Status)
	}
	rec, err = s.ReadRecordByOffset(r.WroteOffset)
	require.NoError(t, err)
	b, err := s.ReadRecordByOffset(r.WroteOffset + int64(bytes.Index(rec, forged)))
	require.NoError(t, err)
	require.Len(t, b, cfg.MaxMessageSize+64*1024)
}

// QUERY_MESSAGE's records stop before the byte budget, but the first is
// always taken.
func TestQueryMessageStopsAtItsByteBudget(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	t.Cleanup(func() { s.Shutdown() })
	for i := 0; i < 5; i++ {
		m := newMsg("QB", 0, strings.Repeat("q", 1000), map[string]string{codec.PropKeys: "same"})
		require.Equal(t, PutOK, s.PutMessage(context.Background(), m).Status)
	}
	waitDispatched(t, s, "QB", 0, 5)
	end := time.Now().UnixMilli() + 1000
	require.Eventually(t, func() bool {
		_, n, _, _ := s.QueryMessage("QB", "same", 32, math.MaxInt, 0, end)
		return n == 5
	}, 5*time.Second, 5*time.Millisecond)
	all, _, _, _ := s.QueryMessage("QB", "same", 32, math.MaxInt, 0, end)
	one := len(all) / 5
	for _, c := range []struct{ budget, want int }{{0, 1}, {one, 1}, {2*one + one/2, 2}, {5 * one, 5}} {
		body, n, _, _ := s.QueryMessage("QB", "same", 32, c.budget, 0, end)
		require.Equal(t, c.want, n, "budget %d", c.budget)
		require.Len(t, body, n*one)
	}
}
