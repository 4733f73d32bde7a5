// Package pop is the broker side of POP consumption as Apache RocketMQ 5.3
// has it (PopMessageProcessor, AckMessageProcessor, ChangeInvisibleTimeProcessor,
// PopReviveService, PopLongPollingService, ConsumerOrderInfoManager,
// NotificationProcessor, PollingInfoProcessor, PeekMessageProcessor): the
// checkpoint and ack records go to the revive topic
// rmq_sys_REVIVE_LOG_<cluster> in Java's JSON, so a Java broker reads a store
// rmqd wrote and the reverse. As Java with enablePopBufferMerge=false, every
// checkpoint is written straight to the revive topic.
//
// The package reaches the broker only through Host, so it stays out of the
// broker's own files.
package pop

import (
	"context"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/remoting"
	"rmqd/store"
)

// Config is what POP reads of the broker configuration (BrokerConfig and
// MessageStoreConfig keys of the same names).
type Config struct {
	BrokerName  string
	ClusterName string
	BrokerIP1   string
	StoreHost   netip.AddrPort
	// Readable is the broker permission's read bit.
	Readable         bool
	TimerWheelEnable bool
	ReviveQueueNum   int32
	// EnableRetryTopicV2 names retry topics %RETRY%group+topic (else group_topic).
	EnableRetryTopicV2 bool
	// RetrieveFromRetryV1 also reads the v1 retry topic while v2 is on.
	RetrieveFromRetryV1 bool
	// PopFromRetryProbability is the percentage of POPs that read the retry topic first;
	// PopFromRetryProbabilityForPriority that of the POPs run in priority order.
	PopFromRetryProbability            int
	PopFromRetryProbabilityForPriority int
	// PriorityOrderAsc: queue 0 holds the lowest priority, so a priority POP
	// reads the queues from the last down (else from queue 0 up).
	PriorityOrderAsc bool
	ReviveInterval   time.Duration
	// MaxPopPollingSize bounds the held POPs of the broker, PopPollingSize those of one key.
	MaxPopPollingSize int
	PopPollingSize    int
	// EnablePopMessageThreshold stops popping a queue with more than
	// PopInflightMessageThreshold messages of the group in flight.
	EnablePopMessageThreshold   bool
	PopInflightMessageThreshold int64
	// PopResponseReturnActualRetryTopic sends popped retries as stored: under
	// their %RETRY% topic, without a POP_CK property.
	PopResponseReturnActualRetryTopic bool
	// MaxLiteSubscriptionCount bounds the (client, lite topic) subscriptions
	// the broker holds; a client's subscription is dropped when it has not
	// changed for LiteSubscriptionTimeout (liteSubscriptionCheckTimeoutMills),
	// looked for every LiteSubscriptionCheck.
	MaxLiteSubscriptionCount int64
	LiteSubscriptionTimeout  time.Duration
	LiteSubscriptionCheck    time.Duration
}

// Topic is what POP needs of a topic config.
type Topic struct {
	ReadQueueNums int32
	Perm          int32
	// Batch marks a queue.type=BatchCQ topic, whose units cover several
	// queue offsets (an inner batch).
	Batch bool
	// Priority marks a message.type=PRIORITY topic (Java 5.4): a message's
	// priority is its queue number.
	Priority bool
	// Lite marks a message.type=LITE topic (Java 5.5), the parent of lite topics.
	Lite bool
}

// Group is what POP needs of a subscription group.
type Group struct {
	ConsumeEnable bool
	RetryMaxTimes int32
	// PriorityFactor is the percentage (0-100) of the group's POPs of a
	// priority topic read in priority order (attribute priority.factor).
	PriorityFactor int
	// LiteBindTopic is the lite parent topic the group consumes (attribute lite.bind.topic).
	LiteBindTopic string
	// LiteExclusive: a lite topic has one client of the group at a time, the
	// last to subscribe (lite.sub.model=Exclusive); the group's offset there
	// goes back to the start when it moves (lite.sub.reset.offset.exclusive)
	// or when unsubscribed (lite.sub.reset.offset.unsubscribe).
	LiteExclusive, LiteResetOnExclusive, LiteResetOnUnsubscribe bool
	// LiteWildcard: the group's clients consume every lite topic of the
	// parent, without subscribing to any (lite.sub.wildcard, any value).
	LiteWildcard bool
}

// Host is what POP needs of the broker.
type Host interface {
	// Conf is read per request; ConfigDir (which holds consumerOrderInfo.json) once.
	Conf() Config
	ConfigDir() string
	// PutMessage appends msg; a TIMER_DELIVER_MS property sends it through the
	// timer wheel first, as Java's store hook does.
	PutMessage(ctx context.Context, msg *codec.Message) store.PutResult
	GetMessage(group, topic string, queueID int32, offset int64, maxNums int32, filter store.MessageFilter) *store.GetResult
	// GetRemoteMessage is EscapeBridge.getMessageFromRemote: the record at
	// offset of a queue of another broker group (brokerName), pulled from its
	// master; nil with retry when it could not be asked (try again later),
	// nil without when the master has no such message.
	GetRemoteMessage(ctx context.Context, brokerName, topic string, queueID int32, offset int64) (rec []byte, retry bool)
	MaxOffset(topic string, queueID int32) int64
	MinOffset(topic string, queueID int32) int64
	QueryOffset(group, topic string, queueID int32) int64
	CommitOffset(group, topic string, queueID int32, offset int64)
	// TakeReset takes an admin offset reset waiting for the queue.
	TakeReset(group, topic string, queueID int32) (int64, bool)
	HasReset(group, topic string, queueID int32) bool
	// AssignReset leaves an offset reset for the queue's next POP (a lite
	// subscription's offset option).
	AssignReset(group, topic string, queueID int32, offset int64)
	// MessageAt decodes the record at a commitlog offset (nil when none).
	MessageAt(commitLogOffset int64) *codec.Message
	// LiteQueuesOf lists the queues of a parent topic's lite topics.
	LiteQueuesOf(parent string) []string
	// LiteActive is isSubscriptionActive: a subscription to the lite topic's
	// queue is kept here (the topic is sharded to this broker, or has messages here).
	LiteActive(parent, lmq string) bool
	// Topic looks a topic config up; Group finds (or auto-creates, as Java) a group.
	Topic(topic string) (Topic, bool)
	Group(group string) (Group, bool)
	// CreateTopic adds a topic config if missing (retry topics: 1 queue, perm 6).
	CreateTopic(topic string, queueNums int32, perm int32)
	// Compensate records a POP consumer that never heartbeats, with its subscription of topic and of
	// retryTopic (all tags), as Java's compensateBasicConsumerInfo and compensateSubscribeData.
	Compensate(group, topic, retryTopic, expType, exp string)
	// NewFilter compiles a subscription (TAG or SQL92) for topic.
	NewFilter(topic, expType, exp string) (store.MessageFilter, error)
	// MatchArrival runs a filter on an arrived message's tags code and properties.
	MatchArrival(f store.MessageFilter, tagsCode int64, props string) bool
	// ReviveHorizon is a time (ms) before which every revive record has come
	// out of the timer and is readable in its queue; 0 when unknown.
	ReviveHorizon() int64
	// Recovered logs a recovered panic and reports whether there was one.
	Recovered(what string, r any) bool
}

// Service serves the POP codes.
type Service struct {
	h     Host
	log   *slog.Logger
	locks queueLocks
	poll  *polling
	order *OrderInfo
	// lite holds the lite subscriptions, liteOrder the batches of lite
	// topics in flight (in memory, as Java's).
	lite      *liteSubs
	liteOrder *OrderInfo
	// inflight counts the popped messages not acked yet.
	inflight *inflight
	// counts are PopMetricsManager's counters, read by Metrics.
	counts popCounts
	// ckNum rotates the revive queue of non-ordered checkpoints.
	ckMu  sync.Mutex
	ckNum int64
	// revivers are the running revive services by queue, kicked when their
	// queue of the revive topic gets a record (nil: none run).
	revivers atomic.Pointer[[]*reviver]
	// reviveMu is held by RunRevive while it runs: runs never overlap.
	reviveMu sync.Mutex
	// revTopic caches {cluster, revive topic}.
	revTopic atomic.Pointer[[2]string]

	mu      sync.Mutex
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	running bool
}

// New builds the service; Start runs its background work.
func New(h Host, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	s := &Service{h: h, log: log.With("component", "pop")}
	s.locks.m = map[string]*queueLock{}
	s.poll = newPolling(s)
	s.order = NewOrderInfo(h.ConfigDir(), s.log)
	s.lite, s.liteOrder = newLiteSubs(), NewOrderInfo("", s.log)
	s.inflight = newInflight()
	return s
}

// Load reads consumerOrderInfo.json.
func (s *Service) Load() error { return s.order.Load() }

// Handlers maps the POP request codes to their processors.
func (s *Service) Handlers() map[int32]remoting.Processor {
	f := func(fn remoting.ProcessorFunc) remoting.Processor { return fn }
	return map[int32]remoting.Processor{
		codec.ReqPopMessage:                 f(s.handlePop),
		codec.ReqAckMessage:                 f(s.handleAck),
		codec.ReqBatchAckMessage:            f(s.handleBatchAck),
		codec.ReqChangeMessageInvisibletime: f(s.handleChangeInvisible),
		codec.ReqNotification:               f(s.handleNotification),
		codec.ReqPollingInfo:                f(s.handlePollingInfo),
		codec.ReqPeekMessage:                f(s.handlePeek),
		codec.ReqPopRollback:                f(s.handlePopRollback),
		codec.ReqPopLiteMessage:             f(s.handlePopLite),
		codec.ReqLiteSubscriptionCtl:        f(s.handleLiteSubscriptionCtl),
	}
}

// handlePopRollback is POP_ROLLBACK (mqadmin exportPopRecord): Java moves its
// POP records from the RocksDB store (popConsumerKVServiceEnable) back to the
// file store's checkpoints and acks. rmqd keeps them there always, so there is
// nothing to move: SUCCESS, as Java answers with its KV store off.
func (s *Service) handlePopRollback(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// Start runs long polling and the order info flush until Stop. Revive runs
// apart (RunRevive): only while the broker is master.
func (s *Service) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return
	}
	s.running = true
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.goLoop("pop polling", func() { s.poll.run(ctx) })
	s.goLoop("pop order info", func() { s.order.run(ctx) })
	s.goLoop("pop queue locks", func() { s.locks.run(ctx) })
	s.goLoop("lite order info", func() { s.liteOrder.run(ctx) })
	s.goLoop("lite subscriptions", func() { s.expireLite(ctx) })
}

// RunRevive runs the revive services (one per revive queue) until ctx ends
// and returns once they all stopped. The broker runs it with its master-only
// services, so a promoted broker starts reviving and a demoted one stops
// (Java's PopReviveService checks shouldRunPopRevive at each step). A run
// waits for the one before it to end: a queue never has two revivers.
func (s *Service) RunRevive(ctx context.Context) {
	s.reviveMu.Lock()
	defer s.reviveMu.Unlock()
	c := s.h.Conf()
	if !c.TimerWheelEnable || ctx.Err() != nil {
		return
	}
	var wg sync.WaitGroup
	rs := make([]*reviver, 0, c.ReviveQueueNum)
	for q := int32(0); q < c.ReviveQueueNum; q++ {
		r := newReviver(s, q)
		rs = append(rs, r)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { s.h.Recovered("pop revive", recover()) }()
			r.run(ctx)
		}()
	}
	s.revivers.Store(&rs)
	wg.Wait()
	s.revivers.Store(nil)
}

// Reviving reports whether the revive services run.
func (s *Service) Reviving() bool { return s.revivers.Load() != nil }

// Stop ends the background work, answers the held POPs and persists the
// order info.
func (s *Service) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return nil
	}
	s.running = false
	s.cancel()
	s.wg.Wait()
	s.poll.wakeAll()
	return s.order.Persist()
}

// Drain answers the held POPs and notifications and parks no more, while
// their connections are still open (the first step of a shutdown).
func (s *Service) Drain() { s.poll.wakeAll() }

func (s *Service) goLoop(what string, f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { s.h.Recovered(what, recover()) }()
		f()
	}()
}

// Arriving is told of every message dispatched to a consume queue (the
// broker's arriving listener): it wakes the POPs and notifications waiting
// for that topic.
func (s *Service) Arriving(topic string, queueID int32, tagsCode int64, props string) {
	if rs := s.revivers.Load(); rs != nil && queueID >= 0 && int(queueID) < len(*rs) && topic == (*rs)[queueID].topic {
		(*rs)[queueID].kickIdle()
	}
	s.poll.arriving(topic, queueID, tagsCode, props)
	if strings.HasPrefix(topic, compat.LiteLMQPrefix) {
		s.liteArriving(topic)
	}
}

// expireLite drops the lite subscriptions of clients gone quiet.
func (s *Service) expireLite(ctx context.Context) {
	every := s.h.Conf().LiteSubscriptionCheck
	if every <= 0 {
		every = 2 * time.Minute
	}
	everyTick(ctx, every, func() {
		timeout := s.h.Conf().LiteSubscriptionTimeout
		if timeout <= 0 {
			timeout = 3 * time.Minute
		}
		s.lite.expire(time.Now().UnixMilli(), timeout)
	})
}

// reviveTopic is rmq_sys_REVIVE_LOG_<cluster> (PopAckConstants.buildClusterReviveTopic).
func reviveTopic(cluster string) string { return compat.SysTopicRevivePrefix + cluster }

// reviveTopicNow is reviveTopic of the configured cluster, built again only
// when the name changed: every ack and checkpoint record names it.
func (s *Service) reviveTopicNow(cluster string) string {
	if t := s.revTopic.Load(); t != nil && t[0] == cluster {
		return t[1]
	}
	t := &[2]string{cluster, reviveTopic(cluster)}
	s.revTopic.Store(t)
	return t[1]
}

// PopAckConstants.
const (
	reviveGroup       = "CID_RMQ_SYS_REVIVE_GROUP"
	ckTag             = "ck"
	ackTag            = "ack"
	batchAckTag       = "bAck"
	ackTimeInterval   = 1000 // ms
	orderReviveQueue  = 999  // KeyBuilder.POP_ORDER_REVIVE_QUEUE
	retryGroupPrefix  = "%RETRY%"
	retryQueueNum     = 1
	propPopCK         = codec.PropPopCK
	propFirstPopTime  = "1ST_POP_TIME"
	propUniqKeyIdx    = "UNIQ_KEY"
	maxPopMsgNums     = 32
	timeoutTooMuchMs  = 500
	pollingEarlyMs    = 50 // PopRequest.isTimeout: 50 ms before expiry
	lockIdleExpiry    = time.Minute
	reviveRoundReads  = 4096 // revive records read per round at most (bounded memory)
	reviveRoundPeriod = 10 * time.Second
)
