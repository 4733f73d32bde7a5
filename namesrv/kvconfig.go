package namesrv

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"

	"rmqd/codec"
	"rmqd/compat"
)

// NamespaceOrderTopicConfig is the KV namespace of order-topic routes
// (NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG).
const NamespaceOrderTopicConfig = "ORDER_TOPIC_CONFIG"

// KVConfigManager is the name server's namespace → key → value store, persisted
// as Java's KVConfigManager does: {"configTable":{ns:{k:v}}} in kvConfigPath,
// rewritten whole after every change.
type KVConfigManager struct {
	path string

	// persistMu orders whole snapshots onto disk: held across taking a snapshot
	// and writing it, so an older snapshot never overwrites a newer one.
	persistMu sync.Mutex
	mu        sync.RWMutex
	table     map[string]map[string]string
}

// NewKVConfigManager makes a store persisted at path (empty: memory only).
func NewKVConfigManager(path string) *KVConfigManager {
	return &KVConfigManager{path: path, table: make(map[string]map[string]string)}
}

// Load reads the persisted table; a missing file is an empty table.
func (m *KVConfigManager) Load() error {
	if m.path == "" {
		return nil
	}
	b, err := os.ReadFile(m.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load kv config: %w", err)
	}
	var w struct {
		ConfigTable map[string]map[string]string `json:"configTable"`
	}
	if err := codec.UnmarshalBody(b, &w); err != nil {
		return fmt.Errorf("load kv config %s: %w", m.path, err)
	}
	m.mu.Lock()
	for ns, kv := range w.ConfigTable {
		if kv != nil {
			m.table[ns] = kv
		}
	}
	m.mu.Unlock()
	return nil
}

// Put sets a value and persists the table.
func (m *KVConfigManager) Put(namespace, key, value string) error {
	m.mu.Lock()
	kv := m.table[namespace]
	if kv == nil {
		kv = make(map[string]string)
		m.table[strings.Clone(namespace)] = kv
	}
	kv[strings.Clone(key)] = strings.Clone(value)
	m.mu.Unlock()
	return m.persist()
}

// Delete removes a key and persists the table (an empty namespace stays, as in
// Java).
func (m *KVConfigManager) Delete(namespace, key string) error {
	m.mu.Lock()
	if kv := m.table[namespace]; kv != nil {
		delete(kv, key)
	}
	m.mu.Unlock()
	return m.persist()
}

// Get returns a value.
func (m *KVConfigManager) Get(namespace, key string) (string, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	v, ok := m.table[namespace][key]
	return v, ok
}

// AppendNamespaceJSON appends the namespace as a KVTable body; ok is false when
// the namespace does not exist.
func (m *KVConfigManager) AppendNamespaceJSON(dst []byte, namespace string) ([]byte, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	kv, ok := m.table[namespace]
	if !ok {
		return dst, false
	}
	t := codec.KVTable{Table: kv}
	return t.AppendJSON(dst), true
}

func (m *KVConfigManager) persist() error {
	if m.path == "" {
		return nil
	}
	m.persistMu.Lock()
	defer m.persistMu.Unlock()
	m.mu.RLock()
	b := []byte(`{"configTable":{`)
	for i, ns := range codec.SortedKeys(m.table) {
		if i > 0 {
			b = append(b, ',')
		}
		b = codec.AppendJSONKey(b, ns)
		b = codec.AppendJSONStringMap(b, m.table[ns])
	}
	b = append(b, "}}"...)
	m.mu.RUnlock()
	return compat.WriteConfigFile(m.path, b)
}
