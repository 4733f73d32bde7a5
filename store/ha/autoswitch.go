package ha

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"slices"
	"sync"
	"time"
)

// AutoStore is what controller-mode replication needs of the store
// (*store.DefaultStore).
type AutoStore interface {
	MaxPhyOffset() int64
	MinPhyOffset() int64
	CommitLogFileSize() int
	ReadCommitLog(dst []byte, offset int64) (int, error)
	AppendCommitLog(offset int64, data []byte) error
	SetAppendHook(h func())
	// TruncateCommitLog cuts the log (queues, index, offsets) at a record boundary.
	TruncateCommitLog(offset int64) error
	// TruncateInvalidTail cuts a partial last record; -1 when clean.
	TruncateInvalidTail() (int64, error)
	// UseConfirmOffset bounds dispatch (what consumers see) by the confirm offset.
	UseConfirmOffset(on bool)
	SetConfirmOffset(offset int64)
	ConfirmOffset() int64
	// DispatchBehind is what dispatch has yet to reach (under SYNC_FLUSH, of
	// what is flushed); DispatchedPhyOffset is where it is.
	DispatchBehind() int64
	DispatchedPhyOffset() int64
}

// AutoConfig holds the controller-mode HA settings.
type AutoConfig struct {
	Config
	// ListenAddr is the HA listen address (haListenPort); every role accepts,
	// as Java's AcceptSocketService does.
	ListenAddr string
	// EpochFile is the epoch checkpoint (EpochFilePath(storePathRootDir)).
	EpochFile string
	// LocalBrokerID is this broker's id in the controller's view.
	LocalBrokerID int64
	// SyncFromLastFile / AsyncLearner are what this broker asks as a slave
	// (syncFromLastFile, asyncLearner).
	SyncFromLastFile bool
	AsyncLearner     bool
	// HaMaxTimeSlaveNotCatchup drops a slave from the sync state set when it
	// has not caught up for this long (haMaxTimeSlaveNotCatchup, 15 s).
	HaMaxTimeSlaveNotCatchup time.Duration
	// CheckSyncStateSetPeriod is how often the shrink check runs (5 s).
	CheckSyncStateSetPeriod time.Duration
	// InSyncReplicas, MinInSyncReplicas and AllAckInSyncStateSet decide what a
	// SYNC put waits for (inSyncReplicas, minInSyncReplicas, allAckInSyncStateSet).
	InSyncReplicas       int
	MinInSyncReplicas    int
	AllAckInSyncStateSet bool
}

func (c *AutoConfig) fill() {
	c.Config.fill()
	if c.HaMaxTimeSlaveNotCatchup <= 0 {
		c.HaMaxTimeSlaveNotCatchup = 15 * time.Second
	}
	if c.CheckSyncStateSetPeriod <= 0 {
		c.CheckSyncStateSetPeriod = 5 * time.Second
	}
	if c.InSyncReplicas <= 0 {
		c.InSyncReplicas = 1
	}
	if c.MinInSyncReplicas <= 0 {
		c.MinInSyncReplicas = 1
	}
}

// Errors of the auto-switch API.
var (
	// ErrStaleEpoch means a role change names an epoch older than the last one held.
	ErrStaleEpoch = errors.New("ha: epoch older than the last epoch held")
	// ErrInSyncReplicasNotEnough is IN_SYNC_REPLICAS_NOT_ENOUGH: fewer replicas
	// are in sync than minInSyncReplicas.
	ErrInSyncReplicasNotEnough = errors.New("ha: in-sync replicas not enough")
	// ErrNotMaster means the call needs the master role.
	ErrNotMaster = errors.New("ha: not master")
)

// AutoSwitch is Java's AutoSwitchHAService: one broker's controller-mode
// replication, master or slave as the controller decides.
type AutoSwitch struct {
	st    AutoStore
	cfg   AutoConfig
	log   *slog.Logger
	epoch *EpochCache

	ln     net.Listener
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	roleMu sync.Mutex // serialises role changes and Close
	closed bool

	mu       sync.Mutex
	master   bool
	localID  int64
	conns    map[*autoConn]struct{}
	gate     connGate
	client   *autoClient
	syncSet  map[int64]bool // the controller's (local) sync state set
	remote   map[int64]bool // what was asked of the controller, while unanswered
	syncing  bool           // a change is asked and not yet answered
	ssEpoch  int32
	caughtUp map[int64]time.Time
	listener func([]int64)
	wakes    wakeList
	// ackCh is closed and replaced whenever a slave acks: WaitAcked waits on it.
	ackCh chan struct{}
	// waiters are the WaitAckedAsync puts, answered on acks and set changes.
	waiters []*ackWaiter
	// answers counts the controller's answers (SetSyncStateSet, a new
	// role): a connection asks for its slave's id once per answer.
	answers uint64

	// want is the latest sync state set to tell the listener (wanted says
	// one is pending); notifyLoop, the one goroutine calling the listener,
	// takes it when kicked, so sets asked while the controller is busy
	// coalesce into the latest.
	want   []int64
	wanted bool
	kick   chan struct{}
}

// NewAutoSwitch opens the epoch file and listens on cfg.ListenAddr. The
// broker then calls ChangeToMaster or ChangeToSlave as the controller says.
func NewAutoSwitch(st AutoStore, cfg AutoConfig) (*AutoSwitch, error) {
	cfg.fill()
	if cfg.EpochFile == "" {
		return nil, errors.New("ha: AutoConfig.EpochFile is required")
	}
	ec, err := OpenEpochCache(cfg.EpochFile)
	if err != nil {
		return nil, err
	}
	a := &AutoSwitch{st: st, cfg: cfg, log: cfg.Logger.With("component", "ha-autoswitch"), epoch: ec,
		localID: cfg.LocalBrokerID, conns: map[*autoConn]struct{}{}, syncSet: map[int64]bool{}, remote: map[int64]bool{},
		caughtUp: map[int64]time.Time{}, ackCh: make(chan struct{}), kick: make(chan struct{}, 1)}
	a.gate = newConnGate(&a.cfg.Config)
	a.ctx, a.cancel = context.WithCancel(context.Background())
	if cfg.ListenAddr != "" {
		ln, err := net.Listen("tcp", cfg.ListenAddr)
		if err != nil {
			return nil, fmt.Errorf("ha listen %s: %w", cfg.ListenAddr, err)
		}
		a.ln = ln
		a.wg.Add(1)
		go a.accept()
	}
	st.SetAppendHook(a.wakes.poke)
	a.wg.Add(2)
	go a.shrinkLoop()
	go a.notifyLoop()
	return a, nil
}

// Addr is the HA listening address (nil without a listener).
func (a *AutoSwitch) Addr() net.Addr {
	if a.ln == nil {
		return nil
	}
	return a.ln.Addr()
}

// Epochs is the epoch cache (GET_BROKER_EPOCH_CACHE, the controller's elect
// and register requests read LastEpoch and the entries).
func (a *AutoSwitch) Epochs() *EpochCache { return a.epoch }

// LastEpoch is the newest epoch held (-1 when none).
func (a *AutoSwitch) LastEpoch() int32 { return a.epoch.LastEpoch() }

// IsMaster reports the current role.
func (a *AutoSwitch) IsMaster() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.master
}

// OnSyncStateSetChange registers the callback told of every sync state set
// this master wants (a slave caught up, fell behind or disconnected); the
// broker asks the controller (ALTER_SYNC_STATE_SET) and then calls
// SetSyncStateSet with the answer. It runs on its own goroutine, never
// concurrently with itself.
func (a *AutoSwitch) OnSyncStateSetChange(f func(newSet []int64)) {
	a.mu.Lock()
	a.listener = f
	a.mu.Unlock()
}

// SetSyncStateSet installs the controller's sync state set (and its epoch).
func (a *AutoSwitch) SetSyncStateSet(set []int64, epoch int32) {
	a.mu.Lock()
	a.syncing = false
	a.syncSet = toSet(set)
	a.ssEpoch = epoch
	a.answers++
	a.trimCaughtUpLocked()
	a.refreshConfirmLocked()
	a.mu.Unlock()
	a.wakeAckers()
}

// SyncStateSet is the local sync state set and its epoch.
func (a *AutoSwitch) SyncStateSet() ([]int64, int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return fromSet(a.syncSet), a.ssEpoch
}

// ChangeToMaster makes this broker the master of epoch: it drops the slave
// client and connections, cuts a partial tail, appends the epoch entry at the
// commitlog end and waits until what is confirmed is dispatched
// (AutoSwitchHAService.changeToMaster).
func (a *AutoSwitch) ChangeToMaster(epoch int32, syncStateSetEpoch int32, syncStateSet []int64) error {
	a.roleMu.Lock()
	defer a.roleMu.Unlock()
	if err := a.leaveRole("master", epoch); err != nil {
		return err
	}
	cut, err := a.st.TruncateInvalidTail()
	if err != nil {
		return fmt.Errorf("change to master: %w", err)
	}
	if cut >= 0 {
		if err := a.epoch.TruncateSuffixByOffset(cut); err != nil {
			return err
		}
	}
	if a.epoch.LastEpoch() >= epoch {
		if err := a.epoch.TruncateSuffixByEpoch(epoch); err != nil {
			return err
		}
	}
	start := a.st.MaxPhyOffset()
	if err := a.epoch.Append(EpochEntry{Epoch: epoch, StartOffset: start}); err != nil {
		if !errors.Is(err, ErrEpochOrder) {
			return err
		}
		// Java's appendEntry refuses a term that starts where the last one
		// does (nothing was written in between) and goes on: the slaves then
		// find the last entry in common.
		a.log.Warn("epoch entry not appended", "epoch", epoch, "start", start, "err", err)
	}
	a.mu.Lock()
	a.master = true
	a.syncing = false
	a.syncSet = toSet(syncStateSet)
	a.ssEpoch = syncStateSetEpoch
	a.remote = map[int64]bool{}
	a.caughtUp = map[int64]time.Time{}
	a.answers++
	a.want, a.wanted = nil, false
	a.refreshConfirmLocked()
	a.mu.Unlock()
	a.wakeAckers()
	// Waiting consume queue dispatch (bounded: a stuck dispatcher must not
	// hold the role change forever).
	for i := 0; i < 3000 && a.st.DispatchBehind() > 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	a.log.Info("changed to master", "epoch", epoch, "start", start, "syncStateSet", syncStateSet)
	return nil
}

// ChangeToSlave makes this broker a slave of the master at masterHAAddr
// (empty: set it later with SetMasterHAAddr) for epoch.
func (a *AutoSwitch) ChangeToSlave(masterHAAddr string, epoch int32, selfBrokerID int64) error {
	a.roleMu.Lock()
	defer a.roleMu.Unlock()
	if err := a.leaveRole("slave", epoch); err != nil {
		return err
	}
	a.mu.Lock()
	a.master = false
	a.localID = selfBrokerID
	a.syncSet = map[int64]bool{}
	a.remote = map[int64]bool{}
	a.syncing = false
	a.want, a.wanted = nil, false
	a.mu.Unlock()
	a.wakeAckers() // puts still waiting fail: this broker is no longer master
	// A slave dispatches only what its master confirmed (the confirm offset
	// kept in the checkpoint until the master's first frame says more).
	a.st.UseConfirmOffset(true)
	c := newAutoClient(a, selfBrokerID)
	if masterHAAddr != "" {
		c.setAddr(masterHAAddr)
	}
	a.mu.Lock()
	a.client = c
	a.mu.Unlock()
	c.run()
	a.log.Info("changed to slave", "master", masterHAAddr, "epoch", epoch, "brokerId", selfBrokerID)
	return nil
}

// leaveRole starts a role change to epoch (roleMu held): a stale epoch is
// refused, the slave client and the slave connections stop.
func (a *AutoSwitch) leaveRole(to string, epoch int32) error {
	if a.closed {
		return ErrClosedHA
	}
	if last := a.epoch.LastEpoch(); epoch < last {
		return fmt.Errorf("change to %s of epoch %d, last is %d: %w", to, epoch, last, ErrStaleEpoch)
	}
	a.stopClient()
	a.dropConns()
	return nil
}

// SetMasterHAAddr updates the master's HA address of a slave (the
// haServerAddr of the REGISTER_BROKER answer).
func (a *AutoSwitch) SetMasterHAAddr(addr string) {
	a.mu.Lock()
	c := a.client
	a.mu.Unlock()
	if c != nil {
		c.setAddr(addr)
	}
}

// ErrClosedHA means Close ran.
var ErrClosedHA = errors.New("ha: closed")

// Close stops the client, the listener and every connection.
func (a *AutoSwitch) Close() error {
	a.roleMu.Lock()
	defer a.roleMu.Unlock()
	if a.closed {
		return nil
	}
	a.closed = true
	a.cancel()
	a.st.SetAppendHook(nil)
	var err error
	if a.ln != nil {
		err = a.ln.Close()
	}
	a.stopClient()
	a.dropConns()
	a.mu.Lock()
	a.master = false
	a.mu.Unlock()
	a.wakeAckers() // waiting puts fail
	a.wg.Wait()
	return err
}

func (a *AutoSwitch) stopClient() {
	a.mu.Lock()
	c := a.client
	a.client = nil
	a.mu.Unlock()
	if c != nil {
		c.stop()
	}
}

func (a *AutoSwitch) dropConns() {
	a.mu.Lock()
	cs := make([]*autoConn, 0, len(a.conns))
	for c := range a.conns {
		cs = append(cs, c)
	}
	a.mu.Unlock()
	for _, c := range cs {
		c.close()
		c.wait()
	}
}

// ConfirmOffset is the store's confirm offset: what the sync state set holds
// (master) or what the master said it holds (slave).
func (a *AutoSwitch) ConfirmOffset() int64 { return a.st.ConfirmOffset() }

// ErrAckTimeout means the replicas did not ack in time (FLUSH_SLAVE_TIMEOUT).
var ErrAckTimeout = errors.New("ha: replicas did not ack in time")

// CheckInSyncReplicas is the check Java makes before a SYNC put is written in
// controller mode: ErrInSyncReplicasNotEnough (IN_SYNC_REPLICAS_NOT_ENOUGH)
// when fewer than minInSyncReplicas are in sync, ErrNotMaster on a slave.
func (a *AutoSwitch) CheckInSyncReplicas() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.checkInSyncLocked()
}

func (a *AutoSwitch) checkInSyncLocked() error {
	if !a.master {
		return ErrNotMaster
	}
	n := len(a.syncSet)
	if a.syncing {
		n = max(n, len(a.remote))
	}
	if n < a.cfg.MinInSyncReplicas {
		return fmt.Errorf("%d in sync, %d wanted: %w", n, a.cfg.MinInSyncReplicas, ErrInSyncReplicasNotEnough)
	}
	return nil
}

// needsAcks says whether a SYNC put waits at all: Java answers PUT_OK at once
// when it needs at most one ack (the master's) and not all of the set.
func (a *AutoSwitch) needsAcks() bool {
	return a.cfg.AllAckInSyncStateSet || a.cfg.InSyncReplicas > 1
}

// WaitAcked waits until a SYNC put ending at offset is held by enough
// replicas: all of the sync state set with allAckInSyncStateSet, else
// inSyncReplicas of them (the master counts). It fails at once with
// CheckInSyncReplicas's errors, and with ctx's error when ctx ends first
// (FLUSH_SLAVE_TIMEOUT).
func (a *AutoSwitch) WaitAcked(ctx context.Context, offset int64) error {
	if err := a.CheckInSyncReplicas(); err != nil {
		return err
	}
	if !a.needsAcks() {
		return nil
	}
	for {
		a.mu.Lock()
		ok := a.ackedLocked(offset)
		ch := a.ackCh
		master := a.master
		a.mu.Unlock()
		if ok {
			return nil
		}
		if !master {
			return ErrNotMaster
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for replicas to ack %d: %w", offset, ctx.Err())
		case <-ch:
		}
	}
}

// ackWaiter is one SYNC put waiting without a goroutine (WaitAckedAsync).
type ackWaiter struct {
	offset int64
	done   func(error)
	timer  *time.Timer
}

// WaitAckedAsync is WaitAcked for the put path: done is called exactly once,
// with nil, CheckInSyncReplicas's errors, ErrNotMaster when the role changes
// meanwhile, or ErrAckTimeout after timeout (slaveTimeout). It never blocks
// and keeps no goroutine per put.
func (a *AutoSwitch) WaitAckedAsync(offset int64, timeout time.Duration, done func(error)) {
	a.mu.Lock()
	if err := a.checkInSyncLocked(); err != nil {
		a.mu.Unlock()
		done(err)
		return
	}
	if !a.needsAcks() || a.ackedLocked(offset) {
		a.mu.Unlock()
		done(nil)
		return
	}
	w := &ackWaiter{offset: offset, done: done}
	a.waiters = append(a.waiters, w)
	w.timer = time.AfterFunc(timeout, func() {
		if a.dropWaiter(w) {
			done(fmt.Errorf("wait for replicas to ack %d: %w", offset, ErrAckTimeout))
		}
	})
	a.mu.Unlock()
}

func (a *AutoSwitch) dropWaiter(w *ackWaiter) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, x := range a.waiters {
		if x == w {
			a.waiters = slices.Delete(a.waiters, i, i+1)
			return true
		}
	}
	return false
}

// readyWaitersLocked takes the waiters answered by the current acks (all of
// them, failed, when this broker is no longer master).
func (a *AutoSwitch) readyWaitersLocked() []*ackWaiter {
	if len(a.waiters) == 0 {
		return nil
	}
	var ready []*ackWaiter
	keep := a.waiters[:0]
	upto := a.ackedUptoLocked()
	for _, w := range a.waiters {
		if !a.master || w.offset <= upto {
			ready = append(ready, w)
		} else {
			keep = append(keep, w)
		}
	}
	clear(a.waiters[len(keep):])
	a.waiters = keep
	return ready
}

func (a *AutoSwitch) answer(ready []*ackWaiter, master bool) {
	// Whoever takes a waiter off the list answers it: the timer's callback
	// finds it gone.
	for _, w := range ready {
		w.timer.Stop()
		if master {
			w.done(nil)
		} else {
			w.done(ErrNotMaster)
		}
	}
}

// ackedLocked is GroupTransferService's count for one request.
func (a *AutoSwitch) ackedLocked(offset int64) bool { return offset <= a.ackedUptoLocked() }

// ackedUptoLocked is the end that enough replicas hold: with
// allAckInSyncStateSet every other member of the set, else inSyncReplicas-1
// slaves besides the master. A slave that reconnected before its old
// connection was noticed dead counts once (Java counts connections, and says
// in a TODO that it should count slaves).
func (a *AutoSwitch) ackedUptoLocked() int64 {
	need := a.cfg.InSyncReplicas - 1
	var set map[int64]bool
	if a.cfg.AllAckInSyncStateSet {
		set = a.syncStateSetLocked()
		need = len(set) - 1
	}
	if need <= 0 {
		return math.MaxInt64
	}
	type slaveAck struct{ id, ack int64 }
	var buf [16]slaveAck
	acks := buf[:0]
	for c := range a.conns {
		id, ack := c.slaveID.Load(), c.ack.Load()
		if set != nil && !set[id] {
			continue
		}
		i := slices.IndexFunc(acks, func(x slaveAck) bool { return x.id == id })
		if i < 0 {
			acks = append(acks, slaveAck{id, ack})
		} else if ack > acks[i].ack {
			acks[i].ack = ack
		}
	}
	if len(acks) < need {
		return -1
	}
	slices.SortFunc(acks, func(x, y slaveAck) int { return cmp.Compare(y.ack, x.ack) })
	return acks[need-1].ack
}

// wakeAckers re-checks every waiting put (acks, the set or the role changed).
func (a *AutoSwitch) wakeAckers() {
	a.mu.Lock()
	a.unlockAfterAcks()
}

// unlockAfterAcks wakes WaitAcked, takes the answered WaitAckedAsync puts,
// releases a.mu and answers them.
func (a *AutoSwitch) unlockAfterAcks() {
	close(a.ackCh)
	a.ackCh = make(chan struct{})
	ready := a.readyWaitersLocked()
	master := a.master
	a.mu.Unlock()
	a.answer(ready, master)
}

// syncStateSetLocked is getSyncStateSet: the union with the asked-for set
// while the controller has not answered.
func (a *AutoSwitch) syncStateSetLocked() map[int64]bool {
	out := make(map[int64]bool, len(a.syncSet)+len(a.remote))
	for id := range a.syncSet {
		out[id] = true
	}
	if a.syncing {
		for id := range a.remote {
			out[id] = true
		}
	}
	return out
}

// computeConfirmLocked is computeConfirmOffset: the least ack of the
// connected sync state set members, capped at the commitlog end; unchanged
// while a member is not connected. A member with several connections (a
// reconnect not yet noticed, or a peer claiming its id) counts with its
// highest ack, as in ackedUptoLocked: Java takes the lowest of every
// connection, so anyone reaching the HA port could hold the confirm offset
// (what consumers see) back by claiming an in-sync slave's id.
func (a *AutoSwitch) computeConfirmLocked() int64 {
	set := a.syncStateSetLocked()
	best := make(map[int64]int64, len(set))
	for c := range a.conns {
		if id := c.slaveID.Load(); set[id] && c.handshook.Load() {
			if ack, ok := best[id]; !ok || c.ack.Load() > ack {
				best[id] = c.ack.Load()
			}
		}
	}
	for id := range set {
		if _, ok := best[id]; id != a.localID && !ok {
			return a.st.ConfirmOffset()
		}
	}
	confirm := a.st.MaxPhyOffset()
	for _, ack := range best {
		if ack > 0 {
			confirm = min(confirm, ack)
		}
	}
	return confirm
}

// servedLocked says whether a live, handshaken connection carries id.
func (a *AutoSwitch) servedLocked(id int64) bool {
	for c := range a.conns {
		if c.handshook.Load() && c.slaveID.Load() == id {
			return true
		}
	}
	return false
}

// trimCaughtUpLocked forgets when the slaves neither connected nor in the
// sync state set last caught up: ids come from whoever connects, so the
// table holds only what is served or in the set.
func (a *AutoSwitch) trimCaughtUpLocked() {
	for id := range a.caughtUp {
		if !a.syncSet[id] && !a.servedLocked(id) {
			delete(a.caughtUp, id)
		}
	}
}

// refreshConfirmLocked sets the master's confirm offset; like Java's
// getConfirmOffset it is the commitlog end (no bound) while the sync state set
// is the master alone or puts need not be acked by all of it.
func (a *AutoSwitch) refreshConfirmLocked() {
	if !a.master {
		return
	}
	if len(a.syncSet) <= 1 || !a.cfg.AllAckInSyncStateSet {
		a.st.UseConfirmOffset(false)
		return
	}
	a.st.SetConfirmOffset(a.computeConfirmLocked())
	a.st.UseConfirmOffset(true)
	a.wakes.poke()
}

// markSyncingLocked is markSynchronizingSyncStateSet.
func (a *AutoSwitch) markSyncingLocked(set map[int64]bool) {
	a.syncing = true
	a.remote = set
}

// notify tells the listener of a wanted sync state set: it replaces one not
// yet taken (the latest wins), so however many are asked while the
// controller is busy, one call follows.
func (a *AutoSwitch) notify(set map[int64]bool) {
	ids := fromSet(set)
	a.log.Info("sync state set wanted", "set", ids)
	a.mu.Lock()
	a.want, a.wanted = ids, true
	a.mu.Unlock()
	select {
	case a.kick <- struct{}{}:
	default: // notifyLoop is kicked already and takes the latest
	}
}

// notifyLoop calls the listener with each wanted set, one at a time.
func (a *AutoSwitch) notifyLoop() {
	defer a.wg.Done()
	for {
		select {
		case <-a.ctx.Done():
			return
		case <-a.kick:
		}
		a.mu.Lock()
		ids, ok, f := a.want, a.wanted, a.listener
		a.want, a.wanted = nil, false
		a.mu.Unlock()
		if ok && f != nil && a.ctx.Err() == nil {
			f(ids)
		}
	}
}

// slaveAcked handles a TRANSFER report of conn (ReadSocketService).
func (a *AutoSwitch) slaveAcked(c *autoConn, offset int64) {
	id := c.slaveID.Load()
	var expand map[int64]bool
	a.mu.Lock()
	if a.master {
		// maybeExpandInSyncStateSet
		if !c.asyncLearner && offset >= c.lastMasterMax.Load() {
			at := time.UnixMilli(c.lastTransferMs.Load())
			if a.st.MaxPhyOffset() == offset {
				at = time.Now()
			}
			a.caughtUpLocked(id, at)
			// Java's getLocalSyncStateSet: while a change is asked, the asked
			// set, so each ack does not ask the controller again.
			local := a.syncSet
			if a.syncing {
				local = a.remote
			}
			// A connection asks for its id once per controller answer (Java
			// asks on every ack until the set holds it): a peer cycling
			// connections under new ids asks at most once each.
			if !local[id] && offset >= a.st.ConfirmOffset() && (!c.asked || c.askedAt != a.answers) {
				if last, ok := a.epoch.LastEntry(); ok && offset >= last.StartOffset {
					set := toSet(fromSet(local))
					set[id] = true
					a.markSyncingLocked(set)
					expand = set
					c.asked, c.askedAt = true, a.answers
				}
			}
		}
		if a.syncSet[id] {
			a.refreshConfirmLocked()
		}
	}
	a.unlockAfterAcks()
	if expand != nil {
		a.notify(expand)
	}
}

func (a *AutoSwitch) caughtUpLocked(id int64, at time.Time) {
	if prev, ok := a.caughtUp[id]; !ok || at.After(prev) {
		a.caughtUp[id] = at
	}
}

// caughtUpNow marks c's slave caught up while c is still a connection (its
// writer may outlive its reader, which forgets the id).
func (a *AutoSwitch) caughtUpNow(c *autoConn) {
	a.mu.Lock()
	if _, ok := a.conns[c]; ok && c.handshook.Load() {
		a.caughtUpLocked(c.slaveID.Load(), time.Now())
	}
	a.mu.Unlock()
}

// MaybeShrinkSyncStateSet is maybeShrinkSyncStateSet: the sync state set
// without the slaves that have not caught up for haMaxTimeSlaveNotCatchup or
// are not connected, and whether that differs from the current one. The
// periodic check calls it and tells OnSyncStateSetChange of a change.
func (a *AutoSwitch) MaybeShrinkSyncStateSet() ([]int64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	set := toSet(fromSet(a.syncSet))
	changed := false
	now := time.Now()
	for id := range set {
		if id == a.localID {
			continue
		}
		at, ok := a.caughtUp[id]
		if !ok || now.Sub(at) > a.cfg.HaMaxTimeSlaveNotCatchup {
			delete(set, id)
			changed = true
		}
	}
	if changed {
		a.markSyncingLocked(set)
	}
	return fromSet(set), changed
}

func (a *AutoSwitch) shrinkLoop() {
	defer a.wg.Done()
	t := time.NewTicker(a.cfg.CheckSyncStateSetPeriod)
	defer t.Stop()
	for {
		select {
		case <-a.ctx.Done():
			return
		case <-t.C:
		}
		a.truncateEpochPrefix()
		if !a.IsMaster() {
			continue
		}
		if set, changed := a.MaybeShrinkSyncStateSet(); changed {
			a.notify(toSet(set))
		}
	}
}

// truncateEpochPrefix drops the epochs whose bytes retention deleted, as
// Java's consume-queue cleaner does after each cleanup (minPhyOffset - 1).
func (a *AutoSwitch) truncateEpochPrefix() {
	minPhy := a.st.MinPhyOffset()
	if first, ok := a.epoch.FirstEntry(); !ok || minPhy <= 0 || first.EndOffset > minPhy-1 {
		return
	}
	if err := a.epoch.TruncatePrefixByOffset(minPhy - 1); err != nil {
		a.log.Error("truncate epoch file prefix", "offset", minPhy-1, "err", err)
	}
}

// connGone is removeConnection: a sync state set member whose last
// connection goes is dropped from the wanted set at once (Java drops it when
// any connection under its id goes, so a peer claiming the id and hanging up
// took a live slave out of the set). An id asked for and not yet answered
// is taken back when its last connection goes, and the time it last caught
// up is forgotten unless the set holds it.
func (a *AutoSwitch) connGone(c *autoConn) {
	id := c.slaveID.Load()
	var shrink map[int64]bool
	a.mu.Lock()
	delete(a.conns, c)
	a.releaseLocked(c.nc)
	a.publishWakesLocked()
	if a.master && c.handshook.Load() && !a.servedLocked(id) && !a.closedLocked() {
		switch {
		case a.syncSet[id]:
			set := toSet(fromSet(a.syncSet))
			delete(set, id)
			a.markSyncingLocked(set)
			shrink = set
		case a.syncing && a.remote[id]:
			set := toSet(fromSet(a.remote))
			delete(set, id)
			a.markSyncingLocked(set)
			shrink = set
		}
		if !a.syncSet[id] {
			delete(a.caughtUp, id)
		}
	}
	a.unlockAfterAcks()
	if shrink != nil {
		a.notify(shrink)
	}
}

// releaseLocked counts a gone connection out of the limits.
func (a *AutoSwitch) releaseLocked(nc net.Conn) { a.gate.release(nc) }

func (a *AutoSwitch) closedLocked() bool { return a.ctx.Err() != nil }

func toSet(ids []int64) map[int64]bool {
	m := make(map[int64]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

func fromSet(m map[int64]bool) []int64 {
	out := make([]int64, 0, len(m))
	for id, in := range m {
		if in {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Status is haStatus (HARuntimeInfo) in controller mode: a master lists its
// connections, inSync meaning "in the sync state set"; a slave its client.
func (a *AutoSwitch) Status() RuntimeInfo {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.master {
		info := RuntimeInfo{HaConnectionInfo: []ConnectionRuntimeInfo{}}
		if a.client != nil {
			info.HaClientRuntimeInfo = a.client.runtimeInfo()
		}
		return info
	}
	end := a.st.MaxPhyOffset()
	info := RuntimeInfo{Master: true, MasterCommitLogMax: end, HaConnectionInfo: []ConnectionRuntimeInfo{},
		InSyncSlaveNums: len(a.syncSet) - 1}
	for c := range a.conns {
		ack := c.ack.Load()
		info.HaConnectionInfo = append(info.HaConnectionInfo, ConnectionRuntimeInfo{Addr: c.nc.RemoteAddr().String(),
			SlaveAckOffset: ack, Diff: end - ack, InSync: a.syncSet[c.slaveID.Load()], TransferFromWhere: c.next.Load(),
			TransferredByteInSecond: c.flow.perSecond(time.Now())})
	}
	return info
}
