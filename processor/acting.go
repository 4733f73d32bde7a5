package processor

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/remoting"
)

// Slave acting master (enableSlaveActingMaster, Java 5.x's BrokerController):
// every broker of the group learns the group's alive members from the name
// servers (GET_BROKER_MEMBER_GROUP every syncBrokerMemberGroupPeriod, and
// NOTIFY_MIN_BROKER_ID_CHANGE when a name server sends it); the one whose
// brokerId is the lowest runs the master-only services: delayed, timed and
// transactional deliveries and POP revive. With its master alive that is the
// master; while it is gone, the prime slave, whose puts go through the escape
// bridge (escape.go). The name server shows that slave as a read-only master
// in routes (supportActingMaster), so the requests clients send only to
// brokerId 0 reach it. The broker also sends the name servers a lite
// heartbeat every brokerHeartbeatInterval and registers with
// enableActingMaster and heartbeatTimeoutMillis=brokerNotActiveTimeoutMillis.

// actingState is minBrokerIdInGroup and the special services' status.
type actingState struct {
	mu      sync.Mutex // one change at a time (Java's lock)
	minID   int64      // the group's lowest alive brokerId; 0 until learned, as Java starts
	minAddr string
	runCtx  context.Context    // the broker's services' context, set by Start
	stop    context.CancelFunc // non-nil while the special services run
	done    *sync.WaitGroup    // the running services' goroutines
	// isolated: a broker in pre-online neither registers nor heartbeats, and
	// leaves the group's lowest id to pre-online (preonline.go).
	isolated atomic.Bool
	// initMaxOffset is the commitlog's end when the broker started (Java's
	// brokerInitMaxOffset), which EXCHANGE_BROKER_HA_INFO reports.
	initMaxOffset atomic.Int64
	// escapePick spreads escaped messages over the queues a route offers.
	escapePick atomic.Uint64
	// reviveRemote: the revive topic's route has a master of another group
	// to take this acting slave's POP records (refreshReviveRemote).
	reviveRemote atomic.Bool
	// transfer is the HA service pre-online waits on (SetHATransfer); nil:
	// no wait. haWait bounds one wait (0: haHandshakeTimeout).
	transfer atomic.Pointer[HATransfer]
	haWait   atomic.Int64 // ns
}

// actingEnabled reports enableSlaveActingMaster outside controller mode
// (where the controller decides roles, and Java keeps the two apart).
func (b *Broker) actingEnabled() bool {
	return b.conf().EnableSlaveActingMaster && b.ctl == nil
}

// startActing is Start's part in acting mode: the special services as the
// broker's id says (changeSpecialServiceStatus(brokerId == MASTER_ID)), then
// the group sync and the lite heartbeat.
func (b *Broker) startActing(runCtx context.Context) {
	b.acting.mu.Lock()
	b.acting.runCtx = runCtx
	b.acting.minID, b.acting.minAddr = 0, ""
	b.acting.mu.Unlock()
	if b.needsPreOnline() {
		b.acting.isolated.Store(true)
		b.goLoop(func() { b.preOnlineLoop(runCtx) })
	} else {
		b.acting.isolated.Store(false)
		b.changeSpecialServiceStatus(b.conf().BrokerID == codec.MasterID)
	}
	b.goLoop(func() {
		periodic(runCtx, time.Second, func() time.Duration {
			return compat.Millis(max(b.conf().SyncBrokerMemberGroupPeriod, 100))
		}, b.syncBrokerMemberGroup)
	})
	b.goLoop(func() {
		periodic(runCtx, time.Second, func() time.Duration {
			return compat.Millis(max(b.conf().Controller.BrokerHeartbeatInterval, 100))
		}, b.sendLiteHeartbeat)
	})
	// Stopping the broker stops them; the goroutines are waited for by Shutdown.
	b.goLoop(func() {
		<-runCtx.Done()
		b.changeSpecialServiceStatus(false)
	})
}

// periodic calls f after first, then every period() until ctx ends.
func periodic(ctx context.Context, first time.Duration, period func() time.Duration, f func(context.Context)) {
	periodicOrWoken(ctx, first, period, nil, f)
}

// periodicOrWoken is periodic that also calls f, and starts the period again,
// whenever wake fires.
func periodicOrWoken(ctx context.Context, first time.Duration, period func() time.Duration, wake <-chan struct{}, f func(context.Context)) {
	t := time.NewTimer(first)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-wake:
		}
		f(ctx)
		t.Reset(period()) // Go 1.23 timers: nothing stale is left to drain
	}
}

// changeSpecialServiceStatus starts or stops the master-only services. A stop
// waits for them to end, so a later start never runs two of one service.
func (b *Broker) changeSpecialServiceStatus(start bool) {
	b.acting.mu.Lock()
	defer b.acting.mu.Unlock()
	b.changeSpecialLocked(start)
}

func (b *Broker) changeSpecialLocked(start bool) {
	a := &b.acting
	switch {
	case start && a.stop == nil:
		if a.runCtx == nil || a.runCtx.Err() != nil {
			return
		}
		ctx, cancel := context.WithCancel(a.runCtx)
		a.stop, a.done = cancel, new(sync.WaitGroup)
		b.runMasterServicesTracked(ctx, a.done)
		b.log.Info("acting: master-only services started", "brokerId", b.conf().BrokerID)
	case !start && a.stop != nil:
		a.stop()
		a.done.Wait()
		a.stop, a.done = nil, nil
		b.log.Info("acting: master-only services stopped", "brokerId", b.conf().BrokerID)
	}
}

// isSpecialServiceRunning is BrokerController.isSpecialServiceRunning.
func (b *Broker) isSpecialServiceRunning() bool {
	b.acting.mu.Lock()
	defer b.acting.mu.Unlock()
	return b.acting.stop != nil
}

// minBrokerIDInGroup is getMinBrokerIdInGroup.
func (b *Broker) minBrokerIDInGroup() int64 {
	b.acting.mu.Lock()
	defer b.acting.mu.Unlock()
	return b.acting.minID
}

// syncBrokerMemberGroup asks the name servers for the group's alive brokers
// and takes the lowest id as the group's acting master.
func (b *Broker) syncBrokerMemberGroup(ctx context.Context) {
	addrs, err := b.brokerMemberGroup(ctx)
	if err != nil {
		b.log.Warn("acting: broker member group", "err", err)
		return
	}
	if len(addrs) == 0 {
		b.log.Warn("acting: no broker of the group is registered", "cluster", b.conf().BrokerClusterName,
			"brokerName", b.conf().BrokerName)
		return
	}
	minID := int64(-1)
	for id := range addrs {
		if minID < 0 || id < minID {
			minID = id
		}
	}
	b.updateMinBroker(minID, addrs[minID], "", "", false)
	b.refreshReviveRemote(ctx)
}

// refreshReviveRemote learns, while this slave acts for its master with
// enableRemoteEscape, whether another group's master can take its POP
// records (escape.go); the timer keeps the revive records it cannot send
// pending for the master (delivery_wiring.go) without asking the name
// servers at each one.
func (b *Broker) refreshReviveRemote(ctx context.Context) {
	cfg := b.conf()
	if !cfg.IsSlave() || !cfg.EnableRemoteEscape || !b.isSpecialServiceRunning() {
		b.acting.reviveRemote.Store(false)
		return
	}
	route, err := b.topicRoute(ctx, compat.SysTopicRevivePrefix+cfg.BrokerClusterName)
	if err != nil {
		b.log.Debug("acting: revive topic route", "err", err)
		b.acting.reviveRemote.Store(false)
		return
	}
	b.acting.reviveRemote.Store(len(b.remoteTargets(route)) > 0)
}

// updateMinBroker is BrokerController.updateMinBroker: a slave whose group's
// lowest id changed starts or stops the special services and follows its
// master leaving or coming back. A periodic sync that meets a change in
// progress leaves it to the next round (Java's tryLock); a name server's
// notice waits (wait).
func (b *Broker) updateMinBroker(minID int64, minAddr, offlineAddr, masterHA string, wait bool) {
	cfg := b.conf()
	if !b.actingEnabled() || cfg.BrokerID == codec.MasterID || b.acting.isolated.Load() {
		return
	}
	a := &b.acting
	if wait {
		a.mu.Lock()
	} else if !a.mu.TryLock() {
		return
	}
	defer a.mu.Unlock()
	if minID == a.minID {
		// Java learns the address only with a change, so a master alive at
		// the slave's start is never seen leave (onMasterOffline): keep it.
		if a.minAddr == "" {
			a.minAddr = minAddr
		}
		return
	}
	if !wait && minID > a.minID {
		offlineAddr = a.minAddr
	}
	b.log.Info("acting: lowest broker id of the group changed", "old", a.minID, "oldAddr", a.minAddr,
		"new", minID, "newAddr", minAddr)
	a.minID, a.minAddr = minID, minAddr
	b.changeSpecialLocked(cfg.BrokerID == minID)
	if offlineAddr != "" && offlineAddr == b.MasterAddr() {
		// onMasterOffline: stop copying from a master that is gone.
		b.masters.master.Store(nil)
	}
	if minID == codec.MasterID && minAddr != "" {
		// onMasterOnline: copy from it at once; the HA client follows the
		// address the notice or the next registration gives.
		b.followMaster(minAddr, masterHA)
	}
}

// handleNotifyMinBrokerIDChange is NOTIFY_MIN_BROKER_ID_CHANGE, which a 5.x
// name server sends the group's brokers when its lowest id changes.
func (b *Broker) handleNotifyMinBrokerIDChange(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	id, ok, err := req.Ext.GetInt64("minBrokerId")
	if err != nil || !ok {
		return codec.NewResponse(req, codec.RespSystemError, "minBrokerId missing or malformed"), nil
	}
	minAddr, _ := req.Ext.Get("minBrokerAddr")
	offline, _ := req.Ext.Get("offlineBrokerAddr")
	ha, _ := req.Ext.Get("haBrokerAddr")
	b.log.Warn("acting: min broker id changed", "prev", b.minBrokerIDInGroup(), "new", id)
	b.updateMinBroker(id, strings.Clone(minAddr), strings.Clone(offline), strings.Clone(ha), true)
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// handleExchangeBrokerHaInfo is EXCHANGE_BROKER_HA_INFO (906): a master in
// pre-online tells a slave its HA and remoting addresses (the slave's HA client
// follows them at once, before the master registers); asked without them, a
// master answers its own, as Java's updateBrokerHaInfo does. The master flush
// offset Java also exchanges is not used by rmqd.
func (b *Broker) handleExchangeBrokerHaInfo(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	cfg := b.conf()
	if ha, _ := req.Ext.Get("masterHaAddress"); ha != "" {
		if !cfg.IsSlave() {
			return resp, nil
		}
		m, _ := req.Ext.Get("masterAddress")
		b.followMaster(m, ha)
		return resp, nil
	}
	if cfg.BrokerID == codec.MasterID {
		resp.Ext.Set("masterHaAddress", b.haServerAddr())
		resp.Ext.SetInt64("masterFlushOffset", b.acting.initMaxOffset.Load())
		resp.Ext.Set("masterAddress", cfg.BrokerAddr())
	}
	return resp, nil
}

// masterFlushStore keeps a slave's masterFlushedOffset (*store.DefaultStore,
// in its checkpoint).
type masterFlushStore interface {
	SetMasterFlushedOffset(offset int64)
}

// handleResetMasterFlushOffset is RESET_MASTER_FLUSH_OFFSET (908, mqadmin
// resetMasterFlushOffset): a slave keeps the offset in its checkpoint, where a
// Java broker reads it at start; a master ignores it. Either answers SUCCESS,
// as Java does. rmqd's own pre-online does not use the value.
func (b *Broker) handleResetMasterFlushOffset(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	if b.conf().BrokerID == codec.MasterID {
		return codec.NewResponse(req, codec.RespSuccess, ""), nil
	}
	var h codec.ResetMasterFlushOffsetRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	if ms, ok := b.store.(masterFlushStore); ok {
		ms.SetMasterFlushedOffset(h.MasterFlushOffset)
		b.log.Info("master flush offset reset", "offset", h.MasterFlushOffset, "by", c.RemoteAddr())
	}
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// sendBrokerHaInfo is the master's EXCHANGE_BROKER_HA_INFO to a slave.
func (b *Broker) sendBrokerHaInfo(ctx context.Context, addr string) error {
	req := codec.NewRequest(codec.ReqExchangeBrokerHaInfo)
	req.Ext.Set("masterHaAddress", b.haServerAddr())
	req.Ext.SetInt64("masterFlushOffset", b.acting.initMaxOffset.Load())
	req.Ext.Set("masterAddress", b.conf().BrokerAddr())
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp, err := b.ns.InvokeSync(cctx, addr, req)
	switch {
	case err != nil:
	case resp.Code == codec.RespRequestCodeNotSupported:
		err = errNotSupported
	case resp.Code != codec.RespSuccess:
		err = fmt.Errorf("code %d %s", resp.Code, resp.Remark)
	}
	if err != nil {
		return fmt.Errorf("exchange HA info with %s: %w", addr, err)
	}
	return nil
}

// sendLiteHeartbeat is BrokerController.sendHeartbeat: one-way to every name
// server, QUERY_DATA_VERSION (which old name servers take as a heartbeat too)
// with compatibleWithOldNameSrv, else BROKER_HEARTBEAT.
func (b *Broker) sendLiteHeartbeat(ctx context.Context) {
	if b.ns == nil || !b.controllerRunning() || b.acting.isolated.Load() {
		return
	}
	cfg := b.conf()
	for _, addr := range b.nameServerAddrs() {
		var req *codec.RemotingCommand
		if cfg.CompatibleWithOldNameSrv {
			req = codec.NewRequest(codec.ReqQueryDataVersion)
			b.brokerIdentity(req)
			req.Body = b.topics.DataVersion().AppendJSON(nil)
		} else {
			req = codec.NewRequest(codec.ReqBrokerHeartbeat)
			req.Ext.Set("clusterName", cfg.BrokerClusterName)
			req.Ext.Set("brokerAddr", cfg.BrokerAddr())
			req.Ext.Set("brokerName", cfg.BrokerName)
		}
		cctx, cancel := context.WithTimeout(ctx, compat.Millis(max(cfg.SendHeartbeatTimeoutMillis, 100)))
		var err error
		if ow, ok := b.ns.(onewayInvoker); ok {
			err = ow.InvokeOneway(cctx, addr, req)
		} else {
			_, err = b.ns.InvokeSync(cctx, addr, req)
		}
		cancel()
		if err != nil {
			b.log.Debug("acting: heartbeat to name server", "addr", addr, "err", err)
		}
	}
}

// actingRegisterFields adds the acting-master fields to a REGISTER_BROKER
// header, as Java's registerBrokerAll passes them.
func (b *Broker) actingRegisterFields(req *codec.RemotingCommand) {
	cfg := b.conf()
	req.Ext.Set("enableActingMaster", strconv.FormatBool(cfg.EnableSlaveActingMaster))
	if cfg.EnableSlaveActingMaster && cfg.BrokerNotActiveTimeoutMillis > 0 {
		req.Ext.SetInt64("heartbeatTimeoutMillis", cfg.BrokerNotActiveTimeoutMillis)
	}
}
