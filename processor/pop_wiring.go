package processor

import (
	"context"
	"errors"
	"strings"
	"time"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/processor/pop"
	"rmqd/store"
)

// PopConfig holds the POP keys of Java's BrokerConfig (bound inline from
// broker.conf).
type PopConfig struct {
	EnableRetryTopicV2                 bool  `prop:"enableRetryTopicV2"`
	RetrieveMessageFromPopRetryTopicV1 bool  `prop:"retrieveMessageFromPopRetryTopicV1"`
	PopFromRetryProbability            int32 `prop:"popFromRetryProbability"`
	ReviveInterval                     int64 `prop:"reviveInterval"` // ms
	MaxPopPollingSize                  int64 `prop:"maxPopPollingSize"`
	PopPollingSize                     int32 `prop:"popPollingSize"`
	EnablePopMessageThreshold          bool  `prop:"enablePopMessageThreshold"`
	PopInflightMessageThreshold        int64 `prop:"popInflightMessageThreshold"`
	PopResponseReturnActualRetryTopic  bool  `prop:"popResponseReturnActualRetryTopic"`
	// Java 5.4's priority topics (message.type=PRIORITY): the retry topic's
	// share of a priority POP, and whether queue 0 is the lowest priority
	// (read last) or the highest.
	PopFromRetryProbabilityForPriority int32 `prop:"popFromRetryProbabilityForPriority"`
	PriorityOrderAsc                   bool  `prop:"priorityOrderAsc"`
	// Java 5.5's lite subscriptions: how many (client, lite topic) pairs the
	// broker holds, and after how long without a change a client's are
	// dropped, looked for every interval (ms).
	MaxLiteSubscriptionCount          int64 `prop:"maxLiteSubscriptionCount"`
	LiteSubscriptionCheckTimeoutMills int64 `prop:"liteSubscriptionCheckTimeoutMills"`
	LiteSubscriptionCheckInterval     int64 `prop:"liteSubscriptionCheckInterval"`
	// Lite topic expiry (lite_ttl.go): looked for every LiteTtlCheckInterval
	// ms once the broker has been up MinLiteTTl ms; no lite topic idle for less
	// than MinLiteTTl goes, whatever its parent's lite.topic.expiration says.
	LiteTtlCheckInterval int64 `prop:"liteTtlCheckInterval"`
	MinLiteTTl           int64 `prop:"minLiteTTl"`
}

// defaultPopConfig has Java's defaults.
func defaultPopConfig() PopConfig {
	return PopConfig{RetrieveMessageFromPopRetryTopicV1: true, PopFromRetryProbability: 20, ReviveInterval: 1000,
		MaxPopPollingSize: 100000, PopPollingSize: 1024, PopInflightMessageThreshold: 10000, PriorityOrderAsc: true,
		MaxLiteSubscriptionCount: 100000, LiteSubscriptionCheckTimeoutMills: 3 * 60 * 1000, LiteSubscriptionCheckInterval: 2 * 60 * 1000,
		LiteTtlCheckInterval: 2 * 60 * 1000, MinLiteTTl: 15 * 60 * 1000}
}

// errPropertyFilterOff refuses SQL92 POP filters while enablePropertyFilter is off.
var errPropertyFilterOff = errors.New("the broker does not support consumer to filter message by SQL92")

// popHost is what processor/pop sees of the broker.
type popHost struct{ b *Broker }

func newPopService(b *Broker) *pop.Service { return pop.New(popHost{b}, b.log) }

func (h popHost) Conf() pop.Config {
	c := h.b.conf()
	return pop.Config{BrokerName: c.BrokerName, ClusterName: c.BrokerClusterName, BrokerIP1: c.BrokerIP1,
		StoreHost: h.b.storeHost, Readable: permReadable(c.BrokerPermission),
		TimerWheelEnable: c.TimerWheelEnable, ReviveQueueNum: c.ReviveQueueNum,
		EnableRetryTopicV2: c.Pop.EnableRetryTopicV2, RetrieveFromRetryV1: c.Pop.RetrieveMessageFromPopRetryTopicV1,
		PopFromRetryProbability:            int(c.Pop.PopFromRetryProbability),
		PopFromRetryProbabilityForPriority: int(c.Pop.PopFromRetryProbabilityForPriority),
		PriorityOrderAsc:                   c.Pop.PriorityOrderAsc,
		ReviveInterval:                     compat.Millis(int64(c.Pop.ReviveInterval)),
		MaxPopPollingSize:                  int(c.Pop.MaxPopPollingSize), PopPollingSize: int(c.Pop.PopPollingSize),
		EnablePopMessageThreshold:         c.Pop.EnablePopMessageThreshold,
		PopInflightMessageThreshold:       c.Pop.PopInflightMessageThreshold,
		PopResponseReturnActualRetryTopic: c.Pop.PopResponseReturnActualRetryTopic,
		MaxLiteSubscriptionCount:          c.Pop.MaxLiteSubscriptionCount,
		LiteSubscriptionTimeout:           compat.Millis(c.Pop.LiteSubscriptionCheckTimeoutMills),
		LiteSubscriptionCheck:             compat.Millis(c.Pop.LiteSubscriptionCheckInterval)}
}

func (h popHost) ConfigDir() string { return h.b.conf().ConfigDir() }

// Compensate is compensateBasicConsumerInfo (CONSUME_POP, CLUSTERING) and compensateSubscribeData for the
// topic (the request's expression, "*" when it has none) and its retry topic (all).
func (h popHost) Compensate(group, topic, retryTopic, expType, exp string) {
	if exp == "" {
		expType, exp = exprTag, subAll
	}
	sub := codec.SubscriptionData{Topic: topic, SubString: exp, ExpressionType: expType}
	if isTagType(expType) {
		sub = parseTagSubscription(topic, exp)
	}
	h.b.consumers.Compensate(group, "CONSUME_POP", "CLUSTERING", sub, parseTagSubscription(retryTopic, subAll))
}

// PutMessage sends a revive record through the timer wheel, as Java's store
// hook does for its TIMER_DELIVER_MS.
func (h popHost) PutMessage(ctx context.Context, msg *codec.Message) store.PutResult {
	if h.b.conf().TimerWheelEnable && !h.b.applyTimer(msg, nil) {
		return store.PutResult{Status: store.PutMessageIllegal}
	}
	return h.b.escapePut(ctx, msg)
}

func (h popHost) GetMessage(group, topic string, queueID int32, offset int64, maxNums int32, f store.MessageFilter) *store.GetResult {
	return h.b.store.GetMessage(group, topic, queueID, offset, maxNums, 0, f) // the store's transfer limits alone, as Java's pop
}

// GetRemoteMessage reads a message of another group from its master (the
// escape bridge's read).
func (h popHost) GetRemoteMessage(ctx context.Context, brokerName, topic string, q int32, off int64) ([]byte, bool) {
	return h.b.getMessageFromRemote(ctx, brokerName, topic, q, off)
}

func (h popHost) MaxOffset(topic string, q int32) int64 { return h.b.store.MaxOffsetInQueue(topic, q) }
func (h popHost) MinOffset(topic string, q int32) int64 { return h.b.store.MinOffsetInQueue(topic, q) }
func (h popHost) QueryOffset(group, topic string, q int32) int64 {
	return h.b.offsets.Query(group, topic, q)
}
func (h popHost) CommitOffset(group, topic string, q int32, off int64) {
	h.b.offsets.Commit(group, topic, q, off)
}
func (h popHost) TakeReset(group, topic string, q int32) (int64, bool) {
	return h.b.offsets.TakeReset(group, topic, q)
}
func (h popHost) HasReset(group, topic string, q int32) bool {
	return h.b.offsets.HasReset(group, topic, q)
}
func (h popHost) AssignReset(group, topic string, q int32, off int64) {
	h.b.offsets.AssignReset(group, topic, q, off)
}
func (h popHost) MessageAt(off int64) *codec.Message {
	m, err := h.b.store.LookMessageByOffset(off)
	if err != nil {
		return nil
	}
	return m
}

func (h popHost) LiteQueuesOf(parent string) []string { return h.b.liteQueuesOf(parent) }
func (h popHost) LiteActive(parent, lmq string) bool  { return h.b.liteShardActive(parent, lmq) }

func (h popHost) Topic(topic string) (pop.Topic, bool) {
	tc, ok := h.b.topics.Select(topic)
	return pop.Topic{ReadQueueNums: tc.ReadQueueNums, Perm: tc.Perm, Batch: isBatchCQ(tc), Priority: isPriorityTopic(tc),
		Lite: isLiteTopic(tc)}, ok
}

func (h popHost) Group(group string) (pop.Group, bool) {
	g, ok := h.b.groups.Find(group)
	pg := pop.Group{ConsumeEnable: g.ConsumeEnable, RetryMaxTimes: g.RetryMaxTimes, PriorityFactor: priorityFactor(g)}
	// Every POP asks for its group: the lite attributes are read only for a lite group.
	if bind := g.Attributes[attrLiteBindTopic]; bind != "" {
		pg.LiteBindTopic = bind
		pg.LiteExclusive = g.Attributes[attrLiteSubModel] == liteSubExclusive
		pg.LiteResetOnExclusive = strings.EqualFold(g.Attributes[attrLiteResetExclusive], "true")
		pg.LiteResetOnUnsubscribe = strings.EqualFold(g.Attributes[attrLiteResetUnsubscribe], "true")
		_, pg.LiteWildcard = g.Attributes[attrLiteWildcard]
	}
	return pg, ok
}

func (h popHost) CreateTopic(topic string, queueNums, perm int32) {
	if h.b.topics.Exists(topic) {
		return
	}
	tc := NewTopicConfig(topic)
	tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm = queueNums, queueNums, perm
	h.b.topics.Update(tc)
}

func (h popHost) NewFilter(topic, expType, exp string) (store.MessageFilter, error) {
	var sub codec.SubscriptionData
	if isTagType(expType) {
		sub = parseTagSubscription(topic, exp)
	} else {
		if !h.b.conf().EnablePropertyFilter {
			return nil, errPropertyFilterOff
		}
		sub = codec.SubscriptionData{Topic: topic, SubString: exp, ExpressionType: expType}
	}
	return h.b.newMessageFilter(&sub)
}

func (h popHost) MatchArrival(f store.MessageFilter, tagsCode int64, props string) bool {
	if !f.MatchTagsCode(tagsCode) {
		return false
	}
	if pm, ok := f.(propsMatcher); ok {
		return pm.MatchEncodedProperties(props)
	}
	return true
}

// ReviveHorizon: the timer has delivered every slot before its cursor, and
// dispatch has caught up with what was put before the call.
func (h popHost) ReviveHorizon() int64 {
	b := h.b
	// Dispatch first: a timer record put before the call must be in the timer's
	// queue before an empty wheel may count as "everything delivered".
	if !b.waitDispatch(b.store.MaxPhyOffset(), 200*time.Millisecond, nil) {
		return 0
	}
	hz := time.Now().UnixMilli()
	if b.conf().TimerWheelEnable {
		hz = b.timer.Horizon(hz)
		// And after: what the timer delivered before its horizon must be
		// readable in the revive queue when the round reads it.
		if !b.waitDispatch(b.store.MaxPhyOffset(), 200*time.Millisecond, nil) {
			return 0
		}
	}
	return hz
}

func (h popHost) Recovered(what string, r any) bool { return h.b.recovered(what, r) }

// popArriving tells held POPs of an arrival (arriving.go).
func (b *Broker) popArriving(topic string, queueID int32, tagsCode int64, props string) {
	defer func() { b.recovered("pop arrival notification", recover()) }()
	b.pop.Arriving(topic, queueID, tagsCode, props)
}

// popRevive reports a timer message a broker wrote to its own revive topic
// (POP checkpoints and acks): born at the broker's own address, which no
// client connection can have, or born where it was stored (m.StoreHost): a
// slave's copy of its master's, which an acting slave's timer delivers, and
// one the store's previous broker wrote at another address (a store taken
// over from Apache or moved to another port). A record another broker sent
// takes this broker's host when accepted (revive_accept.go).
func (b *Broker) popRevive(m *codec.Message) bool {
	c := b.conf()
	own := m.BornHost == b.storeHost || m.BornHost.IsValid() && m.BornHost == m.StoreHost
	return m.Topic == compat.SysTopicRevivePrefix+c.BrokerClusterName && own &&
		m.QueueID >= 0 && m.QueueID < c.ReviveQueueNum
}
