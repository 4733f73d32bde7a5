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
// of one file per frame. The dispatcher then builds consume queues and the index
// from them (Java's appendToCommitLog).
func (s *DefaultStore) AppendCommitLog(offset int64, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	c := s.commitLog
	size := int64(c.q.fileSize)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("append commitlog: %w", ErrClosed)
	}
	end := c.q.maxOffset()
	if c.q.last() == nil {
		if offset%size != 0 {
			c.mu.Unlock()
			return fmt.Errorf("append %d bytes at %d to an empty commitlog: %w", len(data), offset, ErrNotAtEnd)
		}
	} else if offset != end {
		c.mu.Unlock()
		return fmt.Errorf("append %d bytes at %d, commitlog ends at %d: %w", len(data), offset, end, ErrNotAtEnd)
	}
	f, err := c.q.lastForWrite(offset)
	if err != nil {
		c.mu.Unlock()
		return fmt.Errorf("append commitlog: %w", err)
	}
	wrote := f.wrote.Load()
	if f.from+wrote != offset || wrote+int64(len(data)) > size {
		c.mu.Unlock()
		return fmt.Errorf("append %d bytes at %d into file %d written to %d: %w",
			len(data), offset, f.from, wrote, ErrNotAtEnd)
	}
	dst := c.target(f, wrote, len(data))
	copy(dst, data)
	if err := c.commit(f, wrote, dst[:len(data)]); err != nil {
		c.mu.Unlock()
		return fmt.Errorf("append commitlog: %w", err)
	}
	f.wrote.Store(wrote + int64(len(data)))
	c.mu.Unlock()
	if c.onAppend != nil {
		c.onAppend()
	}
	return nil
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

// SlaveConnected counts slave connections up (+1) and down (-1); SYNC_MASTER
// puts answer SLAVE_NOT_AVAILABLE while none is connected.
func (s *DefaultStore) SlaveConnected(delta int) { s.replicas.slaves.Add(int32(delta)) }

// SlaveAckedOffset is the highest offset a slave has acknowledged.
func (s *DefaultStore) SlaveAckedOffset() int64 { return s.replicas.acked.Load() }

// slaveOK is Java's isSlaveOK: a slave is connected and no more than
// haMaxGapNotInSync behind end.
func (s *DefaultStore) slaveOK(end int64) bool {
	r := &s.replicas
	return r.slaves.Load() > 0 && end-r.acked.Load() < s.cfg.HaMaxGapNotInSync
}

// waitReplicaAsync answers done with PutOK once a slave acknowledged next,
// PutFlushSlaveTimeout after timeout, or PutSlaveNotAvailable at once when no
// slave is in sync (4.9.x handleHA; 5.x only waits with inSyncReplicas>1).
func (s *DefaultStore) waitReplicaAsync(next int64, timeout time.Duration, done func(PutStatus)) {
	if w := s.replicas.waiter.Load(); w != nil {
		(*w)(next, timeout, done)
		return
	}
	if !s.slaveOK(next) {
		done(PutSlaveNotAvailable)
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
