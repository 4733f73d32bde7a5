package store

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// openHeldSyncFlush opens a SYNC_FLUSH store whose group flushes wait until
// release is called; entered receives when one is waiting. Cleanup releases
// the flush and shuts the store down, also when the test fails early.
func openHeldSyncFlush(t *testing.T, readUnCommitted bool) (s *DefaultStore, entered <-chan struct{}, release func()) {
	t.Helper()
	cfg := testConfig(t.TempDir())
	cfg.FlushDiskType = SyncFlush
	cfg.ReadUnCommitted = readUnCommitted
	s, err := Open(cfg, testLogger())
	require.NoError(t, err)
	in := make(chan struct{}, 1)
	gate := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	s.group.holdFlush = func() {
		signal(in)
		<-gate
	}
	t.Cleanup(func() {
		release()
		_ = s.Shutdown()
	})
	require.NoError(t, s.Start())
	return s, in, release
}

// Under SYNC_FLUSH a message is not in the consume queue (no consumer reads
// it, no held pull hears of it) before its flush: a crash cannot take back
// what a consumer read. The flush's completion dispatches it. Java's
// getReputEndOffset stops at CommitLog.getConfirmOffset, the flushed offset.
func TestSyncFlushDispatchWaitsForTheFlush(t *testing.T) {
	s, entered, release := openHeldSyncFlush(t, false)
	var arrived atomic.Int64
	s.SetArrivingListener(func(topic string, _ int32, logicOffset, _, _ int64, _ string) {
		if topic == "T" {
			arrived.Store(logicOffset)
		}
	})
	done := make(chan PutResult, 1)
	s.PutMessageAsync(context.Background(), newMsg("T", 0, "held", nil), func(r PutResult) { done <- r })
	select {
	case <-entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the group commit never flushed")
	}
	s.doReput() // whatever the dispatcher may dispatch now, it has
	require.EqualValues(t, 0, s.MaxOffsetInQueue("T", 0), "dispatched before its flush")
	require.EqualValues(t, 0, arrived.Load(), "a held pull heard of an unflushed message")
	require.Less(t, s.FlushedPhyOffset(), s.MaxPhyOffset())

	release()
	select {
	case r := <-done:
		require.Equal(t, PutOK, r.Status)
	case <-time.After(5 * time.Second):
		t.Fatal("put never answered")
	}
	waitDispatched(t, s, "T", 0, 1)
	require.Eventually(t, func() bool { return arrived.Load() == 1 }, 5*time.Second, time.Millisecond)
	require.Len(t, readAll(t, s, "T", 0), 1)
}

// readUnCommitted lifts the bound, as Java's getReputEndOffset does.
func TestSyncFlushReadUnCommittedDispatchesBeforeTheFlush(t *testing.T) {
	s, entered, _ := openHeldSyncFlush(t, true)
	done := make(chan PutResult, 1)
	s.PutMessageAsync(context.Background(), newMsg("T", 0, "held", nil), func(r PutResult) { done <- r })
	select {
	case <-entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the group commit never flushed")
	}
	waitDispatched(t, s, "T", 0, 1)
	require.Less(t, s.FlushedPhyOffset(), s.MaxPhyOffset())
}

// A put that does not wait for its flush (WAIT=false) under SYNC_FLUSH is
// still flushed soon (Java's GroupCommitService flushes every 10 ms), and
// dispatched only then: before, nothing flushed it until a waiting put came,
// and it was readable meanwhile.
func TestSyncFlushNoWaitPutIsFlushedThenDispatched(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.FlushDiskType = SyncFlush
	s := openStore(t, cfg)
	defer s.Shutdown()
	r := s.PutMessage(context.Background(), newMsg("T", 0, "nowait", map[string]string{codec.PropWait: "false"}))
	require.Equal(t, PutOK, r.Status)
	end := r.WroteOffset + int64(r.WroteBytes)
	for i := 0; s.MaxOffsetInQueue("T", 0) < 1; i++ {
		require.Less(t, i, 5000, "never dispatched")
		time.Sleep(time.Millisecond)
	}
	// Visible, so flushed (flushedWhere only grows: read after the queue).
	require.GreaterOrEqual(t, s.FlushedPhyOffset(), end, "dispatched before its flush")
}

// A SYNC_FLUSH slave flushes what it replicates (no put waits on it) and
// dispatches it once flushed.
func TestSyncFlushSlaveFlushesAndDispatchesReplicated(t *testing.T) {
	mcfg := testConfig(t.TempDir())
	master := openStore(t, mcfg)
	defer master.Shutdown()
	scfg := testConfig(t.TempDir())
	scfg.BrokerRole = RoleSlave
	scfg.FlushDiskType = SyncFlush
	slave := openStore(t, scfg)
	defer slave.Shutdown()
	const n = 50
	for i := 0; i < n; i++ {
		require.Equal(t, PutOK, master.PutMessage(context.Background(), newMsg("T", 0, "replicated", nil)).Status)
	}
	copyLog(t, master, slave, 1000) // frames that cut records
	require.Eventually(t, func() bool { return slave.FlushedPhyOffset() == slave.MaxPhyOffset() },
		5*time.Second, time.Millisecond, "replicated bytes never flushed")
	waitDispatched(t, slave, "T", 0, n)
	require.Equal(t, slave.MaxPhyOffset(), slave.DispatchedPhyOffset())
}

// Under SYNC_FLUSH what is written but not flushed is behind the flush, not
// behind dispatch: Java's dispatchBehindBytes (ReputMessageService.behind)
// counts from CommitLog.getConfirmOffset, the flushed offset there, so a
// held flush shows 0, not the unflushed bytes (a role change waiting for
// dispatch to catch up waited on the flush instead).
func TestSyncFlushDispatchBehindCountsFromTheFlush(t *testing.T) {
	s, entered, release := openHeldSyncFlush(t, false)
	done := make(chan PutResult, 1)
	s.PutMessageAsync(context.Background(), newMsg("T", 0, "held", nil), func(r PutResult) { done <- r })
	select {
	case <-entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the group commit never flushed")
	}
	s.doReput()
	require.Less(t, s.FlushedPhyOffset(), s.MaxPhyOffset())
	require.Zero(t, s.DispatchBehind())
	require.Zero(t, s.DispatchBehindBytes())
	require.Positive(t, s.FlushBehindBytes(), "the bytes wait for the flush")
	release()
	<-done
	require.Eventually(t, func() bool { return s.DispatchedPhyOffset() == s.MaxPhyOffset() }, 5*time.Second, time.Millisecond)
	require.Zero(t, s.DispatchBehind())
}
