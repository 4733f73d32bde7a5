// Package processor is the broker: request processors by code and the services
// they drive (topic, subscription-group and consumer-offset managers, client
// registrations, long polling, name-server registration), on top of the store.
package processor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/processor/acl"
	"rmqd/processor/auth"
	"rmqd/processor/clients"
	"rmqd/processor/delivery"
	"rmqd/processor/meta"
	"rmqd/processor/pop"
	"rmqd/remoting"
)

// Broker serves the broker request codes over a remoting.Server.
type Broker struct {
	// cfg is the configuration in force: an immutable snapshot, replaced whole
	// by UPDATE_BROKER_CONFIG, so handlers read it without a lock (conf()).
	cfg      atomic.Pointer[BrokerConfig]
	sendMsgs sync.Pool // *codec.Message of sends in progress
	// sendAnswers holds *sendAnswer: taken by a send, released by remoting
	// after the response was written.
	sendAnswers sync.Pool
	pullAnswers sync.Pool // *pullAnswer, as sendAnswers
	store       MessageStore
	log         *slog.Logger
	storeHost   netip.AddrPort
	startTime   time.Time

	topics *TopicConfigManager
	groups *SubscriptionGroupManager
	// fallBehind feeds protectBroker (protect.go).
	fallBehind fallBehindTable
	// events counts DLQ routings and transaction ends for the metrics exporter.
	events eventCounts
	// members caches the group's brokers for strict-mode locks (lock_strict.go).
	members   memberGroup
	offsets   *ConsumerOffsetManager
	mappings  *meta.TopicQueueMappingManager // static topics (static_topic.go)
	remotes   brokerAddrCache                // brokers static-topic requests are forwarded to (static_forward.go)
	consumers *ConsumerManager
	producers *ProducerManager
	locks     *RebalanceLockManager
	hold      *pullHoldService
	cold      *coldCtr            // cold-data read flow control (coldctr.go)
	coldHold  coldHolds           // pulls it holds (coldgate.go)
	rpcObs    DeferredRPCObserver // told of requests answered after their handler returned
	ids       *uniqIDGen
	filters   filterCache
	schedule  *delivery.Schedule
	trans     *delivery.Transactions
	timer     *delivery.Timer
	pop       *pop.Service
	// liteRoutes shards lite subscriptions as Java 5.5 does (lite_shard.go).
	liteRoutes *liteRoutes
	// requestModes is MessageRequestModeManager (assignment.go).
	requestModes *requestModes

	ns            NameServerInvoker
	nsClose       func() error
	regState      registrationState
	topicsChanged chan struct{}
	// nsMoved wakes the registration loop after a namesrvAddr update.
	nsMoved chan struct{}
	// lookup holds name servers and controllers found by DNS or an address
	// server (addr_lookup.go).
	lookup addrLookup
	// queuesMu orders the preparation of a new topic's consume queues (run off
	// the send path) against the deletion of a topic's queues: a preparation
	// that comes after the delete would bring empty queues back.
	queuesMu sync.Mutex
	admin    adminState
	// createTimes times admin topic and group creates for the metrics exporter.
	createTimes createTimes
	acl         *acl.Manager                // nil unless aclEnable
	auth        *auth.Manager               // nil unless authenticationEnabled or authorizationEnabled
	pools       atomic.Pointer[brokerPools] // request pools, set by Register
	masters     masterAddrs
	// slaveSyncTick is how often a slave looks whether its periodic metadata
	// copy is due (3 s, as Java; tests lengthen it).
	slaveSyncTick time.Duration
	ctl           *controllerMode // nil unless enableControllerMode (controller.go)
	acting        actingState     // enableSlaveActingMaster (acting.go)

	mu      sync.Mutex
	started bool
	drained bool
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	// The registration loop stops on its own at Drain, before the rest.
	regCancel context.CancelFunc
	regWG     sync.WaitGroup
}

// NewBroker builds a broker over st and loads the config files from
// <storePathRootDir>/config. Name-server registration uses a remoting.Client of
// its own when namesrvAddr is set.
func NewBroker(cfg BrokerConfig, st MessageStore, logger *slog.Logger) (*Broker, error) {
	if st == nil {
		return nil, errors.New("new broker: nil store")
	}
	if logger == nil {
		logger = slog.Default()
	}
	storeHost, err := netip.ParseAddrPort(cfg.BrokerAddr())
	if err != nil {
		return nil, fmt.Errorf("new broker: brokerIP1 %q must be an IP address: %w", cfg.BrokerIP1, err)
	}
	// What records and ids carry: 4 or 16 bytes, no IPv6 zone, so a record read
	// back compares equal (popRevive) with a link-local brokerIP1 too.
	storeHost = netip.AddrPortFrom(storeHost.Addr().Unmap().WithZone(""), storeHost.Port())
	b := &Broker{store: st, log: logger.With("component", "broker"), storeHost: storeHost,
		startTime: time.Now(), topicsChanged: make(chan struct{}, 1), nsMoved: make(chan struct{}, 1), slaveSyncTick: 3 * time.Second,
		lookup: newAddrLookup()}
	b.masters.learned = make(chan struct{}, 1)
	b.sendMsgs.New = func() any { return new(codec.Message) }
	b.sendAnswers.New = func() any { return &sendAnswer{pool: &b.sendAnswers} }
	b.pullAnswers.New = func() any { return &pullAnswer{pool: &b.pullAnswers} }
	b.cfg.Store(&cfg)
	b.topics = meta.NewTopicConfigManager(b.metaConf, b.log)
	b.groups = meta.NewSubscriptionGroupManager(b.metaConf, b.log)
	b.offsets = meta.NewConsumerOffsetManager(b.conf().ConfigDir(), b.log)
	b.mappings = meta.NewTopicQueueMappingManager(b.conf().ConfigDir(), b.log)
	if cfg.Store.EnableLmq {
		b.offsets.UseLMQ()
	}
	b.consumers = clients.NewConsumerManager(b.log)
	b.producers = clients.NewProducerManager()
	b.locks = clients.NewRebalanceLockManager(compat.Millis(cfg.RebalanceLockMaxLiveTime))
	b.hold = newPullHoldService(b)
	b.cold = newColdCtr(&cfg)
	b.ids = newUniqIDGen(cfg.BrokerIP1)
	if err := b.newDelivery(cfg); err != nil {
		return nil, fmt.Errorf("new broker: %w", err)
	}
	b.pop = newPopService(b)
	b.liteRoutes = newLiteRoutes()
	b.requestModes = newRequestModes(cfg.ConfigDir())
	for name, load := range map[string]func() error{"topics": b.topics.Load, "subscription groups": b.groups.Load,
		"consumer offsets": b.offsets.Load, "delay offsets": b.schedule.Load, "consumer order info": b.pop.Load,
		"message request modes": b.requestModes.load, "static topic mappings": b.mappings.Load} {
		if err := load(); err != nil {
			return nil, fmt.Errorf("new broker: load %s: %w", name, err)
		}
	}
	b.topics.SetOnChange(b.topicChanged)
	if bs, ok := st.(batchTopicStore); ok {
		bs.SetBatchTopics(b.isBatchTopic)
	}
	if err := cfg.CheckStart(); err != nil {
		return nil, fmt.Errorf("new broker: %w", err)
	}
	if cfg.AuthenticationEnabled || cfg.AuthorizationEnabled {
		if b.auth, err = newAuth(&cfg, logger); err != nil {
			return nil, fmt.Errorf("new broker: %w", err)
		}
	}
	if cfg.AclEnable {
		path := acl.ResolvePath(cfg.AclPlainFile, cfg.RocketmqHome, cfg.Store.StorePathRootDir)
		if b.acl, err = acl.NewManager(path, logger); err != nil {
			return nil, fmt.Errorf("new broker: %w", err)
		}
	}
	if _, err := auth.SignInnerWith(cfg.InnerClientAuthenticationCredentials, nil); err != nil {
		return nil, fmt.Errorf("new broker: %w", err)
	}
	if cfg.registers() {
		c := remoting.NewClient(remoting.ClientConfig{Logger: b.log})
		b.ns, b.nsClose = b.signInner(c), c.Close
	}
	return b, nil
}

// signInner wraps inv so that every request the broker sends through it (to
// the name servers, and to its group's peers in strict lock mode) signs with
// innerClientAuthenticationCredentials, as Java's BrokerOuterAPI does: peers
// and name servers with ACL on refuse unsigned ones. NewBroker checked the
// credentials.
func (b *Broker) signInner(inv NameServerInvoker) NameServerInvoker {
	signed, err := auth.SignInnerWith(b.conf().InnerClientAuthenticationCredentials, inv)
	if err != nil {
		return inv
	}
	return signed
}

// newAuth builds ACL 2.0 from broker.conf (processor/auth).
func newAuth(cfg *BrokerConfig, logger *slog.Logger) (*auth.Manager, error) {
	if err := auth.CheckProviders(cfg.authProviders()); err != nil {
		return nil, err
	}
	m, err := auth.NewManager(auth.Config{
		AuthenticationEnabled: cfg.AuthenticationEnabled, AuthorizationEnabled: cfg.AuthorizationEnabled,
		InitAuthenticationUser:               cfg.InitAuthenticationUser,
		InnerClientAuthenticationCredentials: cfg.InnerClientAuthenticationCredentials,
		AuthenticationWhitelist:              cfg.AuthenticationWhitelist, AuthorizationWhitelist: cfg.AuthorizationWhitelist,
		ClusterName: cfg.BrokerClusterName, StoreRoot: cfg.Store.StorePathRootDir,
	}, logger)
	if err != nil || !cfg.MigrateAuthFromV1Enabled {
		return m, err
	}
	// After the init user, as Java's BrokerController: that user wins a clash.
	accounts, err := acl.ReadAccounts(acl.ResolvePath(cfg.AclPlainFile, cfg.RocketmqHome, cfg.Store.StorePathRootDir))
	if err != nil {
		return nil, fmt.Errorf("migrateAuthFromV1Enabled: %w", err)
	}
	if err := m.MigrateV1(accounts); err != nil {
		return nil, fmt.Errorf("migrateAuthFromV1Enabled: %w", err)
	}
	return m, nil
}

// SetNameServerInvoker replaces the name-server client (tests, or a shared
// client owned by the caller). Call before Start.
func (b *Broker) SetNameServerInvoker(inv NameServerInvoker) {
	if b.nsClose != nil {
		_ = b.nsClose()
	}
	b.ns, b.nsClose = b.signInner(inv), nil
}

// Config returns the broker's configuration.
func (b *Broker) Config() BrokerConfig { return *b.conf() }

// conf is the configuration in force; never modify what it returns.
func (b *Broker) conf() *BrokerConfig { return b.cfg.Load() }

// Topics, SubscriptionGroups, ConsumerOffsets, Consumers and Producers expose the
// managers (admin processors and tests).
func (b *Broker) Topics() *TopicConfigManager                   { return b.topics }
func (b *Broker) SubscriptionGroups() *SubscriptionGroupManager { return b.groups }
func (b *Broker) ConsumerOffsets() *ConsumerOffsetManager       { return b.offsets }
func (b *Broker) Consumers() *ConsumerManager                   { return b.consumers }
func (b *Broker) Producers() *ProducerManager                   { return b.producers }

// Handlers maps each served request code to its processor.
func (b *Broker) Handlers() map[int32]remoting.Processor {
	f := func(fn remoting.ProcessorFunc) remoting.Processor { return fn }
	send := f(b.handleSendMessage)
	pull := f(b.pullReleasing) // handlePullMessage
	m := map[int32]remoting.Processor{
		codec.ReqSendMessage:                          send,
		codec.ReqSendMessageV2:                        send,
		codec.ReqSendBatchMessage:                     send,
		codec.ReqSendReplyMessage:                     f(b.handleSendReplyMessage),
		codec.ReqSendReplyMessageV2:                   f(b.handleSendReplyMessage),
		codec.ReqPullMessage:                          pull,
		codec.ReqLitePullMessage:                      pull,
		codec.ReqConsumerSendMsgBack:                  f(b.handleConsumerSendMsgBack),
		codec.ReqEndTransaction:                       f(b.handleEndTransaction),
		codec.ReqHeartBeat:                            f(b.handleHeartBeat),
		codec.ReqUnregisterClient:                     f(b.handleUnregisterClient),
		codec.ReqGetConsumerListByGroup:               f(b.handleGetConsumerListByGroup),
		codec.ReqCheckClientConfig:                    f(b.handleCheckClientConfig),
		codec.ReqQueryConsumerOffset:                  f(b.handleQueryConsumerOffset),
		codec.ReqUpdateConsumerOffset:                 f(b.handleUpdateConsumerOffset),
		codec.ReqGetMaxOffset:                         f(b.handleGetMaxOffset),
		codec.ReqGetMinOffset:                         f(b.handleGetMinOffset),
		codec.ReqSearchOffsetByTimestamp:              f(b.handleSearchOffsetByTimestamp),
		codec.ReqGetEarliestMsgStoretime:              f(b.handleGetEarliestMsgStoretime),
		codec.ReqLockBatchMq:                          f(b.handleLockBatchMQ),
		codec.ReqUnlockBatchMq:                        f(b.handleUnlockBatchMQ),
		codec.ReqUpdateAndCreateTopic:                 f(b.handleUpdateAndCreateTopic),
		codec.ReqGetAllTopicConfig:                    f(b.handleGetAllTopicConfig),
		codec.ReqGetTopicConfig:                       f(b.handleGetTopicConfig),
		codec.ReqUpdateAndCreateStaticTopic:           f(b.handleUpdateAndCreateStaticTopic),
		codec.ReqDeleteTopicInBroker:                  f(b.handleDeleteTopicInBroker),
		codec.ReqGetAllSubscriptiongroupConfig:        f(b.handleGetAllSubscriptionGroupConfig),
		codec.ReqUpdateAndCreateSubscriptiongroup:     f(b.handleUpdateAndCreateSubscriptionGroup),
		codec.ReqDeleteSubscriptiongroup:              f(b.handleDeleteSubscriptionGroup),
		codec.ReqUpdateAndGetGroupForbidden:           f(b.handleUpdateAndGetGroupForbidden),
		codec.ReqGetAllConsumerOffset:                 f(b.handleGetAllConsumerOffset),
		codec.ReqQueryMessage:                         f(b.handleQueryMessage),
		codec.ReqViewMessageById:                      f(b.handleViewMessageByID),
		codec.ReqGetTopicStatsInfo:                    f(b.handleGetTopicStatsInfo),
		codec.ReqGetConsumeStats:                      f(b.handleGetConsumeStats),
		codec.ReqGetConsumerConnectionList:            f(b.handleGetConsumerConnectionList),
		codec.ReqGetProducerConnectionList:            f(b.handleGetProducerConnectionList),
		codec.ReqGetAllProducerInfo:                   f(b.handleGetAllProducerInfo),
		codec.ReqQueryTopicConsumeByWho:               f(b.handleQueryTopicConsumeByWho),
		codec.ReqGetSystemTopicListFromBroker:         f(b.handleGetSystemTopicListFromBroker),
		codec.ReqInvokeBrokerToResetOffset:            f(b.handleInvokeBrokerToResetOffset),
		codec.ReqGetAllDelayOffset:                    f(b.handleGetAllDelayOffset),
		codec.ReqGetTimerCheckPoint:                   f(b.handleGetTimerCheckPoint),
		codec.ReqGetBrokerHaStatus:                    f(b.handleGetBrokerHaStatus),
		codec.ReqGetTimerMetrics:                      f(b.handleGetTimerMetrics),
		codec.ReqGetAllMessageRequestMode:             f(b.handleGetAllMessageRequestMode),
		codec.ReqGetSubscriptiongroupConfig:           f(b.handleGetSubscriptionGroupConfig),
		codec.ReqUpdateAndCreateTopicList:             f(b.handleUpdateAndCreateTopicList),
		codec.ReqUpdateAndCreateSubscriptiongroupList: f(b.handleUpdateAndCreateSubscriptionGroupList),
		codec.ReqGetConsumerRunningInfo:               f(b.handleGetConsumerRunningInfo),
		codec.ReqConsumeMessageDirectly:               f(b.handleConsumeMessageDirectly),
		codec.ReqQuerySubscriptionByConsumer:          f(b.handleQuerySubscriptionByConsumer),
		codec.ReqRecallMessage:                        f(b.handleRecallMessage),
		codec.ReqQueryAssignment:                      f(b.handleQueryAssignment),
		codec.ReqSetMessageRequestMode:                f(b.handleSetMessageRequestMode),
	}
	maps.Copy(m, b.adminHandlers())
	maps.Copy(m, b.pop.Handlers())
	maps.Copy(m, acl.Handlers(b.acl, func() (string, string, string) {
		c := b.conf()
		return c.BrokerClusterName, c.BrokerName, c.BrokerAddr()
	}))
	maps.Copy(m, auth.Handlers(b.auth))
	maps.Copy(m, b.controllerHandlers())
	gateHandlers(m)
	return m
}

// inlineBodyMax is the largest send body run on the event loop when its cost
// grows with its size: a batch (each of up to ~190,000 records in a 4 MiB
// body is a record put) and, with ACL on, every send (an HmacSHA1 over 64 KiB
// takes tens of microseconds). A bigger one would hold up every connection of
// the loop for as long.
const inlineBodyMax = 64 << 10

// Register routes every served code to srv and subscribes the broker to its
// connection events. Codes left out are answered REQUEST_CODE_NOT_SUPPORTED by
// remoting.
func (b *Broker) Register(srv *remoting.Server) {
	// Pools with Java's queue capacities and fast failure (send_admission.go).
	pools := b.newPools()
	b.pools.Store(pools)
	for code, p := range b.Handlers() {
		srv.Register(code, p, b.registerOptions(pools, code)...)
	}
	srv.AddConnListener(b)
	if b.acl != nil {
		srv.AddRPCHook(b.acl.Hook())
	}
	if b.auth != nil {
		srv.AddRPCHook(b.auth.Hook())
	}
}

// OnConnect is part of remoting.ConnListener.
func (b *Broker) OnConnect(c remoting.Conn) {}

// OnClose drops the connection's client registrations (doChannelCloseEvent);
// the groups it left are told when the broker's notifyConsumerIdsChangedEnable
// allows, as Java's change listener checks it (not the groups' own flag).
func (b *Broker) OnClose(c remoting.Conn) {
	b.consumers.RemoveConn(c, b.conf().NotifyConsumerIdsChanged)
	b.producers.RemoveConn(c)
}

// Start hooks the store's arrival notifications, starts the background services
// (offset flush, client housekeeping, long polling, name-server registration)
// and registers with the name servers once.
func (b *Broker) Start(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started {
		return errors.New("broker already started")
	}
	b.started, b.drained = true, false
	b.regState.send.Lock()
	b.regState.leaving = false
	b.regState.send.Unlock()
	b.hold.mu.Lock()
	b.hold.stopped = false
	b.hold.mu.Unlock()
	b.coldHold.mu.Lock()
	b.coldHold.stopped = false
	b.coldHold.mu.Unlock()
	for _, persist := range []func() error{b.topics.Persist, b.groups.Persist} {
		if err := persist(); err != nil {
			return fmt.Errorf("start broker: %w", err)
		}
	}
	b.store.SetArrivingListener(b.arriving)
	if cs, ok := b.store.(compactingStore); ok {
		cs.SetCompactionPolicy(b.compacted)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	b.goLoop(func() { b.hold.run(runCtx) })
	b.goLoop(func() { b.runCold(runCtx) })
	b.goLoop(func() { b.flushOffsetsLoop(runCtx) })
	b.goLoop(func() { b.housekeepingLoop(runCtx) })
	b.goLoop(func() { b.liteTTLLoop(runCtx) })
	if b.ns != nil {
		b.goLoop(func() { b.liteRouteLoop(runCtx) })
	}
	b.goLoop(func() { everyTick(runCtx, protectPeriod, b.protectBroker) })
	b.goLoop(func() { b.admin.stats.Run(runCtx) })
	if b.acl != nil {
		b.goLoop(func() { b.acl.Run(runCtx) })
	}
	b.goLoop(func() { b.admin.storeStats.Run(runCtx) })
	if b.auth != nil {
		b.goLoop(func() { b.auth.Run(runCtx) })
	}
	b.acting.initMaxOffset.Store(b.store.MaxPhyOffset())
	if b.actingEnabled() {
		b.startActing(runCtx)
	} else if b.conf().BrokerID == 0 {
		b.runMasterServices(runCtx)
	}
	b.pop.Start()
	if b.conf().IsSlave() {
		b.goLoop(func() { b.slaveSyncLoop(runCtx) })
	}
	if b.conf().Controller.FetchControllerAddrByDNSLookup {
		b.lookUpControllers(ctx)
		b.goLoop(func() {
			periodic(runCtx, controllerLookupPeriod, func() time.Duration { return controllerLookupPeriod }, b.lookUpControllers)
		})
	}
	if b.ctl != nil {
		b.ctl.setRunCtx(runCtx)
		b.goLoop(func() { b.ctl.run(runCtx) })
	}
	if b.conf().lookupNameServers() {
		b.lookUpNameServers(ctx)
		b.goLoop(func() { b.lookupLoop(runCtx) })
	}
	if b.ns != nil && b.conf().registers() {
		_ = b.RegisterAll(ctx) // logged per name server (regState)
		regCtx, regCancel := context.WithCancel(runCtx)
		b.regCancel = regCancel
		b.regWG.Add(1)
		go func() {
			defer b.regWG.Done()
			defer func() { b.recovered("broker service loop", recover()) }()
			b.registerLoop(regCtx)
		}()
	}
	b.log.Info("broker started", "name", b.conf().BrokerName, "addr", b.conf().BrokerAddr(), "cluster", b.conf().BrokerClusterName)
	return nil
}

// runMasterServices starts what only a master runs until ctx ends: delayed,
// timed and transactional deliveries and POP revive (Java's
// changeSpecialServiceStatus), and the static topics' item clean
// (static_clean.go: a slave takes its master's mappings). Shutdown waits for them (b.wg) before the
// store closes.
func (b *Broker) runMasterServices(ctx context.Context) { b.runMasterServicesTracked(ctx, nil) }

// runMasterServicesTracked is runMasterServices with done (when not nil)
// counting the services' goroutines too, so a stop can wait for them.
func (b *Broker) runMasterServicesTracked(ctx context.Context, done *sync.WaitGroup) {
	loop := func(f func()) {
		if done != nil {
			done.Add(1)
		}
		b.goLoop(func() {
			if done != nil {
				defer done.Done()
			}
			f()
		})
	}
	loop(func() { b.schedule.Run(ctx) })
	// The wait after each round is read afresh, as Java's checker does, so
	// updateBrokerConfig -k transactionCheckInterval applies from the next one.
	loop(func() { periodic(ctx, b.transCheckInterval(), b.transCheckInterval, b.trans.Check) })
	if b.conf().TimerWheelEnable {
		loop(func() { b.timer.Run(ctx) })
	}
	loop(func() { b.pop.RunRevive(ctx) })
	loop(func() {
		everyTick(ctx, staticCleanInterval, func(ctx context.Context) {
			b.cleanStaticItems(ctx, time.Now())
			b.cleanStaticOldGens(ctx, time.Now())
		})
	})
}

// everyTick calls f every d until ctx ends: the loop of the broker's
// periodic services (periodic with a fixed period).
func everyTick(ctx context.Context, d time.Duration, f func(context.Context)) {
	periodic(ctx, d, func() time.Duration { return d }, f)
}

func (b *Broker) goLoop(f func()) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer func() { b.recovered("broker service loop", recover()) }()
		f()
	}()
}

// Drain is the first step of a shutdown, taken while the connections are
// still open (Java's shutdownBasicService begins with unregisterBrokerAll):
// it stops registering, unregisters from every name server so clients stop
// routing here at once, and answers the held pulls and POPs so that their
// consumers pull again rather than wait on a connection about to close.
func (b *Broker) Drain(ctx context.Context) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.started || b.drained {
		return
	}
	b.drained = true
	b.stopRegistering()
	b.unregisterAll(ctx)
	b.hold.wakeAll()
	b.wakeCold()
	b.pop.Drain()
}

// stopRegistering ends the registration loop, so that no registration lands
// after the unregistration.
func (b *Broker) stopRegistering() {
	if b.regCancel != nil {
		b.regCancel()
	}
	b.regWG.Wait()
}

// Shutdown unregisters from the name servers and answers held pulls unless
// Drain did, stops the services and persists the config files. The store is
// the caller's to stop.
func (b *Broker) Shutdown() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.started {
		return nil
	}
	b.started = false
	b.cancel()
	b.wg.Wait()
	b.stopRegistering()
	if !b.drained {
		b.unregisterAll(context.Background())
	}
	b.hold.wakeAll()
	b.wakeCold()
	var errs []error
	if err := b.pop.Stop(); err != nil {
		errs = append(errs, err)
	}
	for _, persist := range []func() error{b.offsets.Persist, b.topics.Persist, b.groups.Persist, b.schedule.Persist, b.timer.Persist} {
		if err := persist(); err != nil {
			errs = append(errs, err)
		}
	}
	if b.nsClose != nil {
		if err := b.nsClose(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (b *Broker) flushOffsetsLoop(ctx context.Context) {
	everyTick(ctx, compat.Millis(int64(max(b.conf().FlushConsumerOffsetInterval, 100))), func(context.Context) {
		if err := b.offsets.PersistIfChanged(); err != nil {
			b.log.Error("persist consumer offsets", "err", err)
		}
	})
}

// housekeepingLoop closes client connections whose last heartbeat is older than
// channelExpiredTimeout (ClientHousekeepingService, every 10 s) and drops
// lapsed rebalance locks.
func (b *Broker) housekeepingLoop(ctx context.Context) {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	timeout := compat.Millis(int64(b.conf().ChannelExpiredTimeout))
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			expired := append(b.consumers.Expired(now, timeout), b.producers.Expired(now, timeout)...)
			b.consumers.ExpireCompensation(now, compat.Millis(int64(b.conf().SubscriptionExpiredTimeout)))
			b.locks.Expire()
			for _, c := range expired {
				b.log.Info("client channel expired", "remote", c.RemoteAddr())
				b.OnClose(c)
				_ = c.Close()
			}
		}
	}
}
