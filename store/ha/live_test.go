package ha

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/store"
)

// liveCfg is testCfg with the Tunables read from st's live snapshot (as
// cmd/rmqd wires them), starting from set.
func liveCfg(t *testing.T, st *store.DefaultStore, set func(c *store.Config)) Config {
	t.Helper()
	c := *st.LiveConfig()
	c.HaSendHeartbeatInterval, c.HaHousekeepingInterval, c.HaTransferBatchSize = 200, 2000, 4096
	c.HaFlowControlEnable, c.MaxHaTransferByteInSecond = false, 0
	if set != nil {
		set(&c)
	}
	st.ApplyLive(&c, "haSendHeartbeatInterval", "haHousekeepingInterval", "haTransferBatchSize",
		"haFlowControlEnable", "maxHaTransferByteInSecond")
	cfg := testCfg()
	cfg.Live = func() Tunables { return StoreTunables(st.LiveConfig()) }
	return cfg
}

// applyLive changes st's live HA settings as updateBrokerConfig does.
func applyLive(st *store.DefaultStore, key string, set func(c *store.Config)) {
	c := *st.LiveConfig()
	set(&c)
	st.ApplyLive(&c, key)
}

func bigMsg(n int) *codec.Message {
	return &codec.Message{Topic: "T", Body: bytes.Repeat([]byte{'b'}, n), BornTimestamp: time.Now().UnixMilli(),
		BornHost: netip.MustParseAddrPort("127.0.0.1:40000"), StoreHost: netip.MustParseAddrPort("127.0.0.1:10911")}
}

// fakeSlave dials m's HA port and reports offset 0 (an empty slave).
func fakeSlave(t *testing.T, m *Master) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", m.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	var rep [reportSize]byte
	_, err = nc.Write(rep[:])
	require.NoError(t, err)
	return nc
}

// readFrame reads one classic frame (bounded by a 10 s deadline): its offset and body size.
func readFrame(t *testing.T, nc net.Conn) (int64, int) {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var h [headerSize]byte
	_, err := io.ReadFull(nc, h[:])
	require.NoError(t, err)
	size := int(binary.BigEndian.Uint32(h[8:]))
	_, err = io.CopyN(io.Discard, nc, int64(size))
	require.NoError(t, err)
	return int64(binary.BigEndian.Uint64(h[:])), size
}

// readUntil reads frames until end is sent, returning the largest body.
func readUntil(t *testing.T, nc net.Conn, end int64) int {
	t.Helper()
	largest := 0
	for {
		off, n := readFrame(t, nc)
		largest = max(largest, n)
		if off+int64(n) >= end {
			return largest
		}
	}
}

// haTransferBatchSize: the running connection's next frames take the new size.
func TestLiveTransferBatchSize(t *testing.T) {
	st := openStore(t, t.TempDir(), store.RoleAsyncMaster)
	defer st.Shutdown()
	m := NewMaster(st, liveCfg(t, st, nil))
	require.NoError(t, m.Start("127.0.0.1:0"))
	defer m.Close()
	nc := fakeSlave(t, m)
	waitSlaveSeen(t, m)

	require.Equal(t, store.PutOK, st.PutMessage(context.Background(), bigMsg(12000)).Status)
	require.Equal(t, 4096, readUntil(t, nc, st.MaxPhyOffset()), "frames of haTransferBatchSize")

	applyLive(st, "haTransferBatchSize", func(c *store.Config) { c.HaTransferBatchSize = 32 * 1024 })
	require.Equal(t, store.PutOK, st.PutMessage(context.Background(), bigMsg(12000)).Status)
	require.Greater(t, readUntil(t, nc, st.MaxPhyOffset()), 4096, "the message in one frame after the update")
}

// idleLiveMaster is a master whose heartbeat and housekeeping intervals are an
// hour, read live from st, with a fake slave it has seen.
func idleLiveMaster(t *testing.T) (*store.DefaultStore, net.Conn) {
	st := openStore(t, t.TempDir(), store.RoleAsyncMaster)
	t.Cleanup(func() { _ = st.Shutdown() })
	m := NewMaster(st, liveCfg(t, st, func(c *store.Config) {
		c.HaSendHeartbeatInterval, c.HaHousekeepingInterval = 3600_000, 3600_000
	}))
	require.NoError(t, m.Start("127.0.0.1:0"))
	t.Cleanup(func() { _ = m.Close() })
	nc := fakeSlave(t, m)
	waitSlaveSeen(t, m)
	return st, nc
}

// haSendHeartbeatInterval on the master: an idle connection gets empty frames
// at the new interval without a reconnect.
func TestLiveMasterHeartbeat(t *testing.T) {
	st, nc := idleLiveMaster(t)

	applyLive(st, "haSendHeartbeatInterval", func(c *store.Config) { c.HaSendHeartbeatInterval = 50 })
	for range 3 { // with an hour's interval, readFrame's deadline would fail this
		_, n := readFrame(t, nc)
		require.Zero(t, n)
	}
}

// haHousekeepingInterval on the master: a silent slave is dropped after the
// new interval.
func TestLiveMasterHousekeeping(t *testing.T) {
	st, nc := idleLiveMaster(t)
	applyLive(st, "haHousekeepingInterval", func(c *store.Config) { c.HaHousekeepingInterval = 1000 })
	var rep [reportSize]byte
	_, err := nc.Write(rep[:]) // one more report: the master reads the new interval, then hears nothing
	require.NoError(t, err)
	require.True(t, readsEOF(nc), "the master kept a slave silent for longer than haHousekeepingInterval")
}

// haSendHeartbeatInterval and haHousekeepingInterval on the slave.
func TestLiveSlaveHeartbeatAndHousekeeping(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	slave := openStore(t, t.TempDir(), store.RoleSlave)
	defer slave.Shutdown()
	sl := NewSlave(slave, liveCfg(t, slave, func(c *store.Config) {
		c.HaSendHeartbeatInterval, c.HaHousekeepingInterval = 3600_000, 3600_000
	}))
	defer sl.Close()
	sl.SetMasterAddr(ln.Addr().String())
	sl.Start()
	nc, err := ln.Accept()
	require.NoError(t, err)
	defer nc.Close()
	var rep [reportSize]byte
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = io.ReadFull(nc, rep[:]) // the report on connect
	require.NoError(t, err)

	applyLive(slave, "haSendHeartbeatInterval", func(c *store.Config) { c.HaSendHeartbeatInterval = 50 })
	for range 3 { // with an hour's interval the deadline would fail this
		_, err = io.ReadFull(nc, rep[:])
		require.NoError(t, err)
	}

	applyLive(slave, "haHousekeepingInterval", func(c *store.Config) { c.HaHousekeepingInterval = 1000 })
	_, err = nc.Write(make([]byte, headerSize)) // an empty frame at 0: the slave reads the new interval
	require.NoError(t, err)
	require.True(t, readsEOF(nc), "the slave kept a silent master for longer than haHousekeepingInterval")
}

// haFlowControlEnable and maxHaTransferByteInSecond apply to the running
// connection: a slave held to 1 KiB/s catches up once the cap is raised, and
// again once flow control is turned off.
func TestLiveFlowControl(t *testing.T) {
	master := openStore(t, t.TempDir(), store.RoleAsyncMaster)
	defer master.Shutdown()
	m := NewMaster(master, liveCfg(t, master, func(c *store.Config) {
		c.HaFlowControlEnable, c.MaxHaTransferByteInSecond = true, 1024
	}))
	require.NoError(t, m.Start("127.0.0.1:0"))
	defer m.Close()
	slave := openStore(t, t.TempDir(), store.RoleSlave)
	defer slave.Shutdown()
	sl := NewSlave(slave, testCfg())
	defer sl.Close()
	sl.SetMasterAddr(m.Addr().String())
	sl.Start()
	waitSlaveSeen(t, m)

	put(t, master, 0, 50) // about 30 KiB: half a minute at 1 KiB/s
	require.Less(t, slave.MaxPhyOffset(), master.MaxPhyOffset())
	applyLive(master, "maxHaTransferByteInSecond", func(c *store.Config) { c.MaxHaTransferByteInSecond = 64 << 20 })
	waitCaughtUp(t, master, slave) // 10 s: far less than the old cap needs

	applyLive(master, "maxHaTransferByteInSecond", func(c *store.Config) { c.MaxHaTransferByteInSecond = 1024 })
	put(t, master, 50, 100)
	require.Less(t, slave.MaxPhyOffset(), master.MaxPhyOffset())
	applyLive(master, "haFlowControlEnable", func(c *store.Config) { c.HaFlowControlEnable = false })
	waitCaughtUp(t, master, slave)
}

// The live keys reach StoreTunables from the store's snapshot; a disabled flow
// control means no cap whatever the limit.
func TestStoreTunables(t *testing.T) {
	c := store.DefaultConfig()
	c.HaSendHeartbeatInterval, c.HaHousekeepingInterval, c.HaTransferBatchSize = 100, 900, 1<<30
	c.HaFlowControlEnable, c.MaxHaTransferByteInSecond = true, 5000
	got := Config{Live: func() Tunables { return StoreTunables(&c) }}
	tun := got.tun()
	require.Equal(t, Tunables{HeartbeatInterval: 100 * time.Millisecond, HousekeepingInterval: 900 * time.Millisecond,
		TransferBatchSize: maxFrameBody, MaxTransferBytesPerSecond: 5000}, tun)
	c.HaFlowControlEnable = false
	require.Zero(t, got.tun().MaxTransferBytesPerSecond)
	for _, k := range []string{"haSendHeartbeatInterval", "haHousekeepingInterval", "haTransferBatchSize",
		"haFlowControlEnable", "maxHaTransferByteInSecond"} {
		require.True(t, store.IsLiveKey(k), k)
	}
}
