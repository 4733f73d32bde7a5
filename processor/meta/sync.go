package meta

import (
	"fmt"
	"strings"

	"rmqd/codec"
)

// A slave copies its master's tables (SlaveSynchronize): the bodies are the
// master's GET_ALL_* answers.

// ReplaceFromMaster makes the table the master's when its data version differs
// (topics the master no longer has are dropped), then persists it and tells
// the change listener, so the name servers get the whole new table with the
// next registration rather than at the next period (Java waits for the period).
func (m *TopicConfigManager) ReplaceFromMaster(body []byte) error {
	var w TopicConfigTable
	if err := codec.UnmarshalBody(body, &w); err != nil {
		return fmt.Errorf("decode master topic configs: %w", err)
	}
	if w.DataVersion == m.version.Get() {
		return nil
	}
	m.mu.Lock()
	t := make(map[string]TopicConfig, len(w.TopicConfigTable))
	for name, tc := range w.TopicConfigTable {
		if tc.Attributes == nil {
			tc.Attributes = map[string]string{}
		}
		if tc.TopicName == "" {
			tc.TopicName = name
		}
		t[name] = tc
	}
	m.table = t
	m.unsent, m.deleted = nil, true // the next registration sends the whole table, as after a delete
	m.version.Set(w.DataVersion)
	m.mu.Unlock()
	err := m.Persist()
	if m.onChange != nil {
		m.onChange(nil)
	}
	return err
}

// ReplaceFromMaster is ReplaceFromMaster for subscription groups.
func (m *SubscriptionGroupManager) ReplaceFromMaster(body []byte) error {
	var w SubscriptionGroupTable
	if err := codec.UnmarshalBody(body, &w); err != nil {
		return fmt.Errorf("decode master subscription groups: %w", err)
	}
	if w.DataVersion == m.version.Get() {
		return nil
	}
	m.mu.Lock()
	t := make(map[string]SubscriptionGroupConfig, len(w.SubscriptionGroupTable))
	for k, v := range w.SubscriptionGroupTable {
		if v.GroupName == "" {
			v.GroupName = k
		}
		t[k] = v
	}
	m.table = t
	// The bans come too: a slave serving reads (slaveReadEnable) must refuse
	// what its master refuses. Java's slave leaves the table behind.
	m.takeForbidden(w.ForbiddenTable)
	m.version.Set(w.DataVersion)
	m.mu.Unlock()
	return m.Persist()
}

// PutAllFromMaster overlays the master's consumer offsets (Java's putAll: a
// group the master dropped stays) and persists them.
func (m *ConsumerOffsetManager) PutAllFromMaster(body []byte) error {
	var w struct {
		DataVersion    DataVersion                `json:"dataVersion"`
		OffsetTable    map[string]map[int32]int64 `json:"offsetTable"`
		LmqOffsetTable map[string]int64           `json:"lmqOffsetTable"`
	}
	if err := codec.UnmarshalBody(body, &w); err != nil {
		return fmt.Errorf("decode master consumer offsets: %w", err)
	}
	m.mu.Lock()
	for k, v := range w.OffsetTable {
		i := strings.LastIndexByte(k, '@')
		if i < 0 {
			continue
		}
		m.table[topicGroup{k[:i], k[i+1:]}] = v
	}
	// Java's slave decodes only offsetTable, so its LMQ groups start over
	// after a failover; a slave under enableLmq keeps them here.
	for k, off := range w.LmqOffsetTable {
		if i := strings.LastIndexByte(k, '@'); i >= 0 && m.lmq {
			m.lmqTable[topicGroup{k[:i], k[i+1:]}] = off
		}
	}
	m.version.Set(w.DataVersion)
	m.mu.Unlock()
	return m.Persist()
}

// MergeAhead takes from a slave's GET_ALL_CONSUMER_OFFSET answer every offset
// ahead of this table's (a master's pre-online reverse sync: what consumers
// committed to the slave that acted for it); it returns how many it took.
// Offsets only move back by a reset, which a slave refuses, so the larger is
// the later. LMQ offsets are left as they are.
func (m *ConsumerOffsetManager) MergeAhead(body []byte) (int, error) {
	var w struct {
		OffsetTable map[string]map[int32]int64 `json:"offsetTable"`
	}
	if err := codec.UnmarshalBody(body, &w); err != nil {
		return 0, fmt.Errorf("decode slave consumer offsets: %w", err)
	}
	n := 0
	m.mu.Lock()
	for k, v := range w.OffsetTable {
		i := strings.LastIndexByte(k, '@')
		if i < 0 {
			continue
		}
		tg := topicGroup{k[:i], k[i+1:]}
		qs := m.table[tg]
		for q, off := range v {
			if cur, ok := qs[q]; ok && cur >= off {
				continue
			}
			if qs == nil {
				qs = map[int32]int64{}
				m.table[tg] = qs
			}
			qs[q] = off
			n++
		}
	}
	m.mu.Unlock()
	if n == 0 {
		return 0, nil
	}
	return n, m.Persist()
}
