package processor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/remoting"
	"rmqd/store"
	"rmqd/store/ha"
)

// This file is the broker side of RocketMQ 5.x controller mode (Java's ReplicasManager): the broker asks
// an Apache controller (a Raft group) for a broker id, registers, heartbeats, and takes the role and epoch
// the controller gives it, switching between master and slave at runtime. The controller is the only
// source of truth: rmqd runs no consensus of its own.

// ControllerConfig holds BrokerConfig's controller-mode keys (Java names and defaults).
type ControllerConfig struct {
	EnableControllerMode            bool   `prop:"enableControllerMode"`
	ControllerAddr                  string `prop:"controllerAddr"` // ';' separated
	FetchControllerAddrByDNSLookup  bool   `prop:"fetchControllerAddrByDnsLookup"`
	SyncBrokerMetadataPeriod        int64  `prop:"syncBrokerMetadataPeriod"`     // ms
	CheckSyncStateSetPeriod         int64  `prop:"checkSyncStateSetPeriod"`      // ms
	SyncControllerMetadataPeriod    int64  `prop:"syncControllerMetadataPeriod"` // ms
	ControllerHeartBeatTimeoutMills int64  `prop:"controllerHeartBeatTimeoutMills"`
	BrokerHeartbeatInterval         int64  `prop:"brokerHeartbeatInterval"` // ms
	BrokerElectionPriority          int32  `prop:"brokerElectionPriority"`
	// MessageStoreConfig's controller-mode replication keys (the auto-switch HA service reads them).
	InSyncReplicas           int   `prop:"inSyncReplicas"`
	MinInSyncReplicas        int   `prop:"minInSyncReplicas"`
	AllAckInSyncStateSet     bool  `prop:"allAckInSyncStateSet"`
	HaMaxTimeSlaveNotCatchup int64 `prop:"haMaxTimeSlaveNotCatchup"` // ms
	SyncFromLastFile         bool  `prop:"syncFromLastFile"`
	AsyncLearner             bool  `prop:"asyncLearner"`
}

func defaultControllerConfig() ControllerConfig {
	return ControllerConfig{
		SyncBrokerMetadataPeriod:        5000,
		CheckSyncStateSetPeriod:         5000,
		SyncControllerMetadataPeriod:    10000,
		ControllerHeartBeatTimeoutMills: 10000,
		BrokerHeartbeatInterval:         1000,
		BrokerElectionPriority:          math.MaxInt32,
		InSyncReplicas:                  1,
		MinInSyncReplicas:               1,
		HaMaxTimeSlaveNotCatchup:        15000,
	}
}

func (c *ControllerConfig) addrs() []string {
	var out []string
	for _, a := range strings.Split(c.ControllerAddr, ";") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// Controller response codes (ResponseCode).
const (
	respControllerNotLeader          int32 = 2007
	respControllerMetadataNotExist   int32 = 2008
	respControllerMasterStillExist   int32 = 2011
	respControllerBrokerNeedRegister int32 = 2010
)

// ControllerHA is the replication side controller mode drives: store/ha's AutoSwitch (epochs,
// truncation to the last common epoch, the sync state set).
type ControllerHA interface {
	ChangeToMaster(epoch, syncStateSetEpoch int32, syncStateSet []int64) error
	// ChangeToSlave with an empty address stops the master side at once; SetMasterHAAddr follows.
	ChangeToSlave(masterHAAddr string, epoch int32, selfBrokerID int64) error
	SetMasterHAAddr(addr string)
	SetLocalBrokerID(id int64)
	// OnSyncStateSetChange is told of each sync state set the master wants (ALTER_SYNC_STATE_SET).
	OnSyncStateSetChange(f func(newSet []int64))
	SetSyncStateSet(set []int64, epoch int32)
	// LastEpoch is the epoch of the last entry of the local epoch file (heartbeats report it).
	LastEpoch() int32
	ConfirmOffset() int64
}

// roleStore is what controller mode needs of the store beyond MessageStore.
type roleStore interface {
	SetRole(role string) error
	MaxPhyOffset() int64
	RecoverTopicQueueTable()
}

// onewayInvoker is *remoting.Client's fire-and-forget send (heartbeats).
type onewayInvoker interface {
	InvokeOneway(ctx context.Context, addr string, req *codec.RemotingCommand) error
}

// controllerMode is ReplicasManager: state of this broker in its controller-managed group.
type controllerMode struct {
	b  *Broker
	ha ControllerHA

	mu         sync.Mutex // role changes, one at a time (Java: synchronized)
	leader     string     // controller leader's address
	selfID     int64      // the id the controller assigned (brokerIdentity file); 0 until registered
	registered bool
	masterID   int64
	masterAddr string
	epoch      int32 // masterEpoch
	ssEpoch    int32
	ss         []int64
	isMaster   bool
	running    bool // a role was taken: the broker may register with name servers
	// slaveEpoch is the epoch a slave waits to learn its master's HA address for (0: none pending).
	slaveEpoch  int32
	stopMasterS context.CancelFunc // the master-only services (schedule, transaction check, timer, revive)
	runCtx      context.Context    // the broker's services' context, set by Start before run
	// recheck asks the run loop for GET_REPLICA_INFO now (a role change was notified).
	recheck chan struct{}
}

// EnableControllerMode puts the broker in controller mode over ha. Call before Start.
func (b *Broker) EnableControllerMode(ha ControllerHA) error {
	c := b.conf().Controller
	if !c.EnableControllerMode {
		return errors.New("controller mode: enableControllerMode is false")
	}
	if len(c.addrs()) == 0 {
		return errors.New("controller mode: controllerAddr is empty")
	}
	if _, ok := b.store.(roleStore); !ok {
		return errors.New("controller mode: the store cannot change its role")
	}
	ctl := &controllerMode{b: b, ha: ha, masterID: -1, recheck: make(chan struct{}, 1)}
	b.ctl = ctl
	f := ctl.masterHAAddr
	b.masters.onHA.Store(&f)
	ha.OnSyncStateSetChange(ctl.alterSyncStateSet)
	// Fenced until the controller says who is master: a slave refuses sends.
	b.setRole(RoleSlave, 1)
	return nil
}

// controllerRunning reports whether a broker not in controller mode, or in controller mode and given a
// role, may register with name servers (Java keeps a fenced broker isolated).
func (b *Broker) controllerRunning() bool {
	if b.ctl == nil {
		return true
	}
	b.ctl.mu.Lock()
	defer b.ctl.mu.Unlock()
	return b.ctl.running
}

// setRole swaps brokerRole and brokerId in the configuration and the store's role.
func (b *Broker) setRole(role string, id int64) {
	next := *b.conf()
	next.Store.BrokerRole = role
	next.BrokerID = id
	b.cfg.Store(&next)
	if rs, ok := b.store.(roleStore); ok {
		_ = rs.SetRole(role) // role is one of the three valid ones
	}
}

// controllerHandlers are the requests a controller sends a broker.
func (b *Broker) controllerHandlers() map[int32]remoting.Processor {
	return map[int32]remoting.Processor{
		codec.ReqNotifyBrokerRoleChanged: remoting.ProcessorFunc(b.handleNotifyBrokerRoleChanged),
		codec.ReqGetBrokerEpochCache:     remoting.ProcessorFunc(b.handleGetBrokerEpochCache),
		codec.ReqNotifyMinBrokerIdChange: remoting.ProcessorFunc(b.handleNotifyMinBrokerIDChange),
		codec.ReqExchangeBrokerHaInfo:    remoting.ProcessorFunc(b.handleExchangeBrokerHaInfo),
	}
}

// epochLister is the HA side's epoch file (GET_BROKER_EPOCH_CACHE).
type epochLister interface {
	Epochs() *ha.EpochCache
}

// epochEntryJSON is EpochEntry's JSON.
type epochEntryJSON struct {
	EndOffset   int64 `json:"endOffset"`
	Epoch       int32 `json:"epoch"`
	StartOffset int64 `json:"startOffset"`
}

// handleGetBrokerEpochCache is GET_BROKER_EPOCH_CACHE (mqadmin getBrokerEpoch): EpochEntryCache, this
// broker's epoch entries and commitlog end.
func (b *Broker) handleGetBrokerEpochCache(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	el, ok := (epochLister)(nil), false
	if b.ctl != nil {
		el, ok = b.ctl.ha.(epochLister)
	}
	if !ok {
		return codec.NewResponse(req, codec.RespSystemError, "this request only for controllerMode "), nil
	}
	cfg := b.conf()
	var maxOff int64
	if rs, ok := b.store.(roleStore); ok {
		maxOff = rs.MaxPhyOffset()
	}
	out := struct {
		BrokerID    int64            `json:"brokerId"`
		BrokerName  string           `json:"brokerName"`
		ClusterName string           `json:"clusterName"`
		EpochList   []epochEntryJSON `json:"epochList"`
		MaxOffset   int64            `json:"maxOffset"`
	}{BrokerID: cfg.BrokerID, BrokerName: cfg.BrokerName, ClusterName: cfg.BrokerClusterName, EpochList: []epochEntryJSON{}, MaxOffset: maxOff}
	for _, e := range el.Epochs().Entries() {
		out.EpochList = append(out.EpochList, epochEntryJSON{EndOffset: e.EndOffset, Epoch: e.Epoch, StartOffset: e.StartOffset})
	}
	body, err := codec.MarshalBody(out)
	if err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = body
	return resp, nil
}

// syncStateSetBody is SyncStateSet's JSON.
type syncStateSetBody struct {
	SyncStateSet      []int64 `json:"syncStateSet"`
	SyncStateSetEpoch int32   `json:"syncStateSetEpoch"`
}

// decodeSyncStateSet reads the syncStateSet fields of a controller body (SyncStateSet, or
// ElectMasterResponseBody whose brokerMemberGroup has fastjson's unquoted integer map keys).
func decodeSyncStateSet(body []byte) (syncStateSetBody, error) {
	var ss syncStateSetBody
	if len(body) == 0 {
		return ss, nil
	}
	strict, err := codec.StrictJSON(body)
	if err != nil {
		return ss, fmt.Errorf("sync state set body: %w", err)
	}
	if err := json.Unmarshal(strict, &ss); err != nil {
		return ss, fmt.Errorf("sync state set body: %w", err)
	}
	// A broker group has a handful of replicas; Java takes any number (a 16 MiB
	// answer held 2 M ids, each set built from it a map of them).
	if len(ss.SyncStateSet) > maxSyncStateSet {
		return syncStateSetBody{}, fmt.Errorf("sync state set body: %d members, at most %d", len(ss.SyncStateSet), maxSyncStateSet)
	}
	seen := make(map[int64]bool, len(ss.SyncStateSet))
	for _, id := range ss.SyncStateSet {
		if seen[id] {
			return syncStateSetBody{}, fmt.Errorf("sync state set body: broker id %d twice", id)
		}
		seen[id] = true
	}
	return ss, nil
}

// maxSyncStateSet bounds the members of a sync state set the controller answers.
const maxSyncStateSet = 1024

// handleNotifyBrokerRoleChanged is NOTIFY_BROKER_ROLE_CHANGED, the controller's push after an election.
// Java applies the header as it comes, so any client that reaches the broker port can demote a master
// with a high epoch; rmqd takes the push as a hint only and asks the controller leader (GET_REPLICA_INFO)
// for the role, at once.
func (b *Broker) handleNotifyBrokerRoleChanged(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	if b.ctl == nil {
		return codec.NewResponse(req, codec.RespSystemError, "the broker is not in controller mode"), nil
	}
	h := codec.NotifyBrokerRoleChangedRequestHeader{MasterBrokerID: -1}
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	b.log.Info("controller: role change notified; asking the controller", "masterId", h.MasterBrokerID,
		"master", h.MasterAddress, "epoch", h.MasterEpoch, "syncStateSetEpoch", h.SyncStateSetEpoch)
	select {
	case b.ctl.recheck <- struct{}{}:
	default: // one already pending
	}
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// run is the controller-mode life: find the leader, register, heartbeat, learn the role, then keep in
// step with the controller until ctx ends.
func (m *controllerMode) run(ctx context.Context) {
	cfg := m.b.conf().Controller
	hb := time.NewTicker(compat.Millis(int64(max(cfg.BrokerHeartbeatInterval, 100))))
	defer hb.Stop()
	var lastMeta, lastReplica, lastLeader time.Time
	for {
		now := time.Now()
		if !m.isRegistered() {
			if err := m.startUp(ctx); err != nil {
				m.b.log.Warn("controller: start-up", "err", err)
			}
		} else {
			m.heartbeat(ctx)
			if now.Sub(lastLeader) >= compat.Millis(int64(cfg.SyncControllerMetadataPeriod)) {
				lastLeader = now
				_ = m.findLeader(ctx)
			}
			if now.Sub(lastReplica) >= compat.Millis(int64(cfg.SyncBrokerMetadataPeriod)) {
				lastReplica = now
				m.syncReplicaInfo(ctx)
			}
			if now.Sub(lastMeta) >= time.Second {
				lastMeta = now
				m.awaitMasterHA(ctx)
			}
		}
		select {
		case <-ctx.Done():
			m.stopMasterServices()
			return
		case <-hb.C:
		case <-m.recheck:
			lastReplica = time.Time{}
		}
	}
}

// setRunCtx gives the controller mode the broker's services' context (Start, before run).
func (m *controllerMode) setRunCtx(ctx context.Context) {
	m.mu.Lock()
	m.runCtx = ctx
	m.mu.Unlock()
}

func (m *controllerMode) isRegistered() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.registered && m.running
}

// startUp is startBasicService: controller metadata, registration, the first heartbeat, then the role
// (elect when the group has no master yet).
func (m *controllerMode) startUp(ctx context.Context) error {
	if err := m.findLeader(ctx); err != nil {
		return err
	}
	m.mu.Lock()
	reg := m.registered
	m.mu.Unlock()
	if !reg {
		if err := m.register(ctx); err != nil {
			return err
		}
	}
	m.heartbeat(ctx)
	m.mu.Lock()
	haveMaster := m.masterID >= 0 && m.epoch > 0
	m.mu.Unlock()
	if !haveMaster {
		if err := m.elect(ctx); err != nil {
			return err
		}
	}
	m.mu.Lock()
	m.running = m.masterID >= 0
	m.mu.Unlock()
	return nil
}

// invoke sends req to the controller leader (ctx-bounded, 3 s as Java).
func (m *controllerMode) invoke(ctx context.Context, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	m.mu.Lock()
	addr := m.leader
	m.mu.Unlock()
	if addr == "" {
		return nil, errors.New("controller: no leader known")
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp, err := m.b.ns.InvokeSync(cctx, addr, req)
	if err != nil {
		return nil, fmt.Errorf("controller %s request %d: %w", addr, req.Code, err)
	}
	if resp.Code == respControllerNotLeader {
		m.mu.Lock()
		m.leader = ""
		m.mu.Unlock()
	}
	return resp, nil
}

// findLeader is updateControllerMetadata: ask each controller for the leader's address.
func (m *controllerMode) findLeader(ctx context.Context) error {
	var last error = errors.New("no controller address")
	for _, a := range m.b.controllerAddrs() {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		resp, err := m.b.ns.InvokeSync(cctx, a, codec.NewRequest(codec.ReqControllerGetMetadataInfo))
		cancel()
		if err != nil {
			last = err
			continue
		}
		if resp.Code != codec.RespSuccess {
			last = fmt.Errorf("controller %s metadata: code %d %s", a, resp.Code, resp.Remark)
			continue
		}
		if l, _ := resp.Ext.Get("controllerLeaderAddress"); l != "" {
			m.mu.Lock()
			if m.leader != l {
				m.b.log.Info("controller: leader", "addr", l)
			}
			m.leader = l
			m.mu.Unlock()
			return nil
		}
		last = fmt.Errorf("controller %s knows no leader", a)
	}
	return fmt.Errorf("controller: find leader: %w", last)
}

// identityPath is storePathBrokerIdentity (default <storePathRootDir>/brokerIdentity).
func (m *controllerMode) identityPath() string {
	return m.b.conf().Store.BrokerIdentityFile()
}

// readIdentity reads a BrokerMetadata ("cluster#name#id") or, with temp, TempBrokerMetadata
// ("cluster#name#id#checkCode") file; ok is false when absent or incomplete.
func readIdentity(path string, temp bool) (cluster, name string, id int64, code string, ok bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", "", 0, "", false
	}
	f := strings.Split(strings.TrimSpace(string(data)), "#")
	want := 3
	if temp {
		want = 4
	}
	if len(f) < want || f[0] == "" || f[1] == "" {
		return "", "", 0, "", false
	}
	id, err = strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return "", "", 0, "", false
	}
	if temp {
		code = f[3]
		if code == "" {
			return "", "", 0, "", false
		}
	}
	return f[0], f[1], id, code, true
}

// writeFileAtomic replaces path with data (Java's string2File: write a .tmp, rename).
func writeFileAtomic(path, data string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	return nil
}

// register is ReplicasManager.register: the broker id from the identity file, or a new one through
// GET_NEXT_BROKER_ID, a temp identity file and APPLY_BROKER_ID; then CONTROLLER_REGISTER_BROKER.
func (m *controllerMode) register(ctx context.Context) error {
	cfg := m.b.conf()
	path := m.identityPath()
	cluster, name, id, _, ok := readIdentity(path, false)
	if ok && (cluster != cfg.BrokerClusterName || name != cfg.BrokerName) {
		return fmt.Errorf("controller: %s names %s/%s, the config %s/%s", path, cluster, name,
			cfg.BrokerClusterName, cfg.BrokerName)
	}
	if !ok {
		tmpPath := path + "-temp"
		tc, tn, tid, code, tok := readIdentity(tmpPath, true)
		if tok && (tc != cfg.BrokerClusterName || tn != cfg.BrokerName) {
			return fmt.Errorf("controller: %s names %s/%s, the config %s/%s", tmpPath, tc, tn,
				cfg.BrokerClusterName, cfg.BrokerName)
		}
		if !tok {
			req := codec.NewRequest(codec.ReqControllerGetNextBrokerId)
			req.Ext.Set("clusterName", cfg.BrokerClusterName)
			req.Ext.Set("brokerName", cfg.BrokerName)
			resp, err := m.invoke(ctx, req)
			if err != nil {
				return err
			}
			if resp.Code != codec.RespSuccess {
				return fmt.Errorf("controller: next broker id: code %d %s", resp.Code, resp.Remark)
			}
			next, _, err := resp.Ext.GetInt64("nextBrokerId")
			if err != nil {
				return fmt.Errorf("controller: next broker id: %w", err)
			}
			tid = next
			code = cfg.BrokerAddr() + ";" + strconv.FormatInt(time.Now().UnixMilli(), 10)
			if err := writeFileAtomic(tmpPath, fmt.Sprintf("%s#%s#%d#%s", cfg.BrokerClusterName, cfg.BrokerName, tid, code)); err != nil {
				return fmt.Errorf("controller: %w", err)
			}
		}
		req := codec.NewRequest(codec.ReqControllerApplyBrokerId)
		req.Ext.Set("clusterName", cfg.BrokerClusterName)
		req.Ext.Set("brokerName", cfg.BrokerName)
		req.Ext.SetInt64("appliedBrokerId", tid)
		req.Ext.Set("registerCheckCode", code)
		resp, err := m.invoke(ctx, req)
		if err != nil {
			return err
		}
		if resp.Code != codec.RespSuccess {
			// The id went to another broker: start over with a new one.
			_ = os.Remove(tmpPath)
			return fmt.Errorf("controller: apply broker id %d: code %d %s", tid, resp.Code, resp.Remark)
		}
		if err := writeFileAtomic(path, fmt.Sprintf("%s#%s#%d", cfg.BrokerClusterName, cfg.BrokerName, tid)); err != nil {
			return fmt.Errorf("controller: %w", err)
		}
		_ = os.Remove(tmpPath)
		id = tid
	}
	m.mu.Lock()
	m.selfID = id
	m.mu.Unlock()
	m.ha.SetLocalBrokerID(id)
	return m.registerToController(ctx)
}

// registerToController is CONTROLLER_REGISTER_BROKER: the controller records this broker's address and
// answers the group's master, if any.
func (m *controllerMode) registerToController(ctx context.Context) error {
	cfg := m.b.conf()
	m.mu.Lock()
	id := m.selfID
	m.mu.Unlock()
	req := codec.NewRequest(codec.ReqControllerRegisterBroker)
	req.Ext.Set("clusterName", cfg.BrokerClusterName)
	req.Ext.Set("brokerName", cfg.BrokerName)
	req.Ext.SetInt64("brokerId", id)
	req.Ext.Set("brokerAddress", cfg.BrokerAddr())
	req.Ext.SetInt64("invokeTime", time.Now().UnixMilli())
	resp, err := m.invoke(ctx, req)
	if err != nil {
		return err
	}
	if resp.Code != codec.RespSuccess {
		return fmt.Errorf("controller: register broker %d: code %d %s", id, resp.Code, resp.Remark)
	}
	m.mu.Lock()
	m.registered = true
	m.mu.Unlock()
	m.b.log.Info("controller: registered", "brokerId", id)
	m.takeRoleFrom(resp, "masterBrokerId")
	return nil
}

// takeRoleFrom applies a response header naming the master (REGISTER_BROKER, ELECT_MASTER,
// GET_REPLICA_INFO) with its SyncStateSet-bearing body.
func (m *controllerMode) takeRoleFrom(resp *codec.RemotingCommand, idKey string) {
	mid, ok, err := resp.Ext.GetInt64(idKey)
	if !ok || err != nil || mid < 0 {
		return
	}
	addr, _ := resp.Ext.Get("masterAddress")
	epoch, _, _ := resp.Ext.GetInt32("masterEpoch")
	ssEpoch, _, _ := resp.Ext.GetInt32("syncStateSetEpoch")
	body, err := decodeSyncStateSet(resp.Body)
	if err != nil {
		m.b.log.Warn("controller: role answer", "err", err)
	}
	if ssEpoch == 0 {
		ssEpoch = body.SyncStateSetEpoch
	}
	m.changeRole(mid, addr, epoch, ssEpoch, body.SyncStateSet)
}

// elect is brokerElect: CONTROLLER_ELECT_MASTER triggered by this broker.
func (m *controllerMode) elect(ctx context.Context) error {
	cfg := m.b.conf()
	m.mu.Lock()
	id := m.selfID
	m.mu.Unlock()
	req := codec.NewRequest(codec.ReqControllerElectMaster)
	req.Ext.Set("clusterName", cfg.BrokerClusterName)
	req.Ext.Set("brokerName", cfg.BrokerName)
	req.Ext.SetInt64("brokerId", id)
	req.Ext.Set("designateElect", "false")
	req.Ext.SetInt64("invokeTime", time.Now().UnixMilli())
	resp, err := m.invoke(ctx, req)
	if err != nil {
		return err
	}
	if resp.Code != codec.RespSuccess && resp.Code != respControllerMasterStillExist {
		return fmt.Errorf("controller: elect: code %d %s", resp.Code, resp.Remark)
	}
	m.takeRoleFrom(resp, "masterBrokerId")
	return nil
}

// heartbeat is BROKER_HEARTBEAT to every controller (the leader keeps broker liveness; followers take
// over with it), one-way as Java.
func (m *controllerMode) heartbeat(ctx context.Context) {
	cfg := m.b.conf()
	m.mu.Lock()
	id := m.selfID
	m.mu.Unlock()
	var maxOff int64
	if rs, ok := m.b.store.(roleStore); ok {
		maxOff = rs.MaxPhyOffset()
	}
	for _, a := range m.b.controllerAddrs() {
		req := codec.NewRequest(codec.ReqBrokerHeartbeat)
		req.Ext.Set("clusterName", cfg.BrokerClusterName)
		req.Ext.Set("brokerAddr", cfg.BrokerAddr())
		req.Ext.Set("brokerName", cfg.BrokerName)
		req.Ext.SetInt64("brokerId", id)
		req.Ext.SetInt32("epoch", m.ha.LastEpoch())
		req.Ext.SetInt64("maxOffset", maxOff)
		req.Ext.SetInt64("confirmOffset", m.ha.ConfirmOffset())
		req.Ext.SetInt64("heartbeatTimeoutMills", cfg.Controller.ControllerHeartBeatTimeoutMills)
		req.Ext.SetInt32("electionPriority", cfg.Controller.BrokerElectionPriority)
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		if ow, ok := m.b.ns.(onewayInvoker); ok {
			_ = ow.InvokeOneway(cctx, a, req)
		} else {
			_, _ = m.b.ns.InvokeSync(cctx, a, req)
		}
		cancel()
	}
}

// syncReplicaInfo is schedulingSyncBrokerMetadata's task: GET_REPLICA_INFO, then a role change if the
// epoch moved, an election if the group has no master, or the master's new SyncStateSet.
func (m *controllerMode) syncReplicaInfo(ctx context.Context) {
	req := codec.NewRequest(codec.ReqControllerGetReplicaInfo)
	req.Ext.Set("brokerName", m.b.conf().BrokerName)
	resp, err := m.invoke(ctx, req)
	if err != nil {
		m.b.log.Warn("controller: replica info", "err", err)
		_ = m.findLeader(ctx)
		return
	}
	switch resp.Code {
	case codec.RespSuccess:
	case respControllerMetadataNotExist, respControllerBrokerNeedRegister:
		if err := m.registerToController(ctx); err != nil {
			m.b.log.Warn("controller: register again", "err", err)
		}
		return
	default:
		m.b.log.Warn("controller: replica info", "code", resp.Code, "remark", resp.Remark)
		if resp.Code == respControllerNotLeader {
			_ = m.findLeader(ctx)
		}
		return
	}
	mid, ok, _ := resp.Ext.GetInt64("masterBrokerId")
	addr, _ := resp.Ext.Get("masterAddress")
	epoch, _, _ := resp.Ext.GetInt32("masterEpoch")
	ss, err := decodeSyncStateSet(resp.Body)
	if err != nil {
		m.b.log.Warn("controller: replica info", "err", err)
		return
	}
	m.mu.Lock()
	cur, isMaster := m.epoch, m.isMaster
	m.mu.Unlock()
	switch {
	case epoch > cur && ok && mid >= 0 && addr != "":
		m.changeRole(mid, addr, epoch, ss.SyncStateSetEpoch, ss.SyncStateSet)
	case epoch > cur || !ok || mid < 0:
		if err := m.elect(ctx); err != nil {
			m.b.log.Warn("controller: elect", "err", err)
		}
	case epoch == cur && isMaster:
		m.changeSyncStateSet(ss.SyncStateSet, ss.SyncStateSetEpoch)
	}
}

// changeRole is changeBrokerRole: a newer epoch makes this broker master or a slave of masterAddr.
func (m *controllerMode) changeRole(masterID int64, masterAddr string, epoch, ssEpoch int32, ss []int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if epoch <= m.epoch || masterID < 0 {
		return
	}
	m.epoch = epoch
	if masterID == m.selfID && m.selfID > 0 {
		m.becomeMasterLocked(ssEpoch, ss)
	} else {
		m.becomeSlaveLocked(masterID, masterAddr)
	}
	m.running = true
}

func (m *controllerMode) becomeMasterLocked(ssEpoch int32, ss []int64) {
	b := m.b
	if ssEpoch > m.ssEpoch {
		m.ssEpoch, m.ss = ssEpoch, slices.Clone(ss)
	}
	if err := m.ha.ChangeToMaster(m.epoch, m.ssEpoch, m.ss); err != nil {
		b.log.Error("controller: HA change to master", "epoch", m.epoch, "err", err)
	}
	wasMaster := m.isMaster
	if !wasMaster {
		// Replicated records numbered the queues; new puts continue after them.
		if rs, ok := b.store.(roleStore); ok {
			rs.RecoverTopicQueueTable()
		}
	}
	m.isMaster, m.masterID, m.masterAddr, m.slaveEpoch = true, m.selfID, b.conf().BrokerAddr(), 0
	b.setRole(RoleSyncMaster, 0)
	b.masters.master.Store(nil)
	b.masters.ha.Store(nil)
	if !wasMaster {
		m.startMasterServicesLocked()
	}
	b.log.Info("controller: now master", "brokerId", m.selfID, "epoch", m.epoch, "syncStateSet", m.ss)
	m.registerAsync()
}

func (m *controllerMode) becomeSlaveLocked(masterID int64, masterAddr string) {
	b := m.b
	m.isMaster, m.masterID, m.masterAddr = false, masterID, masterAddr
	m.stopMasterServicesLocked()
	b.setRole(RoleSlave, m.selfID)
	a := strings.Clone(masterAddr)
	b.masters.master.Store(&a)
	// The master's HA address comes with the next name-server registration (masterHAAddr); the HA
	// side stops serving as master now.
	b.masters.ha.Store(nil)
	m.slaveEpoch = m.epoch
	if err := m.ha.ChangeToSlave("", m.epoch, m.selfID); err != nil {
		b.log.Error("controller: HA change to slave", "epoch", m.epoch, "err", err)
	}
	b.log.Info("controller: now slave", "brokerId", m.selfID, "master", masterAddr, "masterId", masterID, "epoch", m.epoch)
	m.registerAsync()
	ctx := m.runCtx // under m.mu
	if ctx == nil {
		ctx = context.Background()
	}
	go func() {
		defer func() { b.recovered("controller slave sync", recover()) }()
		if err := b.SyncFromMaster(ctx, masterAddr); err != nil {
			b.log.Warn("controller: slave sync", "master", masterAddr, "err", err)
		}
	}()
}

// masterHAAddr receives the master's HA address from a name-server registration answer.
func (m *controllerMode) masterHAAddr(addr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.isMaster || m.slaveEpoch == 0 {
		return
	}
	if ma := m.b.MasterAddr(); ma != m.masterAddr {
		// The name server still lists another master (the one the controller replaced): ask again.
		m.b.log.Info("controller: name server's master is not the controller's", "nameServer", ma, "controller", m.masterAddr)
		m.b.masters.ha.Store(nil)
		return
	}
	m.ha.SetMasterHAAddr(addr)
	m.b.log.Info("controller: replicating", "masterHA", addr, "epoch", m.slaveEpoch)
	m.slaveEpoch = 0
}

// awaitMasterHA registers again while a slave still waits for its master's HA address: the new master
// may have registered with the name servers after this slave did.
func (m *controllerMode) awaitMasterHA(ctx context.Context) {
	m.mu.Lock()
	waiting := m.slaveEpoch != 0
	m.mu.Unlock()
	if waiting {
		_ = m.b.RegisterAll(ctx)
	}
}

func (m *controllerMode) changeSyncStateSet(ss []int64, ssEpoch int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ssEpoch < m.ssEpoch || (ssEpoch == m.ssEpoch && slices.Equal(sorted(ss), sorted(m.ss))) {
		return
	}
	m.ssEpoch, m.ss = ssEpoch, slices.Clone(ss)
	m.ha.SetSyncStateSet(m.ss, ssEpoch)
	m.b.log.Info("controller: sync state set", "set", m.ss, "epoch", ssEpoch)
}

// alterSyncStateSet is the HA side's call when the master wants the sync state set changed; a refused
// change leaves the set the controller holds.
func (m *controllerMode) alterSyncStateSet(set []int64) {
	m.mu.Lock()
	ctx := m.runCtx
	m.mu.Unlock()
	if ctx == nil {
		ctx = context.Background()
	}
	if err := m.alter(ctx, set); err != nil {
		m.b.log.Warn("controller: alter sync state set", "want", set, "err", err)
		// The HA side must hold the controller's set, never a smaller one it assumed (a smaller set
		// acknowledges sends a newly elected master may lack): ask the controller what it holds.
		m.syncReplicaInfo(ctx)
		m.mu.Lock()
		cur, epoch := slices.Clone(m.ss), m.ssEpoch
		m.mu.Unlock()
		m.ha.SetSyncStateSet(cur, epoch)
	}
}

// alter is doReportSyncStateSetChanged: CONTROLLER_ALTER_SYNC_STATE_SET, then the controller's answer
// is applied.
func (m *controllerMode) alter(ctx context.Context, set []int64) error {
	b := m.b
	m.mu.Lock()
	if !m.isMaster {
		m.mu.Unlock()
		return errors.New("alter sync state set: not the master")
	}
	id, epoch, ssEpoch := m.selfID, m.epoch, m.ssEpoch
	m.mu.Unlock()
	if !slices.Contains(set, id) {
		set = append(slices.Clone(set), id)
	}
	body, err := json.Marshal(syncStateSetBody{SyncStateSet: set, SyncStateSetEpoch: ssEpoch})
	if err != nil {
		return fmt.Errorf("alter sync state set: %w", err)
	}
	req := codec.NewRequest(codec.ReqControllerAlterSyncStateSet)
	req.Ext.Set("brokerName", b.conf().BrokerName)
	req.Ext.SetInt64("masterBrokerId", id)
	req.Ext.SetInt32("masterEpoch", epoch)
	req.Ext.SetInt64("invokeTime", time.Now().UnixMilli())
	req.Body = body
	resp, err := m.invoke(ctx, req)
	if err != nil {
		return fmt.Errorf("alter sync state set: %w", err)
	}
	if resp.Code != codec.RespSuccess {
		return fmt.Errorf("alter sync state set: code %d %s", resp.Code, resp.Remark)
	}
	got, err := decodeSyncStateSet(resp.Body)
	if err != nil {
		return fmt.Errorf("alter sync state set: answer: %w", err)
	}
	m.changeSyncStateSet(got.SyncStateSet, got.SyncStateSetEpoch)
	return nil
}

// registerAsync re-registers with the name servers under the new broker id (registerBrokerWhenRoleChange).
func (m *controllerMode) registerAsync() {
	b := m.b
	go func() {
		defer func() { b.recovered("controller register", recover()) }()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.RegisterAll(ctx); err != nil {
			b.log.Warn("controller: register with name servers after role change", "err", err)
		}
	}()
}

// startMasterServicesLocked starts what only a master runs (changeSpecialServiceStatus(true)).
func (m *controllerMode) startMasterServicesLocked() {
	if m.stopMasterS != nil || m.runCtx == nil {
		return
	}
	b := m.b
	ctx, cancel := context.WithCancel(m.runCtx)
	m.stopMasterS = cancel
	b.runMasterServices(ctx)
}

func (m *controllerMode) stopMasterServicesLocked() {
	if m.stopMasterS != nil {
		m.stopMasterS()
		m.stopMasterS = nil
	}
}

func (m *controllerMode) stopMasterServices() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stopMasterServicesLocked()
}

// ControllerReplicaWaiter adapts the HA side's wait for a SYNC put (AutoSwitch.WaitAckedAsync) to the
// store's SYNC_MASTER wait: acked is PUT_OK, ha.ErrAckTimeout FLUSH_SLAVE_TIMEOUT, too few in-sync replicas
// (or no longer master) SLAVE_NOT_AVAILABLE, so the client never takes such a send for SEND_OK.
func ControllerReplicaWaiter(wait func(offset int64, timeout time.Duration, done func(error))) store.ReplicaWaiter {
	return func(next int64, timeout time.Duration, done func(store.PutStatus)) {
		wait(next, timeout, func(err error) {
			switch {
			case err == nil:
				done(store.PutOK)
			case errors.Is(err, ha.ErrAckTimeout):
				done(store.PutFlushSlaveTimeout)
			default:
				done(store.PutSlaveNotAvailable)
			}
		})
	}
}

func sorted(s []int64) []int64 { return slices.Sorted(slices.Values(s)) }
