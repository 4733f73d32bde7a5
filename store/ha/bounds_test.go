package ha

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
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
	cfg.MaxConnectionsPerIP = 1000 // the cycles outrun the server noticing each close
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

// readsEOF says whether the master closed nc (within 10 s).
func readsEOF(nc net.Conn) bool {
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, nc)
	var ne net.Error
	return err == nil || !(errors.As(err, &ne) && ne.Timeout())
}

// The HA port holds a bounded number of connections, in all and per IP, and
// drops one that sends nothing.
func TestHAConnectionLimits(t *testing.T) {
	for _, mode := range []string{"classic", "auto"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			st := openStore(t, dir, store.RoleAsyncMaster)
			defer st.Shutdown()
			cfg := testCfg()
			cfg.MaxConnections, cfg.MaxConnectionsPerIP = 5, 3
			cfg.FirstFrameTimeout = 100 * time.Millisecond
			var addr string
			var count func() int
			if mode == "classic" {
				m := NewMaster(st, cfg)
				require.NoError(t, m.Start("127.0.0.1:0"))
				defer m.Close()
				addr, count = m.Addr().String(), func() int { return len(m.Status()) }
			} else {
				acfg := autoCfg(dir, 1)
				acfg.Config = cfg
				a, _ := newAuto(t, st, acfg)
				defer a.Close()
				require.NoError(t, a.ChangeToMaster(1, 1, []int64{1}))
				addr, count = a.Addr().String(), func() int { return len(a.Status().HaConnectionInfo) }
			}
			put(t, st, 0, 10)
			hello := func(nc net.Conn, id int64) {
				if mode == "classic" {
					var b [8]byte
					binary.BigEndian.PutUint64(b[:], uint64(st.MaxPhyOffset()))
					_, _ = nc.Write(b[:])
				} else {
					_, _ = nc.Write(AppendSlaveHandshake(nil, SlaveHandshake{BrokerID: id}))
					_, _ = nc.Write(AppendSlaveReport(nil, st.MaxPhyOffset()))
				}
			}
			dial := func(local string) net.Conn {
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
				nc, err := d.Dial("tcp", addr)
				require.NoError(t, err)
				t.Cleanup(func() { _ = nc.Close() })
				return nc
			}
			// Per IP: three of five from 127.0.0.1 stay.
			var kept []net.Conn
			for i := 0; i < 5; i++ {
				nc := dial("127.0.0.1")
				hello(nc, int64(10+i))
				kept = append(kept, nc)
				if i < 3 {
					require.Eventually(t, func() bool { return count() == i+1 }, 10*time.Second, 5*time.Millisecond)
				}
			}
			require.True(t, readsEOF(kept[3]), "the fourth from one IP is closed")
			require.True(t, readsEOF(kept[4]), "the fifth from one IP is closed")
			require.Equal(t, 3, count())
			// In all: two more from 127.0.0.2, then none.
			for i := 0; i < 2; i++ {
				hello(dial("127.0.0.2"), int64(20+i))
			}
			require.Eventually(t, func() bool { return count() == 5 }, 10*time.Second, 5*time.Millisecond)
			extra := dial("127.0.0.3")
			hello(extra, 30)
			require.True(t, readsEOF(extra), "a sixth connection is closed")
			// A freed place is taken again.
			_ = kept[0].Close()
			require.Eventually(t, func() bool { return count() == 4 }, 10*time.Second, 5*time.Millisecond)
			again := dial("127.0.0.1")
			hello(again, 40)
			require.Eventually(t, func() bool { return count() == 5 }, 10*time.Second, 5*time.Millisecond)
			// A connection that sends nothing is dropped well before the
			// housekeeping interval; its place is free again.
			_ = again.Close()
			require.Eventually(t, func() bool { return count() == 4 }, 10*time.Second, 5*time.Millisecond)
			silent := dial("127.0.0.4")
			require.True(t, readsEOF(silent), "a silent connection is closed")
			require.Eventually(t, func() bool { return count() == 4 }, 10*time.Second, 5*time.Millisecond)
		})
	}
}

// A forged classic master cannot make an empty slave start its log at a
// negative offset or inside a file.
func TestEmptySlaveRefusesOffsetsNoMasterSends(t *testing.T) {
	for _, off := range []int64{-fileSize * 4, -1, fileSize + 100} {
		sdir := t.TempDir()
		slave := openStore(t, sdir, store.RoleSlave)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		gone := make(chan struct{})
		go func() {
			defer close(gone)
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			defer nc.Close()
			var b [8]byte
			_, _ = io.ReadFull(nc, b[:])
			f := make([]byte, headerSize+100)
			binary.BigEndian.PutUint64(f, uint64(off))
			binary.BigEndian.PutUint32(f[8:], 100)
			_, _ = nc.Write(f)
			_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, _ = io.Copy(io.Discard, nc) // until the slave hangs up
		}()
		s := NewSlave(slave, testCfg())
		s.SetMasterAddr(ln.Addr().String())
		s.Start()
		<-gone
		require.Zero(t, slave.MaxPhyOffset(), "frame at %d", off)
		ents, err := os.ReadDir(filepath.Join(sdir, "commitlog"))
		if !errors.Is(err, os.ErrNotExist) {
			require.NoError(t, err)
		}
		for _, e := range ents {
			require.NotContains(t, e.Name(), "-")
		}
		require.NoError(t, s.Close())
		_ = ln.Close()
		require.NoError(t, slave.Shutdown())
	}
}

// forgedAutoMaster answers one slave's handshake with hs, then sends frames
// and reads until the slave hangs up; the returned channel closes then.
func forgedAutoMaster(t *testing.T, hs MasterHandshake, frames ...[]byte) (string, <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		var b [slaveHandshakeSize]byte
		if _, err := io.ReadFull(nc, b[:]); err != nil {
			return
		}
		_, _ = nc.Write(AppendMasterHandshake(nil, hs))
		for _, f := range frames {
			if _, err := nc.Write(f); err != nil {
				return
			}
		}
		_ = nc.SetReadDeadline(time.Now().Add(20 * time.Second))
		_, _ = io.Copy(io.Discard, nc)
	}()
	return ln.Addr().String(), gone
}

func transferFrame(h TransferHeader, body []byte) []byte {
	h.BodySize = int32(len(body))
	f := make([]byte, masterTransferSize, masterTransferSize+len(body))
	PutTransferHeader(f, h)
	return append(f, body...)
}

// A forged master's empty frames, each a new epoch further on, add no epoch
// entry; the epoch holding a frame is taken.
func TestAutoSlaveTakesOnlyEpochsHoldingTheFrame(t *testing.T) {
	sdir := t.TempDir()
	slave := openStore(t, sdir, store.RoleSlave)
	defer slave.Shutdown()
	b, _ := newAuto(t, slave, autoCfg(sdir, 2))
	defer b.Close()
	const n = 1000
	var frames [][]byte
	for i := 1; i <= n; i++ {
		frames = append(frames, transferFrame(TransferHeader{Epoch: int32(i), EpochStartOffset: int64(i) << 40}, nil))
	}
	frames = append(frames, transferFrame(TransferHeader{Epoch: n + 1, EpochStartOffset: 0}, nil))
	addr, _ := forgedAutoMaster(t, MasterHandshake{}, frames...)
	require.NoError(t, b.ChangeToSlave(addr, 1, 2))
	require.Eventually(t, func() bool { return b.Epochs().Len() > 0 }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, []EpochEntry{{Epoch: n + 1, StartOffset: 0, EndOffset: 1<<63 - 1}}, b.Epochs().Entries())
	fi, err := os.Stat(EpochFilePath(sdir))
	require.NoError(t, err)
	require.Less(t, fi.Size(), int64(100))
}

// A controller-mode slave refuses a handshake whose epochs do not increase
// within the master's log, a start outside a file for its empty log, and,
// with allAckInSyncStateSet, a cut below what its consumers saw.
func TestAutoSlaveRefusesForgedHandshakes(t *testing.T) {
	mdir, sdir := t.TempDir(), t.TempDir()
	master := openStore(t, mdir, store.RoleAsyncMaster)
	defer master.Shutdown()
	mcfg := autoCfg(mdir, 1)
	mcfg.AllAckInSyncStateSet = true
	a, wanted := newAuto(t, master, mcfg)
	defer a.Close()
	require.NoError(t, a.ChangeToMaster(1, 1, []int64{1}))
	slave := openStore(t, sdir, store.RoleSlave)
	defer slave.Shutdown()
	scfg := autoCfg(sdir, 2)
	scfg.AllAckInSyncStateSet = true
	b, _ := newAuto(t, slave, scfg)
	defer b.Close()
	require.NoError(t, b.ChangeToSlave(a.Addr().String(), 1, 2))
	put(t, master, 0, 100)
	waitWanted(t, wanted, []int64{1, 2})
	a.SetSyncStateSet([]int64{1, 2}, 2)
	waitCaughtUp(t, master, slave)
	require.Eventually(t, func() bool { return queueTotal(slave) == 100 }, 10*time.Second, 5*time.Millisecond)
	end := slave.MaxPhyOffset()
	require.NoError(t, a.Close())

	for _, hs := range []MasterHandshake{
		{MaxOffset: 0, LastEpoch: 1, Entries: []EpochEntry{{Epoch: 1, StartOffset: 0}}},                                // below the confirm offset
		{MaxOffset: end, LastEpoch: 2, Entries: []EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 0}}},  // starts not increasing
		{MaxOffset: 10, LastEpoch: 2, Entries: []EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 100}}}, // past the end
		{MaxOffset: end, LastEpoch: 1, Entries: []EpochEntry{{Epoch: 2, StartOffset: 0}, {Epoch: 1, StartOffset: 10}}}, // epochs not increasing
	} {
		addr, gone := forgedAutoMaster(t, hs)
		b.SetMasterHAAddr(addr)
		<-gone
		require.Equal(t, end, slave.MaxPhyOffset(), "handshake %+v", hs)
		require.Equal(t, []EpochEntry{{Epoch: 1, StartOffset: 0, EndOffset: 1<<63 - 1}}, b.Epochs().Entries())
	}
}

// An empty controller-mode slave starts at a file start its master holds.
func TestEmptyAutoSlaveRefusesOffsetsNoMasterSends(t *testing.T) {
	for _, off := range []int64{fileSize + 100, 2 * fileSize} {
		sdir := t.TempDir()
		slave := openStore(t, sdir, store.RoleSlave)
		b, _ := newAuto(t, slave, autoCfg(sdir, 2))
		addr, gone := forgedAutoMaster(t, MasterHandshake{MaxOffset: fileSize},
			transferFrame(TransferHeader{Offset: off, Epoch: 1, EpochStartOffset: 0}, make([]byte, 100)))
		require.NoError(t, b.ChangeToSlave(addr, 1, 2))
		<-gone
		require.Zero(t, slave.MaxPhyOffset(), "frame at %d", off)
		require.NoError(t, b.Close())
		require.NoError(t, slave.Shutdown())
	}
}
