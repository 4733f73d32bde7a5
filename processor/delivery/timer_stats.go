package delivery

import (
	"slices"
	"strings"

	"rmqd/codec"
)

// DelayLatencyBoundsSec are the buckets of rocketmq_delay_message_latency
// (DefaultStoreMetricsManager's view): 1 min, 10 min, 1 h, 12 h, 1 d, 3 d.
var DelayLatencyBoundsSec = [...]int64{60, 600, 3600, 43200, 86400, 259200}

// timerTopic counts one real topic's timers (under Timer.mu, which the wheel
// holds while it reads and delivers anyway).
type timerTopic struct {
	name               string
	enqueued, dequeued int64
	// latency is a histogram of (deliver time - born time) in whole seconds,
	// one count per bucket, the last +Inf.
	latency    [len(DelayLatencyBoundsSec) + 1]uint64
	latencySum int64
}

// TimerTopicMetrics is one real topic's timer figures: rocketmq_timing_messages
// (Timing), rocketmq_timer_enqueue_total, rocketmq_timer_dequeue_total and
// rocketmq_delay_message_latency (Latency per bucket, not cumulative).
type TimerTopicMetrics struct {
	Topic                      string
	Timing, Enqueued, Dequeued int64
	Latency                    [len(DelayLatencyBoundsSec) + 1]uint64
	LatencySumSec              int64
}

// noTopic marks an entry without REAL_TOPIC (Java counts it under no topic;
// rmqd leaves it out). It is the zero value: a topic reference is 1 + its
// index in Timer.topics.
const noTopic = 0

// topicRef is the reference of m's real topic in t.topics, added the first
// time (under t.mu): the name is cloned only then, as m aliases the store.
func (t *Timer) topicRef(m *codec.Message) int32 {
	real, ok := codec.PropertyValue(m.Properties, codec.PropRealTopic)
	if !ok {
		return noTopic
	}
	if i, ok := t.topicIdx[real]; ok {
		return i + 1
	}
	if t.topicIdx == nil {
		t.topicIdx = map[string]int32{}
	}
	name := strings.Clone(real)
	i := int32(len(t.topics))
	t.topics = append(t.topics, timerTopic{name: name})
	t.topicIdx[name] = i
	return i + 1
}

// countEnqueue is incTimerEnqueueCount and the delay latency record of a
// timer read into the wheel.
func (t *Timer) countEnqueue(topic int32, deliverMs, bornMs int64) {
	if topic == noTopic {
		return
	}
	s := &t.topics[topic-1]
	s.enqueued++
	sec := (deliverMs - bornMs) / 1000
	i := 0
	for i < len(DelayLatencyBoundsSec) && sec > DelayLatencyBoundsSec[i] {
		i++
	}
	s.latency[i]++
	s.latencySum += sec
}

// countDequeue is incTimerDequeueCount: an entry left the wheel (put back,
// rolled or dropped).
func (t *Timer) countDequeue(topic int32) {
	if topic != noTopic {
		t.topics[topic-1].dequeued++
	}
}

// topicMetrics lists every topic seen, with its messages now in the wheel
// (markers of recalled messages left out), under t.mu.
func (t *Timer) topicMetrics() []TimerTopicMetrics {
	if len(t.topics) == 0 {
		return nil
	}
	out := make([]TimerTopicMetrics, len(t.topics))
	for i := range t.topics {
		s := &t.topics[i]
		out[i] = TimerTopicMetrics{Topic: s.name, Enqueued: s.enqueued, Dequeued: s.dequeued, Latency: s.latency,
			LatencySumSec: s.latencySum}
	}
	for _, slot := range t.wheel {
		for _, e := range slot {
			if e.topic != noTopic && !e.marker {
				out[e.topic-1].Timing++
			}
		}
	}
	return out
}

// ForgetTopic drops a deleted topic's counts (Java's removeTimingCount on
// DELETE_TOPIC_IN_BROKER), so a broker whose topics come and go keeps a
// table only of the live ones. Its entries still in the wheel are delivered
// uncounted; the others' references shift down with the table. A topic
// delete is rare, so walking the wheel here is acceptable (a scrape does).
func (t *Timer) ForgetTopic(topic string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i, ok := t.topicIdx[topic]
	if !ok {
		return
	}
	ref := i + 1
	t.topics = slices.Delete(t.topics, int(i), int(i)+1) // zeroes the tail: no name kept behind
	delete(t.topicIdx, topic)
	for name, j := range t.topicIdx {
		if j > i {
			t.topicIdx[name] = j - 1
		}
	}
	for _, slot := range t.wheel {
		for k := range slot {
			switch e := &slot[k]; {
			case e.topic == ref:
				e.topic = noTopic
			case e.topic > ref:
				e.topic--
			}
		}
	}
}
