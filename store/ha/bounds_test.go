package ha

import (
	"io"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/store"
)

// Peers cycling connections under new broker ids: one listener call at a
// time, no goroutine per wanted set, nothing left of the ids once their
// connections are gone, and Close does not wait for a backlog.
func TestAutoSwitchWantedSetsCoalesce(t *testing.T) {
	mdir := t.TempDir()
	master := openStore(t, mdir, store.RoleAsyncMaster)
	defer master.Shutdown()
	cfg := autoCfg(mdir, 1)
	a, err := NewAutoSwitch(master, cfg)
	require.NoError(t, err)
	defer a.Close()
	var inCall, most, calls atomic.Int32
	var last atomic.Pointer[[]int64]
	a.OnSyncStateSetChange(func(s []int64) {
		most.Store(max(most.Load(), inCall.Add(1)))
		calls.Add(1)
		last.Store(&s)
		time.Sleep(20 * time.Millisecond) // a controller round trip
		inCall.Add(-1)
	})
	require.NoError(t, a.ChangeToMaster(1, 1, []int64{1}))
	put(t, master, 0, 10)
	g0 := runtime.NumGoroutine()
	const n = 300
	for i := 0; i < n; i++ {
		nc, err := net.Dial("tcp", a.Addr().String())
		require.NoError(t, err)
		_, _ = nc.Write(AppendSlaveHandshake(nil, SlaveHandshake{BrokerID: int64(1000 + i)}))
		_, _ = nc.Write(AppendSlaveReport(nil, master.MaxPhyOffset()))
		var b [masterHandshakeSize]byte
		_, _ = io.ReadFull(nc, b[:])
		_ = nc.Close()
	}
	require.Eventually(t, func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(a.conns) == 0 && len(a.caughtUp) == 0 && len(a.remote) <= 1
	}, 10*time.Second, 10*time.Millisecond, "the ids of gone connections are forgotten")
	require.Eventually(t, func() bool { return runtime.NumGoroutine() <= g0+5 }, 10*time.Second, 10*time.Millisecond,
		"goroutines %d, %d before", runtime.NumGoroutine(), g0)
	require.Eventually(t, func() bool { p := last.Load(); return p != nil && len(*p) == 1 && (*p)[0] == 1 },
		10*time.Second, 10*time.Millisecond, "the latest wanted set is the master alone")
	require.EqualValues(t, 1, most.Load(), "one listener call at a time")
	require.Less(t, calls.Load(), int32(2*n), "at most one wanted set per connection and its close")
	done := make(chan struct{})
	go func() { _ = a.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waits for a backlog of listener calls")
	}
}

// A peer claiming an in-sync slave's id neither holds the confirm offset
// back nor takes the slave out of the sync state set when it hangs up.
func TestAutoSwitchImpostorOfInSyncSlave(t *testing.T) {
	mdir, sdir := t.TempDir(), t.TempDir()
	master := openStore(t, mdir, store.RoleAsyncMaster)
	defer master.Shutdown()
	mcfg := autoCfg(mdir, 1)
	mcfg.AllAckInSyncStateSet = true
	mcfg.HousekeepingInterval = time.Minute // the impostor stays
	a, wanted := newAuto(t, master, mcfg)
	defer a.Close()
	require.NoError(t, a.ChangeToMaster(3, 1, []int64{1}))
	slave := openStore(t, sdir, store.RoleSlave)
	defer slave.Shutdown()
	b, _ := newAuto(t, slave, autoCfg(sdir, 2))
	defer b.Close()
	require.NoError(t, b.ChangeToSlave(a.Addr().String(), 3, 2))
	put(t, master, 0, 20)
	waitWanted(t, wanted, []int64{1, 2})
	a.SetSyncStateSet([]int64{1, 2}, 2)
	require.Eventually(t, func() bool { return a.ConfirmOffset() == master.MaxPhyOffset() }, 10*time.Second, 5*time.Millisecond)

	nc, err := net.Dial("tcp", a.Addr().String())
	require.NoError(t, err)
	go func() { _, _ = io.Copy(io.Discard, nc) }()
	_, _ = nc.Write(AppendSlaveHandshake(nil, SlaveHandshake{BrokerID: 2}))
	_, _ = nc.Write(AppendSlaveReport(nil, 1))
	require.Eventually(t, func() bool {
		for _, c := range a.Status().HaConnectionInfo {
			if c.SlaveAckOffset == 1 {
				return true
			}
		}
		return false
	}, 10*time.Second, 5*time.Millisecond, "the impostor's report is taken")
	put(t, master, 20, 40)
	require.Eventually(t, func() bool { return a.ConfirmOffset() == master.MaxPhyOffset() && queueTotal(master) == 40 },
		10*time.Second, 5*time.Millisecond, "confirm %d, end %d", a.ConfirmOffset(), master.MaxPhyOffset())

	_ = nc.Close()
	require.Eventually(t, func() bool { return len(a.Status().HaConnectionInfo) == 1 }, 10*time.Second, 5*time.Millisecond)
	a.mu.Lock()
	syncing := a.syncing
	a.mu.Unlock()
	require.False(t, syncing, "no shrink asked while slave 2 is connected")
	set, _ := a.SyncStateSet()
	require.Equal(t, []int64{1, 2}, set)
	select {
	case got := <-wanted:
		t.Fatalf("wanted %v after the impostor hung up", got)
	default:
	}
}
