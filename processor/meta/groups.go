package meta

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"

	"rmqd/codec"
	"rmqd/compat"
)

// GroupRetryPolicy is Java's GroupRetryPolicy. Java's broker only stores it;
// its proxy reads it (GET_SUBSCRIPTIONGROUP_CONFIG) for gRPC consumers'
// backoff, so it is kept whole.
type GroupRetryPolicy struct {
	CustomizedRetryPolicy  *CustomizedRetryPolicy  `json:"customizedRetryPolicy,omitempty"`
	ExponentialRetryPolicy *ExponentialRetryPolicy `json:"exponentialRetryPolicy,omitempty"`
	Type                   string                  `json:"type"`
}

// CustomizedRetryPolicy is Java's: the delay (ms) of each retry.
type CustomizedRetryPolicy struct {
	Next []int64 `json:"next"`
}

// UnmarshalJSON starts from Java's default delays, as fastjson does for a
// body without next.
func (p *CustomizedRetryPolicy) UnmarshalJSON(data []byte) error {
	type plain CustomizedRetryPolicy
	q := plain{Next: []int64{1000, 5000, 10000, 30000, 60000, 120000, 180000, 240000, 300000, 360000, 420000,
		480000, 540000, 600000, 1200000, 1800000, 3600000, 7200000}}
	q, err := overDefaults(data, q)
	if err == nil {
		*p = CustomizedRetryPolicy(q)
	}
	return err
}

// overDefaults decodes data over q, Java's defaults, as fastjson fills the
// bean its constructor made.
func overDefaults[T any](data []byte, q T) (T, error) {
	err := codec.UnmarshalBody(data, &q)
	return q, err
}

// ExponentialRetryPolicy is Java's: initial * multiplier^n ms, at most max.
type ExponentialRetryPolicy struct {
	Initial    int64 `json:"initial"`
	Max        int64 `json:"max"`
	Multiplier int64 `json:"multiplier"`
}

// UnmarshalJSON starts from Java's defaults (5 s, 2 h, 2): a policy given in
// part must not leave max at 0, which the proxy would read as no backoff.
func (p *ExponentialRetryPolicy) UnmarshalJSON(data []byte) error {
	type plain ExponentialRetryPolicy
	q := plain{Initial: 5000, Max: 7200000, Multiplier: 2}
	q, err := overDefaults(data, q)
	if err == nil {
		*p = ExponentialRetryPolicy(q)
	}
	return err
}

// SimpleSubscriptionData is an entry of a group's subscriptionDataSet (stored;
// Java's lag metrics read it).
type SimpleSubscriptionData struct {
	Expression     string `json:"expression"`
	ExpressionType string `json:"expressionType"`
	Topic          string `json:"topic"`
	Version        int64  `json:"version"`
}

// SubscriptionGroupConfig is Java's SubscriptionGroupConfig (fields in fastjson
// order).
type SubscriptionGroupConfig struct {
	Attributes                     map[string]string `json:"attributes"`
	BrokerID                       int64             `json:"brokerId"`
	ConsumeBroadcastEnable         bool              `json:"consumeBroadcastEnable"`
	ConsumeEnable                  bool              `json:"consumeEnable"`
	ConsumeFromMinEnable           bool              `json:"consumeFromMinEnable"`
	ConsumeMessageOrderly          bool              `json:"consumeMessageOrderly"`
	ConsumeTimeoutMinute           int32             `json:"consumeTimeoutMinute"`
	GroupName                      string            `json:"groupName"`
	GroupRetryPolicy               GroupRetryPolicy  `json:"groupRetryPolicy"`
	GroupSysFlag                   int32             `json:"groupSysFlag"`
	NotifyConsumerIdsChangedEnable bool              `json:"notifyConsumerIdsChangedEnable"`
	RetryMaxTimes                  int32             `json:"retryMaxTimes"`
	RetryQueueNums                 int32             `json:"retryQueueNums"`
	// SubscriptionDataSet is null (left out) unless an admin set it.
	SubscriptionDataSet          []SimpleSubscriptionData `json:"subscriptionDataSet,omitempty"`
	WhichBrokerWhenConsumeSlowly int64                    `json:"whichBrokerWhenConsumeSlowly"`
}

// NewSubscriptionGroupConfig has Java's defaults.
func NewSubscriptionGroupConfig(group string) SubscriptionGroupConfig {
	return SubscriptionGroupConfig{Attributes: map[string]string{}, ConsumeBroadcastEnable: true, ConsumeEnable: true,
		ConsumeFromMinEnable: true, ConsumeTimeoutMinute: 15, GroupName: group,
		GroupRetryPolicy: GroupRetryPolicy{Type: "CUSTOMIZED"}, NotifyConsumerIdsChangedEnable: true,
		RetryMaxTimes: 16, RetryQueueNums: 1, WhichBrokerWhenConsumeSlowly: 1}
}

// UnmarshalJSON starts from Java's defaults so that bodies missing fields (admin
// tools, 4.9 files) get them.
func (s *SubscriptionGroupConfig) UnmarshalJSON(data []byte) error {
	type plain SubscriptionGroupConfig
	p := plain(NewSubscriptionGroupConfig(""))
	if err := codec.UnmarshalBody(data, &p); err != nil {
		return err
	}
	if p.Attributes == nil {
		p.Attributes = map[string]string{}
	}
	*s = SubscriptionGroupConfig(p)
	return nil
}

// SubscriptionGroupTable is subscriptionGroup.json and the
// GET_ALL_SUBSCRIPTIONGROUP_CONFIG body.
type SubscriptionGroupTable struct {
	DataVersion            DataVersion                        `json:"dataVersion"`
	ForbiddenTable         map[string]map[string]int32        `json:"forbiddenTable"`
	SubscriptionGroupTable map[string]SubscriptionGroupConfig `json:"subscriptionGroupTable"`
}

// SubscriptionGroupManager owns subscriptionGroup.json.
type SubscriptionGroupManager struct {
	cfg   func() Config // the configuration in force
	log   *slog.Logger
	path  string
	mu    sync.RWMutex
	table map[string]SubscriptionGroupConfig
	// forbidden is Java's forbiddenTable (forbidden.go): group → topic → bits.
	forbidden map[string]map[string]int32
	version   Version
	file      compat.Persister
}

// NewSubscriptionGroupManager creates the system groups Java creates.
func NewSubscriptionGroupManager(conf func() Config, log *slog.Logger) *SubscriptionGroupManager {
	cfg := conf()
	m := &SubscriptionGroupManager{cfg: conf, log: log, path: filepath.Join(cfg.ConfigDir, "subscriptionGroup.json"),
		table: map[string]SubscriptionGroupConfig{}, forbidden: map[string]map[string]int32{}}
	m.file.Write = m.write
	for _, g := range []string{"TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP"} {
		m.table[g] = NewSubscriptionGroupConfig(g)
	}
	for _, g := range []string{"CID_ONS-HTTP-PROXY", "CID_ONSAPI_PULL", "CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER", "CID_RMQ_SYS_TRANS"} {
		m.table[g] = NewSubscriptionGroupConfig(g) // consumeBroadcastEnable already true
	}
	return m
}

// Load overlays subscriptionGroup.json.
func (m *SubscriptionGroupManager) Load() error {
	return LoadConfigFile(m.path, func(data []byte) error {
		var w SubscriptionGroupTable
		if err := codec.UnmarshalBody(data, &w); err != nil {
			return err
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		for k, v := range w.SubscriptionGroupTable {
			if v.GroupName == "" {
				v.GroupName = k
			}
			m.table[k] = v
		}
		m.takeForbidden(w.ForbiddenTable)
		m.version.Set(w.DataVersion)
		return nil
	})
}

// Snapshot copies the table.
func (m *SubscriptionGroupManager) Snapshot() SubscriptionGroupTable {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t := make(map[string]SubscriptionGroupConfig, len(m.table))
	for k, v := range m.table {
		t[k] = v
	}
	return SubscriptionGroupTable{DataVersion: m.version.Get(), ForbiddenTable: m.forbiddenCopy(),
		SubscriptionGroupTable: t}
}

// Persist writes subscriptionGroup.json (callers at the same time share a write).
func (m *SubscriptionGroupManager) Persist() error { return m.file.Persist() }

func (m *SubscriptionGroupManager) persistLogged() {
	if err := m.Persist(); err != nil {
		m.log.Error("persist subscriptionGroup.json", "err", err)
	}
}

func (m *SubscriptionGroupManager) write() error {
	data, err := codec.MarshalBodyIndent(m.Snapshot(), "\t")
	if err != nil {
		return fmt.Errorf("encode subscriptionGroup.json: %w", err)
	}
	return compat.WriteConfigFile(m.path, data)
}

// Get returns a group's config without creating it. Under enableLmq an LMQ
// group has one, with the defaults, never stored (LmqSubscriptionGroupManager).
func (m *SubscriptionGroupManager) Get(group string) (SubscriptionGroupConfig, bool) {
	if compat.IsLMQ(group) && m.cfg().EnableLmq {
		return NewSubscriptionGroupConfig(strings.Clone(group)), true
	}
	m.mu.RLock()
	c, ok := m.table[group]
	m.mu.RUnlock()
	return c, ok
}

// Find is findSubscriptionGroupConfig: unknown groups are created when
// autoCreateSubscriptionGroup is on.
func (m *SubscriptionGroupManager) Find(group string) (SubscriptionGroupConfig, bool) {
	if c, ok := m.Get(group); ok {
		return c, true
	}
	c, ok, created := m.create(group)
	if created {
		m.persistLogged()
	}
	return c, ok
}

// FoundGroup is one answer of FindAll.
type FoundGroup struct {
	Config SubscriptionGroupConfig
	OK     bool
}

// FindAll is Find for each group, with one write of subscriptionGroup.json for
// all it creates. Java writes the file once per group it creates, so a single
// heartbeat naming 2,000 new groups kept a broker writing for most of a minute.
func (m *SubscriptionGroupManager) FindAll(groups []string) []FoundGroup {
	out := make([]FoundGroup, len(groups))
	created := false
	for i, g := range groups {
		c, ok := m.Get(g)
		if !ok {
			var made bool
			c, ok, made = m.create(g)
			created = created || made
		}
		out[i] = FoundGroup{Config: c, OK: ok}
	}
	if created {
		m.persistLogged()
	}
	return out
}

// isSysGroup is MixAll.isSysConsumerGroup: the broker's own groups are named
// CID_RMQ_SYS_ (matched with case, as Java's startsWith).
func isSysGroup(group string) bool { return strings.HasPrefix(group, "CID_RMQ_SYS_") }

// create adds an unknown group with the defaults when auto-creation is on and
// the name is valid, without writing the file.
func (m *SubscriptionGroupManager) create(group string) (c SubscriptionGroupConfig, ok, created bool) {
	if cfg := m.cfg(); !cfg.AutoCreateSubscriptionGroup && !(cfg.EnableCreateSysGroup && isSysGroup(group)) {
		return SubscriptionGroupConfig{}, false, false
	}
	if _, ok := compat.ValidateGroup(group); !ok { // Java: CHARACTER_MAX_LENGTH and isTopicOrGroupIllegal
		return SubscriptionGroupConfig{}, false, false
	}
	group = strings.Clone(group) // may alias a request frame; it becomes a map key
	m.mu.Lock()
	c, ok = m.table[group]
	if !ok {
		c = NewSubscriptionGroupConfig(group)
		m.table[group] = c
		m.version.Next()
	}
	m.mu.Unlock()
	if !ok {
		m.log.Info("auto-created subscription group", "group", group)
	}
	return c, true, !ok
}

// Update creates or replaces groups (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP and
// its list form) with one write of subscriptionGroup.json.
func (m *SubscriptionGroupManager) Update(cs ...SubscriptionGroupConfig) error {
	if len(cs) == 0 {
		return nil
	}
	lmq := m.cfg().EnableLmq
	m.mu.Lock()
	for _, c := range cs {
		if lmq && compat.IsLMQ(c.GroupName) {
			continue // LmqSubscriptionGroupManager.updateSubscriptionGroupConfig
		}
		m.table[c.GroupName] = c
	}
	m.version.Next()
	m.mu.Unlock()
	return m.Persist()
}

// DisableConsume turns a group's consumeEnable off (Java's disableConsume,
// protectBroker's verdict) and persists it; false when there is no such group
// or it was off already.
func (m *SubscriptionGroupManager) DisableConsume(group string) (bool, error) {
	m.mu.Lock()
	c, ok := m.table[group]
	if !ok || !c.ConsumeEnable {
		m.mu.Unlock()
		return false, nil
	}
	c.ConsumeEnable = false
	m.table[group] = c
	m.version.Next()
	m.mu.Unlock()
	return true, m.Persist()
}

// Delete removes a group.
func (m *SubscriptionGroupManager) Delete(group string) error {
	m.mu.Lock()
	delete(m.table, group)
	delete(m.forbidden, group) // as Java's deleteSubscriptionGroupConfig
	m.version.Next()
	m.mu.Unlock()
	return m.Persist()
}
