package ha

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/store"
)

var _ AutoStore = (*store.DefaultStore)(nil)

func autoCfg(dir string, id int64) AutoConfig {
	return AutoConfig{Config: testCfg(), ListenAddr: "127.0.0.1:0", EpochFile: EpochFilePath(dir), LocalBrokerID: id,
		CheckSyncStateSetPeriod: 50 * time.Millisecond, HaMaxTimeSlaveNotCatchup: 15 * time.Second}
}

func newAuto(t *testing.T, st AutoStore, cfg AutoConfig) (*AutoSwitch, chan []int64) {
	t.Helper()
	a, err := NewAutoSwitch(st, cfg)
	require.NoError(t, err)
	wanted := make(chan []int64, 16)
	a.OnSyncStateSetChange(func(s []int64) {
		select {
		case wanted <- s:
		default: // the periodic check repeats a change until it is answered
		}
	})
	return a, wanted
}

func waitWanted(t *testing.T, ch chan []int64, want []int64) {
	t.Helper()
	select {
	case got := <-ch:
		require.Equal(t, want, got)
	case <-time.After(10 * time.Second):
		t.Fatalf("no sync state set change to %v", want)
	}
}

func queueTotal(s *store.DefaultStore) int64 {
	var n int64
	for q := int32(0); q < 4; q++ {
		n += s.MaxOffsetInQueue("T", q)
	}
	return n
}

// sameSlaveFiles compares the commitlog files of two stores: those both have
// must be equal, one only one has (a file made ahead of need) must be blank,
// unless the slave started after it.
// It returns how many files hold data on the slave.
func sameSlaveFiles(t *testing.T, mdir, sdir string) int {
	t.Helper()
	names := map[string]bool{}
	slaveFirst := ""
	for _, dir := range []string{mdir, sdir} {
		ents, err := os.ReadDir(filepath.Join(dir, "commitlog"))
		require.NoError(t, err)
		for _, e := range ents {
			names[e.Name()] = true
			if dir == sdir && (slaveFirst == "" || e.Name() < slaveFirst) {
				slaveFirst = e.Name()
			}
		}
	}
	withData := 0
	for name := range names {
		a, aerr := os.ReadFile(filepath.Join(mdir, "commitlog", name))
		b, berr := os.ReadFile(filepath.Join(sdir, "commitlog", name))
		switch {
		case aerr == nil && berr == nil:
			require.True(t, bytes.Equal(a, b), "commitlog file %s differs", name)
		case aerr == nil && name < slaveFirst:
			// a slave that started at the master's last file
		case aerr == nil:
			require.Zero(t, bytes.Count(a, []byte{0})-len(a), "only the master has %s, with data", name)
		default:
			require.NoError(t, berr)
			require.Zero(t, bytes.Count(b, []byte{0})-len(b), "only the slave has %s, with data", name)
		}
		if berr == nil && bytes.Count(b, []byte{0}) < len(b) {
			withData++
		}
	}
	return withData
}

func TestAutoSwitchReplicatesAndExpandsSyncStateSet(t *testing.T) {
	mdir, sdir := t.TempDir(), t.TempDir()
	master := openStore(t, mdir, store.RoleAsyncMaster)
	defer master.Shutdown()
	mcfg := autoCfg(mdir, 1)
	mcfg.InSyncReplicas = 2
	a, wanted := newAuto(t, master, mcfg)
	defer a.Close()
	require.NoError(t, a.ChangeToMaster(1, 1, []int64{1}))
	require.Equal(t, []EpochEntry{{Epoch: 1, StartOffset: 0, EndOffset: 1<<63 - 1}}, a.Epochs().Entries())
	put(t, master, 0, 150) // two files before the slave exists: it starts at the first

	slave := openStore(t, sdir, store.RoleSlave)
	defer slave.Shutdown()
	b, _ := newAuto(t, slave, autoCfg(sdir, 2))
	defer b.Close()
	require.NoError(t, b.ChangeToSlave(a.Addr().String(), 1, 2))
	put(t, master, 150, 250)
	waitCaughtUp(t, master, slave)
	require.Greater(t, sameSlaveFiles(t, mdir, sdir), 1)
	require.Equal(t, a.Epochs().Entries(), b.Epochs().Entries(), "the slave learns the master's epochs")

	// Caught up: the master wants it in the sync state set.
	waitWanted(t, wanted, []int64{1, 2})
	a.SetSyncStateSet([]int64{1, 2}, 2)
	set, ssEpoch := a.SyncStateSet()
	require.Equal(t, []int64{1, 2}, set)
	require.EqualValues(t, 2, ssEpoch)

	// The slave dispatches what the master confirmed: all of it here
	// (allAckInSyncStateSet off, so the confirm offset is the master's end).
	require.Eventually(t, func() bool { return queueTotal(slave) == 250 }, 10*time.Second, 5*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, a.WaitAcked(ctx, master.MaxPhyOffset()), "inSyncReplicas=2: the slave's ack counts")
	require.ErrorIs(t, b.WaitAcked(ctx, 0), ErrNotMaster)

	st := a.Status()
	require.True(t, st.Master)
	require.Equal(t, 1, st.InSyncSlaveNums)
	require.Len(t, st.HaConnectionInfo, 1)
	require.True(t, st.HaConnectionInfo[0].InSync)
	require.Equal(t, master.MaxPhyOffset(), st.HaConnectionInfo[0].SlaveAckOffset)
	ss := b.Status()
	require.False(t, ss.Master)
	require.True(t, ss.HaClientRuntimeInfo.Activated)
	require.Equal(t, a.Addr().String(), ss.HaClientRuntimeInfo.MasterAddr)
}

func TestAutoSwitchConfirmOffsetAndShrink(t *testing.T) {
	mdir, sdir := t.TempDir(), t.TempDir()
	// The store's own SYNC_MASTER wait is classic HA's; controller mode waits in WaitAcked.
	master := openStore(t, mdir, store.RoleAsyncMaster)
	defer master.Shutdown()
	mcfg := autoCfg(mdir, 1)
	mcfg.AllAckInSyncStateSet = true
	a, wanted := newAuto(t, master, mcfg)
	defer a.Close()
	require.NoError(t, a.ChangeToMaster(3, 1, []int64{1}))
	slave := openStore(t, sdir, store.RoleSlave)
	defer slave.Shutdown()
	b, _ := newAuto(t, slave, autoCfg(sdir, 2))
	require.NoError(t, b.ChangeToSlave(a.Addr().String(), 3, 2))
	put(t, master, 0, 20)
	waitWanted(t, wanted, []int64{1, 2})
	a.SetSyncStateSet([]int64{1, 2}, 2)

	// With the slave in the set, the confirm offset follows its acks and the
	// master's consumers see only what both hold.
	put(t, master, 20, 40)
	require.Eventually(t, func() bool { return a.ConfirmOffset() == master.MaxPhyOffset() }, 10*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return queueTotal(master) == 40 }, 10*time.Second, 5*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, a.WaitAcked(ctx, master.MaxPhyOffset()))

	// The slave stops: the master asks to drop it at once, and until the
	// controller answers nothing new is confirmed.
	require.NoError(t, b.Close())
	waitWanted(t, wanted, []int64{1})
	confirmed := a.ConfirmOffset()
	put(t, master, 40, 50)
	require.Equal(t, confirmed, a.ConfirmOffset())
	short, cancelShort := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancelShort()
	require.ErrorIs(t, a.WaitAcked(short, master.MaxPhyOffset()), context.DeadlineExceeded)
	require.LessOrEqual(t, master.DispatchedPhyOffset(), confirmed, "consumers never read past the confirm offset")

	// The controller agrees: the master alone confirms everything.
	a.SetSyncStateSet([]int64{1}, 3)
	require.Eventually(t, func() bool { return queueTotal(master) == 50 }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, master.MaxPhyOffset(), a.ConfirmOffset())
	require.NoError(t, a.WaitAcked(ctx, master.MaxPhyOffset()))
}

func TestAutoSwitchShrinksMembersNotCaughtUp(t *testing.T) {
	mdir := t.TempDir()
	master := openStore(t, mdir, store.RoleAsyncMaster)
	defer master.Shutdown()
	cfg := autoCfg(mdir, 1)
	cfg.MinInSyncReplicas = 2
	a, wanted := newAuto(t, master, cfg)
	defer a.Close()
	require.NoError(t, a.ChangeToMaster(1, 1, []int64{1, 5, 7}))
	// 5 never connected, 7 caught up long ago: both go (periodic check).
	a.mu.Lock()
	a.caughtUp[7] = time.Now().Add(-time.Hour)
	a.mu.Unlock()
	waitWanted(t, wanted, []int64{1})
	// Until the controller answers, puts still count the old set.
	require.NoError(t, a.WaitAcked(context.Background(), 0))
	a.SetSyncStateSet([]int64{1}, 2)
	require.ErrorIs(t, a.WaitAcked(context.Background(), 0), ErrInSyncReplicasNotEnough)
}

func TestAutoSwitchTruncatesDivergentSlave(t *testing.T) {
	adir, bdir := t.TempDir(), t.TempDir()
	// A leads epoch 1, B follows.
	as := openStore(t, adir, store.RoleAsyncMaster)
	a, _ := newAuto(t, as, autoCfg(adir, 1))
	require.NoError(t, a.ChangeToMaster(1, 1, []int64{1}))
	bs := openStore(t, bdir, store.RoleSlave)
	b, _ := newAuto(t, bs, autoCfg(bdir, 2))
	require.NoError(t, b.ChangeToSlave(a.Addr().String(), 1, 2))
	put(t, as, 0, 100)
	waitCaughtUp(t, as, bs)
	require.NoError(t, b.Close())
	require.NoError(t, bs.Shutdown())

	// A writes a tail B never gets, then goes down.
	put(t, as, 100, 160)
	require.NoError(t, a.Close())
	require.NoError(t, as.Shutdown())

	// B is elected for epoch 2 and takes writes.
	bs = openStore(t, bdir, store.RoleAsyncMaster)
	defer bs.Shutdown()
	b, _ = newAuto(t, bs, autoCfg(bdir, 2))
	defer b.Close()
	require.NoError(t, b.ChangeToMaster(2, 2, []int64{2}))
	fork := bs.MaxPhyOffset()
	require.Equal(t, []EpochEntry{{1, 0, fork}, {2, fork, 1<<63 - 1}}, b.Epochs().Entries())
	put(t, bs, 1000, 1030)

	// A comes back as B's slave: its epoch-1 tail past the fork is cut.
	as = openStore(t, adir, store.RoleSlave)
	defer as.Shutdown()
	require.Greater(t, as.MaxPhyOffset(), fork)
	a, _ = newAuto(t, as, autoCfg(adir, 1))
	defer a.Close()
	require.NoError(t, a.ChangeToSlave(b.Addr().String(), 2, 1))
	waitCaughtUp(t, bs, as)
	sameSlaveFiles(t, bdir, adir)
	require.Equal(t, b.Epochs().Entries(), a.Epochs().Entries())
	require.Eventually(t, func() bool { return queueTotal(as) == 130 }, 10*time.Second, 5*time.Millisecond,
		"the cut messages left A's queues (%d)", queueTotal(as))

	// A stale epoch is refused.
	require.ErrorIs(t, a.ChangeToSlave(b.Addr().String(), 1, 1), ErrStaleEpoch)
}

func TestAutoSwitchSlaveFromLastFileAndBehindByFiles(t *testing.T) {
	mdir, sdir := t.TempDir(), t.TempDir()
	master := openStore(t, mdir, store.RoleAsyncMaster)
	defer master.Shutdown()
	a, _ := newAuto(t, master, autoCfg(mdir, 1))
	defer a.Close()
	require.NoError(t, a.ChangeToMaster(1, 1, []int64{1}))
	put(t, master, 0, 200)
	lastFile := master.MaxPhyOffset() - master.MaxPhyOffset()%fileSize
	require.Positive(t, lastFile)

	slave := openStore(t, sdir, store.RoleSlave)
	scfg := autoCfg(sdir, 2)
	scfg.SyncFromLastFile = true
	b, _ := newAuto(t, slave, scfg)
	require.NoError(t, b.ChangeToSlave(a.Addr().String(), 1, 2))
	waitCaughtUp(t, master, slave)
	require.Equal(t, lastFile, slave.MinPhyOffset(), "an empty slave asking syncFromLastFile starts at the last file")
	require.NoError(t, b.Close())
	require.NoError(t, slave.Shutdown())

	// Several files behind, it resumes from its own end.
	put(t, master, 200, 500)
	slave = openStore(t, sdir, store.RoleSlave)
	defer slave.Shutdown()
	b, _ = newAuto(t, slave, scfg)
	defer b.Close()
	require.NoError(t, b.ChangeToSlave(a.Addr().String(), 1, 2))
	waitCaughtUp(t, master, slave)
	require.Greater(t, sameSlaveFiles(t, mdir, sdir), 3)
}

// A client speaking Java's AutoSwitchHAClient bytes: handshake, epochs, transfer.
func TestAutoMasterServesJavaClientBytes(t *testing.T) {
	mdir := t.TempDir()
	master := openStore(t, mdir, store.RoleAsyncMaster)
	defer master.Shutdown()
	a, _ := newAuto(t, master, autoCfg(mdir, 1))
	defer a.Close()
	require.NoError(t, a.ChangeToMaster(1, 1, []int64{1}))
	put(t, master, 0, 10)
	require.NoError(t, a.ChangeToMaster(2, 2, []int64{1}))
	put(t, master, 10, 20)
	fork := a.Epochs().Entries()[1].StartOffset

	nc, err := net.Dial("tcp", a.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = nc.Write(AppendSlaveHandshake(nil, SlaveHandshake{BrokerID: 9}))
	require.NoError(t, err)
	hdr := make([]byte, masterHandshakeSize)
	_, err = io.ReadFull(nc, hdr)
	require.NoError(t, err)
	require.EqualValues(t, StateHandshake, binary.BigEndian.Uint32(hdr[0:]))
	require.EqualValues(t, 2*epochEntrySize, binary.BigEndian.Uint32(hdr[4:]))
	require.Equal(t, uint64(master.MaxPhyOffset()), binary.BigEndian.Uint64(hdr[8:]))
	require.EqualValues(t, 2, binary.BigEndian.Uint32(hdr[16:]))
	body := make([]byte, 2*epochEntrySize)
	_, err = io.ReadFull(nc, body)
	require.NoError(t, err)
	require.Equal(t, []EpochEntry{{Epoch: 1}, {Epoch: 2, StartOffset: fork}}, decodeEpochEntries(body))

	// Report 0: the stream starts at the first file, epoch 1 up to the fork.
	_, err = nc.Write(AppendSlaveReport(nil, 0))
	require.NoError(t, err)
	th := make([]byte, masterTransferSize)
	var got []byte
	epochs := map[int32]int64{}
	for int64(len(got)) < master.MaxPhyOffset() {
		_, err = io.ReadFull(nc, th)
		require.NoError(t, err)
		h, err := DecodeTransferHeader(th)
		require.NoError(t, err)
		require.Equal(t, int64(len(got)), h.Offset)
		data := make([]byte, h.BodySize)
		_, err = io.ReadFull(nc, data)
		require.NoError(t, err)
		if h.BodySize > 0 {
			require.True(t, h.Offset+int64(h.BodySize) <= fork || h.Offset >= fork, "a frame never spans two epochs")
			epochs[h.Epoch] = h.EpochStartOffset
		}
		require.Equal(t, master.MaxPhyOffset(), h.ConfirmOffset, "a lone master confirms its end")
		got = append(got, data...)
	}
	require.Equal(t, map[int32]int64{1: 0, 2: fork}, epochs)
	want := make([]byte, len(got))
	n, err := master.ReadCommitLog(want, 0)
	require.NoError(t, err)
	require.Equal(t, want[:n], got)
}

func TestAutoSwitchWaitAckedAsync(t *testing.T) {
	mdir, sdir := t.TempDir(), t.TempDir()
	master := openStore(t, mdir, store.RoleAsyncMaster)
	defer master.Shutdown()
	mcfg := autoCfg(mdir, 1)
	mcfg.AllAckInSyncStateSet = true
	a, wanted := newAuto(t, master, mcfg)
	defer a.Close()
	require.NoError(t, a.ChangeToMaster(1, 1, []int64{1}))
	answers := make(chan error, 8)
	answer := func(err error) { answers <- err }

	// The master alone: answered at once.
	put(t, master, 0, 5)
	a.WaitAckedAsync(master.MaxPhyOffset(), time.Minute, answer)
	require.NoError(t, <-answers)

	slave := openStore(t, sdir, store.RoleSlave)
	defer slave.Shutdown()
	b, _ := newAuto(t, slave, autoCfg(sdir, 2))
	defer b.Close()
	require.NoError(t, b.ChangeToSlave(a.Addr().String(), 1, 2))
	waitWanted(t, wanted, []int64{1, 2})
	a.SetSyncStateSet([]int64{1, 2}, 2)

	// With the slave in the set: answered once it acks.
	put(t, master, 5, 10)
	a.WaitAckedAsync(master.MaxPhyOffset(), time.Minute, answer)
	select {
	case err := <-answers:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("no answer after the slave's ack")
	}
	// Beyond what is written no ack comes: the timeout answers.
	a.WaitAckedAsync(master.MaxPhyOffset()+1, 50*time.Millisecond, answer)
	require.ErrorIs(t, <-answers, ErrAckTimeout)
	// A role change answers the waiting puts.
	a.WaitAckedAsync(master.MaxPhyOffset()+1, time.Minute, answer)
	require.NoError(t, b.Close())
	require.NoError(t, a.ChangeToSlave("127.0.0.1:1", 2, 1))
	require.ErrorIs(t, <-answers, ErrNotMaster)
	a.WaitAckedAsync(0, time.Minute, answer)
	require.ErrorIs(t, <-answers, ErrNotMaster)
}

func TestAckedUptoCountsSlavesOnce(t *testing.T) {
	conn := func(id, ack int64) *autoConn {
		c := &autoConn{}
		c.slaveID.Store(id)
		c.ack.Store(ack)
		return c
	}
	for _, tc := range []struct {
		name   string
		allAck bool
		isr    int
		set    []int64
		conns  [][2]int64
		want   int64
	}{
		{"one ack needed", false, 1, []int64{1}, nil, 1<<63 - 1},
		{"two replicas: the best slave", false, 2, []int64{1}, [][2]int64{{2, 100}, {3, 300}}, 300},
		{"three replicas: the second best", false, 3, []int64{1}, [][2]int64{{2, 100}, {3, 300}}, 100},
		{"a reconnected slave counts once", false, 3, []int64{1}, [][2]int64{{2, 100}, {2, 300}}, -1},
		{"all of the set", true, 1, []int64{1, 2, 3}, [][2]int64{{2, 100}, {3, 300}, {4, 50}}, 100},
		{"a member not connected", true, 1, []int64{1, 2, 3}, [][2]int64{{2, 100}}, -1},
		{"the master alone", true, 1, []int64{1}, [][2]int64{{2, 100}}, 1<<63 - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &AutoSwitch{cfg: AutoConfig{AllAckInSyncStateSet: tc.allAck, InSyncReplicas: tc.isr},
				conns: map[*autoConn]struct{}{}, syncSet: toSet(tc.set)}
			for _, c := range tc.conns {
				a.conns[conn(c[0], c[1])] = struct{}{}
			}
			require.Equal(t, tc.want, a.ackedUptoLocked())
		})
	}
}

// Bad input closes that connection only: the master keeps serving others, and
// a slave fed a bad handshake drops the connection and dials again.
func TestAutoSwitchMalformedFramesCloseTheConnection(t *testing.T) {
	mdir := t.TempDir()
	master := openStore(t, mdir, store.RoleAsyncMaster)
	defer master.Shutdown()
	a, _ := newAuto(t, master, autoCfg(mdir, 1))
	defer a.Close()
	require.NoError(t, a.ChangeToMaster(1, 1, []int64{1}))
	put(t, master, 0, 10)
	for _, frame := range [][]byte{
		{0, 0, 0, 7, 1, 2, 3, 4, 5, 6, 7, 8},             // no such state
		AppendSlaveReport(nil, 0),                        // a report before any handshake
		{0, 0, 0, 4},                                     // SHUTDOWN
		{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0}, // negative state
	} {
		nc, err := net.Dial("tcp", a.Addr().String())
		require.NoError(t, err)
		require.NoError(t, nc.SetDeadline(time.Now().Add(10*time.Second)))
		_, err = nc.Write(frame)
		require.NoError(t, err)
		readUntilClosed(t, nc) // the master closes the connection
		nc.Close()
	}
	// A slave reporting beyond the master's end is refused too.
	nc, err := net.Dial("tcp", a.Addr().String())
	require.NoError(t, err)
	require.NoError(t, nc.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = nc.Write(AppendSlaveReport(AppendSlaveHandshake(nil, SlaveHandshake{BrokerID: 5}), master.MaxPhyOffset()+1))
	require.NoError(t, err)
	readUntilClosed(t, nc) // the handshake answer, then the end
	nc.Close()

	// A real slave is still served.
	sdir := t.TempDir()
	slave := openStore(t, sdir, store.RoleSlave)
	defer slave.Shutdown()
	b, _ := newAuto(t, slave, autoCfg(sdir, 2))
	defer b.Close()
	require.NoError(t, b.ChangeToSlave(a.Addr().String(), 1, 2))
	waitCaughtUp(t, master, slave)

	// A fake master answering with a malformed handshake: the slave hangs up.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	fdir := t.TempDir()
	fs := openStore(t, fdir, store.RoleSlave)
	defer fs.Shutdown()
	f, _ := newAuto(t, fs, autoCfg(fdir, 3))
	defer f.Close()
	require.NoError(t, f.ChangeToSlave(ln.Addr().String(), 1, 3))
	fake, err := ln.Accept()
	require.NoError(t, err)
	defer fake.Close()
	require.NoError(t, fake.SetDeadline(time.Now().Add(10*time.Second)))
	hs := make([]byte, slaveHandshakeSize)
	_, err = io.ReadFull(fake, hs)
	require.NoError(t, err)
	bad := AppendMasterHandshake(nil, MasterHandshake{Entries: []EpochEntry{{Epoch: 1}}})
	binary.BigEndian.PutUint32(bad[4:], 13) // not a whole number of entries
	_, err = fake.Write(bad)
	require.NoError(t, err)
	readUntilClosed(t, fake) // the slave closes the connection
	require.Zero(t, fs.MaxPhyOffset())
}

func TestAutoSwitchServesOnlyAsMaster(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir, store.RoleSlave)
	defer st.Shutdown()
	a, _ := newAuto(t, st, autoCfg(dir, 1))
	defer a.Close()
	for _, slave := range []bool{false, true} { // before any role, then as a slave
		if slave {
			require.NoError(t, a.ChangeToSlave("", 1, 1))
		}
		nc, err := net.Dial("tcp", a.Addr().String())
		require.NoError(t, err)
		require.NoError(t, nc.SetDeadline(time.Now().Add(10*time.Second)))
		_, _ = nc.Write(AppendSlaveHandshake(nil, SlaveHandshake{BrokerID: 2}))
		require.Empty(t, readUntilClosed(t, nc), "nothing served by a broker that is not master")
		nc.Close()
	}
}

// readUntilClosed reads what the peer sends until it closes the connection (a
// reset counts: it closed with our bytes unread); a read timeout fails.
func readUntilClosed(t *testing.T, nc net.Conn) []byte {
	t.Helper()
	b, err := io.ReadAll(nc)
	if err != nil {
		var ne net.Error
		require.False(t, errors.As(err, &ne) && ne.Timeout(), "the peer kept the connection open")
	}
	return b
}
