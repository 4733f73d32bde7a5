package processor

import (
	"strings"
	"sync/atomic"

	"rmqd/codec"
	"rmqd/processor/stats"
)

// dlqKey labels rocketmq_send_to_dlq_messages_total: the group and topic
// Java's send paths name (consumer group and origin topic for a send-back,
// producer group and %RETRY% topic for a retry send).
type dlqKey struct{ group, topic string }

// eventCounts are BrokerMetricsManager's counters that no statistics table
// already keeps: messages routed to a DLQ, transactions committed and rolled
// back, and half messages waiting per real topic. A known series adds without
// a lock or an allocation (stats.COWMap).
type eventCounts struct {
	dlq      stats.COWMap[dlqKey, atomic.Int64]
	commit   stats.COWMap[string, atomic.Int64]
	rollback stats.COWMap[string, atomic.Int64]
	half     stats.COWMap[string, atomic.Int64] // TransactionMetrics: +1 per half put, -1 per settle
	finish   stats.COWMap[string, finishHist]
}

// FinishLatencyBoundsSec are the buckets of rocketmq_finish_message_latency
// (BrokerMetricsManager's commitLatencyBuckets): 5 s, 1 min, 10 min, 1 h, 12 h, 24 h.
var FinishLatencyBoundsSec = [...]int64{5, 60, 600, 3600, 43200, 86400}

// finishHist counts commits by whole seconds from the half message's birth,
// per bucket (the last one +Inf), with atomics.
type finishHist struct {
	counts [len(FinishLatencyBoundsSec) + 1]atomic.Int64
	sum    atomic.Int64
}

func newFinishHist() *finishHist { return new(finishHist) }

func newEventCount() *atomic.Int64 { return new(atomic.Int64) }

func cloneDLQKey(k dlqKey) dlqKey { return dlqKey{strings.Clone(k.group), strings.Clone(k.topic)} }

// countDLQ is getSendToDlqMessages().add(1): counted when the broker decides
// to route to the DLQ, whatever the put's outcome, as Java does.
func (e *eventCounts) countDLQ(group, topic string) {
	e.dlq.Get(dlqKey{group, topic}, cloneDLQKey, newEventCount).Add(1)
}

func (e *eventCounts) add(m *stats.COWMap[string, atomic.Int64], topic string, n int64) {
	m.Get(topic, strings.Clone, newEventCount).Add(n)
}

// countHalfPut counts a stored half message under its REAL_TOPIC (the
// properties toHalfMessage wrote).
func (e *eventCounts) countHalfPut(props string) {
	if t, ok := codec.PropertyValue(props, codec.PropRealTopic); ok {
		e.add(&e.half, t, 1)
	}
}

// countEnd counts a transaction settled by END_TRANSACTION: the commit or
// rollback counter, and one half message fewer; a commit also records its
// latency from the half message's birth (bornMs), in whole seconds as Java.
func (e *eventCounts) countEnd(topic string, commit bool, bornMs, nowMs int64) {
	if commit {
		e.add(&e.commit, topic, 1)
		sec := (nowMs - bornMs) / 1000
		h := e.finish.Get(topic, strings.Clone, newFinishHist)
		h.counts[stats.BucketIndex(FinishLatencyBoundsSec[:], sec)].Add(1)
		h.sum.Add(sec)
	} else {
		e.add(&e.rollback, topic, 1)
	}
	e.add(&e.half, topic, -1)
}

// forgetTopic drops a deleted topic's series, as its other per-topic series go.
func (e *eventCounts) forgetTopic(topic string) {
	e.dlq.Drop(func(k dlqKey) bool { return k.topic == topic })
	same := func(t string) bool { return t == topic }
	e.commit.Drop(same)
	e.rollback.Drop(same)
	e.half.Drop(same)
	e.finish.Drop(same)
}

// forgetGroup drops a deleted group's DLQ series.
func (e *eventCounts) forgetGroup(group string) {
	e.dlq.Drop(func(k dlqKey) bool { return k.group == group })
}

// DLQMetrics is one rocketmq_send_to_dlq_messages_total series.
type DLQMetrics struct {
	Group, Topic string
	System       bool
	N            int64
}

// TopicCount is one per-topic counter or gauge value.
type TopicCount struct {
	Topic string
	N     int64
}

func topicCounts(m *stats.COWMap[string, atomic.Int64], floor bool) []TopicCount {
	if m.Len() == 0 {
		return nil
	}
	out := make([]TopicCount, 0, m.Len())
	m.Range(func(t string, v *atomic.Int64) {
		n := v.Load()
		if floor {
			// Counted since the start: a settle of a half message put
			// before a restart would go below zero.
			n = max(n, 0)
		}
		out = append(out, TopicCount{t, n})
	})
	return out
}

// FinishLatencyMetrics is one topic's rocketmq_finish_message_latency:
// Counts per bucket (not cumulative, the last +Inf), SumSec their sum.
type FinishLatencyMetrics struct {
	Topic  string
	Counts [len(FinishLatencyBoundsSec) + 1]uint64
	SumSec int64
}

// eventMetrics fills the snapshot's DLQ and transaction series.
func (b *Broker) eventMetrics(s *MetricsSnapshot) {
	e := &b.events
	e.dlq.Range(func(k dlqKey, v *atomic.Int64) {
		s.DLQ = append(s.DLQ, DLQMetrics{Group: k.group, Topic: k.topic,
			System: b.isSystemTopic(k.topic) || isSystemGroup(k.group), N: v.Load()})
	})
	s.Commits = topicCounts(&e.commit, false)
	s.Rollbacks = topicCounts(&e.rollback, false)
	s.HalfMessages = topicCounts(&e.half, true)
	e.finish.Range(func(t string, h *finishHist) {
		m := FinishLatencyMetrics{Topic: t, SumSec: h.sum.Load()}
		for i := range h.counts {
			m.Counts[i] = uint64(h.counts[i].Load())
		}
		s.FinishLatency = append(s.FinishLatency, m)
	})
}
