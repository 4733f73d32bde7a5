package namesrv

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/remoting"
)

// DefaultBrokerChannelExpiredMillis is how long a broker may stay silent before
// the liveness scan drops it (RouteInfoManager.DEFAULT_BROKER_CHANNEL_EXPIRED_TIME),
// unless it registered with its own heartbeatTimeoutMillis.
const DefaultBrokerChannelExpiredMillis = 120_000

// MaxBrokerHeartbeatTimeoutMillis caps the heartbeatTimeoutMillis a broker
// registers with. Java brokers send 10 s by default (brokerNotActiveTimeoutMillis)
// and Java takes any value; a broker that asked for years would outlive every
// liveness scan once its connection went quiet.
const MaxBrokerHeartbeatTimeoutMillis = 10 * 60 * 1000

// unregisterBatchSize is how many broker instances one write-lock hold removes
// when a connection closes or the liveness scan expires brokers; the lock is
// released between batches so route reads and heartbeats proceed.
const unregisterBatchSize = 1000

// brokerAddrKey identifies a live broker instance (Java's BrokerAddrInfo).
type brokerAddrKey struct {
	cluster string
	addr    string
}

// brokerLive is a broker instance's liveness record (Java's BrokerLiveInfo).
type brokerLive struct {
	lastUpdate   atomic.Int64 // unix ms; refreshed under the read lock by heartbeats
	timeout      int64        // ms
	dataVersion  codec.DataVersion
	conn         remoting.Conn // may be nil (tests, or a registration without a connection)
	haServerAddr string
	brokerName   string // as registered, to find the broker's entry without a table scan
	brokerID     int64
}

func (l *brokerLive) connID() (uint64, bool) {
	if l.conn == nil {
		return 0, false
	}
	return l.conn.ID(), true
}

// RouteInfoManager is the route table.
//
// Lock discipline: one sync.RWMutex guards every table below. Readers (route
// lookups, topic lists, cluster info) hold the read lock while they copy or
// serialize what they return, so nothing they hand out aliases the tables.
// Writers (register, unregister, topic and permission changes) hold the write
// lock for the whole operation, which keeps the tables consistent with each
// other. Heartbeats only bump brokerLive.lastUpdate, an atomic, under the read
// lock. Nothing blocks under the lock: connections are closed, and logs that
// need no table state are written, after it is released. Strings stored in the
// tables are cloned from requests (request strings alias recycled frames).
type RouteInfoManager struct {
	log *slog.Logger
	cfg func() *Config

	mu                sync.RWMutex
	topicQueueTable   map[string][]codec.QueueData                       // topic → queue data, sorted by broker name
	brokerAddrTable   map[string]*codec.BrokerData                       // broker name → ids and addresses
	clusterAddrTable  map[string]map[string]struct{}                     // cluster → broker names
	brokerLiveTable   map[brokerAddrKey]*brokerLive                      // (cluster, addr) → liveness
	filterServerTable map[brokerAddrKey][]string                         // (cluster, addr) → filter servers
	mappingInfoTable  map[string]map[string]*codec.TopicQueueMappingInfo // topic → broker name → static-topic mapping

	// afterUnregisterBatch, when set (tests), runs after each batch of
	// OnConnClosed and ScanNotActiveBrokers, with the lock released.
	afterUnregisterBatch func()
	// topicWalks counts unregisterLocked's walks over the topic table (tests:
	// one per batch, none for names not in the table). Guarded by mu.
	topicWalks int
}

// NewRouteInfoManager makes an empty table. cfg returns the current config (it
// may change at run time through UPDATE_NAMESRV_CONFIG).
func NewRouteInfoManager(cfg func() *Config, logger *slog.Logger) *RouteInfoManager {
	return &RouteInfoManager{
		log:               logger,
		cfg:               cfg,
		topicQueueTable:   make(map[string][]codec.QueueData, 1024),
		brokerAddrTable:   make(map[string]*codec.BrokerData, 128),
		clusterAddrTable:  make(map[string]map[string]struct{}, 32),
		brokerLiveTable:   make(map[brokerAddrKey]*brokerLive, 256),
		filterServerTable: make(map[brokerAddrKey][]string),
		mappingInfoTable:  make(map[string]map[string]*codec.TopicQueueMappingInfo),
	}
}

// BrokerRegistration is what REGISTER_BROKER carries.
type BrokerRegistration struct {
	ClusterName  string
	BrokerAddr   string
	BrokerName   string
	BrokerID     int64
	HaServerAddr string
	ZoneName     string
	// HeartbeatTimeoutMillis overrides DefaultBrokerChannelExpiredMillis when > 0,
	// up to MaxBrokerHeartbeatTimeoutMillis.
	HeartbeatTimeoutMillis int64
	// EnableActingMaster is nil for brokers older than 5.0 (no header field).
	EnableActingMaster *bool
	Topics             *codec.TopicConfigSerializeWrapper
	// FilterServerList nil leaves the recorded list alone; empty clears it.
	FilterServerList []string
	Conn             remoting.Conn
}

// RegisterResult is what REGISTER_BROKER answers: the master's addresses for a slave.
type RegisterResult struct {
	HaServerAddr string
	MasterAddr   string
}

// RegisterBroker records a broker instance and, when it is the master (or, for
// 5.x brokers, the lowest-id slave standing in for an absent master), its topics.
// A topic's queue data is (re)written when the broker registers for the first
// time, when its DataVersion differs from the one recorded, or when the topic has
// no queue data for this broker name. ok is false when Java's name server refuses
// the registration: a single-topic table from a broker id not yet registered; and
// when the connection it came on is already closed (its close handler may have
// run before this, and would never remove it).
//
// Static-topic mappings are kept only for topics the registering broker name has
// queues of (in this registration or an earlier one), filed under that broker
// name (Java files them under the mapping's bname), and leave with its queue data.
func (m *RouteInfoManager) RegisterBroker(r *BrokerRegistration) (res RegisterResult, ok bool) {
	var sum registerSummary
	m.mu.Lock()
	res, ok = m.registerLocked(r, &sum)
	m.mu.Unlock()
	if !ok && sum.connClosed {
		m.log.Info("register broker: connection already closed, ignored", "cluster", r.ClusterName,
			"brokerAddr", r.BrokerAddr, "brokerName", r.BrokerName, "brokerId", r.BrokerID)
	}
	sum.log(m.log, r)
	return res, ok
}

// registerSummary counts what one registration changed in the topic table, for
// one log line written after the lock is released.
type registerSummary struct {
	connClosed                  bool
	newTopics, changed, removed int
	examples                    []string // a few topic names, new or changed first
	mappings                    int
}

const summaryExamples = 3

func (s *registerSummary) note(kind upsertKind, topic string) {
	switch kind {
	case upsertNewTopic, upsertAdded:
		s.newTopics++
	case upsertChanged:
		s.changed++
	default:
		return
	}
	if len(s.examples) < summaryExamples {
		s.examples = append(s.examples, topic)
	}
}

func (s *registerSummary) log(logger *slog.Logger, r *BrokerRegistration) {
	if s.newTopics+s.changed+s.removed+s.mappings == 0 {
		return
	}
	logger.Info("broker topics registered", "cluster", r.ClusterName, "brokerName", r.BrokerName,
		"brokerAddr", r.BrokerAddr, "new", s.newTopics, "changed", s.changed, "removed", s.removed,
		"mappings", s.mappings, "examples", s.examples)
}

func (m *RouteInfoManager) registerLocked(r *BrokerRegistration, sum *registerSummary) (res RegisterResult, ok bool) {
	if r.Conn != nil && r.Conn.Closed() {
		sum.connClosed = true
		return RegisterResult{}, false
	}
	cluster, brokerName, addr := strings.Clone(r.ClusterName), strings.Clone(r.BrokerName), strings.Clone(r.BrokerAddr)
	topics := r.Topics
	if topics == nil {
		topics = &codec.TopicConfigSerializeWrapper{}
	}
	cfg := m.cfg()
	now := cfg.now().UnixMilli()
	debug := m.log.Enabled(context.Background(), slog.LevelDebug)

	names := m.clusterAddrTable[cluster]
	if names == nil {
		names = make(map[string]struct{})
		m.clusterAddrTable[cluster] = names
	}
	names[brokerName] = struct{}{}

	registerFirst := false
	bd := m.brokerAddrTable[brokerName]
	if bd == nil {
		registerFirst = true
		bd = &codec.BrokerData{Cluster: cluster, BrokerName: brokerName, BrokerAddrs: make(map[int64]string)}
		m.brokerAddrTable[brokerName] = bd
	}
	oldVersionBroker := r.EnableActingMaster == nil
	bd.EnableActingMaster = !oldVersionBroker && *r.EnableActingMaster
	bd.ZoneName = strings.Clone(r.ZoneName)

	// Slave switched to master (or the reverse): one address, one id.
	for id, a := range bd.BrokerAddrs {
		if a == addr && id != r.BrokerID {
			delete(bd.BrokerAddrs, id)
		}
	}

	// Another address already holds this id: the one with the newer state
	// version wins.
	if oldAddr, exists := bd.BrokerAddrs[r.BrokerID]; exists && oldAddr != addr {
		if old := m.brokerLiveTable[brokerAddrKey{cluster, oldAddr}]; old != nil &&
			old.dataVersion.StateVersion > topics.DataVersion.StateVersion {
			m.log.Warn("registering broker conflicts with a newer one, ignored",
				"cluster", cluster, "brokerName", brokerName, "brokerId", r.BrokerID,
				"oldAddr", oldAddr, "newAddr", addr)
			delete(m.brokerLiveTable, brokerAddrKey{cluster, addr})
			return RegisterResult{}, true
		}
	}

	if _, exists := bd.BrokerAddrs[r.BrokerID]; !exists && len(topics.TopicConfigTable) == 1 {
		m.log.Warn("single-topic registration before the broker registered", "brokerName", brokerName,
			"brokerId", r.BrokerID, "brokerAddr", addr)
		return RegisterResult{}, false
	}

	oldAddr := bd.BrokerAddrs[r.BrokerID]
	bd.BrokerAddrs[r.BrokerID] = addr
	registerFirst = registerFirst || oldAddr == ""

	key := brokerAddrKey{cluster, addr}
	isMaster := r.BrokerID == codec.MasterID
	isPrimeSlave := !oldVersionBroker && !isMaster && r.BrokerID == minBrokerID(bd.BrokerAddrs)
	if isMaster || isPrimeSlave {
		prev := m.brokerLiveTable[key]
		brokerChanged := prev == nil || prev.dataVersion != topics.DataVersion
		if cfg.DeleteTopicWithBrokerRegistration && len(topics.TopicQueueMappingInfoMap) == 0 {
			for topic := range m.topicQueueTable {
				if _, keep := topics.TopicConfigTable[topic]; !keep && m.removeQueueData(topic, brokerName) {
					sum.removed++
					if debug {
						m.log.Debug("topic removed from broker", "topic", topic, "brokerName", brokerName)
					}
				}
			}
		}
		for name, tc := range topics.TopicConfigTable {
			if tc == nil {
				continue
			}
			if tc.TopicName != "" { // Java keys queue data by the config's own name
				name = tc.TopicName
			}
			if !registerFirst && !brokerChanged && m.hasQueueData(name, brokerName) {
				continue
			}
			perm := tc.Perm
			if isPrimeSlave && bd.EnableActingMaster {
				perm &^= codec.PermWrite
			}
			kind := m.upsertQueueData(name, codec.QueueData{BrokerName: brokerName, ReadQueueNums: tc.ReadQueueNums,
				WriteQueueNums: tc.WriteQueueNums, Perm: perm, TopicSysFlag: tc.TopicSysFlag}, debug)
			sum.note(kind, name)
		}
		if brokerChanged || registerFirst {
			for topic, info := range topics.TopicQueueMappingInfoMap {
				// Only for a topic this broker name hosts: in this registration's
				// table, or registered before (a broker splitting its registration,
				// enableSplitRegistration, sends every mapping with the last part).
				if info == nil || !m.hasQueueData(topic, brokerName) {
					continue
				}
				byBroker := m.mappingInfoTable[topic]
				if byBroker == nil {
					byBroker = make(map[string]*codec.TopicQueueMappingInfo)
					m.mappingInfoTable[strings.Clone(topic)] = byBroker
				}
				byBroker[brokerName] = info.Clone()
				sum.mappings++
			}
		}
	}

	live := &brokerLive{timeout: DefaultBrokerChannelExpiredMillis, dataVersion: topics.DataVersion,
		conn: r.Conn, haServerAddr: strings.Clone(r.HaServerAddr), brokerName: brokerName, brokerID: r.BrokerID}
	if r.HeartbeatTimeoutMillis > 0 {
		live.timeout = min(r.HeartbeatTimeoutMillis, MaxBrokerHeartbeatTimeoutMillis)
	}
	live.lastUpdate.Store(now)
	if _, existed := m.brokerLiveTable[key]; !existed {
		m.log.Info("new broker registered", "cluster", cluster, "brokerAddr", addr, "brokerName", brokerName,
			"brokerId", r.BrokerID, "haServerAddr", live.haServerAddr)
	}
	m.brokerLiveTable[key] = live

	if r.FilterServerList != nil {
		if len(r.FilterServerList) == 0 {
			delete(m.filterServerTable, key)
		} else {
			m.filterServerTable[key] = slices.Clone(r.FilterServerList)
		}
	}

	if !isMaster {
		if masterAddr, ok := bd.BrokerAddrs[codec.MasterID]; ok {
			if ml := m.brokerLiveTable[brokerAddrKey{cluster, masterAddr}]; ml != nil {
				res = RegisterResult{HaServerAddr: ml.haServerAddr, MasterAddr: masterAddr}
			}
		}
	}
	return res, true
}

func minBrokerID(addrs map[int64]string) int64 {
	first := true
	var lowest int64
	for id := range addrs {
		if first || id < lowest {
			lowest, first = id, false
		}
	}
	return lowest
}

func (m *RouteInfoManager) hasQueueData(topic, brokerName string) bool {
	_, ok := findQueueData(m.topicQueueTable[topic], brokerName)
	return ok
}

func findQueueData(qds []codec.QueueData, brokerName string) (int, bool) {
	return slices.BinarySearchFunc(qds, brokerName, func(q codec.QueueData, name string) int {
		return strings.Compare(q.BrokerName, name)
	})
}

// upsertKind is what upsertQueueData did.
type upsertKind int

const (
	upsertUnchanged upsertKind = iota
	upsertChanged              // the broker's queue data of the topic differs now
	upsertAdded                // the topic had no queue data of this broker
	upsertNewTopic             // the topic did not exist
)

// upsertQueueData sets the queue data of qd.BrokerName for topic. Callers hold
// the write lock. A new topic name is cloned: it may alias a request. With
// debug, each change is logged (the caller logs a summary at info).
func (m *RouteInfoManager) upsertQueueData(topic string, qd codec.QueueData, debug bool) upsertKind {
	// Clients expand a route into one entry per queue: counts beyond what any
	// broker may create (a Java broker takes any int) are cut to that.
	qd.ReadQueueNums, qd.WriteQueueNums = compat.ClampQueueNums(qd.ReadQueueNums), compat.ClampQueueNums(qd.WriteQueueNums)
	qds, exists := m.topicQueueTable[topic]
	i, found := findQueueData(qds, qd.BrokerName)
	if found {
		if qds[i] == qd {
			return upsertUnchanged
		}
		if debug {
			m.log.Debug("topic changed", "topic", topic, "old", qds[i], "new", qd)
		}
		qds[i] = qd
		return upsertChanged
	}
	kind := upsertAdded
	if !exists {
		topic = strings.Clone(topic)
		kind = upsertNewTopic
	}
	if debug {
		m.log.Debug("topic registered", "topic", topic, "queueData", qd, "newTopic", !exists)
	}
	m.topicQueueTable[topic] = slices.Insert(qds, i, qd)
	return kind
}

// removeQueueData drops brokerName's queues of topic, and its static-topic
// mapping of topic, and the topic when no queues are left. Callers hold the
// write lock.
func (m *RouteInfoManager) removeQueueData(topic, brokerName string) bool {
	qds := m.topicQueueTable[topic]
	i, found := findQueueData(qds, brokerName)
	if !found {
		return false
	}
	qds = slices.Delete(qds, i, i+1)
	if len(qds) == 0 {
		delete(m.topicQueueTable, topic)
		delete(m.mappingInfoTable, topic)
	} else {
		m.topicQueueTable[topic] = qds
		if byBroker := m.mappingInfoTable[topic]; byBroker != nil {
			delete(byBroker, brokerName)
			if len(byBroker) == 0 {
				delete(m.mappingInfoTable, topic)
			}
		}
	}
	return true
}

// UnregisterRequest names a broker instance to remove (UNREGISTER_BROKER's header).
type UnregisterRequest struct {
	ClusterName string
	BrokerAddr  string
	BrokerName  string
	BrokerID    int64
}

// UnregisterBrokers removes broker instances. A broker name left without
// addresses leaves its cluster (and an empty cluster goes), and its queues and
// static-topic mappings leave every topic (topics left without queues go).
func (m *RouteInfoManager) UnregisterBrokers(reqs ...UnregisterRequest) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.unregisterLocked(reqs)
}

// unregisterLocked removes a batch of broker instances with one walk over the
// topic table, and none when no broker name left or lost its master. Callers
// hold the write lock.
func (m *RouteInfoManager) unregisterLocked(reqs []UnregisterRequest) {
	debug := m.log.Enabled(context.Background(), slog.LevelDebug)
	var removed, reduced map[string]struct{}
	for _, r := range reqs {
		key := brokerAddrKey{r.ClusterName, r.BrokerAddr}
		_, wasLive := m.brokerLiveTable[key]
		delete(m.brokerLiveTable, key)
		delete(m.filterServerTable, key)
		if debug {
			m.log.Debug("unregister broker", "cluster", r.ClusterName, "brokerAddr", r.BrokerAddr,
				"brokerName", r.BrokerName, "brokerId", r.BrokerID, "wasLive", wasLive)
		}

		bd := m.brokerAddrTable[r.BrokerName]
		if bd == nil {
			continue // an unknown name has no queues anywhere
		}
		for id, a := range bd.BrokerAddrs {
			if a == r.BrokerAddr {
				delete(bd.BrokerAddrs, id)
			}
		}
		if len(bd.BrokerAddrs) > 0 {
			// In acting-master mode a name whose master left is readable only.
			if bd.EnableActingMaster && minBrokerID(bd.BrokerAddrs) != codec.MasterID {
				if reduced == nil {
					reduced = make(map[string]struct{})
				}
				reduced[r.BrokerName] = struct{}{}
			}
			continue
		}
		delete(m.brokerAddrTable, r.BrokerName)
		if names := m.clusterAddrTable[r.ClusterName]; names != nil {
			delete(names, r.BrokerName)
			if len(names) == 0 {
				delete(m.clusterAddrTable, r.ClusterName)
			}
		}
		if removed == nil {
			removed = make(map[string]struct{})
		}
		removed[r.BrokerName] = struct{}{}
		delete(reduced, r.BrokerName)
	}
	if len(removed) == 0 && len(reduced) == 0 {
		return
	}
	m.topicWalks++
	for topic, qds := range m.topicQueueTable {
		kept := qds[:0]
		for _, qd := range qds {
			if _, gone := removed[qd.BrokerName]; gone {
				continue
			}
			if _, ro := reduced[qd.BrokerName]; ro {
				qd.Perm &^= codec.PermWrite
			}
			kept = append(kept, qd)
		}
		switch {
		case len(kept) == 0:
			delete(m.topicQueueTable, topic)
		case len(kept) < len(qds):
			clear(qds[len(kept):]) // drop the broker names they held
			m.topicQueueTable[topic] = kept
		}
	}
	if len(removed) == 0 {
		return
	}
	for topic, byBroker := range m.mappingInfoTable {
		for name := range byBroker {
			if _, gone := removed[name]; gone {
				delete(byBroker, name)
			}
		}
		if len(byBroker) == 0 {
			delete(m.mappingInfoTable, topic)
		}
	}
}

// unregisterRequestFor finds the broker name and id of a live instance (Java's
// setupUnRegisterRequest) from what the instance registered with. Callers hold
// a lock.
func (m *RouteInfoManager) unregisterRequestFor(key brokerAddrKey, live *brokerLive) (UnregisterRequest, bool) {
	bd := m.brokerAddrTable[live.brokerName]
	if bd == nil || bd.Cluster != key.cluster {
		return UnregisterRequest{}, false
	}
	if a, ok := bd.BrokerAddrs[live.brokerID]; ok && a == key.addr {
		return UnregisterRequest{ClusterName: key.cluster, BrokerAddr: key.addr, BrokerName: live.brokerName,
			BrokerID: live.brokerID}, true
	}
	for id, a := range bd.BrokerAddrs { // the id changed since (slave switched to master)
		if a == key.addr {
			return UnregisterRequest{ClusterName: key.cluster, BrokerAddr: key.addr, BrokerName: live.brokerName,
				BrokerID: id}, true
		}
	}
	return UnregisterRequest{}, false
}

// OnConnClosed unregisters every broker instance registered over connection id.
func (m *RouteInfoManager) OnConnClosed(id uint64) int {
	n, _ := m.unregisterLive(func(live *brokerLive, _ int64) bool {
		cid, ok := live.connID()
		return ok && cid == id
	}, "broker connection closed", slog.LevelDebug) // NameServer.OnClose logs the total
	return n
}

// ScanNotActiveBrokers drops every broker instance whose last registration or
// heartbeat is older than its timeout, closes its connection, and returns how many
// it dropped.
func (m *RouteInfoManager) ScanNotActiveBrokers() int {
	n, toClose := m.unregisterLive(func(live *brokerLive, now int64) bool {
		return live.lastUpdate.Load()+live.timeout < now
	}, "broker channel expired", slog.LevelWarn)
	for _, c := range toClose {
		_ = c.Close()
	}
	return n
}

// unregisterLive removes the live instances that match: it finds them under
// the read lock, then removes them in batches of unregisterBatchSize, each
// under one write-lock hold that checks again that the instance still matches
// (a heartbeat or a new registration may have come in meanwhile). It returns
// how many were unregistered and the connections of all those removed, and
// logs one line per batch at level (one per instance at debug).
func (m *RouteInfoManager) unregisterLive(match func(live *brokerLive, now int64) bool, why string,
	level slog.Level) (int, []remoting.Conn) {
	now := m.cfg().now().UnixMilli()
	var keys []brokerAddrKey
	m.mu.RLock()
	for key, live := range m.brokerLiveTable {
		if match(live, now) {
			keys = append(keys, key)
		}
	}
	m.mu.RUnlock()

	debug := m.log.Enabled(context.Background(), slog.LevelDebug)
	var (
		total int
		conns []remoting.Conn
		reqs  []UnregisterRequest
	)
	for len(keys) > 0 {
		batch := keys[:min(len(keys), unregisterBatchSize)]
		keys = keys[len(batch):]
		reqs = reqs[:0]
		dropped := 0
		m.mu.Lock()
		for _, key := range batch {
			live := m.brokerLiveTable[key]
			if live == nil || !match(live, now) {
				continue
			}
			dropped++
			if debug {
				m.log.Debug(why, "cluster", key.cluster, "brokerAddr", key.addr, "brokerName", live.brokerName,
					"timeoutMillis", live.timeout)
			}
			if live.conn != nil {
				conns = append(conns, live.conn)
			}
			if r, ok := m.unregisterRequestFor(key, live); ok {
				reqs = append(reqs, r)
			} else {
				delete(m.brokerLiveTable, key)
				delete(m.filterServerTable, key)
			}
		}
		m.unregisterLocked(reqs)
		m.mu.Unlock()
		total += len(reqs)
		if dropped > 0 && m.log.Enabled(context.Background(), level) {
			examples := make([]string, 0, summaryExamples)
			for _, r := range reqs[:min(len(reqs), summaryExamples)] {
				examples = append(examples, r.BrokerName+"@"+r.BrokerAddr)
			}
			m.log.Log(context.Background(), level, why, "brokers", dropped, "unregistered", len(reqs), "examples", examples)
		}
		if m.afterUnregisterBatch != nil {
			m.afterUnregisterBatch()
		}
	}
	return total, conns
}

// UpdateBrokerInfoUpdateTimestamp refreshes a live instance (BROKER_HEARTBEAT,
// QUERY_DATA_VERSION).
func (m *RouteInfoManager) UpdateBrokerInfoUpdateTimestamp(cluster, addr string) {
	now := m.cfg().now().UnixMilli()
	m.mu.RLock()
	if live := m.brokerLiveTable[brokerAddrKey{cluster, addr}]; live != nil {
		live.lastUpdate.Store(now)
	}
	m.mu.RUnlock()
}

// QueryBrokerTopicConfig returns the DataVersion recorded for a live instance.
func (m *RouteInfoManager) QueryBrokerTopicConfig(cluster, addr string) (codec.DataVersion, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if live := m.brokerLiveTable[brokerAddrKey{cluster, addr}]; live != nil {
		return live.dataVersion, true
	}
	return codec.DataVersion{}, false
}

// AppendTopicRouteJSON appends the route of topic as GET_ROUTEINFO_BY_TOPIC's body
// (codec.TopicRouteData.AppendJSON's format, queue and broker data sorted by
// broker name) and reports whether the topic has a route: queue data and at least
// one of its brokers registered. orderTopicConf, when set, is included. zone,
// when set, is the zone of a client in zone mode: broker groups of other zones
// that have a master are left out, with their queues and filter servers (Java's
// ZoneRouteRPCHook); a group whose master is down stays whatever its zone.
func (m *RouteInfoManager) AppendTopicRouteJSON(dst []byte, topic, orderTopicConf, zone string) ([]byte, bool) {
	supportActingMaster := m.cfg().SupportActingMaster
	m.mu.RLock()
	defer m.mu.RUnlock()
	qds := m.topicQueueTable[topic]
	if len(qds) == 0 {
		return dst, false
	}
	found := false
	for i := range qds {
		if _, ok := m.brokerAddrTable[qds[i].BrokerName]; ok {
			found = true
			break
		}
	}
	if !found {
		return dst, false
	}
	var excluded map[string]struct{} // broker names left out for the client's zone
	dst = append(dst, `{"brokerDatas":[`...)
	n := 0
	for i := range qds {
		bd := m.brokerAddrTable[qds[i].BrokerName]
		if bd == nil {
			continue
		}
		bd = actingView(bd, &qds[i], topic, supportActingMaster)
		if zone != "" {
			if _, hasMaster := bd.BrokerAddrs[codec.MasterID]; hasMaster && !strings.EqualFold(bd.ZoneName, zone) {
				if excluded == nil {
					excluded = make(map[string]struct{})
				}
				excluded[bd.BrokerName] = struct{}{}
				continue
			}
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = bd.AppendJSON(dst)
	}
	dst = append(dst, `],"filterServerTable":{`...)
	if len(m.filterServerTable) > 0 {
		dst = m.appendFilterServers(dst, qds, excluded)
	}
	dst = append(dst, '}')
	if orderTopicConf != "" {
		dst = append(dst, `,"orderTopicConf":`...)
		dst = codec.AppendJSONString(dst, orderTopicConf)
	}
	dst = append(dst, `,"queueDatas":[`...)
	n = 0
	for i := range qds {
		if _, out := excluded[qds[i].BrokerName]; out {
			continue
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = qds[i].AppendJSON(dst)
	}
	dst = append(dst, ']')
	if byBroker := m.mappingInfoTable[topic]; len(byBroker) > 0 {
		// Static topics (5.x): each broker's TopicQueueMappingInfo (Java's fields only).
		dst = append(dst, `,"topicQueueMappingByBroker":{`...)
		for i, name := range codec.SortedKeys(byBroker) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = codec.AppendJSONKey(dst, name)
			dst = byBroker[name].AppendJSON(dst)
		}
		dst = append(dst, '}')
	}
	return append(dst, '}'), true
}

// actingView returns the broker data a route shows for bd: with
// supportActingMaster, a master-less acting-master group whose queues of the
// topic are read-only answers with its lowest id as id 0 (in a copy).
func actingView(bd *codec.BrokerData, qd *codec.QueueData, topic string, supportActingMaster bool) *codec.BrokerData {
	if !supportActingMaster || !bd.EnableActingMaster || len(bd.BrokerAddrs) == 0 ||
		strings.HasPrefix(topic, syncBrokerMemberGroupPrefix) || qd.Perm&codec.PermWrite != 0 {
		return bd
	}
	if _, hasMaster := bd.BrokerAddrs[codec.MasterID]; hasMaster {
		return bd
	}
	acting := bd.Clone()
	lowest := minBrokerID(acting.BrokerAddrs)
	acting.BrokerAddrs[codec.MasterID] = acting.BrokerAddrs[lowest]
	delete(acting.BrokerAddrs, lowest)
	return acting
}

// syncBrokerMemberGroupPrefix is TopicValidator.SYNC_BROKER_MEMBER_GROUP_PREFIX.
const syncBrokerMemberGroupPrefix = "rmq_sys_SYNC_BROKER_MEMBER_"

func (m *RouteInfoManager) appendFilterServers(dst []byte, qds []codec.QueueData, excluded map[string]struct{}) []byte {
	table := make(map[string][]string)
	for i := range qds {
		bd := m.brokerAddrTable[qds[i].BrokerName]
		if bd == nil {
			continue
		}
		if _, out := excluded[bd.BrokerName]; out {
			continue
		}
		for _, addr := range bd.BrokerAddrs {
			// Java puts null for an address without filter servers and fastjson
			// leaves null map values out.
			if fs := m.filterServerTable[brokerAddrKey{bd.Cluster, addr}]; fs != nil {
				table[addr] = fs
			}
		}
	}
	for i, addr := range codec.SortedKeys(table) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = codec.AppendJSONString(dst, addr)
		dst = append(dst, ':')
		dst = codec.AppendJSONStringSlice(dst, table[addr])
	}
	return dst
}

// TopicRouteData returns the route of topic as a value (tests, and callers that
// want the structure rather than its JSON).
func (m *RouteInfoManager) TopicRouteData(topic string) (*codec.TopicRouteData, bool) {
	b, ok := m.AppendTopicRouteJSON(nil, topic, "", "")
	if !ok {
		return nil, false
	}
	r, err := codec.DecodeTopicRouteData(b)
	if err != nil {
		return nil, false
	}
	return r, true
}

// ClusterInfo returns a copy of the broker and cluster tables.
func (m *RouteInfoManager) ClusterInfo() *codec.ClusterInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ci := &codec.ClusterInfo{
		BrokerAddrTable:  make(map[string]*codec.BrokerData, len(m.brokerAddrTable)),
		ClusterAddrTable: make(map[string][]string, len(m.clusterAddrTable)),
	}
	for name, bd := range m.brokerAddrTable {
		ci.BrokerAddrTable[name] = bd.Clone()
	}
	for cluster, names := range m.clusterAddrTable {
		ci.ClusterAddrTable[cluster] = codec.SortedKeys(names)
	}
	return ci
}

// BrokerAddrs returns a copy of the ids and addresses of brokerName (empty when
// unknown).
func (m *RouteInfoManager) BrokerAddrs(brokerName string) map[int64]string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	addrs := map[int64]string{}
	if bd := m.brokerAddrTable[brokerName]; bd != nil {
		for id, a := range bd.BrokerAddrs {
			addrs[id] = a
		}
	}
	return addrs
}

// AllTopics returns every topic name, sorted.
func (m *RouteInfoManager) AllTopics() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return codec.SortedKeys(m.topicQueueTable)
}

// TopicsByCluster returns the topics with queues on a broker of cluster, sorted;
// empty for an unknown cluster.
func (m *RouteInfoManager) TopicsByCluster(cluster string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	names := m.clusterAddrTable[cluster]
	topics := []string{}
	for topic, qds := range m.topicQueueTable {
		for i := range qds {
			if _, ok := names[qds[i].BrokerName]; ok {
				topics = append(topics, topic)
				break
			}
		}
	}
	slices.Sort(topics)
	return topics
}

// SystemTopicList returns GET_SYSTEM_TOPIC_LIST_FROM_NS's list: every cluster
// name followed by its broker names, and one broker address to ask for more.
func (m *RouteInfoManager) SystemTopicList() *codec.TopicList {
	m.mu.RLock()
	defer m.mu.RUnlock()
	l := &codec.TopicList{TopicList: []string{}}
	for _, cluster := range codec.SortedKeys(m.clusterAddrTable) {
		l.TopicList = append(l.TopicList, cluster)
		l.TopicList = append(l.TopicList, codec.SortedKeys(m.clusterAddrTable[cluster])...)
	}
	for _, name := range codec.SortedKeys(m.brokerAddrTable) {
		if addrs := m.brokerAddrTable[name].BrokerAddrs; len(addrs) > 0 {
			l.BrokerAddr = addrs[minBrokerID(addrs)]
			break
		}
	}
	return l
}

// TopicsWithSysFlag returns the topics whose first queue data matches: unit
// topics (GET_UNIT_TOPIC_LIST), topics with unit subscriptions
// (GET_HAS_UNIT_SUB_TOPIC_LIST), and those of them that are not unit topics
// (GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST).
func (m *RouteInfoManager) TopicsWithSysFlag(match func(sysFlag int32) bool) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	topics := []string{}
	for topic, qds := range m.topicQueueTable {
		if len(qds) > 0 && match(qds[0].TopicSysFlag) {
			topics = append(topics, topic)
		}
	}
	slices.Sort(topics)
	return topics
}

// RegisterTopic adds or replaces queue data of topic (REGISTER_TOPIC_IN_NAMESRV).
// Nothing changes when a queue data names an unknown broker.
func (m *RouteInfoManager) RegisterTopic(topic string, qds []codec.QueueData) bool {
	if len(qds) == 0 {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, qd := range qds {
		if _, ok := m.brokerAddrTable[qd.BrokerName]; !ok {
			m.log.Warn("register topic names an unknown broker", "topic", topic, "brokerName", qd.BrokerName)
			return false
		}
	}
	for _, qd := range qds {
		qd.BrokerName = strings.Clone(qd.BrokerName)
		m.upsertQueueData(topic, qd, false)
	}
	m.log.Info("topic registered in name server", "topic", topic, "queueDatas", qds)
	return true
}

// DeleteTopic removes topic; with a cluster, only the queues of that cluster's
// brokers.
func (m *RouteInfoManager) DeleteTopic(topic, cluster string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cluster == "" {
		delete(m.topicQueueTable, topic)
		delete(m.mappingInfoTable, topic)
		return
	}
	for name := range m.clusterAddrTable[cluster] {
		m.removeQueueData(topic, name)
	}
}

// WipeWritePermOfBroker removes the write permission of brokerName's queues on
// every topic; AddWritePermOfBroker sets them to read|write. Both return the
// number of topics touched.
func (m *RouteInfoManager) WipeWritePermOfBroker(brokerName string) int {
	return m.operateWritePerm(brokerName, func(perm int32) int32 { return perm &^ codec.PermWrite })
}

// AddWritePermOfBroker: see WipeWritePermOfBroker.
func (m *RouteInfoManager) AddWritePermOfBroker(brokerName string) int {
	return m.operateWritePerm(brokerName, func(int32) int32 { return codec.PermRead | codec.PermWrite })
}

func (m *RouteInfoManager) operateWritePerm(brokerName string, op func(int32) int32) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, qds := range m.topicQueueTable {
		if i, ok := findQueueData(qds, brokerName); ok {
			qds[i].Perm = op(qds[i].Perm)
			n++
		}
	}
	return n
}
