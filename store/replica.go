package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"rmqd/codec"
)

// Broker roles (MessageStoreConfig.brokerRole).
const (
	RoleAsyncMaster = "ASYNC_MASTER"
	RoleSyncMaster  = "SYNC_MASTER"
	RoleSlave       = "SLAVE"
)

// Errors of the replication API.
var (
	// ErrNotAtEnd means a slave was handed bytes that do not start at its own
	// commitlog end: the master and this store have diverged.
	ErrNotAtEnd = errors.New("store: replicated bytes do not start at the commitlog end")
	// ErrOffsetGone means the offset lies before the first commitlog file.
	ErrOffsetGone = errors.New("store: commitlog offset no longer on disk")
)

// Role is the brokerRole in force.
func (s *DefaultStore) Role() string { return *s.role.Load() }

// SetRole changes the brokerRole at runtime: in controller mode the controller,
// not broker.conf, says who is master (Java's setBrokerRole on role change).
func (s *DefaultStore) SetRole(role string) error {
	switch role {
	case RoleAsyncMaster, RoleSyncMaster, RoleSlave:
	default:
		return fmt.Errorf("store: brokerRole %q: want ASYNC_MASTER, SYNC_MASTER or SLAVE", role)
	}
	s.role.Store(&role)
	return nil
}

// IsSlave reports brokerRole=SLAVE.
func (s *DefaultStore) IsSlave() bool { return s.Role() == RoleSlave }

// syncMaster reports brokerRole=SYNC_MASTER: puts wait for a slave's ack.
func (s *DefaultStore) syncMaster() bool { return s.Role() == RoleSyncMaster }

// CommitLogFileSize is mappedFileSizeCommitLog; a slave rolls its files at the
// same boundaries as its master, so both must agree on it.
func (s *DefaultStore) CommitLogFileSize() int { return s.cfg.MappedFileSizeCommitLog }

// ReadCommitLog copies raw commitlog bytes from offset into dst, never past the
// end of the file holding offset nor past what is written (Java's
// getCommitLogData, bounded by len(dst)). A file ended by a blank record reads
// to its very end. It returns 0 when nothing is written at offset yet, and
// ErrOffsetGone when offset precedes the first file.
func (s *DefaultStore) ReadCommitLog(dst []byte, offset int64) (int, error) {
	q := s.commitLog.q
	f := q.findHeld(offset)
	if f == nil {
		if min := q.minOffset(); min >= 0 && offset < min {
			return 0, fmt.Errorf("read commitlog at %d (first file at %d): %w", offset, min, ErrOffsetGone)
		}
		return 0, nil
	}
	defer f.release()
	pos := offset - f.from
	wrote := f.wrote.Load()
	if pos >= wrote {
		return 0, nil
	}
	return copy(dst, f.data[pos:wrote]), nil
}

// AppendCommitLog writes bytes replicated from a master at offset, which must be
// this store's commitlog end (any offset on a file boundary when the store is
// empty). The bytes never cross a file boundary: a master sends at most the rest
// of one file per frame. The caller then calls DispatchReplicated once for what
// it appended (Java's appendToCommitLog; its reput thread polls every
// millisecond instead).
func (s *DefaultStore) AppendCommitLog(offset int64, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	dst, err := s.ReplicaTarget(offset, len(data))
	if err != nil {
		return err
	}
	if dst == nil {
		return s.appendReplica(offset, data)
	}
	copy(dst, data)
	return s.CommitReplica(offset, len(data))
}

// ReplicaTarget is where n replicated bytes at offset go: the mapped file
// itself, so a slave reads a frame's body from its socket straight into the
// commitlog (no buffer of its own, no second copy); CommitReplica then makes
// them visible. Nil without an error when the commitlog is written through
// (SYNC_FLUSH): then AppendCommitLog takes the bytes. Only the replication
// client writes a slave's commitlog, so nothing moves the end in between;
// CommitReplica checks that it did not.
func (s *DefaultStore) ReplicaTarget(offset int64, n int) ([]byte, error) {
	c := s.commitLog
	c.mu.Lock()
	defer c.mu.Unlock()
	f, wrote, err := c.replicaFile(offset, n)
	if err != nil {
		return nil, err
	}
	if c.q.writeThrough && f.openForWrite() == nil {
		return nil, nil
	}
	return f.data[wrote : wrote+int64(n) : wrote+int64(n)], nil
}

// CommitReplica makes the n bytes written into ReplicaTarget(offset, n) part of
// the commitlog.
func (s *DefaultStore) CommitReplica(offset int64, n int) error {
	c := s.commitLog
	c.mu.Lock()
	f, wrote, err := c.replicaFile(offset, n)
	if err != nil {
		c.mu.Unlock()
		return err
	}
	f.wrote.Store(wrote + int64(n))
	c.mu.Unlock()
	s.replicaAppended()
	return nil
}

// appendReplica copies data through the write-through path under the lock.
func (s *DefaultStore) appendReplica(offset int64, data []byte) error {
	c := s.commitLog
	c.mu.Lock()
	f, wrote, err := c.replicaFile(offset, len(data))
	if err != nil {
		c.mu.Unlock()
		return err
	}
	dst := c.target(f, wrote, len(data))
	copy(dst, data)
	if err := c.commit(f, wrote, dst[:len(data)]); err != nil {
		c.mu.Unlock()
		return fmt.Errorf("append commitlog: %w", err)
	}
	f.wrote.Store(wrote + int64(len(data)))
	c.mu.Unlock()
	s.replicaAppended()
	return nil
}

// replicaAppended follows a replicated append. Under SYNC_FLUSH the group
// commit flushes it (no put waits on it, so nothing else would), which also
// lets dispatch past it.
func (s *DefaultStore) replicaAppended() {
	s.appendedReplica()
	if s.cfg.FlushDiskType == SyncFlush {
		s.group.wakeup()
	}
}

// replicaFile is the file n bytes at offset go into, and where it is written
// to, when offset is exactly the commitlog's end and the bytes fit the file.
// Called with mu held.
func (c *commitLog) replicaFile(offset int64, n int) (*mappedFile, int64, error) {
	size := int64(c.q.fileSize)
	if c.closed {
		return nil, 0, fmt.Errorf("append commitlog: %w", ErrClosed)
	}
	end := c.q.maxOffset()
	if c.q.last() == nil {
		if offset%size != 0 {
			return nil, 0, fmt.Errorf("append %d bytes at %d to an empty commitlog: %w", n, offset, ErrNotAtEnd)
		}
	} else if offset != end {
		return nil, 0, fmt.Errorf("append %d bytes at %d, commitlog ends at %d: %w", n, offset, end, ErrNotAtEnd)
	}
	f, err := c.q.lastForWrite(offset)
	if err != nil {
		return nil, 0, fmt.Errorf("append commitlog: %w", err)
	}
	wrote := f.wrote.Load()
	if f.from+wrote != offset || wrote+int64(n) > size {
		return nil, 0, fmt.Errorf("append %d bytes at %d into file %d written to %d: %w",
			n, offset, f.from, wrote, ErrNotAtEnd)
	}
	return f, wrote, nil
}

// DispatchReplicated builds consume queues and the index from replicated bytes
// on the caller's goroutine when the dispatcher is idle: a slave calls it once
// per read, which saves waking the dispatcher (and its M) for every frame. A
// busy dispatcher sees the bytes itself; one stuck at a record is woken to
// retry on its own schedule.
func (s *DefaultStore) DispatchReplicated() {
	if s.reputFrom.Load() >= s.dispatchLimit() {
		return // all dispatchable is; under SYNC_FLUSH the flush wakes the dispatcher
	}
	if !s.reputNap.idle.Load() {
		return // busy: it looks at the end again before it waits
	}
	if stuck, _ := s.doReput(); stuck {
		s.wakeReput()
	}
}

// ErrClosed means the store is shut down.
var ErrClosed = errors.New("store: closed")

// replicaWaiters is the SYNC_MASTER half of Java's GroupTransferService: puts
// wait, without a goroutine each, until a slave has acknowledged their end.
type replicaWaiters struct {
	// acked is push2SlaveMaxOffset: the highest offset any slave acknowledged.
	acked atomic.Int64
	// slaves counts the connected slaves.
	slaves atomic.Int32
	mu     sync.Mutex
	reqs   []*flushReq
	// waiter, when set, replaces the wait below (SetReplicaWaiter).
	waiter atomic.Pointer[ReplicaWaiter]
}

// ReplicaWaiter answers done exactly once with how a SYNC_MASTER put ending at next was replicated
// within timeout.
type ReplicaWaiter func(next int64, timeout time.Duration, done func(PutStatus))

// SetReplicaWaiter replaces the classic wait for one slave's ack: in controller mode the auto-switch HA
// service decides (the sync state set, inSyncReplicas, allAckInSyncStateSet). nil restores the classic wait.
func (s *DefaultStore) SetReplicaWaiter(w ReplicaWaiter) {
	if w == nil {
		s.replicas.waiter.Store(nil)
		return
	}
	s.replicas.waiter.Store(&w)
}

// SlaveAcked records a slave's acknowledged commitlog offset (its max offset
// report) and answers the SYNC_MASTER puts it covers.
func (s *DefaultStore) SlaveAcked(offset int64) {
	r := &s.replicas
	for {
		cur := r.acked.Load()
		if offset <= cur {
			return
		}
		if r.acked.CompareAndSwap(cur, offset) {
			break
		}
	}
	r.mu.Lock()
	keep := r.reqs[:0]
	var ready []*flushReq
	for _, q := range r.reqs {
		if q.next <= offset {
			ready = append(ready, q)
		} else {
			keep = append(keep, q)
		}
	}
	clear(r.reqs[len(keep):])
	r.reqs = keep
	r.mu.Unlock()
	for _, q := range ready {
		q.finish(true)
	}
}

// ReplicaWaiting says whether SYNC_MASTER puts wait for a slave's ack.
func (s *DefaultStore) ReplicaWaiting() bool {
	r := &s.replicas
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reqs) > 0
}

// SlaveConnected counts slave connections up (+1) and down (-1); SYNC_MASTER
// puts answer SLAVE_NOT_AVAILABLE while none is connected.
func (s *DefaultStore) SlaveConnected(delta int) { s.replicas.slaves.Add(int32(delta)) }

// SlaveAckedOffset is the highest offset a slave has acknowledged.
func (s *DefaultStore) SlaveAckedOffset() int64 { return s.replicas.acked.Load() }

// slaveOK is Java's isSlaveOK: a slave is connected and no more than
// haMaxGapNotInSync behind end.
func (s *DefaultStore) slaveOK(end int64) bool {
	r := &s.replicas
	return r.slaves.Load() > 0 && end-r.acked.Load() < s.live.Load().HaMaxGapNotInSync
}

// autoInSyncAlone is Java's calcNeedAckNums for a master with no slave in
// sync: with enableAutoInSyncReplicas the acks wanted drop to the replicas in
// sync (the master alone), but never below minInSyncReplicas; one ack is the
// master's own write, so the put is answered at once.
func (s *DefaultStore) autoInSyncAlone() bool {
	return s.live.Load().EnableAutoInSyncReplicas && s.cfg.MinInSyncReplicas <= 1
}

// waitReplicaAsync answers done with PutOK once a slave acknowledged next,
// PutFlushSlaveTimeout after timeout, or PutSlaveNotAvailable at once when no
// slave is in sync (4.9.x handleHA; 5.x only waits with inSyncReplicas>1) and
// enableAutoInSyncReplicas does not let the master's own write suffice.
func (s *DefaultStore) waitReplicaAsync(next int64, timeout time.Duration, done func(PutStatus)) {
	if w := s.replicas.waiter.Load(); w != nil {
		(*w)(next, timeout, done)
		return
	}
	if !s.slaveOK(next) {
		if s.autoInSyncAlone() {
			done(PutOK)
		} else {
			done(PutSlaveNotAvailable)
		}
		return
	}
	r := &s.replicas
	if r.acked.Load() >= next {
		done(PutOK)
		return
	}
	q := &flushReq{next: next}
	q.cb = func(ok bool) {
		if ok {
			done(PutOK)
		} else {
			done(PutFlushSlaveTimeout)
		}
	}
	q.timer = time.AfterFunc(timeout, func() {
		s.dropReplicaReq(q)
		q.expire()
	})
	r.mu.Lock()
	r.reqs = append(r.reqs, q)
	r.mu.Unlock()
	// An ack that landed between the check above and the append is not lost.
	if r.acked.Load() >= next {
		s.dropReplicaReq(q)
		q.finish(true)
	}
}

func (s *DefaultStore) dropReplicaReq(q *flushReq) {
	r := &s.replicas
	r.mu.Lock()
	for i, x := range r.reqs {
		if x == q {
			n := len(r.reqs) - 1
			copy(r.reqs[i:], r.reqs[i+1:])
			r.reqs[n] = nil
			r.reqs = r.reqs[:n]
			break
		}
	}
	r.mu.Unlock()
}

// waitReplica is waitReplicaAsync for a caller that may block.
func (s *DefaultStore) waitReplica(ctx context.Context, next int64, timeout time.Duration) PutStatus {
	ch := make(chan PutStatus, 1)
	s.waitReplicaAsync(next, timeout, func(st PutStatus) { ch <- st })
	select {
	case st := <-ch:
		return st
	case <-ctx.Done():
		return PutFlushSlaveTimeout
	}
}

// needsReplica says whether a put of props waits for a slave: on a SYNC_MASTER,
// unless the message says WAIT=false.
func (s *DefaultStore) needsReplica(props string) bool {
	if !s.syncMaster() {
		return false
	}
	w, ok := codec.PropertyValue(props, codec.PropWait)
	return !ok || strings.EqualFold(w, "true")
}

// RecoverTopicQueueTable resets the next queue offset of every queue from its consume queue (Java's
// recoverTopicQueueTable on changeToMaster): a slave's dispatch fills its queues from the master's
// records, so a slave promoted at runtime must take up numbering where they end.
func (s *DefaultStore) RecoverTopicQueueTable() {
	s.dispatchMu.Lock()
	defer s.dispatchMu.Unlock()
	s.rebuildOffsets()
}

// SetMasterFlushedOffset keeps a slave's masterFlushedOffset in the checkpoint
// (bytes 24-31, written at its next flush), as RESET_MASTER_FLUSH_OFFSET asks.
// Nothing in rmqd reads it back; the checkpoint stays what a Java broker
// would find there.
func (s *DefaultStore) SetMasterFlushedOffset(offset int64) {
	s.checkpoint.setMasterFlushedOffset(offset)
}

// MasterFlushedOffset is the checkpoint's masterFlushedOffset.
func (s *DefaultStore) MasterFlushedOffset() int64 {
	return s.checkpoint.masterFlushedOffset.Load()
}
