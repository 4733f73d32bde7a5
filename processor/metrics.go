package processor

import (
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// MessageSizeBuckets are the upper bounds, in bytes, of the rocketmq_message_size
// histogram: BrokerMetricsManager's view (1 KB, 4 KB, 512 KB, 1 MB, 2 MB, 4 MB).
var MessageSizeBuckets = [...]int64{1 << 10, 4 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20}

// sizeHist counts put sizes per bucket with atomics, so the send path records a
// size without a lock or an allocation; the last slot is +Inf.
type sizeHist struct {
	counts [len(MessageSizeBuckets) + 1]atomic.Int64
	sum    atomic.Int64
}

func (h *sizeHist) observe(v int64) {
	i := 0
	for i < len(MessageSizeBuckets) && v > MessageSizeBuckets[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(v)
}

// SizeHistogram is a read copy of a sizeHist: Counts[i] holds the observations in
// bucket i alone (not cumulative), the last one above every bound.
type SizeHistogram struct {
	Counts [len(MessageSizeBuckets) + 1]uint64
	Sum    int64
}

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

// TimerBoundsSec are TimerMetrics.timerDist: the upper bounds, in seconds from
// now, of rocketmq_timer_message_snapshot's timer_bound_s buckets.
var TimerBoundsSec = [...]int64{5, 60, 300, 900, 3600, 14400, 28800, 86400}

// TimerMetrics is the timer wheel's state (DefaultStoreMetricsManager's timer
// gauges).
type TimerMetrics struct {
	EnqueueLag       int64 // timer-topic records not yet read into the wheel
	EnqueueLatencyMs int64 // age of the oldest of them, 0 when none
	DequeueLag       int64 // messages waiting in the wheel
	DequeueLatencyMs int64 // how far the delivery cursor trails the clock
	// Due[i] counts waiting messages due within (TimerBoundsSec[i-1], TimerBoundsSec[i]] seconds.
	Due [len(TimerBoundsSec)]int64
}

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

	if m := b.admin.stats.topics.Load(); m != nil {
		for topic, c := range *m {
			tm := TopicMetrics{Topic: topic, System: c.system, MessageType: "normal",
				Messages: c.nums.Load(), Bytes: c.size.Load()}
			if mt := strings.ToLower(topics[topic].Attributes["message.type"]); mt != "" && mt != "unspecified" && mt != "mixed" {
				tm.MessageType = mt
			}
			for i := range c.sizes.counts {
				tm.Sizes.Counts[i] = uint64(c.sizes.counts[i].Load())
			}
			tm.Sizes.Sum = c.sizes.sum.Load()
			s.Topics = append(s.Topics, tm)
		}
	}
	if m := b.admin.stats.groups.Load(); m != nil {
		for k, c := range *m {
			s.Groups = append(s.Groups, GroupMetrics{Topic: k.topic, Group: k.group,
				Retry: strings.HasPrefix(k.topic, RetryGroupTopicPrefix), System: c.system || isSystemGroup(k.group),
				Messages: c.nums.Load(), Bytes: c.size.Load()})
		}
	}

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
		for _, t := range append(b.offsets.TopicsOfGroup(g), online[g]...) {
			if seen[t] {
				continue
			}
			seen[t] = true
			tc, ok := topics[t]
			if !ok {
				continue
			}
			s.Lags = append(s.Lags, b.lagOf(g, t, tc.ReadQueueNums, now))
		}
	}
	s.Timer = b.timer.metrics(now.UnixMilli())
	return s
}

// metrics reads the wheel under its lock; a scrape walks the waiting entries
// once.
func (t *timerService) metrics(now int64) TimerMetrics {
	t.mu.Lock()
	defer t.mu.Unlock()
	var m TimerMetrics
	if !t.loaded {
		return m
	}
	m.EnqueueLag = max(t.b.store.MaxOffsetInQueue(TopicTimer, 0)-t.readPos, 0)
	if m.EnqueueLag > 0 {
		if ts := t.b.store.MessageStoreTimestamp(TopicTimer, 0, t.readPos); ts > 0 {
			m.EnqueueLatencyMs = max(now-ts, 0)
		}
	}
	m.DequeueLag = int64(t.count)
	m.DequeueLatencyMs = max(now-t.cursor*timerPrecisionMs, 0)
	for _, slot := range t.wheel {
		for _, e := range slot {
			in := (e.deliver - now) / 1000
			for i, bound := range TimerBoundsSec {
				if in <= bound {
					m.Due[i]++
					break
				}
			}
		}
	}
	return m
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

// isSystemGroup is BrokerMetricsManager.isSystemGroup: CID_RMQ_SYS_ groups,
// matched without case.
func isSystemGroup(group string) bool {
	const prefix = "cid_rmq_sys_"
	return len(group) >= len(prefix) && strings.EqualFold(group[:len(prefix)], prefix)
}
