package processor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync/atomic"
	"time"

	"rmqd/codec"
	"rmqd/processor/delivery"
	"rmqd/remoting"
	"rmqd/store"
)

// Broker roles (brokerRole).
const (
	RoleAsyncMaster = "ASYNC_MASTER"
	RoleSyncMaster  = "SYNC_MASTER"
	RoleSlave       = "SLAVE"
)

// IsSlave reports brokerRole=SLAVE.
func (c *BrokerConfig) IsSlave() bool { return c.Store.BrokerRole == RoleSlave }

// slaveRejectRemark is what Java's remoting layer answers (SYSTEM_BUSY) when a
// processor's rejectRequest() is true, as SendMessageProcessor's is on a slave.
const slaveRejectRemark = "[REJECTREQUEST]system busy, start flow control for a while"

// rejectOnSlave answers a write a slave must refuse, or nil on a master.
func (b *Broker) rejectOnSlave(req *codec.RemotingCommand) *codec.RemotingCommand {
	if !b.conf().IsSlave() {
		return nil
	}
	return codec.NewResponse(req, codec.RespSystemBusy, slaveRejectRemark)
}

// masterAddrs are what the last REGISTER_BROKER answer said of this slave's
// master: its HA address and its remoting address.
type masterAddrs struct {
	ha, master atomic.Pointer[string]
	// onHA is told a new master HA address (the HA client dials it).
	onHA atomic.Pointer[func(string)]
	// status builds GET_BROKER_HA_STATUS's body.
	status atomic.Pointer[func() ([]byte, error)]
	// learned wakes the slave's sync loop when a registration names a new
	// master (capacity 1, coalesced).
	learned chan struct{}
}

// OnMasterHAAddr makes f receive the master HA address each time a name server
// reports a new one (Java: updateHaMasterAddress when haMasterAddress is unset).
func (b *Broker) OnMasterHAAddr(f func(addr string)) { b.masters.onHA.Store(&f) }

// MasterAddr is the master's remoting address as the name server reported it.
func (b *Broker) MasterAddr() string {
	if p := b.masters.master.Load(); p != nil {
		return *p
	}
	return ""
}

// followMaster makes addr (and ha, when given) this slave's master now: the
// metadata copy wakes, the HA client dials ha.
func (b *Broker) followMaster(addr, ha string) {
	if addr != "" {
		m := strings.Clone(addr)
		b.masters.master.Store(&m)
		select {
		case b.masters.learned <- struct{}{}:
		default:
		}
	}
	if ha != "" {
		h := strings.Clone(ha)
		b.masters.ha.Store(&h)
		if f := b.masters.onHA.Load(); f != nil {
			(*f)(h)
		}
	}
}

// registered takes a REGISTER_BROKER answer: the name server's order topics
// (its body), and a slave learns its master there.
func (b *Broker) registered(resp *codec.RemotingCommand) {
	if resp == nil {
		return
	}
	b.markOrderTopics(resp.Body)
	if !b.conf().IsSlave() {
		return
	}
	var h codec.RegisterBrokerResponseHeader
	h.Decode(resp.Ext)
	if h.MasterAddr != "" {
		a := strings.Clone(h.MasterAddr)
		if old := b.masters.master.Swap(&a); old == nil || *old != a {
			b.log.Info("master address", "addr", a)
			select {
			case b.masters.learned <- struct{}{}:
			default:
			}
		}
	}
	if h.HaServerAddr != "" {
		a := strings.Clone(h.HaServerAddr)
		if old := b.masters.ha.Swap(&a); old == nil || *old != a {
			if f := b.masters.onHA.Load(); f != nil {
				(*f)(a)
			}
		}
	}
}

// slaveSyncLoop is SlaveSynchronize on Java's schedule: every 3 s it looks,
// and copies the master's metadata at most once a minute. A registration that
// names a new master (the first at start) copies at once: a slave restarted
// after a while would otherwise serve what it held when it stopped (Java's
// first copy comes a minute after start).
func (b *Broker) slaveSyncLoop(ctx context.Context) {
	t := time.NewTicker(b.slaveSyncTick)
	defer t.Stop()
	var last time.Time
	var timerOnly bool
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.masters.learned:
			timerOnly = false
		case <-t.C:
			timerOnly = time.Since(last) < time.Minute
		}
		if !b.conf().IsSlave() {
			continue // controller mode made it master meanwhile
		}
		if b.isSpecialServiceRunning() {
			// Acting for its master: its offsets are the newer ones, which the
			// returning master takes back in pre-online. Copying the master's
			// first (its EXCHANGE_BROKER_HA_INFO wakes this loop) put them back,
			// and the master delivered again what this broker had delivered.
			continue
		}
		addr := b.MasterAddr()
		if addr == "" || addr == b.conf().BrokerAddr() {
			continue
		}
		if timerOnly {
			// Every tick, as Java: what a promotion delivers again is what the
			// master delivered since the last copy.
			if err := b.syncTimerProgress(ctx, addr); err != nil {
				b.log.Debug("slave timer sync", "master", addr, "err", err)
			}
			continue
		}
		// As Java: a failed round waits for the next minute too.
		last = time.Now()
		if err := b.SyncFromMaster(ctx, addr); err != nil {
			b.log.Warn("slave sync", "master", addr, "err", err)
		}
	}
}

// errNotSupported is a master's REQUEST_CODE_NOT_SUPPORTED answer.
var errNotSupported = errors.New("request code not supported")

// SyncFromMaster copies topic configs, consumer offsets, delay offsets,
// subscription groups, message request modes and the timer progress from the
// master at addr (SlaveSynchronize.syncAll and syncTimerCheckPoint).
func (b *Broker) SyncFromMaster(ctx context.Context, addr string) error {
	if b.ns == nil {
		return fmt.Errorf("slave sync: no remoting client")
	}
	get := func(code int32) ([]byte, error) {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		resp, err := b.ns.InvokeSync(cctx, addr, codec.NewRequest(code))
		if err != nil {
			return nil, fmt.Errorf("request %d to %s: %w", code, addr, err)
		}
		if resp.Code == codec.RespRequestCodeNotSupported {
			return nil, fmt.Errorf("request %d to %s: %w", code, addr, errNotSupported)
		}
		if resp.Code != codec.RespSuccess {
			return nil, fmt.Errorf("request %d to %s: code %d %s", code, addr, resp.Code, resp.Remark)
		}
		return codec.StrictJSON(resp.Body)
	}
	var errs []error
	if body, err := get(codec.ReqGetAllTopicConfig); err != nil {
		errs = append(errs, err)
	} else {
		if err := b.topics.ReplaceFromMaster(body); err != nil {
			errs = append(errs, err)
		}
		if err := b.mappings.ReplaceFromMaster(body); err != nil {
			errs = append(errs, err)
		}
	}
	if body, err := get(codec.ReqGetAllConsumerOffset); err != nil {
		errs = append(errs, err)
	} else if err := b.offsets.PutAllFromMaster(body); err != nil {
		errs = append(errs, err)
	}
	if body, err := get(codec.ReqGetAllDelayOffset); err != nil {
		errs = append(errs, err)
	} else if err := b.schedule.ReplaceFromMaster(body); err != nil {
		errs = append(errs, err)
	}
	if body, err := get(codec.ReqGetAllSubscriptiongroupConfig); err != nil {
		errs = append(errs, err)
	} else if err := b.groups.ReplaceFromMaster(body); err != nil {
		errs = append(errs, err)
	}
	// A 4.x master has no request modes (REQUEST_CODE_NOT_SUPPORTED): nothing to copy.
	if body, err := get(codec.ReqGetAllMessageRequestMode); err != nil {
		if !errors.Is(err, errNotSupported) {
			errs = append(errs, err)
		}
	} else if err := b.requestModes.replaceFromMaster(body); err != nil {
		errs = append(errs, err)
	}
	if err := b.syncTimerProgress(ctx, addr); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("slave sync: %w", errs[0])
	}
	return nil
}

// handleGetTimerCheckPoint is GET_TIMER_CHECK_POINT, which a Java slave polls
// every 3 s: TimerCheckpoint.encode's 56 bytes (lastReadTimeMs,
// lastTimerLogFlushPos, lastTimerQueueOffset, masterTimerQueueOffset, then the
// data version's stateVersion, timestamp, counter). rmqd keeps no timerlog, so
// the flush position is 0; the read time is the wheel's cursor and both queue
// offsets are where it reads rmq_sys_wheel_timer.
func (b *Broker) handleGetTimerCheckPoint(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	readMs, queueOff := b.timer.Checkpoint()
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = delivery.JavaCheckpointBody(readMs, queueOff, time.Now().UnixMilli())
	// The body has no room for rmqd's progress and Java reads it by position:
	// header fields carry it, which Java ignores (docs/replication.md).
	if s, ok := b.timer.ProgressNow(); ok {
		resp.Ext.SetInt64(extTimerQueueOffset, s.QueueOffset)
		resp.Ext.SetInt64(extTimerReadOffset, s.ReadOffset)
		resp.Ext.SetInt64(extTimerDeliveredBefore, s.DeliveredBeforeMs)
	}
	return resp, nil
}

// GET_TIMER_CHECK_POINT answer fields of an rmqd master: its timer progress
// (delivery.ProgressState), which its slaves save as their own.
const (
	extTimerQueueOffset     = "rmqdTimerQueueOffset"
	extTimerReadOffset      = "rmqdTimerReadOffset"
	extTimerDeliveredBefore = "rmqdTimerDeliveredBeforeMs"
)

// syncTimerProgress is SlaveSynchronize.syncTimerCheckPoint: it saves the
// master's timer progress as this slave's, so a promotion does not deliver
// again what the master delivered. An rmqd master's is exact; a Java
// master's checkpoint makes the weaker claim of its timercheck.
func (b *Broker) syncTimerProgress(ctx context.Context, addr string) error {
	if !b.conf().TimerWheelEnable || b.ns == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp, err := b.ns.InvokeSync(cctx, addr, codec.NewRequest(codec.ReqGetTimerCheckPoint))
	if err != nil {
		return fmt.Errorf("timer checkpoint from %s: %w", addr, err)
	}
	s, ok, err := timerProgressOf(resp)
	if err != nil {
		return fmt.Errorf("timer checkpoint from %s: %w", addr, err)
	}
	if !ok {
		return nil
	}
	if _, err := b.timer.AdoptProgress(s); err != nil {
		return fmt.Errorf("timer checkpoint from %s: %w", addr, err)
	}
	return nil
}

// timerProgressOf reads a GET_TIMER_CHECK_POINT answer: an rmqd broker's
// progress from its header fields, else what a Java broker's body claims.
// False when it claims nothing: a refusal ("The checkpoint is null"), or the
// checkpoint of a wheel that never ran.
func timerProgressOf(resp *codec.RemotingCommand) (delivery.ProgressState, bool, error) {
	var s delivery.ProgressState
	if resp.Code != codec.RespSuccess {
		return s, false, nil
	}
	var ok [3]bool
	var errs [3]error
	s.QueueOffset, ok[0], errs[0] = resp.Ext.GetInt64(extTimerQueueOffset)
	s.ReadOffset, ok[1], errs[1] = resp.Ext.GetInt64(extTimerReadOffset)
	s.DeliveredBeforeMs, ok[2], errs[2] = resp.Ext.GetInt64(extTimerDeliveredBefore)
	if err := errors.Join(errs[:]...); err != nil {
		return s, false, err
	}
	if ok[0] && ok[1] && ok[2] {
		return s, true, nil
	}
	s, found := delivery.JavaCheckpointProgress(resp.Body)
	return s, found, nil
}

// handleGetTimerMetrics is GET_TIMER_METRICS: TimerMetricsSerializeWrapper with
// no per-topic counts (rmqd keeps none).
func (b *Broker) handleGetTimerMetrics(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = []byte(`{"dataVersion":{"counter":0,"stateVersion":0,"timestamp":0},"timingCount":{}}`)
	return resp, nil
}

// SetHAStatus gives GET_BROKER_HA_STATUS its body: f returns HARuntimeInfo's
// JSON (store/ha builds it; the broker does not know the HA service).
func (b *Broker) SetHAStatus(f func() ([]byte, error)) { b.masters.status.Store(&f) }

// handleGetBrokerHaStatus is GET_BROKER_HA_STATUS (mqadmin haStatus).
func (b *Broker) handleGetBrokerHaStatus(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	f := b.masters.status.Load()
	if f == nil {
		return codec.NewResponse(req, codec.RespSystemError, "Can not get HARuntimeInfo, may be duplicationEnable is true"), nil
	}
	body, err := (*f)()
	if err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = body
	return resp, nil
}

// suggestBrokerID is the pull answer's suggestWhichBrokerId
// (PullMessageProcessor.composeResponseHeader): with slaveReadEnable, a
// consumer whose read scanned messages further behind the commitlog's end
// than memory holds (res.SuggestPullingFromSlave) is sent to its group's
// whichBrokerWhenConsumeSlowly, any other to the group's brokerId; without
// it, always to the master.
func (b *Broker) suggestBrokerID(group string, res *store.GetResult) int64 {
	if !b.conf().SlaveReadEnable {
		return 0
	}
	sgc, ok := b.groups.Get(group)
	if !ok {
		sgc = NewSubscriptionGroupConfig(group)
	}
	if res.SuggestPullingFromSlave {
		return sgc.WhichBrokerWhenConsumeSlowly
	}
	return sgc.BrokerID
}

// markOrderTopics takes a REGISTER_BROKER answer's body, the name server's
// ORDER_TOPIC_CONFIG namespace (returnOrderTopicConfigToBroker), and marks the
// topics it names order, as BrokerController.handleRegisterBrokerResult does
// with the KVTable it decodes. A body that does not decode is logged and
// changes nothing.
func (b *Broker) markOrderTopics(body []byte) {
	if len(body) == 0 {
		return
	}
	var kv kvTable
	if err := codec.UnmarshalBody(body, &kv); err != nil {
		b.log.Warn("register broker: order topics from the name server", "err", err)
		return
	}
	b.topics.MarkOrderTopics(maps.Keys(kv.Table))
}
