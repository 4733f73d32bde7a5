package ha

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/store"
)

const fileSize = 64 * 1024

func testLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func openStore(t *testing.T, dir, role string) *store.DefaultStore {
	t.Helper()
	c := store.DefaultConfig()
	c.StorePathRootDir = dir
	c.MappedFileSizeCommitLog = fileSize
	c.MappedFileSizeConsumeQueue = 20 * 1000
	c.MaxHashSlotNum = 100
	c.MaxIndexNum = 400
	c.BrokerRole = role
	c.SyncFlushTimeout = 3000
	s, err := store.Open(c, testLogger())
	require.NoError(t, err)
	require.NoError(t, s.Start())
	return s
}

func testCfg() Config {
	return Config{HeartbeatInterval: 200 * time.Millisecond, HousekeepingInterval: 2 * time.Second,
		TransferBatchSize: 4096, Logger: testLogger()}
}

func msg(i int) *codec.Message {
	return &codec.Message{
		Topic: "T", QueueID: int32(i % 4), Body: bytes.Repeat([]byte{byte('a' + i%26)}, 300+i%500),
		Properties:    codec.FormatProperties(map[string]string{"KEYS": fmt.Sprint("k", i)}),
		BornTimestamp: time.Now().UnixMilli(),
		BornHost:      netip.MustParseAddrPort("127.0.0.1:40000"),
		StoreHost:     netip.MustParseAddrPort("127.0.0.1:10911"),
	}
}

func put(t *testing.T, s *store.DefaultStore, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		r := s.PutMessage(context.Background(), msg(i))
		require.Equal(t, store.PutOK, r.Status)
	}
}

func waitCaughtUp(t *testing.T, master, slave *store.DefaultStore) {
	t.Helper()
	require.Eventually(t, func() bool { return slave.MaxPhyOffset() == master.MaxPhyOffset() },
		10*time.Second, 5*time.Millisecond, "slave at %d, master at %d", slave.MaxPhyOffset(), master.MaxPhyOffset())
}

func waitSlaveSeen(t *testing.T, m *Master) {
	t.Helper()
	require.Eventually(t, func() bool {
		st := m.Status()
		return len(st) == 1 && st[0].TransferredOffset >= 0
	}, 5*time.Second, time.Millisecond)
}

func sameFiles(t *testing.T, mdir, sdir string) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(mdir, "commitlog"))
	require.NoError(t, err)
	for _, e := range ents {
		a, err := os.ReadFile(filepath.Join(mdir, "commitlog", e.Name()))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(sdir, "commitlog", e.Name()))
		require.NoError(t, err, e.Name())
		require.True(t, bytes.Equal(a, b), "commitlog file %s differs", e.Name())
	}
}

func TestMasterToSlaveOverLoopback(t *testing.T) {
	mdir, sdir := t.TempDir(), t.TempDir()
	master := openStore(t, mdir, store.RoleAsyncMaster)
	m := NewMaster(master, testCfg())
	require.NoError(t, m.Start("127.0.0.1:0"))

	slave := openStore(t, sdir, store.RoleSlave)
	sl := NewSlave(slave, testCfg())
	sl.SetMasterAddr(m.Addr().String())
	sl.Start()
	// An empty slave starts at the master's last file: let it report before the load.
	waitSlaveSeen(t, m)

	put(t, master, 0, 200) // several files: file-end blanks travel too
	waitCaughtUp(t, master, slave)

	// The slave stopped and restarted mid-stream resumes from its own end.
	require.NoError(t, sl.Close())
	require.NoError(t, slave.Shutdown())
	put(t, master, 200, 400)
	slave = openStore(t, sdir, store.RoleSlave)
	sl = NewSlave(slave, testCfg())
	sl.SetMasterAddr(m.Addr().String())
	sl.Start()
	put(t, master, 400, 500)
	waitCaughtUp(t, master, slave)
	require.Eventually(t, func() bool { return slave.DispatchedPhyOffset() == slave.MaxPhyOffset() }, 5*time.Second, 5*time.Millisecond)
	var total int64
	for q := int32(0); q < 4; q++ {
		total += slave.MaxOffsetInQueue("T", q)
	}
	require.EqualValues(t, 500, total, "every record dispatched once on the slave")
	require.Eventually(t, func() bool { return master.SlaveAckedOffset() == master.MaxPhyOffset() }, 5*time.Second, 5*time.Millisecond)
	require.Len(t, m.Status(), 1)
	info := m.RuntimeInfo(1 << 30)
	require.True(t, info.Master)
	require.Equal(t, 1, info.InSyncSlaveNums)
	require.Len(t, info.HaConnectionInfo, 1)
	require.Zero(t, info.HaConnectionInfo[0].Diff)
	ci := sl.RuntimeInfo().HaClientRuntimeInfo
	require.True(t, ci.Activated)
	require.Equal(t, m.Addr().String(), ci.MasterAddr)
	require.Equal(t, slave.MaxPhyOffset(), ci.MaxOffset)

	require.NoError(t, sl.Close())
	require.NoError(t, m.Close())
	require.NoError(t, slave.Shutdown())
	require.NoError(t, master.Shutdown())
	sameFiles(t, mdir, sdir)
}

func TestSyncMasterAnswersAfterSlaveAck(t *testing.T) {
	master := openStore(t, t.TempDir(), store.RoleSyncMaster)
	defer master.Shutdown()
	m := NewMaster(master, testCfg())
	require.NoError(t, m.Start("127.0.0.1:0"))
	defer m.Close()

	r := master.PutMessage(context.Background(), msg(0))
	require.Equal(t, store.PutSlaveNotAvailable, r.Status, "no slave yet")

	slave := openStore(t, t.TempDir(), store.RoleSlave)
	defer slave.Shutdown()
	sl := NewSlave(slave, testCfg())
	defer sl.Close()
	sl.SetMasterAddr(m.Addr().String())
	sl.Start()
	require.Eventually(t, func() bool { return len(m.Status()) == 1 && m.Status()[0].AckOffset >= 0 }, 5*time.Second, 5*time.Millisecond)

	for i := 1; i < 100; i++ {
		done := make(chan store.PutResult, 1)
		master.PutMessageAsync(context.Background(), msg(i), func(r store.PutResult) { done <- r })
		r := <-done
		require.Equal(t, store.PutOK, r.Status)
		require.GreaterOrEqual(t, slave.MaxPhyOffset(), r.WroteOffset+int64(r.WroteBytes), "answered before the slave held it")
	}
}

func TestEmptySlaveStartsAtMastersLastFile(t *testing.T) {
	master := openStore(t, t.TempDir(), store.RoleAsyncMaster)
	defer master.Shutdown()
	put(t, master, 0, 300)
	m := NewMaster(master, testCfg())
	require.NoError(t, m.Start("127.0.0.1:0"))
	defer m.Close()

	// A raw Java-style slave: report 0, read one frame.
	nc, err := net.Dial("tcp", m.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	var rep [8]byte
	_, err = nc.Write(rep[:])
	require.NoError(t, err)
	var hdr [12]byte
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.ReadFull(nc, hdr[:])
	require.NoError(t, err)
	max := master.MaxPhyOffset()
	require.EqualValues(t, max-max%fileSize, binary.BigEndian.Uint64(hdr[:]))
	require.Greater(t, max-max%fileSize, int64(0))
}

func TestMasterRefusesSlaveAhead(t *testing.T) {
	master := openStore(t, t.TempDir(), store.RoleSyncMaster)
	defer master.Shutdown()
	m := NewMaster(master, testCfg())
	require.NoError(t, m.Start("127.0.0.1:0"))
	defer m.Close()
	nc, err := net.Dial("tcp", m.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	var rep [8]byte
	binary.BigEndian.PutUint64(rep[:], 1<<30)
	_, err = nc.Write(rep[:])
	require.NoError(t, err)
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = nc.Read(rep[:])
	require.ErrorIs(t, err, io.EOF, "the master closes on a slave ahead of it")
	require.Zero(t, master.SlaveAckedOffset(), "its ack counts for nothing")
}

func TestSlaveDropsMalformedFrames(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	slave := openStore(t, t.TempDir(), store.RoleSlave)
	defer slave.Shutdown()
	sl := NewSlave(slave, testCfg())
	defer sl.Close()
	sl.SetMasterAddr(ln.Addr().String())
	sl.Start()

	for _, frame := range [][]byte{
		{0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff},    // negative size
		{0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0, 0, 0},             // 2 GiB body
		{0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 3, 'a', 'b', 'c'}, // not on a file boundary for an empty slave
	} {
		nc, err := ln.Accept()
		require.NoError(t, err)
		var rep [8]byte
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		_, err = io.ReadFull(nc, rep[:])
		require.NoError(t, err)
		_, _ = nc.Write(frame)
		// The slave hangs up (and redials after its retry wait).
		_, err = io.ReadAll(nc)
		require.NoError(t, err)
		_ = nc.Close()
		require.Zero(t, slave.MaxPhyOffset())
		if testing.Short() {
			break
		}
	}
}

func TestMasterClampsAcksToWhatItSent(t *testing.T) {
	master := openStore(t, t.TempDir(), store.RoleAsyncMaster)
	defer master.Shutdown()
	put(t, master, 0, 1)
	m := NewMaster(master, testCfg())
	require.NoError(t, m.Start("127.0.0.1:0"))
	defer m.Close()
	nc, err := net.Dial("tcp", m.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	var rep [8]byte
	_, err = nc.Write(rep[:]) // empty slave
	require.NoError(t, err)
	hdr := make([]byte, 12)
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.ReadFull(nc, hdr)
	require.NoError(t, err)
	body := make([]byte, binary.BigEndian.Uint32(hdr[8:]))
	_, err = io.ReadFull(nc, body)
	require.NoError(t, err)
	sent := master.MaxPhyOffset()
	binary.BigEndian.PutUint64(rep[:], uint64(sent+1<<20)) // a lie
	_, err = nc.Write(rep[:])
	require.NoError(t, err)
	require.Eventually(t, func() bool { return master.SlaveAckedOffset() == sent }, 5*time.Second, 5*time.Millisecond)
	require.Never(t, func() bool { return master.SlaveAckedOffset() > sent }, 100*time.Millisecond, 10*time.Millisecond)
}

func TestEmptySlaveJoiningLateServesTheTail(t *testing.T) {
	master := openStore(t, t.TempDir(), store.RoleAsyncMaster)
	defer master.Shutdown()
	put(t, master, 0, 300) // several files before the slave exists
	m := NewMaster(master, testCfg())
	require.NoError(t, m.Start("127.0.0.1:0"))
	defer m.Close()
	slave := openStore(t, t.TempDir(), store.RoleSlave)
	defer slave.Shutdown()
	sl := NewSlave(slave, testCfg())
	defer sl.Close()
	sl.SetMasterAddr(m.Addr().String())
	sl.Start()
	put(t, master, 300, 320)
	waitCaughtUp(t, master, slave)
	require.Greater(t, slave.MinPhyOffset(), int64(0), "only the master's last file and what followed")
	for _, st := range []*store.DefaultStore{master, slave} {
		require.Eventually(t, func() bool { return st.DispatchedPhyOffset() == st.MaxPhyOffset() }, 5*time.Second, 5*time.Millisecond)
	}
	for q := int32(0); q < 4; q++ {
		require.EqualValues(t, 80, master.MaxOffsetInQueue("T", q))
		require.Equal(t, master.MaxOffsetInQueue("T", q), slave.MaxOffsetInQueue("T", q))
		last := slave.MaxOffsetInQueue("T", q) - 1
		r := slave.GetMessage("G", "T", q, last, 1, 1<<20, nil)
		require.Equal(t, store.GetFound, r.Status, "queue %d offset %d", q, last)
		require.Len(t, r.Records, 1)
		r.Release()
	}
}
