package meta

import (
	"bytes"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"rmqd/codec"
	"rmqd/compat"
)

type topicGroup struct{ topic, group string }

// ConsumerOffsetManager keeps committed consumer offsets (consumerOffset.json,
// keyed "topic@group" with bare integer queue ids as fastjson writes them).
type ConsumerOffsetManager struct {
	log   *slog.Logger
	path  string
	mu    sync.RWMutex
	table map[topicGroup]map[int32]int64
	// reset holds offsets an admin reset assigned and the next pull of that
	// queue must hand to the consumer (server-side reset, 5.x default).
	reset map[topicGroup]map[int32]int64
	// logicalReset is reset for static topics' remapped logical queues:
	// logical id → logical offset, taken by the next pull of that logical
	// queue (offsets_static.go). Memory only, as reset.
	logicalReset map[topicGroup]map[int32]int64
	// pullMu guards pulled: each queue's next offset after the group's last
	// pull (Java's pullOffsetTable), memory only. A pull of a queue seen
	// before stores into its atomic under the read lock, allocating nothing.
	pullMu  sync.RWMutex
	pulled  map[topicGroup]map[int32]*atomic.Int64
	version Version
	// file is marked by every update, so the 5 s flush does not rewrite (and
	// fsync) an unchanged file.
	file compat.DirtyFile
	// lmq keeps the offsets of LMQ groups (%LMQ%...) in lmqTable, one per
	// topic@group whatever the queue id, and the whole table in
	// lmqConsumerOffset.json (Java's LmqConsumerOffsetManager, enableLmq).
	lmq      bool
	lmqTable map[topicGroup]int64
	// fallback is consumerOffset.json, read when lmqConsumerOffset.json
	// does not exist yet (Java reads only the latter once LMQ is on).
	fallback string
}

// Size is how many topic@group entries the table holds (GET_BROKER_LITE_INFO's offsetTableSize).
func (m *ConsumerOffsetManager) Size() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.table) + len(m.lmqTable)
}

// UseLMQ switches to Java's LmqConsumerOffsetManager (enableLmq); call it
// before Load.
func (m *ConsumerOffsetManager) UseLMQ() {
	dir := filepath.Dir(m.path)
	m.lmq = true
	m.lmqTable = map[topicGroup]int64{}
	m.fallback = m.path
	m.path = filepath.Join(dir, "lmqConsumerOffset.json")
}

// isLMQGroup says whether group's offsets live in lmqTable.
func (m *ConsumerOffsetManager) isLMQGroup(group string) bool { return m.lmq && compat.IsLMQ(group) }

// NewConsumerOffsetManager stores its file in configDir.
func NewConsumerOffsetManager(configDir string, log *slog.Logger) *ConsumerOffsetManager {
	return &ConsumerOffsetManager{log: log, path: filepath.Join(configDir, "consumerOffset.json"),
		table: map[topicGroup]map[int32]int64{}, reset: map[topicGroup]map[int32]int64{},
		logicalReset: map[topicGroup]map[int32]int64{},
		pulled:       map[topicGroup]map[int32]*atomic.Int64{}}
}

// CommitPull records where the group's pull of the queue left it
// (commitPullOffset: every pull, committing or not).
func (m *ConsumerOffsetManager) CommitPull(group, topic string, queueID int32, next int64) {
	m.pullMu.RLock()
	a := m.pulled[topicGroup{topic, group}][queueID]
	m.pullMu.RUnlock()
	if a != nil {
		a.Store(next)
		return
	}
	m.pullMu.Lock()
	k := topicGroup{topic, group}
	q, ok := m.pulled[k]
	if !ok {
		k = topicGroup{strings.Clone(topic), strings.Clone(group)}
		q = map[int32]*atomic.Int64{}
		m.pulled[k] = q
	}
	if a = q[queueID]; a == nil {
		a = new(atomic.Int64)
		q[queueID] = a
	}
	a.Store(next)
	m.pullMu.Unlock()
}

// QueryPull is queryPullOffset: where the last pull left the queue, else the
// committed offset (-1 without either).
func (m *ConsumerOffsetManager) QueryPull(group, topic string, queueID int32) int64 {
	m.pullMu.RLock()
	a := m.pulled[topicGroup{topic, group}][queueID]
	m.pullMu.RUnlock()
	if a != nil {
		return a.Load()
	}
	return m.Query(group, topic, queueID)
}

// AssignReset records an admin reset: the committed offset moves now, the
// last pull is forgotten and the next pull of the queue answers
// PULL_OFFSET_MOVED with it.
func (m *ConsumerOffsetManager) AssignReset(group, topic string, queueID int32, offset int64) {
	if offset < 0 || queueID < 0 {
		return
	}
	m.Commit(group, topic, queueID, offset)
	k := topicGroup{strings.Clone(topic), strings.Clone(group)}
	m.putPending(m.reset, k, queueID, offset)
	// The last pull no longer says what is in flight: Java keeps it, and an
	// offline group reset back shows all it had pulled as in flight.
	m.pullMu.Lock()
	if p, ok := m.pulled[k]; ok {
		delete(p, queueID)
	}
	m.pullMu.Unlock()
	m.file.Mark()
}

// HasReset reports a pending reset of the queue.
func (m *ConsumerOffsetManager) HasReset(group, topic string, queueID int32) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, ok := m.reset[topicGroup{topic, group}][queueID]
	return ok
}

// TakeReset returns and clears a pending reset of the queue.
func (m *ConsumerOffsetManager) TakeReset(group, topic string, queueID int32) (int64, bool) {
	return m.takePending(m.reset, group, topic, queueID)
}

// putPending records a pending reset in table (reset or logicalReset).
func (m *ConsumerOffsetManager) putPending(table map[topicGroup]map[int32]int64, k topicGroup, id int32, offset int64) {
	m.mu.Lock()
	q, ok := table[k]
	if !ok {
		q = map[int32]int64{}
		table[k] = q
	}
	q[id] = offset
	m.mu.Unlock()
}

// takePending returns and clears a pending reset in table; a pull finds the
// table empty under the read lock, as it nearly always is.
func (m *ConsumerOffsetManager) takePending(table map[topicGroup]map[int32]int64, group, topic string, id int32) (int64, bool) {
	m.mu.RLock()
	empty := len(table) == 0
	m.mu.RUnlock()
	if empty {
		return 0, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := topicGroup{topic, group}
	q := table[k]
	off, ok := q[id]
	if ok {
		delete(q, id)
		if len(q) == 0 {
			delete(table, k)
		}
	}
	return off, ok
}

// Load reads consumerOffset.json (or .bak); bare integer keys are accepted.
// Under UseLMQ it reads lmqConsumerOffset.json, or consumerOffset.json while
// the former does not exist, so turning LMQ on keeps the groups' offsets.
func (m *ConsumerOffsetManager) Load() error {
	path := m.path
	if m.fallback != "" && !configFileExists(path) && configFileExists(m.fallback) {
		m.log.Info("no lmqConsumerOffset.json yet: loading consumerOffset.json", "path", m.fallback)
		path = m.fallback
	}
	return LoadConfigFile(path, func(data []byte) error {
		var w struct {
			DataVersion    DataVersion                `json:"dataVersion"`
			OffsetTable    map[string]map[int32]int64 `json:"offsetTable"`
			LmqOffsetTable map[string]int64           `json:"lmqOffsetTable"`
		}
		if err := codec.UnmarshalBody(data, &w); err != nil {
			return err
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		for k, v := range w.OffsetTable {
			i := strings.LastIndexByte(k, '@')
			if i < 0 {
				continue
			}
			q := make(map[int32]int64, len(v))
			for id, off := range v {
				q[id] = off
			}
			m.table[topicGroup{k[:i], k[i+1:]}] = q
		}
		for k, off := range w.LmqOffsetTable {
			if i := strings.LastIndexByte(k, '@'); i >= 0 && m.lmq {
				m.lmqTable[topicGroup{k[:i], k[i+1:]}] = off
			}
		}
		m.version.Set(w.DataVersion)
		return nil
	})
}

// Encode writes the file content: {"dataVersion":…,"offsetTable":{"t@g":{0:12}}}.
func (m *ConsumerOffsetManager) Encode() []byte {
	m.mu.RLock()
	keys := make([]topicGroup, 0, len(m.table))
	for k := range m.table {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].topic != keys[j].topic {
			return keys[i].topic < keys[j].topic
		}
		return keys[i].group < keys[j].group
	})
	var b bytes.Buffer
	dv, _ := codec.MarshalBody(m.version.Get())
	b.WriteString("{\n\t\"dataVersion\":")
	b.Write(dv)
	if m.lmq {
		m.encodeLMQ(&b)
	}
	b.WriteString(",\n\t\"offsetTable\":{")
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := codec.MarshalBody(k.topic + "@" + k.group)
		b.WriteString("\n\t\t")
		b.Write(name)
		b.WriteString(":")
		WriteIntKeyedMap(&b, m.table[k])
	}
	m.mu.RUnlock()
	b.WriteString("\n\t}\n}")
	return b.Bytes()
}

// encodeLMQ writes lmqOffsetTable, between dataVersion and offsetTable as
// fastjson orders LmqConsumerOffsetManager's properties. Called with mu held.
func (m *ConsumerOffsetManager) encodeLMQ(b *bytes.Buffer) {
	keys := make([]string, 0, len(m.lmqTable))
	for k := range m.lmqTable {
		keys = append(keys, k.topic+"@"+k.group)
	}
	sort.Strings(keys)
	b.WriteString(",\n\t\"lmqOffsetTable\":{")
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := codec.MarshalBody(k)
		j := strings.LastIndexByte(k, '@')
		b.WriteString("\n\t\t")
		b.Write(name)
		b.WriteByte(':')
		b.WriteString(strconv.FormatInt(m.lmqTable[topicGroup{k[:j], k[j+1:]}], 10))
	}
	if len(keys) > 0 {
		b.WriteString("\n\t")
	}
	b.WriteByte('}')
}

// WriteIntKeyedMap writes {0:12,1:7} with bare keys (fastjson's default form).
func WriteIntKeyedMap(b *bytes.Buffer, q map[int32]int64) {
	ids := make([]int32, 0, len(q))
	for id := range q {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	b.WriteByte('{')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(int64(id), 10))
		b.WriteByte(':')
		b.WriteString(strconv.FormatInt(q[id], 10))
	}
	b.WriteByte('}')
}

// PersistIfChanged writes consumerOffset.json when an offset moved since the
// last write.
func (m *ConsumerOffsetManager) PersistIfChanged() error { return m.persist(false) }

// Persist writes consumerOffset.json.
func (m *ConsumerOffsetManager) Persist() error { return m.persist(true) }

func (m *ConsumerOffsetManager) persist(force bool) error {
	err := m.file.Flush(force, func() error { return compat.WriteConfigFile(m.path, m.Encode()) })
	if err != nil {
		return fmt.Errorf("persist consumer offsets: %w", err)
	}
	return nil
}

// Commit stores the next offset to consume.
func (m *ConsumerOffsetManager) Commit(group, topic string, queueID int32, offset int64) {
	k := topicGroup{topic, group}
	if m.isLMQGroup(group) {
		m.commitLMQ(k, offset)
		return
	}
	m.mu.Lock()
	q, ok := m.table[k]
	if !ok {
		// Request strings may alias a network buffer; keys must own their bytes.
		k = topicGroup{strings.Clone(topic), strings.Clone(group)}
		q = map[int32]int64{}
		m.table[k] = q
	}
	// Clients commit the same offset again every few seconds while idle: only
	// a move makes the periodic flush write the file.
	if old, had := q[queueID]; !had || old != offset {
		q[queueID] = offset
		m.file.Mark()
	}
	m.mu.Unlock()
}

// commitLMQ is LmqConsumerOffsetManager.commitOffset: one offset per
// topic@group, the queue id ignored.
func (m *ConsumerOffsetManager) commitLMQ(k topicGroup, offset int64) {
	m.mu.Lock()
	old, had := m.lmqTable[k]
	if !had {
		k = topicGroup{strings.Clone(k.topic), strings.Clone(k.group)}
	}
	if !had || old != offset {
		m.lmqTable[k] = offset
		m.file.Mark()
	}
	m.mu.Unlock()
}

// Query returns the committed offset, or -1 when there is none.
func (m *ConsumerOffsetManager) Query(group, topic string, queueID int32) int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.isLMQGroup(group) {
		if off, ok := m.lmqTable[topicGroup{topic, group}]; ok {
			return off
		}
		return -1
	}
	if q, ok := m.table[topicGroup{topic, group}]; ok {
		if off, ok := q[queueID]; ok {
			return off
		}
	}
	return -1
}

// QueryAll returns a copy of the queue offsets of topic@group.
func (m *ConsumerOffsetManager) QueryAll(group, topic string) map[int32]int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.isLMQGroup(group) {
		if off, ok := m.lmqTable[topicGroup{topic, group}]; ok {
			return map[int32]int64{0: off}
		}
		return map[int32]int64{}
	}
	q := m.table[topicGroup{topic, group}]
	out := make(map[int32]int64, len(q))
	for k, v := range q {
		out[k] = v
	}
	return out
}

// Clone is ConsumerOffsetManager.cloneOffset: destGroup's offsets on topic
// become a copy of srcGroup's (queues srcGroup lacks are dropped); nothing
// happens when srcGroup has none. It reports whether it copied.
func (m *ConsumerOffsetManager) Clone(srcGroup, destGroup, topic string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	src, ok := m.table[topicGroup{topic, srcGroup}]
	if !ok {
		return false
	}
	m.table[topicGroup{strings.Clone(topic), strings.Clone(destGroup)}] = maps.Clone(src)
	m.file.Mark()
	return true
}

// GroupsOfTopic lists the groups with offsets on topic.
func (m *ConsumerOffsetManager) GroupsOfTopic(topic string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []string
	for k := range m.table {
		if k.topic == topic {
			out = append(out, k.group)
		}
	}
	sort.Strings(out)
	return out
}

// TopicsOfGroup lists the topics a group has offsets on.
func (m *ConsumerOffsetManager) TopicsOfGroup(group string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []string
	for k := range m.table {
		if k.group == group {
			out = append(out, k.topic)
		}
	}
	sort.Strings(out)
	return out
}

// DeleteTopic drops every group's offsets on topic, and the resets assigned
// to them and pulls recorded (cleanOffsetByTopic).
func (m *ConsumerOffsetManager) DeleteTopic(topic string) {
	m.deleteWhere(func(k topicGroup) bool { return k.topic == topic })
}

// DeleteTopics is DeleteTopic of every topic matched, in one pass.
func (m *ConsumerOffsetManager) DeleteTopics(match func(topic string) bool) {
	m.deleteWhere(func(k topicGroup) bool { return match(k.topic) })
}

// DeleteGroup drops a group's offsets, resets and pulls (removeOffset).
func (m *ConsumerOffsetManager) DeleteGroup(group string) {
	m.deleteWhere(func(k topicGroup) bool { return k.group == group })
}

func (m *ConsumerOffsetManager) deleteWhere(match func(topicGroup) bool) {
	m.file.Mark()
	m.mu.Lock()
	for _, t := range []map[topicGroup]map[int32]int64{m.table, m.reset, m.logicalReset} {
		for k := range t {
			if match(k) {
				delete(t, k)
			}
		}
	}
	for k := range m.lmqTable {
		if match(k) {
			delete(m.lmqTable, k)
		}
	}
	m.mu.Unlock()
	m.pullMu.Lock()
	for k := range m.pulled {
		if match(k) {
			delete(m.pulled, k)
		}
	}
	m.pullMu.Unlock()
}
