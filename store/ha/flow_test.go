package ha

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/store"
)

// TestFlowWindows: a window takes at most the limit, the next one starts fresh, and the last whole second is
// what haStatus reports.
func TestFlowWindows(t *testing.T) {
	t0 := time.Unix(1000, 0)
	f := newFlow(func() int64 { return 10_000 }, t0)
	n, end := f.room(t0, 4096)
	require.Equal(t, 4096, n)
	require.Equal(t, t0.Add(time.Second), end)
	f.sent(4096)
	f.sent(4096)
	n, _ = f.room(t0.Add(100*time.Millisecond), 4096)
	require.Equal(t, 10_000-8192, n, "what the window has left")
	f.sent(n)
	n, _ = f.room(t0.Add(900*time.Millisecond), 4096)
	require.Zero(t, n, "the window is full")
	n, _ = f.room(t0.Add(time.Second), 4096)
	require.Equal(t, 4096, n, "a new window")
	require.EqualValues(t, 10_000, f.perSecond(t0.Add(time.Second)))
	require.Zero(t, f.perSecond(t0.Add(3*time.Second)), "an idle connection reports 0")

	free := newFlow(nil, t0)
	f.sent(1 << 30)
	n, _ = free.room(t0, 4096)
	require.Equal(t, 4096, n, "no limit")
}

// TestMasterFlowControl: with haFlowControlEnable the slave still gets every byte, in windows no larger than
// the limit (the master's per-second figure never exceeds it).
func TestMasterFlowControl(t *testing.T) {
	master := openStore(t, t.TempDir(), store.RoleAsyncMaster)
	cfg := testCfg()
	cfg.MaxTransferBytesPerSecond = 48 * 1024
	m := NewMaster(master, cfg)
	require.NoError(t, m.Start("127.0.0.1:0"))
	slave := openStore(t, t.TempDir(), store.RoleSlave)
	sl := NewSlave(slave, testCfg())
	sl.SetMasterAddr(m.Addr().String())
	sl.Start()
	waitSlaveSeen(t, m)

	put(t, master, 0, 200) // about 110 KiB: three windows at least
	deadline := time.Now().Add(20 * time.Second)
	var peak int64
	for slave.MaxPhyOffset() != master.MaxPhyOffset() && time.Now().Before(deadline) {
		if st := m.Status(); len(st) == 1 {
			peak = max(peak, st[0].BytesPerSecond)
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.Equal(t, master.MaxPhyOffset(), slave.MaxPhyOffset(), "every byte reached the slave")
	require.LessOrEqual(t, peak, cfg.MaxTransferBytesPerSecond)
	require.Positive(t, peak, "haStatus showed the transfer rate")
	require.NoError(t, sl.Close())
	require.NoError(t, m.Close())
	require.NoError(t, slave.Shutdown())
	require.NoError(t, master.Shutdown())
}
