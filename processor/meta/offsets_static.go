package meta

import "strings"

// Offsets of static topics' remapped logical queues, whose stretches lie in
// several physical queues (possibly on other brokers): an admin reset of one
// is kept by logical id and offset, apart from the physical tables.

// AssignLogicalReset records an admin reset of logical queue logicalID: the
// next pull of it answers PULL_OFFSET_MOVED with offset (a logical offset).
func (m *ConsumerOffsetManager) AssignLogicalReset(group, topic string, logicalID int32, offset int64) {
	if offset < 0 || logicalID < 0 {
		return
	}
	m.putPending(m.logicalReset, topicGroup{strings.Clone(topic), strings.Clone(group)}, logicalID, offset)
}

// LogicalReset returns a pending reset of logical queue logicalID.
func (m *ConsumerOffsetManager) LogicalReset(group, topic string, logicalID int32) (int64, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	off, ok := m.logicalReset[topicGroup{topic, group}][logicalID]
	return off, ok
}

// TakeLogicalReset returns and clears a pending reset of logical queue
// logicalID.
func (m *ConsumerOffsetManager) TakeLogicalReset(group, topic string, logicalID int32) (int64, bool) {
	return m.takePending(m.logicalReset, group, topic, logicalID)
}

// Forget drops the group's committed offset of one queue, its last pull and
// any pending reset of it: a logical queue reset to an earlier item must not
// be read back from a later one (the query reads the latest item first).
func (m *ConsumerOffsetManager) Forget(group, topic string, queueID int32) {
	k := topicGroup{topic, group}
	m.mu.Lock()
	for _, t := range []map[topicGroup]map[int32]int64{m.table, m.reset} {
		if q, ok := t[k]; ok {
			if _, had := q[queueID]; had {
				delete(q, queueID)
				m.file.Mark()
			}
		}
	}
	m.mu.Unlock()
	m.pullMu.Lock()
	if p, ok := m.pulled[k]; ok {
		delete(p, queueID)
	}
	m.pullMu.Unlock()
}
