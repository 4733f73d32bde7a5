package clients

import (
	"sync"
	"time"

	"rmqd/codec"
)

// DefaultLockMaxLiveTime is rocketmq.broker.rebalance.lockMaxLiveTime.
const DefaultLockMaxLiveTime = 60 * time.Second

type lockEntry struct {
	clientID   string
	lastUpdate time.Time
}

// RebalanceLockManager holds orderly-consumption queue locks in memory:
// group → queue → owner, expiring after maxLive without renewal.
type RebalanceLockManager struct {
	maxLive time.Duration
	now     func() time.Time
	mu      sync.Mutex
	table   map[string]map[codec.MessageQueue]*lockEntry
}

// NewRebalanceLockManager uses the given expiry (0 means 60 s).
func NewRebalanceLockManager(maxLive time.Duration) *RebalanceLockManager {
	if maxLive <= 0 {
		maxLive = DefaultLockMaxLiveTime
	}
	return &RebalanceLockManager{maxLive: maxLive, now: time.Now, table: map[string]map[codec.MessageQueue]*lockEntry{}}
}

// TryLockBatch locks (or renews) every queue that is free, expired or already the
// client's, and returns those.
func (m *RebalanceLockManager) TryLockBatch(group string, mqs []codec.MessageQueue, clientID string) []codec.MessageQueue {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	g, ok := m.table[group]
	if !ok {
		g = map[codec.MessageQueue]*lockEntry{}
		m.table[group] = g
	}
	out := make([]codec.MessageQueue, 0, len(mqs))
	for _, mq := range mqs {
		e, ok := g[mq]
		switch {
		case !ok:
			g[mq] = &lockEntry{clientID: clientID, lastUpdate: now}
		case e.clientID == clientID:
			e.lastUpdate = now
		case now.Sub(e.lastUpdate) > m.maxLive:
			e.clientID, e.lastUpdate = clientID, now
		default:
			continue
		}
		out = append(out, mq)
	}
	return out
}

// UnlockBatch releases the queues the client holds.
func (m *RebalanceLockManager) UnlockBatch(group string, mqs []codec.MessageQueue, clientID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, ok := m.table[group]
	if !ok {
		return
	}
	for _, mq := range mqs {
		if e, ok := g[mq]; ok && e.clientID == clientID {
			delete(g, mq)
		}
	}
	if len(g) == 0 {
		delete(m.table, group)
	}
}

// IsLocked reports whether the client holds a live lock on mq.
func (m *RebalanceLockManager) IsLocked(group string, mq codec.MessageQueue, clientID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.table[group][mq]
	return ok && e.clientID == clientID && m.now().Sub(e.lastUpdate) <= m.maxLive
}

// IsLockAllExpired reports that no queue of group has a live lock: the group
// does not consume orderly right now (RebalanceLockManager.isLockAllExpired).
func (m *RebalanceLockManager) IsLockAllExpired(group string) bool {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.table[group] {
		if now.Sub(e.lastUpdate) <= m.maxLive {
			return false
		}
	}
	return true
}

// Expire drops the locks not renewed for maxLive. A lapsed lock is free to
// anyone already; Java keeps its entry until a client locks that queue again,
// so the locks of crashed clients and of deleted topics would stay for the
// broker's life.
func (m *RebalanceLockManager) Expire() {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for group, g := range m.table {
		for mq, e := range g {
			if now.Sub(e.lastUpdate) > m.maxLive {
				delete(g, mq)
			}
		}
		if len(g) == 0 {
			delete(m.table, group)
		}
	}
}
