package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// copyLog replicates master into slave the way store/ha does: frames of at most
// batch bytes read from the slave's end.
func copyLog(t *testing.T, master, slave *DefaultStore, batch int) {
	t.Helper()
	buf := make([]byte, batch)
	for i := 0; i < 100000; i++ {
		from := slave.MaxPhyOffset()
		n, err := master.ReadCommitLog(buf, from)
		require.NoError(t, err)
		if n == 0 {
			return
		}
		require.NoError(t, slave.AppendCommitLog(from, buf[:n]))
		slave.DispatchReplicated()
	}
	t.Fatal("copy did not end")
}

// Both ways into a slave's commitlog: in place through the mapping, and written
// through (pwrite) under SYNC_FLUSH.
func TestReplicatedCommitLogIsByteIdenticalAndDispatched(t *testing.T) {
	for _, wt := range []string{"false", "true"} {
		t.Run("writeThrough="+wt, func(t *testing.T) { testReplicated(t, wt) })
	}
}

func testReplicated(t *testing.T, writeThrough string) {
	mcfg := testConfig(t.TempDir())
	mcfg.MappedFileSizeCommitLog = 64 * 1024
	master := openStore(t, mcfg)
	defer master.Shutdown()
	scfg := testConfig(t.TempDir())
	scfg.MappedFileSizeCommitLog = mcfg.MappedFileSizeCommitLog
	scfg.BrokerRole = RoleSlave
	scfg.CommitLogWriteThrough = writeThrough
	slave := openStore(t, scfg)
	defer slave.Shutdown()
	if writeThrough == "true" {
		dst, err := slave.ReplicaTarget(0, 1)
		require.NoError(t, err)
		require.Nil(t, dst, "a written-through log takes no bytes in place")
	}

	body := bytes.Repeat([]byte("x"), 700)
	const n = 300 // about 3.5 files: blanks at every file end travel too
	for i := range n {
		r := master.PutMessage(context.Background(), newMsg("T", int32(i%2), string(body)+fmt.Sprint(i), map[string]string{"KEYS": fmt.Sprint("k", i)}))
		require.Equal(t, PutOK, r.Status)
	}
	copyLog(t, master, slave, 5000)
	require.Equal(t, master.MaxPhyOffset(), slave.MaxPhyOffset())

	// Every queue is rebuilt by the slave's own dispatch.
	require.Eventually(t, func() bool { return slave.DispatchedPhyOffset() == slave.MaxPhyOffset() }, 5*time.Second, 5*time.Millisecond)
	for q := int32(0); q < 2; q++ {
		require.EqualValues(t, n/2, slave.MaxOffsetInQueue("T", q))
	}
	_, found, _, _ := slave.QueryMessage("T", "k7", 4, 1<<20, 0, time.Now().UnixMilli()+1000)
	require.Equal(t, 1, found)

	require.NoError(t, master.Shutdown())
	require.NoError(t, slave.Shutdown())
	mdir, sdir := filepath.Join(mcfg.StorePathRootDir, "commitlog"), filepath.Join(scfg.StorePathRootDir, "commitlog")
	ents, err := os.ReadDir(mdir)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(ents), 4)
	for _, e := range ents {
		a, err := os.ReadFile(filepath.Join(mdir, e.Name()))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(sdir, e.Name()))
		require.NoError(t, err, e.Name())
		require.True(t, bytes.Equal(a, b), "file %s differs", e.Name())
	}
}

func TestAppendCommitLogRefusesAGap(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.BrokerRole = RoleSlave
	s := openStore(t, cfg)
	defer s.Shutdown()
	// An empty slave starts only on a file boundary.
	require.True(t, errors.Is(s.AppendCommitLog(100, []byte("abc")), ErrNotAtEnd))
	from := int64(cfg.MappedFileSizeCommitLog) * 3
	require.NoError(t, s.AppendCommitLog(from, []byte("abc")))
	require.Equal(t, from+3, s.MaxPhyOffset())
	require.True(t, errors.Is(s.AppendCommitLog(from+4, []byte("d")), ErrNotAtEnd))
	require.True(t, errors.Is(s.AppendCommitLog(from+2, []byte("d")), ErrNotAtEnd))
	// Nothing may run past the file's end.
	big := make([]byte, cfg.MappedFileSizeCommitLog)
	require.True(t, errors.Is(s.AppendCommitLog(from+3, big), ErrNotAtEnd))
}

func TestSyncMasterWaitsForSlaveAck(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.BrokerRole = RoleSyncMaster
	// The slave wait is slaveTimeout's, not syncFlushTimeout's (which bounds
	// only the disk flush), as CommitLog.handleHA.
	cfg.SlaveTimeout = 200
	cfg.SyncFlushTimeout = 60000
	s := openStore(t, cfg)
	defer s.Shutdown()
	require.True(t, s.SyncFlush(), "a SYNC_MASTER's puts take the asynchronous path")

	got := make(chan PutResult, 4)
	put := func(props map[string]string) {
		s.PutMessageAsync(context.Background(), newMsg("T", 0, "b", props), func(r PutResult) { got <- r })
	}
	// No slave: stored, answered SLAVE_NOT_AVAILABLE at once.
	put(nil)
	require.Equal(t, PutSlaveNotAvailable, (<-got).Status)

	s.SlaveConnected(1)
	s.SlaveAcked(s.MaxPhyOffset())
	put(nil)
	select {
	case r := <-got:
		t.Fatalf("answered %v before the slave acked", r.Status)
	case <-time.After(30 * time.Millisecond):
	}
	s.SlaveAcked(s.MaxPhyOffset())
	require.Equal(t, PutOK, (<-got).Status)

	// WAIT=false does not wait for anyone.
	put(map[string]string{"WAIT": "false"})
	require.Equal(t, PutOK, (<-got).Status)

	// A slave that never acks: FLUSH_SLAVE_TIMEOUT after slaveTimeout.
	put(nil)
	select {
	case r := <-got:
		require.Equal(t, PutFlushSlaveTimeout, r.Status)
	case <-time.After(10 * time.Second):
		t.Fatal("no FLUSH_SLAVE_TIMEOUT within 10 s of a 200 ms slaveTimeout")
	}
	s.replicas.mu.Lock()
	require.Empty(t, s.replicas.reqs)
	s.replicas.mu.Unlock()

	// Too far behind (haMaxGapNotInSync): SLAVE_NOT_AVAILABLE.
	c := s.cfg
	c.HaMaxGapNotInSync = 10
	s.ApplyLive(&c, "haMaxGapNotInSync")
	put(nil)
	require.Equal(t, PutSlaveNotAvailable, (<-got).Status)

	// The blocking put waits the same way.
	c.HaMaxGapNotInSync = 1 << 30
	s.ApplyLive(&c, "haMaxGapNotInSync")
	s.SlaveAcked(s.MaxPhyOffset())
	before := s.MaxPhyOffset()
	done := make(chan PutStatus, 1)
	go func() { done <- s.PutMessage(context.Background(), newMsg("T", 0, "b", nil)).Status }()
	require.Eventually(t, func() bool { return s.MaxPhyOffset() > before }, time.Second, time.Millisecond)
	s.SlaveAcked(s.MaxPhyOffset())
	require.Equal(t, PutOK, <-done)
}
