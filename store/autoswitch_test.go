package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

func totalInQueues(s *DefaultStore, topic string, queues int32) int64 {
	var n int64
	for q := int32(0); q < queues; q++ {
		n += s.MaxOffsetInQueue(topic, q)
	}
	return n
}

// putOffsets puts n messages and returns each one's commitlog offset.
func putOffsets(t *testing.T, s *DefaultStore, topic string, queues int32, from, n int) []int64 {
	t.Helper()
	var offs []int64
	for i := from; i < from+n; i++ {
		m := newMsg(topic, int32(i)%queues, fmt.Sprintf("%s-%d", topic, i), map[string]string{"TAGS": "t", "KEYS": fmt.Sprintf("key%d", i)})
		r := s.PutMessage(context.Background(), m)
		require.Equal(t, PutOK, r.Status)
		offs = append(offs, r.WroteOffset)
	}
	return offs
}

func TestTruncateCommitLogCutsQueuesIndexAndRecovers(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(fmt.Sprintf("crash=%v", crash), func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			cfg.MappedFileSizeCommitLog = 16 * 1024 // several files
			s := openStore(t, cfg)
			offs := putOffsets(t, s, "X", 4, 0, 300)
			waitDispatched(t, s, "X", 3, 75)
			cut := offs[150]
			require.Greater(t, s.MaxPhyOffset()/int64(cfg.MappedFileSizeCommitLog), cut/int64(cfg.MappedFileSizeCommitLog),
				"the cut drops whole files too")

			require.ErrorIs(t, s.TruncateCommitLog(cut+5), ErrNotAligned)
			require.NoError(t, s.TruncateCommitLog(cut))
			require.Equal(t, cut, s.MaxPhyOffset())
			require.EqualValues(t, 150, totalInQueues(s, "X", 4))
			got := readAll(t, s, "X", 1)
			require.Len(t, got, 38) // 1, 5, ..., 149
			require.Equal(t, "X-149", string(got[37].Body))
			recs, _, _ := queryRecords(s, "X", "key160", 32, 0, math.MaxInt64)
			require.Empty(t, recs, "the index forgets cut records")
			recs, _, _ = queryRecords(s, "X", "key10", 32, 0, math.MaxInt64)
			require.Len(t, recs, 1, "and keeps the others")

			// Puts go on where the cut is, with queue offsets that follow it.
			more := putOffsets(t, s, "X", 4, 150, 10)
			require.Equal(t, cut, more[0])
			waitDispatched(t, s, "X", 3, 40)
			require.EqualValues(t, 160, totalInQueues(s, "X", 4))
			end := s.MaxPhyOffset()
			require.NoError(t, s.Shutdown())
			if crash {
				markCrashed(t, cfg)
			}
			s = openStore(t, cfg)
			defer s.Shutdown()
			require.Equal(t, end, s.MaxPhyOffset())
			require.EqualValues(t, 160, totalInQueues(s, "X", 4))
			got = readAll(t, s, "X", 2)
			require.Len(t, got, 40)
			for i, m := range got {
				require.Equal(t, fmt.Sprintf("X-%d", 2+4*i), string(m.Body))
			}
		})
	}
}

func TestTruncateToEmpty(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := openStore(t, cfg)
	defer s.Shutdown()
	putOffsets(t, s, "E", 2, 0, 20)
	waitDispatched(t, s, "E", 1, 10)
	require.NoError(t, s.TruncateCommitLog(0))
	require.Zero(t, s.MaxPhyOffset())
	require.Zero(t, totalInQueues(s, "E", 2))
	offs := putOffsets(t, s, "E", 2, 0, 2)
	require.Zero(t, offs[0])
	waitDispatched(t, s, "E", 1, 1)
}

func TestConfirmOffsetBoundsDispatch(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := openStore(t, cfg)
	defer s.Shutdown()
	s.SetConfirmOffset(0)
	s.UseConfirmOffset(true)
	offs := putOffsets(t, s, "C", 1, 0, 10)
	s.doReput() // as the dispatcher would: nothing is confirmed
	require.Zero(t, s.DispatchedPhyOffset())
	require.Zero(t, s.MaxOffsetInQueue("C", 0))
	require.Equal(t, int64(0), s.ConfirmOffset())
	require.Zero(t, s.DispatchBehind(), "nothing confirmed is left to dispatch")

	// A confirm offset inside record 6 lets records 0..5 through.
	s.SetConfirmOffset(offs[6] + 10)
	waitDispatched(t, s, "C", 0, 6)
	s.doReput()
	require.Equal(t, offs[6], s.DispatchedPhyOffset())
	require.EqualValues(t, 6, s.MaxOffsetInQueue("C", 0))

	s.UseConfirmOffset(false)
	waitDispatched(t, s, "C", 0, 10)
	require.Equal(t, s.MaxPhyOffset(), s.ConfirmOffset())
	require.Zero(t, s.DispatchBehind())
}

func TestTruncateInvalidTail(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := openStore(t, cfg)
	defer s.Shutdown()
	putOffsets(t, s, "I", 1, 0, 20)
	waitDispatched(t, s, "I", 0, 20)
	cut, err := s.TruncateInvalidTail()
	require.NoError(t, err)
	require.EqualValues(t, -1, cut, "a clean tail stays")

	end := s.MaxPhyOffset()
	m := newMsg("I", 0, "half sent by a master", nil)
	m.CommitLogOffset = end
	m.QueueOffset = 20
	rec := make([]byte, codec.RecordSize(m))
	codec.EncodeRecord(rec, m)
	require.NoError(t, s.AppendCommitLog(end, rec[:len(rec)/2]))
	cut, err = s.TruncateInvalidTail()
	require.NoError(t, err)
	require.Equal(t, end, cut)
	require.Equal(t, end, s.MaxPhyOffset())
	require.EqualValues(t, 20, s.MaxOffsetInQueue("I", 0))
}

func TestConfirmOffsetKeptInCheckpoint(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := openStore(t, cfg)
	offs := putOffsets(t, s, "K", 1, 0, 10)
	s.SetConfirmOffset(offs[4])
	require.NoError(t, s.Shutdown())
	b, err := os.ReadFile(filepath.Join(cfg.StorePathRootDir, "checkpoint"))
	require.NoError(t, err)
	require.Equal(t, uint64(offs[4]), binary.BigEndian.Uint64(b[32:]), "Java's confirmPhyOffset slot")

	s = openStore(t, cfg)
	defer s.Shutdown()
	s.UseConfirmOffset(true)
	require.Equal(t, offs[4], s.ConfirmOffset())
}

// RESET_MASTER_FLUSH_OFFSET's value lands in Java's masterFlushedOffset slot
// (bytes 24-31) and is read back at the next start; the other fields' flush
// leaves it alone.
func TestMasterFlushedOffsetKeptInCheckpoint(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := openStore(t, cfg)
	s.SetMasterFlushedOffset(123456789)
	putOffsets(t, s, "M", 1, 0, 3)
	require.NoError(t, s.Shutdown())
	b, err := os.ReadFile(filepath.Join(cfg.StorePathRootDir, "checkpoint"))
	require.NoError(t, err)
	require.Equal(t, uint64(123456789), binary.BigEndian.Uint64(b[24:]), "Java's masterFlushedOffset slot")

	s = openStore(t, cfg)
	defer s.Shutdown()
	require.EqualValues(t, 123456789, s.MasterFlushedOffset())
}

// readUnCommitted dispatches past the confirm offset, as Java's
// getReputEndOffset; the confirm offset itself (what HA reports) and the
// dispatch lag counted from it do not move.
func TestReadUnCommittedDispatchesPastConfirm(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.ReadUnCommitted = true
	s := openStore(t, cfg)
	defer s.Shutdown()
	s.SetConfirmOffset(0)
	s.UseConfirmOffset(true)
	putOffsets(t, s, "U", 1, 0, 5)
	waitDispatched(t, s, "U", 0, 5)
	require.Equal(t, s.MaxPhyOffset(), s.DispatchedPhyOffset())
	require.Zero(t, s.ConfirmOffset())
	require.Zero(t, s.DispatchBehind())
	require.False(t, DefaultConfig().ReadUnCommitted, "Java's default")
}
