package meta

import (
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"sync"
	"sync/atomic"

	"rmqd/codec"
	"rmqd/compat"
)

// TopicQueueMappingManager is Java's TopicQueueMappingManager: the static
// topics' mappings this broker hosts (topic → TopicQueueMappingDetail), kept
// in config/topicQueueMapping.json. Readers get the table through an atomic
// pointer (every send and pull of every topic looks here); a change copies it.
// A stored detail is never modified: callers must not change what Get returns.
type TopicQueueMappingManager struct {
	path    string
	log     *slog.Logger
	mu      sync.Mutex // serialises changes
	table   atomic.Pointer[map[string]*codec.TopicQueueMappingDetail]
	version Version
	file    compat.Persister
}

// NewTopicQueueMappingManager keeps its file in configDir.
func NewTopicQueueMappingManager(configDir string, log *slog.Logger) *TopicQueueMappingManager {
	m := &TopicQueueMappingManager{path: filepath.Join(configDir, "topicQueueMapping.json"), log: log}
	empty := map[string]*codec.TopicQueueMappingDetail{}
	m.table.Store(&empty)
	m.file.Write = m.write
	return m
}

// Get is the topic's mapping, nil when it is not a static topic here.
func (m *TopicQueueMappingManager) Get(topic string) *codec.TopicQueueMappingDetail {
	t := *m.table.Load()
	if len(t) == 0 {
		return nil
	}
	return t[topic]
}

// All is the table of every static topic's mapping, read only.
func (m *TopicQueueMappingManager) All() map[string]*codec.TopicQueueMappingDetail {
	return *m.table.Load()
}

// Len is the number of static topics.
func (m *TopicQueueMappingManager) Len() int { return len(*m.table.Load()) }

// DataVersion is the table's version (Java keeps it apart from the topics').
func (m *TopicQueueMappingManager) DataVersion() DataVersion { return m.version.Get() }

// Infos is what the broker registers for those of topics that are static
// (Java's cloneAsMappingInfo); nil when none is.
func (m *TopicQueueMappingManager) Infos(topics func(yield func(string) bool)) map[string]*codec.TopicQueueMappingInfo {
	t := *m.table.Load()
	if len(t) == 0 {
		return nil
	}
	var out map[string]*codec.TopicQueueMappingInfo
	for topic := range topics {
		if d := t[topic]; d != nil {
			if out == nil {
				out = make(map[string]*codec.TopicQueueMappingInfo)
			}
			out[topic] = d.MappingInfo()
		}
	}
	return out
}

// Update stores d (UPDATE_AND_CREATE_STATIC_TOPIC) with Java's checks
// (updateTopicQueueMapping): every queue's items well ordered; unless force,
// an epoch not below the stored one, the same scope, the queues the stored
// mapping hosts kept (taken over from it when the epoch grew), and at an
// equal epoch the same leaders. With force the stored mapping's queues that d
// leaves out are kept. d is owned by the manager afterwards. An error is a
// refusal: nothing changed.
func (m *TopicQueueMappingManager) Update(d *codec.TopicQueueMappingDetail, force bool) error {
	for id, items := range d.HostedQueues {
		if err := checkItemOffsets(items); err != nil {
			return fmt.Errorf("queue %d: %w", id, err)
		}
	}
	m.mu.Lock()
	old := (*m.table.Load())[d.Topic]
	if old != nil {
		if err := mergeMapping(old, d, force); err != nil {
			m.mu.Unlock()
			return err
		}
	}
	next := maps.Clone(*m.table.Load())
	next[d.Topic] = d
	m.install(next)
	m.mu.Unlock()
	m.log.Info("static topic mapping updated", "topic", d.Topic, "epoch", d.Epoch, "totalQueues", d.TotalQueues,
		"hostedQueues", len(d.HostedQueues), "force", force)
	// The mapping is in force whatever the write does, as in Java (whose
	// ConfigManager.persist logs a failure): refusing now would leave the
	// table and the answer disagreeing.
	m.persistLogged()
	return nil
}

// mappingError is a refusal worded as Java's (its remark goes to mqadmin).
type mappingError string

func (e mappingError) Error() string { return string(e) }

// mergeMapping is the part of Java's updateTopicQueueMapping that compares
// the new detail d with the stored one; it completes d's hosted queues.
func mergeMapping(old, d *codec.TopicQueueMappingDetail, force bool) error {
	if force {
		for id, items := range old.HostedQueues {
			if _, ok := d.HostedQueues[id]; !ok {
				d.HostedQueues[id] = items
			}
		}
		return nil
	}
	if d.Epoch < old.Epoch {
		return mappingError(fmt.Sprintf("Can't accept data with small epoch %d < %d", d.Epoch, old.Epoch))
	}
	if d.Scope != old.Scope {
		return mappingError(fmt.Sprintf("Can't accept data with unmatched scope %s != %s", d.Scope, old.Scope))
	}
	equal := d.Epoch == old.Epoch
	for id, oldItems := range old.HostedQueues {
		newItems, ok := d.HostedQueues[id]
		if !ok {
			if equal {
				return mappingError("Cannot accept equal epoch with null data")
			}
			d.HostedQueues[id] = oldItems
			continue
		}
		if len(oldItems) == 0 {
			continue
		}
		if len(newItems) == 0 {
			return mappingError("The new item list is null or empty")
		}
		// Java asserts the items of a gen unchanged (not run: no -ea); the
		// equal-epoch leader check is a real one.
		ol, nl := oldItems[len(oldItems)-1], newItems[len(newItems)-1]
		if equal && (nl.Gen != ol.Gen || nl.Bname != ol.Bname || nl.QueueID != ol.QueueID || nl.StartOffset != ol.StartOffset) {
			return mappingError("The new leader is different but epoch equal")
		}
	}
	return nil
}

// checkItemOffsets is TopicQueueMappingUtils.checkLogicQueueMappingItemOffset:
// gens strictly increasing, offsets not negative, logic offsets increasing.
func checkItemOffsets(items []codec.LogicQueueMappingItem) error {
	lastGen, lastOffset := int32(-1), int64(-1)
	for i := len(items) - 1; i >= 0; i-- {
		it := items[i]
		if it.StartOffset < 0 || it.Gen < 0 || it.QueueID < 0 {
			return mappingError("The field is illegal, should not be negative")
		}
		if len(items) >= 2 && i <= len(items)-2 && it.LogicOffset < 0 {
			return mappingError("The non-latest item has negative logic offset")
		}
		if lastGen != -1 && it.Gen >= lastGen {
			return mappingError("The gen does not increase monotonically")
		}
		if it.EndOffset != -1 && it.EndOffset < it.StartOffset {
			return mappingError("The endOffset is smaller than the start offset")
		}
		if lastOffset != -1 && it.LogicOffset != -1 {
			if it.LogicOffset >= lastOffset {
				return mappingError("The base logic offset does not increase monotonically")
			}
			maxStatic := it.LogicOffset
			if it.EndOffset >= it.StartOffset {
				maxStatic = it.LogicOffset + it.EndOffset - it.StartOffset
			}
			if maxStatic >= lastOffset {
				return mappingError("The max logic offset does not increase monotonically")
			}
		}
		lastGen, lastOffset = it.Gen, it.LogicOffset
	}
	return nil
}

// install puts next in force as a new data version; m.mu held.
func (m *TopicQueueMappingManager) install(next map[string]*codec.TopicQueueMappingDetail) {
	m.table.Store(&next)
	m.version.Next()
}

// persistLogged writes the file; a failure is logged, the tables staying in
// force (Java's ConfigManager.persist logs it).
func (m *TopicQueueMappingManager) persistLogged() {
	if err := m.Persist(); err != nil {
		m.log.Error("persist topicQueueMapping.json", "err", err)
	}
}

// Delete drops the topic's mapping (DELETE_TOPIC_IN_BROKER); it reports
// whether there was one.
func (m *TopicQueueMappingManager) Delete(topic string) bool {
	m.mu.Lock()
	if _, ok := (*m.table.Load())[topic]; !ok {
		m.mu.Unlock()
		return false
	}
	next := maps.Clone(*m.table.Load())
	delete(next, topic)
	m.install(next)
	m.mu.Unlock()
	m.persistLogged()
	return true
}

// Load reads topicQueueMapping.json (or .bak); a missing file is no mapping.
func (m *TopicQueueMappingManager) Load() error {
	return compat.LoadConfigFile(m.path, func(data []byte) error {
		var w struct {
			DataVersion DataVersion              `json:"dataVersion"`
			Map         map[string]codec.RawJSON `json:"topicQueueMappingInfoMap"`
		}
		if err := codec.UnmarshalBody(data, &w); err != nil {
			return err
		}
		next := make(map[string]*codec.TopicQueueMappingDetail, len(w.Map))
		for topic, raw := range w.Map {
			if string(raw) == "null" {
				continue
			}
			d, err := codec.DecodeTopicQueueMappingDetail(raw)
			if err != nil {
				return fmt.Errorf("topic %s: %w", topic, err)
			}
			next[topic] = d
		}
		m.mu.Lock()
		m.table.Store(&next)
		m.version.Set(w.DataVersion)
		m.mu.Unlock()
		return nil
	})
}

// AppendWrapperFields appends what Java's TopicConfigAndMappingSerializeWrapper
// adds to GET_ALL_TOPIC_CONFIG: ,"mappingDataVersion":…,"topicQueueMappingDetailMap":{…},"topicQueueMappingInfoMap":{}.
func (m *TopicQueueMappingManager) AppendWrapperFields(dst []byte) []byte {
	m.mu.Lock() // the table and its version read together
	t, v := *m.table.Load(), m.version.Get()
	m.mu.Unlock()
	dst = append(dst, `,"mappingDataVersion":`...)
	dst = v.AppendJSON(dst)
	dst = append(dst, `,"topicQueueMappingDetailMap":{`...)
	for i, topic := range codec.SortedKeys(t) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = codec.AppendJSONKey(dst, topic)
		dst = t[topic].AppendJSON(dst)
	}
	return append(dst, `},"topicQueueMappingInfoMap":{}`...)
}

// ReplaceFromMaster makes the table the master's (its GET_ALL_TOPIC_CONFIG
// answer) when the master's mapping version differs, and persists it. A master
// that sends no mappingDataVersion (4.x) leaves the table alone. Java's slave
// takes the version but not the mappings (it copies the topic configs again
// instead), so it serves a static topic's logical ids as physical ones.
func (m *TopicQueueMappingManager) ReplaceFromMaster(body []byte) error {
	var w struct {
		MappingDataVersion *DataVersion             `json:"mappingDataVersion"`
		DetailMap          map[string]codec.RawJSON `json:"topicQueueMappingDetailMap"`
	}
	if err := codec.UnmarshalBody(body, &w); err != nil {
		return fmt.Errorf("decode master static topic mappings: %w", err)
	}
	if w.MappingDataVersion == nil || *w.MappingDataVersion == m.version.Get() {
		return nil
	}
	next := make(map[string]*codec.TopicQueueMappingDetail, len(w.DetailMap))
	for topic, raw := range w.DetailMap {
		if string(raw) == "null" {
			continue
		}
		d, err := codec.DecodeTopicQueueMappingDetail(raw)
		if err != nil {
			return fmt.Errorf("master static topic mapping of %s: %w", topic, err)
		}
		next[topic] = d
	}
	m.mu.Lock()
	m.table.Store(&next)
	m.version.Set(*w.MappingDataVersion)
	m.mu.Unlock()
	return m.Persist()
}

// Persist writes topicQueueMapping.json.
func (m *TopicQueueMappingManager) Persist() error {
	if err := m.file.Persist(); err != nil {
		return fmt.Errorf("persist topicQueueMapping.json: %w", err)
	}
	return nil
}

func (m *TopicQueueMappingManager) write() error {
	return compat.WriteConfigFile(m.path, m.Encode())
}

// Encode is the file's content as Java's TopicQueueMappingSerializeWrapper
// (fastjson: dataVersion, then topicQueueMappingInfoMap, topics sorted).
func (m *TopicQueueMappingManager) Encode() []byte {
	t := *m.table.Load()
	dst := append([]byte("{\n\t\"dataVersion\":"), m.version.Get().AppendJSON(nil)...)
	dst = append(dst, ",\n\t\"topicQueueMappingInfoMap\":{"...)
	for i, topic := range codec.SortedKeys(t) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, "\n\t\t"...)
		dst = codec.AppendJSONKey(dst, topic)
		dst = t[topic].AppendJSON(dst)
	}
	if len(t) > 0 {
		dst = append(dst, "\n\t"...)
	}
	return append(dst, "}\n}"...)
}

// DropQueues removes logical queues from the mapping seen, as Java's
// TopicQueueMappingCleanService removes queues another broker now leads (no
// update checks: the epoch stays). Nothing changes when the stored mapping
// is no longer seen (an update came in between); it reports how many went.
func (m *TopicQueueMappingManager) DropQueues(seen *codec.TopicQueueMappingDetail, ids []int32) int {
	m.mu.Lock()
	if (*m.table.Load())[seen.Topic] != seen {
		m.mu.Unlock()
		return 0
	}
	d := seen.Clone()
	n := 0
	for _, id := range ids {
		if _, ok := d.HostedQueues[id]; ok {
			delete(d.HostedQueues, id)
			n++
		}
	}
	if n == 0 {
		m.mu.Unlock()
		return 0
	}
	next := maps.Clone(*m.table.Load())
	next[d.Topic] = d
	m.install(next)
	m.mu.Unlock()
	m.persistLogged()
	return n
}
