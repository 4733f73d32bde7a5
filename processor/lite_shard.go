package processor

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"rmqd/codec"
	"rmqd/compat"
)

// Java 5.5's LiteShardingImpl: rocketmq-proxy sends a lite topic's messages to
// one write queue of the parent topic, consistentHash(liteTopic.hashCode(),
// queues) over the route's write queues sorted by broker and queue, and tells
// every broker of the parent each subscription; a broker keeps a subscription
// only when the lite topic is sharded to it or already has messages there
// (isSubscriptionActive). Without that, each broker of an n-group cluster
// would hold every subscription, and reach maxLiteSubscriptionCount n times
// sooner than Java's.

// liteRouteTTL is how long a parent topic's route is used before it is asked
// again (Java's TopicRouteInfoManager refreshes every 30 s).
const liteRouteTTL = 30 * time.Second

// liteRoutes caches, per LITE parent topic, the broker name of each write
// queue in the proxy's order. A parent's first subscription asks the name
// servers (on a worker, as Java's tryToFindTopicPublishInfo does);
// liteRouteLoop refreshes what is known every liteRouteTTL. A route that
// could not be had is kept empty until then: every subscription is kept, as
// Java keeps it when the topic has no publish info.
type liteRoutes struct {
	mu     sync.Mutex
	routes map[string][]string
}

func newLiteRoutes() *liteRoutes { return &liteRoutes{routes: map[string][]string{}} }

// liteShardActive is isSubscriptionActive: the lite topic is sharded to this
// broker, or its queue holds messages here.
func (b *Broker) liteShardActive(parent, lmq string) bool {
	return b.store.MaxOffsetInQueue(lmq, 0) > 0 || b.liteShardOf(parent, lmq) == b.conf().BrokerName
}

// liteShardOf is shardingByLmqName: the broker group a lite topic's queue
// belongs to; this one while the parent's route is not known, as in Java.
func (b *Broker) liteShardOf(parent, lmq string) string {
	self := b.conf().BrokerName
	_, lite, ok := compat.SplitLiteLMQ(lmq)
	if !ok {
		return self
	}
	r := b.liteRoutes
	r.mu.Lock()
	queues, known := r.routes[parent]
	r.mu.Unlock()
	if !known {
		queues = b.fetchLiteRoute(context.Background(), parent)
	}
	if len(queues) == 0 {
		return self
	}
	return queues[compat.ConsistentHash(int64(compat.JavaStringHash(lite)), len(queues))]
}

// fetchLiteRoute asks the name servers for parent's route and keeps its
// write queues; when it cannot be had, the queues known stay (none at first,
// and with no name server).
func (b *Broker) fetchLiteRoute(ctx context.Context, parent string) []string {
	var queues []string
	var err error
	if b.ns != nil {
		var route *codec.TopicRouteData
		if route, err = b.topicRoute(ctx, parent); err == nil {
			queues = liteWriteQueues(route)
		}
	}
	r := b.liteRoutes
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, known := r.routes[parent]; known && (b.ns == nil || err != nil) {
		return old
	}
	if err != nil {
		b.log.Debug("lite topic route", "topic", parent, "err", err)
	}
	r.routes[parent] = queues
	return queues
}

// liteRouteLoop refreshes the routes known, and forgets those of topics no
// longer LITE.
func (b *Broker) liteRouteLoop(ctx context.Context) {
	r := b.liteRoutes
	everyTick(ctx, liteRouteTTL, func(ctx context.Context) {
		r.mu.Lock()
		parents := slices.Collect(maps.Keys(r.routes))
		r.mu.Unlock()
		for _, p := range parents {
			if tc, ok := b.topics.Select(p); !ok || !isLiteTopic(tc) {
				r.mu.Lock()
				delete(r.routes, p)
				r.mu.Unlock()
				continue
			}
			b.fetchLiteRoute(ctx, p)
		}
	})
}

// liteWriteQueues lists the broker name of each write queue of a route, as
// the proxy's MessageQueueSelector.buildWrite orders them: queues of brokers
// with a master, writable (or named by orderTopicConf), sorted by broker name
// and queue id.
func liteWriteQueues(route *codec.TopicRouteData) []string {
	master := map[string]bool{}
	for _, bd := range route.BrokerDatas {
		if bd != nil && bd.BrokerAddrs[0] != "" {
			master[bd.BrokerName] = true
		}
	}
	type q struct {
		broker string
		id     int
	}
	var qs []q
	add := func(broker string, n int) {
		if !master[broker] {
			return
		}
		for i := range n {
			qs = append(qs, q{broker, i})
		}
	}
	if route.OrderTopicConf != "" {
		for _, item := range strings.Split(route.OrderTopicConf, ";") {
			name, num, ok := strings.Cut(item, ":")
			if n, err := strconv.Atoi(num); ok && err == nil {
				add(name, n)
			}
		}
	} else {
		for _, qd := range route.QueueDatas {
			if qd.Perm&PermWrite != 0 {
				add(qd.BrokerName, int(qd.WriteQueueNums))
			}
		}
	}
	slices.SortFunc(qs, func(a, b q) int { return cmp.Or(strings.Compare(a.broker, b.broker), cmp.Compare(a.id, b.id)) })
	qs = slices.CompactFunc(qs, func(a, b q) bool { return a == b }) // Java's set
	out := make([]string, len(qs))
	for i, x := range qs {
		out[i] = x.broker
	}
	return out
}
