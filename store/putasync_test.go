package store

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPutMessageAsyncSharesOneFlush(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.FlushDiskType = SyncFlush
	cfg.SyncFlushTimeout = 5000
	s := openStore(t, cfg)
	defer s.Shutdown()

	const n = 200
	var wg sync.WaitGroup
	var calls [n]atomic.Int32
	flushedAt := make([]int64, n)
	ends := make([]int64, n)
	wg.Add(n)
	// One caller issues every put: it never blocks, so the puts pile up and
	// share group commits instead of taking one msync each.
	for i := range n {
		s.PutMessageAsync(context.Background(), newMsg("T", 0, "body", nil), func(r PutResult) {
			require.Equal(t, PutOK, r.Status)
			ends[i] = r.WroteOffset + int64(r.WroteBytes)
			flushedAt[i] = s.FlushedPhyOffset()
			calls[i].Add(1)
			wg.Done()
		})
	}
	wg.Wait()
	rounds := map[int64]bool{}
	for i := range n {
		require.GreaterOrEqual(t, flushedAt[i], ends[i], "answered before its bytes were flushed")
		rounds[flushedAt[i]] = true
	}
	// Shared, not one each: how many share depends on how fast msync is
	// against the puts (CI under -race once saw 51 rounds for 200 puts).
	require.Less(t, len(rounds), n/2, "waiters must share msyncs")
	time.Sleep(50 * time.Millisecond)
	for i := range n {
		require.EqualValues(t, 1, calls[i].Load())
	}
}

func TestGroupCommitAsyncTimeoutOnce(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.FlushDiskType = SyncFlush
	s := openStore(t, cfg)
	defer s.Shutdown()

	// A group commit of its own that no service runs: only the timer answers.
	g := newGroupCommit(s)
	var calls atomic.Int32
	got := make(chan PutStatus, 2)
	g.waitAsync(1<<40, 20*time.Millisecond, func(st PutStatus) {
		calls.Add(1)
		got <- st
	})
	select {
	case st := <-got:
		require.Equal(t, PutFlushDiskTimeout, st)
	case <-time.After(5 * time.Second):
		t.Fatal("no timeout answer")
	}
	// The late group commit serves the same request: it must not answer twice.
	g.serve()
	require.Empty(t, g.reqs)
	require.EqualValues(t, 1, calls.Load())

	// Served first: the timer must not answer again.
	g.waitAsync(1<<40, 20*time.Millisecond, func(st PutStatus) { calls.Add(1) })
	g.serve()
	time.Sleep(60 * time.Millisecond)
	require.EqualValues(t, 2, calls.Load())
}

func TestPutMessageAsyncInlineWhenNoWait(t *testing.T) {
	for _, sync := range []bool{false, true} {
		cfg := testConfig(t.TempDir())
		props := map[string]string{"WAIT": "false"}
		if sync {
			cfg.FlushDiskType = SyncFlush
		}
		s := openStore(t, cfg)
		inline := false
		s.PutMessageAsync(context.Background(), newMsg("T", 0, "body", props), func(r PutResult) {
			require.Equal(t, PutOK, r.Status)
			inline = true
		})
		require.True(t, inline)
		require.NoError(t, s.Shutdown())
	}
}

func TestPutAsyncShutdownAnswersWaiters(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.FlushDiskType = SyncFlush
	cfg.SyncFlushTimeout = 60000
	s := openStore(t, cfg)

	// Waiters queued on a group commit whose service has stopped are answered by
	// Shutdown's final serve, not left to their timeout.
	got := make(chan PutStatus, 1)
	end := s.commitLog.q.maxOffset() + 1
	s.group.waitAsync(end, time.Minute, func(st PutStatus) { got <- st })
	require.NoError(t, s.Shutdown())
	select {
	case st := <-got:
		require.Equal(t, PutFlushDiskTimeout, st) // nothing reaches that offset
	case <-time.After(5 * time.Second):
		t.Fatal("pending waiter not answered by shutdown")
	}

	s2 := openStore(t, cfg)
	require.NoError(t, s2.Shutdown())
	closed := make(chan PutResult, 1)
	s2.PutMessagesAsync(context.Background(), newMsg("T", 1, "", nil), nil, func(p string) string { return p },
		func(r PutResult) { closed <- r })
	require.Equal(t, PutServiceNotAvailable, (<-closed).Status)
}
