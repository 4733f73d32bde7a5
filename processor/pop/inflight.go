package pop

import (
	"sync"
	"time"
)

// inflight is PopInflightMessageCounter: per topic, group and queue, the
// messages popped and neither acked nor revived yet. As Java it is a
// memory-only estimate: it starts at zero with the broker, so acks and
// revives of messages popped before the start are not counted down
// (Java compares popTime with shouldStartTime).
type inflight struct {
	start int64 // ms
	mu    sync.Mutex
	n     map[inflightKey]int64
}

type inflightKey struct {
	topic, group string
	queueID      int32
}

func newInflight() *inflight {
	return &inflight{start: time.Now().UnixMilli(), n: map[inflightKey]int64{}}
}

func (f *inflight) add(topic, group string, queueID int32, delta int64) {
	if delta <= 0 {
		return
	}
	f.mu.Lock()
	f.n[inflightKey{topic, group, queueID}] += delta
	f.mu.Unlock()
}

// done counts down messages popped at popTime (an ack or a revive).
func (f *inflight) done(topic, group string, queueID int32, popTime, delta int64) {
	if popTime < f.start {
		return
	}
	k := inflightKey{topic, group, queueID}
	f.mu.Lock()
	defer f.mu.Unlock()
	if v, ok := f.n[k]; ok {
		if v -= delta; v > 0 {
			f.n[k] = v
		} else {
			delete(f.n, k)
		}
	}
}

// clear forgets a queue (an ordered queue no longer blocked has nothing in flight).
func (f *inflight) clear(topic, group string, queueID int32) {
	f.mu.Lock()
	delete(f.n, inflightKey{topic, group, queueID})
	f.mu.Unlock()
}

func (f *inflight) get(topic, group string, queueID int32) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n[inflightKey{topic, group, queueID}]
}

// ForgetTopic and ForgetGroup drop the counts of a deleted topic or group
// (Java's clearInFlightMessageNumByTopicName / ByGroupName), and its metrics.
func (s *Service) ForgetTopic(topic string) {
	s.ForgetTopics(func(t string) bool { return t == topic })
}

// ForgetTopics is ForgetTopic of every topic matched, lite topics' queues
// included: their subscriptions (Java's cleanSubscription, the clients are
// not told: a proxy's next COMPLETE_ADD brings back those still wanted) and
// batch states go too.
func (s *Service) ForgetTopics(match func(topic string) bool) {
	s.counts.forget(func(k countKey) bool { return match(k.topic) })
	s.inflight.forget(func(k inflightKey) bool { return match(k.topic) })
	s.lite.forget(match)
	s.liteOrder.ForgetTopics(match)
}

// ForgetGroup: see ForgetTopic.
func (s *Service) ForgetGroup(group string) {
	s.counts.forget(func(k countKey) bool { return k.group == group })
	s.inflight.forget(func(k inflightKey) bool { return k.group == group })
}

func (f *inflight) forget(match func(inflightKey) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.n {
		if match(k) {
			delete(f.n, k)
		}
	}
}

// popShouldStop is PopMessageProcessor.isPopShouldStop (asked with
// enablePopMessageThreshold): a queue with more than limit
// (popInflightMessageThreshold) messages in flight for the group is not popped.
func (s *Service) popShouldStop(limit int64, topic, group string, queueID int32) bool {
	return s.inflight.get(topic, group, queueID) > limit
}
