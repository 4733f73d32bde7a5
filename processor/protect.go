package processor

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"
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
type fallBehindTable struct {
	m sync.Map // fallKey → *atomic.Int64
}

// record keeps v for the queue; group and topic may alias a request frame and
// are cloned only when the queue is new.
func (t *fallBehindTable) record(group, topic string, queueID int32, v int64) {
	k := fallKey{group, topic, queueID}
	if p, ok := t.m.Load(k); ok {
		p.(*atomic.Int64).Store(v)
		return
	}
	p := new(atomic.Int64)
	p.Store(v)
	t.m.Store(fallKey{strings.Clone(group), strings.Clone(topic), queueID}, p)
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
	b.fallBehind.m.Range(func(k, v any) bool {
		b.fallBehind.m.Delete(k)
		key, fall := k.(fallKey), v.(*atomic.Int64).Load()
		if fall > conf.ConsumerFallbehindThreshold {
			slow[key.group] = max(slow[key.group], fall)
		}
		return true
	})
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
