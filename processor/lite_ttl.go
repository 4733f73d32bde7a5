package processor

import (
	"context"
	"time"

	"rmqd/compat"
)

// Java 5.5's LiteLifecycleManager: a lite topic whose last message is older
// than its parent's lite.topic.expiration (minutes; -1 or 0 keep it) goes,
// with its consume queue, every group's offsets in it, its batch states and
// its subscriptions (the clients are not told, as in Java). A deleted LITE
// parent takes its lite topics along (cleanByParentTopic).

// idleQueueDropper is the store's guarded delete (store.DeleteIdleQueues).
type idleQueueDropper interface {
	DeleteIdleQueues(idle map[string]int64) []string
}

// liteTTLLoop looks for idle lite topics every liteTtlCheckInterval, the
// first time once the broker has been up minLiteTTl: the time a broker was
// down is no one's idleness.
func (b *Broker) liteTTLLoop(ctx context.Context) {
	up := time.Now()
	wait := func() time.Duration {
		p := b.conf().Pop
		if left := compat.Millis(p.MinLiteTTl) - time.Since(up); left > 0 {
			return left
		}
		return compat.Millis(max(p.LiteTtlCheckInterval, 1000))
	}
	periodic(ctx, wait(), wait, func(context.Context) {
		if time.Since(up) >= compat.Millis(b.conf().Pop.MinLiteTTl) {
			b.cleanExpiredLite(time.Now())
		}
	})
}

// cleanExpiredLite is cleanExpiredLiteTopic: it returns the lite topics
// (their queues) it deleted.
func (b *Broker) cleanExpiredLite(now time.Time) []string {
	ttl := map[string]int64{} // parent -> ms
	for name, tc := range b.topics.Snapshot().TopicConfigTable {
		if m := liteExpiration(tc); isLiteTopic(tc) && m > 0 {
			ttl[name] = int64(m) * 60 * 1000
		}
	}
	dropper, ok := b.store.(idleQueueDropper)
	if len(ttl) == 0 || !ok {
		return nil
	}
	_, lmqs := b.lmqTopics()
	floor := b.conf().Pop.MinLiteTTl
	idle := map[string]int64{}
	for _, q := range lmqs {
		parent, _, ok := compat.SplitLiteLMQ(q)
		limit, bound := ttl[parent]
		if !ok || !bound {
			continue
		}
		end := b.store.MaxOffsetInQueue(q, 0)
		last := int64(-1) // none left: Java counts it idle since the epoch
		if end > 0 {
			last = b.store.MessageStoreTimestamp(q, 0, end-1)
		}
		if quiet := now.UnixMilli() - last; quiet >= floor && quiet > limit {
			idle[q] = end
		}
	}
	if len(idle) == 0 {
		return nil
	}
	gone := dropper.DeleteIdleQueues(idle)
	b.forgetQueues(gone)
	if len(gone) > 0 {
		b.log.Info("expired lite topics deleted", "count", len(gone), "kept", len(idle)-len(gone))
	}
	return gone
}

// liteQueuesOf lists the queues of parent's lite topics (collectByParentTopic).
func (b *Broker) liteQueuesOf(parent string) []string {
	_, lmqs := b.lmqTopics()
	var out []string
	for _, q := range lmqs {
		if p, _, ok := compat.SplitLiteLMQ(q); ok && p == parent {
			out = append(out, q)
		}
	}
	return out
}

// cleanLiteOfParent is cleanByParentTopic: every lite topic of a LITE
// parent goes with it.
func (b *Broker) cleanLiteOfParent(parent string) {
	drop := b.liteQueuesOf(parent)
	if len(drop) == 0 {
		return
	}
	b.store.DeleteTopics(drop)
	b.forgetQueues(drop)
	b.log.Info("lite topics deleted with their parent", "topic", parent, "count", len(drop))
}

// forgetQueues drops what the broker keeps about deleted queues' topics
// besides their files: offsets, POP state, statistics.
func (b *Broker) forgetQueues(topics []string) {
	if len(topics) == 0 {
		return
	}
	set := make(map[string]struct{}, len(topics))
	for _, t := range topics {
		set[t] = struct{}{}
	}
	in := func(t string) bool { _, ok := set[t]; return ok }
	b.offsets.DeleteTopics(in)
	b.pop.ForgetTopics(in)
	b.admin.stats.DeleteTopics(in)
}
