package meta

import (
	"fmt"
	"iter"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"rmqd/codec"
	"rmqd/compat"
)

// PermName bits.
const (
	PermPriority int32 = 0x8
	PermRead     int32 = 0x4
	PermWrite    int32 = 0x2
	PermInherit  int32 = 0x1
)

func permInherited(p int32) bool { return p&PermInherit != 0 }

// Topic names the broker treats specially (TopicValidator, MixAll).
const (
	TopicAutoCreate       = "TBW102"
	TopicSchedule         = "SCHEDULE_TOPIC_XXXX"
	TopicTransHalf        = "RMQ_SYS_TRANS_HALF_TOPIC"
	TopicTransOpHalf      = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
	TopicTransCheckMax    = "TRANS_CHECK_MAX_TIME_TOPIC"
	TopicSelfTest         = "SELF_TEST_TOPIC"
	TopicOffsetMovedEvent = "OFFSET_MOVED_EVENT"
	TopicBenchmark        = "BenchmarkTest"
	TopicTimer            = compat.SysTopicTimer
	RetryGroupTopicPrefix = "%RETRY%"
	DLQGroupTopicPrefix   = "%DLQ%"
)

// TopicConfig is Java's TopicConfig (codec's, whose JSON form is fastjson's).
type TopicConfig = codec.TopicConfig

// NewTopicConfig has Java's TopicConfig defaults: 16/16 queues, perm 6,
// SINGLE_TAG, and empty attributes (fastjson writes {} for Java's empty map).
func NewTopicConfig(name string) TopicConfig {
	tc := codec.NewTopicConfig(name)
	tc.Attributes = map[string]string{}
	return tc
}

// TopicConfigTable is topics.json and the GET_ALL_TOPIC_CONFIG body
// (TopicConfigSerializeWrapper).
type TopicConfigTable struct {
	DataVersion      DataVersion            `json:"dataVersion"`
	TopicConfigTable map[string]TopicConfig `json:"topicConfigTable"`
}

// TopicConfigManager owns the broker's topic table (topics.json).
type TopicConfigManager struct {
	cfg      func() Config // the configuration in force
	log      *slog.Logger
	path     string
	mu       sync.RWMutex
	table    map[string]TopicConfig
	version  Version
	onChange func(changed []TopicConfig) // told after a topic is created or updated (SetOnChange)
	file     compat.Persister
	// unsent holds the topics created or updated since the last TakeChanged, and
	// deleted whether one was deleted: the broker registers just those with
	// its name servers (registerIncrementBrokerData). Kept under mu with the
	// version, so a TakeChanged holds every change up to the version it returns.
	unsent  map[string]struct{}
	deleted bool
}

// NewTopicConfigManager creates the system topics as Java's TopicConfigManager
// constructor does; Load then overlays topics.json.
func NewTopicConfigManager(conf func() Config, log *slog.Logger) *TopicConfigManager {
	cfg := conf()
	m := &TopicConfigManager{cfg: conf, log: log, path: filepath.Join(cfg.ConfigDir, "topics.json"),
		table: map[string]TopicConfig{}}
	m.file.Write = m.write
	put := func(name string, queues int32, perm int32) {
		tc := NewTopicConfig(name)
		if queues > 0 {
			tc.ReadQueueNums, tc.WriteQueueNums = queues, queues
		}
		if perm >= 0 {
			tc.Perm = perm
		}
		m.table[name] = tc
	}
	put(TopicSelfTest, 1, -1)
	if cfg.AutoCreateTopicEnable {
		put(TopicAutoCreate, cfg.DefaultTopicQueueNums, PermInherit|PermRead|PermWrite)
	}
	put(TopicBenchmark, 1024, -1)
	clusterPerm := PermInherit
	if cfg.ClusterTopicEnable {
		clusterPerm |= PermRead | PermWrite
	}
	put(cfg.BrokerClusterName, 0, clusterPerm)
	brokerPerm := PermInherit
	if cfg.BrokerTopicEnable {
		brokerPerm |= PermRead | PermWrite
	}
	put(cfg.BrokerName, 1, brokerPerm)
	put(TopicOffsetMovedEvent, 1, -1)
	put(TopicSchedule, 18, -1)
	if cfg.TraceTopicEnable {
		put(cfg.MsgTraceTopicName, 1, -1)
	}
	put(cfg.BrokerClusterName+"_REPLY_TOPIC", 1, -1)
	put(compat.SysTopicRevivePrefix+cfg.BrokerClusterName, cfg.ReviveQueueNum, -1)
	put("rmq_sys_SYNC_BROKER_MEMBER_"+cfg.BrokerName, 1, PermInherit)
	put(TopicTransHalf, 1, -1)
	put(TopicTransOpHalf, 1, -1)
	if cfg.TimerWheelEnable {
		put(TopicTimer, 1, -1)
	}
	return m
}

// Load overlays topics.json (or its .bak) on the system topics.
func (m *TopicConfigManager) Load() error {
	return LoadConfigFile(m.path, func(data []byte) error {
		var w TopicConfigTable
		if err := codec.UnmarshalBody(data, &w); err != nil {
			return err
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		for name, tc := range w.TopicConfigTable {
			if tc.Attributes == nil {
				tc.Attributes = map[string]string{}
			}
			if tc.TopicName == "" {
				tc.TopicName = name
			}
			m.table[name] = tc
		}
		m.version.Set(w.DataVersion)
		return nil
	})
}

// Persist writes topics.json (callers at the same time share a write).
func (m *TopicConfigManager) Persist() error { return m.file.Persist() }

func (m *TopicConfigManager) write() error {
	data, err := codec.MarshalBodyIndent(m.Snapshot(), "\t")
	if err != nil {
		return fmt.Errorf("encode topics.json: %w", err)
	}
	return compat.WriteConfigFile(m.path, data)
}

func (m *TopicConfigManager) persistLogged() {
	if err := m.Persist(); err != nil {
		m.log.Error("persist topics.json", "err", err)
	}
}

// Snapshot copies the table with its data version.
func (m *TopicConfigManager) Snapshot() TopicConfigTable {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t := make(map[string]TopicConfig, len(m.table))
	for k, v := range m.table {
		t[k] = v
	}
	return TopicConfigTable{DataVersion: m.version.Get(), TopicConfigTable: t}
}

// DataVersion is the current version of the topic table.
func (m *TopicConfigManager) DataVersion() DataVersion { return m.version.Get() }

// Select returns the topic's config. Under enableLmq a light message queue has
// one, made up: one queue, read and write (LmqTopicConfigManager).
func (m *TopicConfigManager) Select(topic string) (TopicConfig, bool) {
	if lmqName(topic) && m.cfg().EnableLmq {
		return lmqTopicConfig(topic), true
	}
	m.mu.RLock()
	tc, ok := m.table[topic]
	m.mu.RUnlock()
	return tc, ok
}

// lmqTopicConfig is LmqTopicConfigManager.simpleLmqTopicConfig.
func lmqTopicConfig(topic string) TopicConfig {
	tc := NewTopicConfig(strings.Clone(topic))
	tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm = 1, 1, PermRead|PermWrite
	return tc
}

// Exists says whether topic is in the table (every LMQ is, under enableLmq).
func (m *TopicConfigManager) Exists(topic string) bool {
	if lmqName(topic) && m.cfg().EnableLmq {
		return true
	}
	m.mu.RLock()
	_, ok := m.table[topic]
	m.mu.RUnlock()
	return ok
}

// TopicNames lists every topic, sorted.
func (m *TopicConfigManager) TopicNames() []string {
	m.mu.RLock()
	names := make([]string, 0, len(m.table))
	for k := range m.table {
		names = append(names, k)
	}
	m.mu.RUnlock()
	sort.Strings(names)
	return names
}

func (m *TopicConfigManager) changed(tcs ...TopicConfig) {
	m.persistLogged()
	if m.onChange != nil {
		m.onChange(tcs)
	}
}

// CreateInSendMessage is createTopicInSendMessageMethod: a topic unknown to a
// send inherits from defaultTopic when that one has PERM_INHERIT.
func (m *TopicConfigManager) CreateInSendMessage(topic, defaultTopic string, clientQueueNums, topicSysFlag int32) (TopicConfig, bool) {
	m.mu.Lock()
	if tc, ok := m.table[topic]; ok {
		m.mu.Unlock()
		return tc, true
	}
	def, ok := m.table[defaultTopic]
	if !ok {
		m.mu.Unlock()
		m.log.Warn("create topic failed: default topic missing", "topic", topic, "defaultTopic", defaultTopic)
		return TopicConfig{}, false
	}
	defPerm := def.Perm
	if defaultTopic == TopicAutoCreate && !m.cfg().AutoCreateTopicEnable {
		defPerm = PermRead | PermWrite
	}
	if !permInherited(defPerm) {
		m.mu.Unlock()
		m.log.Warn("create topic failed: default topic not inheritable", "topic", topic, "defaultTopic", defaultTopic, "perm", defPerm)
		return TopicConfig{}, false
	}
	n := min(clientQueueNums, def.WriteQueueNums)
	n = max(n, 0)
	tc := NewTopicConfig(topic)
	tc.ReadQueueNums, tc.WriteQueueNums = n, n
	tc.Perm = defPerm &^ PermInherit
	tc.TopicSysFlag = topicSysFlag
	tc.TopicFilterType = def.TopicFilterType
	m.table[topic] = tc
	m.version.Next()
	m.markUnsent(topic)
	m.mu.Unlock()
	m.log.Info("created topic from default topic", "topic", topic, "defaultTopic", defaultTopic, "queues", n)
	m.changed(tc)
	return tc, true
}

// CreateInSendMessageBack is createTopicInSendMessageBackMethod: retry and DLQ
// topics are created on demand.
func (m *TopicConfigManager) CreateInSendMessageBack(topic string, queueNums, perm, topicSysFlag int32) TopicConfig {
	tc, created := m.createBack(TopicSpec{Name: topic, QueueNums: queueNums, Perm: perm, SysFlag: topicSysFlag})
	if created {
		m.changed(tc)
	}
	return tc
}

// TopicSpec is a topic CreateAllInSendMessageBack makes when it is absent.
type TopicSpec struct {
	Name                     string
	QueueNums, Perm, SysFlag int32
	// SetOrder makes the topic's order flag Order, an existing topic's
	// included (a heartbeat's retry topic: order when the group subscribes
	// an order topic, as Java's heartBeat passes hasOrderTopicSub).
	SetOrder, Order bool
}

// CreateAllInSendMessageBack is CreateInSendMessageBack for each topic, with
// one write of topics.json and one change notice for all it creates (a
// heartbeat's retry topics: Java writes the file once per topic).
func (m *TopicConfigManager) CreateAllInSendMessageBack(specs []TopicSpec) {
	var made []TopicConfig
	for _, sp := range specs {
		if tc, created := m.createBack(sp); created {
			made = append(made, tc)
		}
	}
	if len(made) > 0 {
		m.changed(made...)
	}
}

func (m *TopicConfigManager) createBack(sp TopicSpec) (TopicConfig, bool) {
	sp.QueueNums = compat.ClampQueueNums(sp.QueueNums) // a group's retryQueueNums, maybe from a Java file
	m.mu.Lock()
	if tc, ok := m.table[sp.Name]; ok {
		if !sp.SetOrder || tc.Order == sp.Order {
			m.mu.Unlock()
			return tc, false
		}
		tc.Order = sp.Order
		m.table[sp.Name] = tc
		m.version.Next()
		m.markUnsent(sp.Name)
		m.mu.Unlock()
		m.log.Info("topic order changed", "topic", sp.Name, "order", sp.Order)
		return tc, true
	}
	tc := NewTopicConfig(sp.Name)
	tc.ReadQueueNums, tc.WriteQueueNums = sp.QueueNums, sp.QueueNums
	tc.Perm = sp.Perm
	tc.TopicSysFlag = sp.SysFlag
	tc.Order = sp.SetOrder && sp.Order
	m.table[sp.Name] = tc
	m.version.Next()
	m.markUnsent(sp.Name)
	m.mu.Unlock()
	m.log.Info("created topic", "topic", sp.Name, "queues", sp.QueueNums)
	return tc, true
}

// Update creates or replaces a topic (UPDATE_AND_CREATE_TOPIC).
// Several topics (UPDATE_AND_CREATE_TOPIC_LIST) are one write of topics.json
// and one change notice, as Java's updateTopicConfigList.
func (m *TopicConfigManager) Update(tcs ...TopicConfig) {
	if len(tcs) == 0 {
		return
	}
	if m.cfg().EnableLmq {
		// An LMQ is never stored (LmqTopicConfigManager.updateTopicConfig).
		tcs = slices.DeleteFunc(slices.Clone(tcs), func(tc TopicConfig) bool { return compat.IsLMQ(tc.TopicName) })
		if len(tcs) == 0 {
			return
		}
	}
	m.mu.Lock()
	for i := range tcs {
		if tcs[i].Attributes == nil {
			tcs[i].Attributes = map[string]string{}
		}
		m.table[tcs[i].TopicName] = tcs[i]
		m.markUnsent(tcs[i].TopicName)
	}
	m.version.Next()
	m.mu.Unlock()
	m.changed(tcs...)
}

// Delete removes a topic (DELETE_TOPIC_IN_BROKER); it reports whether it existed.
func (m *TopicConfigManager) Delete(topic string) bool {
	m.mu.Lock()
	_, ok := m.table[topic]
	if ok {
		delete(m.table, topic)
		delete(m.unsent, topic)
		m.deleted = true
		m.version.Next()
	}
	m.mu.Unlock()
	if ok {
		m.changed()
	}
	return ok
}

// MarkOrderTopics is updateOrderTopicConfig: the topics a name server's
// ORDER_TOPIC_CONFIG names that this broker holds become order topics. None
// becomes unordered: Java never clears the flag from that table. The file is
// written once; the change goes with the next registration. It returns how
// many topics changed.
func (m *TopicConfigManager) MarkOrderTopics(topics iter.Seq[string]) int {
	n := 0
	m.mu.Lock()
	for name := range topics {
		if tc, ok := m.table[name]; ok && !tc.Order {
			tc.Order = true
			m.table[name] = tc
			m.markUnsent(name)
			n++
		}
	}
	if n > 0 {
		m.version.Next()
	}
	m.mu.Unlock()
	if n > 0 {
		m.log.Info("order topics from the name server", "topics", n)
		m.persistLogged()
	}
	return n
}

// IsOrderTopic reports whether the topic is marked order.
func (m *TopicConfigManager) IsOrderTopic(topic string) bool {
	tc, ok := m.Select(topic)
	return ok && tc.Order
}

// markUnsent records a changed topic for TakeChanged; m.mu is held.
func (m *TopicConfigManager) markUnsent(topic string) {
	if m.unsent == nil {
		m.unsent = make(map[string]struct{})
	}
	m.unsent[topic] = struct{}{}
}

// TakeChanged returns the current configs of the topics created or updated
// since the last call, sorted by name, and the table's data version, read
// together: every change up to that version is in this answer or an earlier
// one. deleted says a topic was deleted meanwhile (only a whole table tells a
// name server that). The record is cleared.
func (m *TopicConfigManager) TakeChanged() (changed []TopicConfig, version DataVersion, deleted bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name := range m.unsent {
		if tc, ok := m.table[name]; ok {
			changed = append(changed, tc)
		}
	}
	sort.Slice(changed, func(i, j int) bool { return changed[i].TopicName < changed[j].TopicName })
	deleted = m.deleted
	m.unsent, m.deleted = nil, false
	return changed, m.version.Get(), deleted
}

// SetOnChange sets what is told after a topic is created or updated (the
// broker registers the change with its name servers). Set it before use.
func (m *TopicConfigManager) SetOnChange(f func(changed []TopicConfig)) { m.onChange = f }

// BumpVersion marks the table changed without a topic changing (the broker's
// permission changed), so name servers take the next registration.
func (m *TopicConfigManager) BumpVersion() { m.version.Next() }
