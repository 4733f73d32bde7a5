package namesrv

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"rmqd/codec"
	"rmqd/compat"
)

// NamespaceOrderTopicConfig is the KV namespace of order-topic routes
// (NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG).
const NamespaceOrderTopicConfig = "ORDER_TOPIC_CONFIG"

// Bounds of the KV store; Java has none. Sizes are of the JSON the data takes in
// kvConfig.json and in answers (a control byte is six bytes there), since that
// is what grows: every REGISTER_BROKER answer carries the whole
// ORDER_TOPIC_CONFIG namespace, so one unbounded PUT made every broker's
// registration answer exceed the frame limit.
const (
	// MaxKVNameSize bounds a namespace or a key, escaped, quotes excluded.
	// Keys are topic names (127 bytes at most), group names (255), addresses
	// and project names; 1 KiB leaves room for any of those.
	MaxKVNameSize = 1 << 10
	// MaxKVValueSize bounds a value, escaped, quotes excluded. Values are
	// order-topic routes ("broker-a:8;broker-b:8") or short settings; 64 KiB
	// holds an order route over thousands of brokers.
	MaxKVValueSize = 64 << 10
	// MaxKVNamespaceSize bounds one namespace's JSON object {"k":"v",…}: what
	// GET_KVLIST_BY_NAMESPACE and (for ORDER_TOPIC_CONFIG) each broker's
	// registration answer carry. 1 MiB is several thousand order topics and
	// keeps an answer sent to every broker every 30 s small.
	MaxKVNamespaceSize = 1 << 20
	// MaxKVTableSize bounds kvConfig.json, which every change rewrites and
	// fsyncs whole: 16 namespaces at their bound.
	MaxKVTableSize = 16 << 20
)

// ErrKVLimit is wrapped by the error of a Put refused by one of the bounds.
var ErrKVLimit = errors.New("kv config limit")

// kvTableBodyOverhead is what a KVTable body adds to a namespace's object:
// {"table":…}.
const kvTableBodyOverhead = len(`{"table":}`)

// kvFileOverhead is what kvConfig.json adds to its namespace entries:
// {"configTable":{…}}.
const kvFileOverhead = len(`{"configTable":{}}`)

// KVConfigManager is the name server's namespace → key → value store, persisted
// as Java's KVConfigManager does: {"configTable":{ns:{k:v}}} in kvConfigPath,
// rewritten whole after every change. Changes made while a write runs share the
// next write (a group commit), and a change's caller returns once a write that
// holds it is done, as Java answers only after its write.
type KVConfigManager struct {
	path string
	// writeFile is compat.WriteConfigFile; tests count writes with it.
	writeFile func(path string, data []byte) error

	mu    sync.RWMutex
	table map[string]map[string]string
	// entries is, per namespace, the escaped size of its "k":"v" entries
	// without the commas between them; total is the size of every namespace's
	// "ns":{…} entry in kvConfig.json, without commas. Both under mu.
	entries map[string]int
	total   int

	file compat.Persister // the group commit
}

// NewKVConfigManager makes a store persisted at path (empty: memory only).
func NewKVConfigManager(path string) *KVConfigManager {
	m := &KVConfigManager{path: path, writeFile: compat.WriteConfigFile,
		table: make(map[string]map[string]string), entries: make(map[string]int)}
	m.file.Write = func() error { return m.writeFile(m.path, m.snapshot()) }
	return m
}

// Load reads the persisted table, or its .bak when the file is missing, empty
// or torn (Java reads only the file: a crash that tore it stopped the name
// server, and one while it was rewritten lost every key); neither is an empty
// table. The bounds are not applied: a file above them (written by Java, or
// before they existed) is loaded whole, and only Puts that grow it further are
// refused.
func (m *KVConfigManager) Load() error {
	if m.path == "" {
		return nil
	}
	err := compat.LoadConfigFile(m.path, func(b []byte) error {
		var w struct {
			ConfigTable map[string]map[string]string `json:"configTable"`
		}
		if err := codec.UnmarshalBody(b, &w); err != nil {
			return err
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		for ns, kv := range w.ConfigTable {
			if kv != nil {
				m.table[ns] = kv
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("load kv config: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries = make(map[string]int, len(m.table))
	m.total = 0
	for ns, kv := range m.table {
		n := 0
		for k, v := range kv {
			n += entrySize(k, v)
		}
		m.entries[ns] = n
		m.total += nsEntrySize(ns, n, len(kv))
	}
	return nil
}

// entrySize is the size of "k":"v".
func entrySize(k, v string) int { return codec.JSONStringLen(k) + 1 + codec.JSONStringLen(v) }

// objectSize is the size of a namespace's object {…} with count entries whose
// sizes sum to entries.
func objectSize(entries, count int) int { return 2 + entries + max(count-1, 0) }

// nsEntrySize is the size of "ns":{…} in kvConfig.json.
func nsEntrySize(ns string, entries, count int) int {
	return codec.JSONStringLen(ns) + 1 + objectSize(entries, count)
}

// fileSize is the size of kvConfig.json for namespaces whose entries sum to
// total.
func fileSize(total, namespaces int) int { return kvFileOverhead + total + max(namespaces-1, 0) }

// checkName refuses a namespace or key above MaxKVNameSize.
func checkName(what, s string) error {
	if len(s) > MaxKVNameSize { // escaping never shrinks
		return fmt.Errorf("%w: %s is %d bytes, above the %d a %s may take", ErrKVLimit, what, len(s), MaxKVNameSize, what)
	}
	if n := codec.JSONStringLen(s) - 2; n > MaxKVNameSize {
		return fmt.Errorf("%w: %s is %d bytes escaped as JSON, above the %d a %s may take", ErrKVLimit, what, n, MaxKVNameSize, what)
	}
	return nil
}

// Put sets a value and persists the table. A value, namespace or table that
// would exceed its bound is refused with an error wrapping ErrKVLimit and
// nothing is stored; a namespace or table already above its bound (loaded from
// disk) may still be changed in ways that do not grow it.
func (m *KVConfigManager) Put(namespace, key, value string) error {
	if err := checkName("namespace", namespace); err != nil {
		return err
	}
	if err := checkName("key", key); err != nil {
		return err
	}
	if len(value) > MaxKVValueSize {
		return fmt.Errorf("%w: value is %d bytes, above the %d a value may take", ErrKVLimit, len(value), MaxKVValueSize)
	}
	if n := codec.JSONStringLen(value) - 2; n > MaxKVValueSize {
		return fmt.Errorf("%w: value is %d bytes escaped as JSON, above the %d a value may take", ErrKVLimit, n, MaxKVValueSize)
	}
	newEntry := entrySize(key, value)

	m.mu.Lock()
	kv, nsExists := m.table[namespace]
	oldEntries, count := m.entries[namespace], len(kv)
	newEntries, newCount := oldEntries+newEntry, count+1
	if old, ok := kv[key]; ok {
		newEntries -= entrySize(key, old)
		newCount--
	}
	oldObj, newObj := objectSize(oldEntries, count), objectSize(newEntries, newCount)
	if newObj > MaxKVNamespaceSize && newObj > oldObj {
		m.mu.Unlock()
		return fmt.Errorf("%w: namespace %s would take %d bytes as JSON, above the %d a namespace may take",
			ErrKVLimit, namespace, newObj, MaxKVNamespaceSize)
	}
	oldNS, nss := 0, len(m.table)
	if nsExists {
		oldNS = nsEntrySize(namespace, oldEntries, count)
	} else {
		nss++
	}
	newTotal := m.total - oldNS + nsEntrySize(namespace, newEntries, newCount)
	oldFile, newFile := fileSize(m.total, len(m.table)), fileSize(newTotal, nss)
	if newFile > MaxKVTableSize && newFile > oldFile {
		m.mu.Unlock()
		return fmt.Errorf("%w: the kv config table would take %d bytes as JSON, above the %d it may take",
			ErrKVLimit, newFile, MaxKVTableSize)
	}
	if kv == nil {
		kv = make(map[string]string)
		m.table[strings.Clone(namespace)] = kv
	}
	if _, ok := kv[key]; ok {
		kv[key] = strings.Clone(value)
	} else {
		kv[strings.Clone(key)] = strings.Clone(value)
	}
	if nsExists {
		m.entries[namespace] = newEntries
	} else {
		m.entries[strings.Clone(namespace)] = newEntries
	}
	m.total = newTotal
	m.mu.Unlock()
	return m.persist()
}

// Delete removes a key and persists the table (an empty namespace stays, as in
// Java).
func (m *KVConfigManager) Delete(namespace, key string) error {
	m.mu.Lock()
	if kv := m.table[namespace]; kv != nil {
		if old, ok := kv[key]; ok {
			entries, count := m.entries[namespace], len(kv)
			delete(kv, key)
			m.total -= nsEntrySize(namespace, entries, count)
			entries -= entrySize(key, old)
			m.entries[namespace] = entries
			m.total += nsEntrySize(namespace, entries, count-1)
		}
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

// AppendNamespaceJSON appends the namespace as a KVTable body unless that body
// would be longer than limit bytes; size is the body's length either way (dst
// is returned unchanged when it is above limit), ok is false when the
// namespace does not exist.
func (m *KVConfigManager) AppendNamespaceJSON(dst []byte, namespace string, limit int) (out []byte, size int, ok bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	kv, ok := m.table[namespace]
	if !ok {
		return dst, 0, false
	}
	size = kvTableBodyOverhead + objectSize(m.entries[namespace], len(kv))
	if size > limit {
		return dst, size, true
	}
	t := codec.KVTable{Table: kv}
	return t.AppendJSON(dst), size, true
}

// TableSize is the size of kvConfig.json for the current table.
func (m *KVConfigManager) TableSize() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return fileSize(m.total, len(m.table))
}

// persist writes the table, in a write shared with the changes made meanwhile
// (compat.Persister); the caller's change must be in the table already.
func (m *KVConfigManager) persist() error {
	if m.path == "" {
		return nil
	}
	return m.file.Persist()
}

// snapshot is the table as Java's kvConfig.json.
func (m *KVConfigManager) snapshot() []byte {
	m.mu.RLock()
	defer m.mu.RUnlock()
	b := make([]byte, 0, fileSize(m.total, len(m.table)))
	b = append(b, `{"configTable":{`...)
	for i, ns := range codec.SortedKeys(m.table) {
		if i > 0 {
			b = append(b, ',')
		}
		b = codec.AppendJSONKey(b, ns)
		b = codec.AppendJSONStringMap(b, m.table[ns])
	}
	return append(b, "}}"...)
}
