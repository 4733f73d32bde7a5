package processor

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"rmqd/processor/stats"
)

// protectPeriod is how often protectBroker runs (Java: every 3 minutes).
const protectPeriod = 3 * time.Minute

// fallKey names one queue a group pulls, as Java's queueId@topic@group.
type fallKey struct {
	group, topic string
	queueID      int32
}

// fallBehindTable holds, per group and queue, how far behind the commitlog's
// end the group's last pull read (Java's GROUP_GET_FALL_SIZE moment stats).
// It is filled only while disableConsumeIfConsumerReadSlowly is on and emptied
// by each protectBroker run, so it holds the queues pulled within one period.
// A pull of a known queue stores without a lock or an allocation.
type fallBehindTable struct {
	m stats.COWMap[fallKey, atomic.Int64]
}

// record keeps v for the queue; group and topic may alias a request frame and
// are cloned only when the queue is new.
func (t *fallBehindTable) record(group, topic string, queueID int32, v int64) {
	t.m.Get(fallKey{group, topic, queueID}, cloneFallKey, newFall).Store(v)
}

func newFall() *atomic.Int64 { return new(atomic.Int64) }

func cloneFallKey(k fallKey) fallKey {
	return fallKey{strings.Clone(k.group), strings.Clone(k.topic), k.queueID}
}

// recordFallBehind notes a pull's result for protectBroker: the bytes past
// what it read, 0 once it reached the queue's end (as Java's getMessage does).
func (b *Broker) recordFallBehind(group, topic string, queueID int32, fallBehind int64) {
	if b.conf().DisableConsumeIfConsumerReadSlowly {
		b.fallBehind.record(group, topic, queueID, fallBehind)
	}
}

// protectBroker is Java's BrokerController.protectBroker: with
// disableConsumeIfConsumerReadSlowly, a group whose pull of some queue was
// more than consumerFallbehindThreshold bytes behind gets consumeEnable=false,
// so its pulls and POPs are refused NO_PERMISSION until an admin turns it on.
func (b *Broker) protectBroker(context.Context) {
	conf := b.conf()
	slow := map[string]int64{}
	b.fallBehind.m.Range(func(key fallKey, v *atomic.Int64) {
		if fall := v.Load(); fall > conf.ConsumerFallbehindThreshold {
			slow[key.group] = max(slow[key.group], fall)
		}
	})
	b.fallBehind.m.Drop(func(fallKey) bool { return true })
	if !conf.DisableConsumeIfConsumerReadSlowly {
		return
	}
	for group, fall := range slow {
		changed, err := b.groups.DisableConsume(group)
		if err != nil {
			b.log.Error("persist subscriptionGroup.json", "err", err)
		}
		if changed {
			b.log.Warn("consumer group reads too slowly, consumption disabled", "group", group, "fallBehindBytes", fall,
				"threshold", conf.ConsumerFallbehindThreshold)
		}
	}
}
