package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"rmqd/codec"
)

// Under SYNC_FLUSH the commitlog is written with pwrite and synced with
// fdatasync; the bytes, the blank records at file ends and the batches must be
// exactly those the mapped path writes, readable through the mapping at once
// and after a reopen in either mode.
func TestWriteThroughCommitLog(t *testing.T) {
	dir := t.TempDir()
	var images [2][][]byte
	for i, flush := range []string{AsyncFlush, SyncFlush} {
		cfg := testConfig(fmt.Sprintf("%s/%d", dir, i))
		cfg.MappedFileSizeCommitLog = 8192
		cfg.MappedFileSizeConsumeQueue = 20 * 10
		cfg.FlushDiskType = flush
		s := openStore(t, cfg)
		var batch []byte
		for k := range 3 {
			batch = codec.AppendBatchEntry(batch, int32(k), fmt.Appendf(nil, "b%d-%0900d", k, 0), "")
		}
		for k := range 30 {
			m := newMsg("W", 0, fmt.Sprintf("m%d-%0700d", k, 0), nil)
			m.BornTimestamp = 1 // the same bytes in both stores but for the store time
			r := s.PutMessage(context.Background(), m)
			require.Equal(t, PutOK, r.Status)
			if flush == SyncFlush {
				require.GreaterOrEqual(t, s.FlushedPhyOffset(), r.WroteOffset+int64(r.WroteBytes), "acked before flushed")
			}
			if k%10 == 9 {
				tmpl := newMsg("W", 0, "", nil)
				tmpl.BornTimestamp = 1
				require.Equal(t, PutOK, s.PutMessages(context.Background(), tmpl, batch, nil).Status)
			}
		}
		waitDispatched(t, s, "W", 0, 39)
		got := readAll(t, s, "W", 0)
		require.Len(t, got, 39)
		require.Equal(t, "b2", string(got[38].Body[:2]))
		files := s.commitLog.q.snapshot()
		require.Greater(t, len(files), 4)
		for _, f := range files {
			require.Equal(t, flush == SyncFlush, f.fd.Load() >= 0, "commitlog keeps its descriptor only when written through")
			img := append([]byte(nil), f.data[:f.wrote.Load()]...)
			images[i] = append(images[i], img)
		}
		for _, cq := range s.allCQs() {
			for _, f := range cq.q.snapshot() {
				require.Negative(t, f.fd.Load())
			}
		}
		require.NoError(t, s.Shutdown())
		for _, f := range files {
			require.Negative(t, f.fd.Load(), "closed with its mapping")
		}

		cfg.FlushDiskType = AsyncFlush
		s = openStore(t, cfg)
		require.Len(t, readAll(t, s, "W", 0), 39)
		require.NoError(t, s.Shutdown())

		// Reopened written through: loaded files hold no descriptor until the
		// tail takes its first append.
		cfg.FlushDiskType = SyncFlush
		s = openStore(t, cfg)
		loaded := s.commitLog.q.snapshot()
		for _, f := range loaded {
			require.Negative(t, f.fd.Load())
		}
		r := s.PutMessage(context.Background(), newMsg("W", 0, "after", nil))
		require.Equal(t, PutOK, r.Status)
		require.GreaterOrEqual(t, s.FlushedPhyOffset(), r.WroteOffset+int64(r.WroteBytes))
		tail := s.commitLog.q.findHeld(r.WroteOffset)
		require.GreaterOrEqual(t, tail.fd.Load(), int32(0))
		tail.release()
		require.Negative(t, loaded[0].fd.Load())
		waitDispatched(t, s, "W", 0, 40)
		require.Equal(t, "after", string(readAll(t, s, "W", 0)[39].Body))
		require.NoError(t, s.Shutdown())
	}
	// Same records at the same places; only STORETIMESTAMP may differ.
	require.Equal(t, len(images[0]), len(images[1]))
	for k := range images[0] {
		a, b := images[0][k], images[1][k]
		require.Equal(t, len(a), len(b), "file %d", k)
		for pos := 0; pos < len(a); {
			if codec.RecordMagic(a[pos:]) == codec.MagicBlank {
				require.Equal(t, a[pos:pos+8], b[pos:pos+8])
				break
			}
			var ma, mb codec.Message
			n, err := codec.DecodeRecord(a[pos:], &ma)
			require.NoError(t, err)
			_, err = codec.DecodeRecord(b[pos:], &mb)
			require.NoError(t, err)
			mb.StoreTimestamp = ma.StoreTimestamp
			require.Equal(t, ma, mb)
			pos += n
		}
	}
}

// A failed pwrite (here: a descriptor that cannot write) fails that put
// cleanly: nothing becomes visible, no queue offset is used, and the next put
// once the file is writable again lands where the failed one would have.
func TestWriteThroughFailedWriteLosesNothing(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.FlushDiskType = SyncFlush
	s := openStore(t, cfg)
	defer s.Shutdown()
	require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("F", 0, "one", nil)).Status)
	f := s.commitLog.q.last()
	end := s.MaxPhyOffset()

	ro, err := unix.Open(f.path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	s.commitLog.mu.Lock()
	rw := f.fd.Swap(int32(ro))
	s.commitLog.mu.Unlock()
	r := s.PutMessage(context.Background(), newMsg("F", 0, "two", nil))
	require.Equal(t, PutUnknownError, r.Status)
	require.Equal(t, end, s.MaxPhyOffset())

	s.commitLog.mu.Lock()
	f.fd.Store(rw)
	s.commitLog.mu.Unlock()
	require.NoError(t, unix.Close(ro))
	r = s.PutMessage(context.Background(), newMsg("F", 0, "three", nil))
	require.Equal(t, PutOK, r.Status)
	require.Equal(t, end, r.WroteOffset)
	require.EqualValues(t, 1, r.QueueOffset)
	waitDispatched(t, s, "F", 0, 2)
	got := readAll(t, s, "F", 0)
	require.Equal(t, "three", string(got[1].Body))
}
