package processor

import (
	"sort"
	"strings"
	"time"

	"rmqd/compat"
	"rmqd/processor/delivery"
	"rmqd/processor/pop"
	"rmqd/processor/stats"
)

// MessageSizeBuckets are the bounds of the rocketmq_message_size histogram.
var MessageSizeBuckets = stats.MessageSizeBuckets

// SizeHistogram is a topic's put-size histogram.
type SizeHistogram = stats.SizeHistogram

// TopicMetrics are the send-side counters of one topic.
type TopicMetrics struct {
	Topic       string
	System      bool
	MessageType string // "normal", "fifo", "delay" or "transaction": the topic's message.type attribute
	Messages    int64
	Bytes       int64
	Sizes       SizeHistogram
}

// GroupMetrics are the pull-side counters of one topic@group.
type GroupMetrics struct {
	Topic, Group    string
	Retry, System   bool
	Messages, Bytes int64
}

// ClientMetrics is one registered client connection.
type ClientMetrics struct {
	Group       string
	Language    string // Java's LanguageCode name, e.g. "JAVA", "GO"
	Version     int32  // MQVersion ordinal the client sent
	ConsumeMode string // consumers: "CONSUME_ACTIVELY" (pull) or "CONSUME_PASSIVELY" (push)
}

// LagMetrics is a consumer group's backlog on one topic, summed over its queues.
type LagMetrics struct {
	Topic, Group  string
	Retry, System bool
	Lag           int64 // messages between the committed offset and the queue's end
	LagLatencyMs  int64 // age of the oldest unconsumed message, 0 without lag
}

// TimerBoundsSec are the timer_bound_s buckets of rocketmq_timer_message_snapshot.
var TimerBoundsSec = delivery.TimerBoundsSec

// DelayLatencyBoundsSec are the buckets of rocketmq_delay_message_latency.
var DelayLatencyBoundsSec = delivery.DelayLatencyBoundsSec

// TimerTopicMetrics are one real topic's timer counts.
type TimerTopicMetrics = delivery.TimerTopicMetrics

// TimerMetrics is the timer wheel's state.
type TimerMetrics = delivery.TimerMetrics

// MetricsSnapshot is what a metrics exporter reads at scrape time.
type MetricsSnapshot struct {
	Timer               TimerMetrics
	Cluster, BrokerName string
	Permission          int32
	TopicNum, GroupNum  int
	Topics              []TopicMetrics
	Groups              []GroupMetrics
	Producers           []ClientMetrics
	Consumers           []ClientMetrics
	Lags                []LagMetrics
	// TopicCreate and GroupCreate are the admin create times, series with
	// observations only.
	TopicCreate, GroupCreate []CreateTimeMetrics
	Pop                      pop.Metrics
	// DLQ, Commits, Rollbacks and HalfMessages are the transaction and DLQ
	// series (event_metrics.go).
	DLQ                              []DLQMetrics
	Commits, Rollbacks, HalfMessages []TopicCount
	FinishLatency                    []FinishLatencyMetrics
}

// MetricsSnapshot copies the broker's counters and registries. It runs at scrape
// time only, so it may allocate; the hot paths keep adding to atomics.
func (b *Broker) MetricsSnapshot(now time.Time) MetricsSnapshot {
	cfg := b.conf()
	s := MetricsSnapshot{Cluster: cfg.BrokerClusterName, BrokerName: cfg.BrokerName, Permission: cfg.BrokerPermission}
	topics := b.topics.Snapshot().TopicConfigTable
	s.TopicNum = len(topics)
	groups := b.groups.Snapshot().SubscriptionGroupTable
	s.GroupNum = len(groups)

	b.admin.stats.EachTopic(func(topic string, c *stats.Counter) {
		tm := TopicMetrics{Topic: topic, System: c.System(), MessageType: "normal",
			Messages: c.Nums(), Bytes: c.Size(), Sizes: c.Sizes()}
		if mt := strings.ToLower(topics[topic].Attributes["message.type"]); mt != "" && mt != "unspecified" && mt != "mixed" {
			tm.MessageType = mt
		}
		s.Topics = append(s.Topics, tm)
	})
	b.admin.stats.EachGroup(func(topic, group string, c *stats.Counter) {
		s.Groups = append(s.Groups, GroupMetrics{Topic: topic, Group: group,
			Retry: strings.HasPrefix(topic, RetryGroupTopicPrefix), System: c.System() || isSystemGroup(group),
			Messages: c.Nums(), Bytes: c.Size()})
	})

	b.producers.Each(func(g string, ch *ClientChannel) {
		s.Producers = append(s.Producers, ClientMetrics{Group: g, Language: languageName(ch.Language), Version: ch.Version})
	})

	online := map[string][]string{} // group -> subscribed topics
	b.consumers.EachGroup(func(info *ConsumerGroupInfo) {
		g := info.Group
		for _, ch := range info.Channels {
			s.Consumers = append(s.Consumers, ClientMetrics{Group: g, Language: languageName(ch.Language),
				Version: ch.Version, ConsumeMode: info.ConsumeType})
		}
		for t := range info.Subscriptions {
			online[g] = append(online[g], t)
		}
	})

	// A group with no live channel counts with its compensated subscriptions (POP and proxied pulls:
	// getConsumerGroupInfo(group, true)); retry topics are skipped, as Java does.
	for _, g := range b.consumers.CompensatedGroups() {
		if _, live := online[g]; live {
			continue
		}
		_, _, ts, _ := b.consumers.CompensatedGroup(g)
		for _, t := range ts {
			if !strings.HasPrefix(t, RetryGroupTopicPrefix) {
				online[g] = append(online[g], t)
			}
		}
	}

	// ConsumerLagCalculator: every subscription group, on every topic it has
	// offsets on or subscribes to.
	names := make([]string, 0, len(groups)+len(online))
	for g := range groups {
		names = append(names, g)
	}
	for g := range online {
		if _, ok := groups[g]; !ok {
			names = append(names, g)
		}
	}
	sort.Strings(names)
	for _, g := range names {
		seen := map[string]bool{}
		var lite liteLagSum
		for _, t := range append(b.offsets.TopicsOfGroup(g), online[g]...) {
			if seen[t] {
				continue
			}
			seen[t] = true
			tc, ok := topics[t]
			if !ok {
				lite.add(b, g, t, topics)
				continue
			}
			s.Lags = append(s.Lags, b.lagOf(g, t, tc.ReadQueueNums, now))
		}
		s.Lags = lite.appendTo(s.Lags, now)
	}
	s.Timer = b.timer.Metrics(now.UnixMilli())
	s.TopicCreate, s.GroupCreate = b.createTimes.metrics()
	s.Pop = b.pop.Metrics(now)
	b.eventMetrics(&s)
	return s
}

func (b *Broker) lagOf(group, topic string, queues int32, now time.Time) LagMetrics {
	l := LagMetrics{Topic: topic, Group: group, Retry: strings.HasPrefix(topic, RetryGroupTopicPrefix),
		System: b.isSystemTopic(topic) || isSystemGroup(group)}
	var oldest int64
	for q := int32(0); q < queues; q++ {
		maxOff := b.store.MaxOffsetInQueue(topic, q)
		off := b.offsets.Query(group, topic, q)
		if off < 0 {
			continue
		}
		off = max(off, b.store.MinOffsetInQueue(topic, q))
		if maxOff <= off {
			continue
		}
		l.Lag += maxOff - off
		if ts := b.store.MessageStoreTimestamp(topic, q, off); ts > 0 && (oldest == 0 || ts < oldest) {
			oldest = ts
		}
	}
	if oldest > 0 {
		l.LagLatencyMs = max(0, now.UnixMilli()-oldest)
	}
	return l
}

// liteLagSum adds up a group's lag in the lite topics of each LITE parent
// (Java 5.5's LiteConsumerLagCalculator, there behind liteLagCountMetricsEnable
// and liteLagLatencyMetricsEnable, both off by default; rmqd's counters are
// always on). The latency is the oldest unconsumed message's age, read for
// at most maxLiteReturn lite topics per group, where Java keeps the
// liteLagLatencyTopK its POPs saw.
type liteLagSum struct {
	parents []string // in order of first sight
	sums    map[string]*LagMetrics
	oldest  map[string]int64
	timed   int
}

func (l *liteLagSum) add(b *Broker, group, lmq string, topics map[string]TopicConfig) {
	parent, _, ok := compat.SplitLiteLMQ(lmq)
	if !ok || !isLiteTopic(topics[parent]) {
		return
	}
	n, first, ok := b.liteLag(group, lmq, l.timed < maxLiteReturn)
	if !ok {
		return
	}
	if l.sums == nil {
		l.sums, l.oldest = map[string]*LagMetrics{}, map[string]int64{}
	}
	m := l.sums[parent]
	if m == nil {
		m = &LagMetrics{Topic: parent, Group: group, System: isSystemGroup(group)}
		l.sums[parent] = m
		l.parents = append(l.parents, parent)
	}
	m.Lag += n
	if l.timed < maxLiteReturn {
		l.timed++
		if o := l.oldest[parent]; first > 0 && (o == 0 || first < o) {
			l.oldest[parent] = first
		}
	}
}

func (l *liteLagSum) appendTo(lags []LagMetrics, now time.Time) []LagMetrics {
	for _, p := range l.parents {
		m := *l.sums[p]
		if o := l.oldest[p]; o > 0 {
			m.LagLatencyMs = max(0, now.UnixMilli()-o)
		}
		lags = append(lags, m)
	}
	return lags
}

// isSystemGroup is BrokerMetricsManager.isSystemGroup: CID_RMQ_SYS_ groups,
// matched without case.
func isSystemGroup(group string) bool {
	const prefix = "cid_rmq_sys_"
	return len(group) >= len(prefix) && strings.EqualFold(group[:len(prefix)], prefix)
}
