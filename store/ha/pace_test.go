package ha

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/store"
)

// A master with nothing waiting for acks holds new bytes for AsyncFrameInterval
// after a frame: puts made one after another travel in a few frames, not one
// each, and the bytes are the master's.
func TestAsyncFramesCarrySeveralPuts(t *testing.T) {
	master := openStore(t, t.TempDir(), store.RoleAsyncMaster)
	defer master.Shutdown()
	put(t, master, 0, 1)
	cfg := testCfg()
	cfg.AsyncFrameInterval = time.Second // far above what ten puts take
	m := NewMaster(master, cfg)
	require.NoError(t, m.Start("127.0.0.1:0"))
	defer m.Close()
	nc, err := net.Dial("tcp", m.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	from := master.MaxPhyOffset()
	var rep [reportSize]byte
	binary.BigEndian.PutUint64(rep[:], uint64(from))
	_, err = nc.Write(rep[:])
	require.NoError(t, err)
	waitSlaveSeen(t, m)

	const puts = 10
	put(t, master, 1, 1+puts)
	end := master.MaxPhyOffset()
	var got bytes.Buffer
	frames := 0
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	for from+int64(got.Len()) < end {
		var hdr [headerSize]byte
		_, err := io.ReadFull(nc, hdr[:])
		require.NoError(t, err)
		off, size := int64(binary.BigEndian.Uint64(hdr[:])), int(binary.BigEndian.Uint32(hdr[8:]))
		require.Equal(t, from+int64(got.Len()), off)
		if size == 0 {
			continue // heartbeat
		}
		frames++
		_, err = io.CopyN(&got, nc, int64(size))
		require.NoError(t, err)
	}
	require.Less(t, frames, puts, "one frame per put")
	want := make([]byte, end-from)
	n, err := master.ReadCommitLog(want, from)
	require.NoError(t, err)
	require.Equal(t, want[:n], got.Bytes())
}

// Paced SYNC_MASTER frames (a least interval, and holding bytes for the ack of
// the frame before) still answer every put once the slave holds it, 64 in flight.
func TestSyncMasterPacedAnswers(t *testing.T) {
	master := openStore(t, t.TempDir(), store.RoleSyncMaster)
	defer master.Shutdown()
	cfg := testCfg()
	cfg.SyncFrameInterval, cfg.SyncAckHold = 500*time.Microsecond, 2*time.Millisecond
	m := NewMaster(master, cfg)
	require.NoError(t, m.Start("127.0.0.1:0"))
	defer m.Close()
	slave := openStore(t, t.TempDir(), store.RoleSlave)
	defer slave.Shutdown()
	sl := NewSlave(slave, testCfg())
	defer sl.Close()
	sl.SetMasterAddr(m.Addr().String())
	sl.Start()
	require.Eventually(t, func() bool { return len(m.Status()) == 1 && m.Status()[0].AckOffset >= 0 }, 5*time.Second, 5*time.Millisecond)

	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	var mu sync.Mutex
	var bad []store.PutResult
	for i := range 500 {
		sem <- struct{}{}
		wg.Add(1)
		master.PutMessageAsync(context.Background(), msg(i), func(r store.PutResult) {
			defer func() { <-sem; wg.Done() }()
			if r.Status != store.PutOK || slave.MaxPhyOffset() < r.WroteOffset+int64(r.WroteBytes) {
				mu.Lock()
				bad = append(bad, r)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Empty(t, bad, "puts not PutOK or answered before the slave held them")
	require.Equal(t, master.MaxPhyOffset(), slave.MaxPhyOffset())
	// The slave reports before it dispatches: its queues follow just after.
	require.Eventually(t, func() bool { return slave.MaxOffsetInQueue("T", 0) == master.MaxOffsetInQueue("T", 0) },
		5*time.Second, time.Millisecond, "dispatched on the slave")
}
