package pop

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/remoting"
)

// liteSubs is LiteSubscriptionRegistry (Java 5.5): the lite topics (as
// their queues, %LMQ%$parent$lite) each client of a proxy subscribed to,
// and who subscribes to each queue, for POP_LITE_MESSAGE and for waking
// held POPs when a lite topic gets a message. Kept in memory, as Java does:
// proxies send the whole subscription again (COMPLETE_ADD) as they go on.
type liteSubs struct {
	mu      sync.Mutex
	clients map[string]*liteClient
	byLMQ   map[string]map[string]string // queue -> clientId -> group
	active  int                          // (client, queue) pairs
	// wild holds the wildcard groups (lite_wild.go) by parent topic and
	// group; wilds counts them, so arrivals look only when there is one.
	// seq numbers the marks of their lite topics.
	wild  map[string]map[string]*liteWild
	wilds atomic.Int32
	seq   uint64
}

type liteClient struct {
	group, topic string
	lmqs         map[string]struct{}
	updated      int64 // ms of the last change; expiry counts from it
	accessed     int64 // ms of the last POP_LITE_MESSAGE
	next         int   // where the next POP starts in the sorted queues
	// conn is the proxy connection its last add came on, where
	// NOTIFY_UNSUBSCRIBE_LITE goes (Java's clientChannels).
	conn remoting.Conn
}

// liteEvicted is a client an exclusive group's new subscriber took a lite
// topic from: it is told, and the group's offset there may be reset.
type liteEvicted struct {
	clientID, lmq string
	conn          remoting.Conn
}

func newLiteSubs() *liteSubs {
	return &liteSubs{clients: map[string]*liteClient{}, byLMQ: map[string]map[string]string{},
		wild: map[string]map[string]*liteWild{}}
}

// errLiteQuota is LiteQuotaException: the broker holds maxLiteSubscriptionCount pairs.
type errLiteQuota struct{ max int64 }

func (e errLiteQuota) Error() string {
	return fmt.Sprintf("org.apache.rocketmq.broker.lite.LiteQuotaException: lite subscription quota exceeded %d", e.max)
}

// clientLocked finds or makes a client's entry; nil when making one would
// hold more clients than max (clients without lite topics count too: each
// is memory a request made).
func (l *liteSubs) clientLocked(clientID, group, topic string, now, max int64) *liteClient {
	c := l.clients[clientID]
	if c == nil {
		if int64(len(l.clients)) >= max {
			return nil
		}
		c = &liteClient{group: group, topic: topic, lmqs: map[string]struct{}{}}
		l.clients[clientID] = c
	}
	c.updated = now
	return c
}

// addLocked subscribes the client to lmq; true when lmq is a wildcard
// group's made-up name and the group is new to the parent.
func (l *liteSubs) addLocked(clientID string, c *liteClient, lmq string) (newWild bool) {
	if _, ok := c.lmqs[lmq]; ok {
		return false
	}
	c.lmqs[lmq] = struct{}{}
	subs := l.byLMQ[lmq]
	if subs == nil {
		subs = map[string]string{}
		l.byLMQ[lmq] = subs
	}
	subs[clientID] = c.group
	l.active++
	return isWildcardLMQ(lmq) && l.joinWildLocked(clientID, c)
}

func (l *liteSubs) removeLocked(clientID string, c *liteClient, lmq string) {
	if _, ok := c.lmqs[lmq]; !ok {
		return
	}
	delete(c.lmqs, lmq)
	if isWildcardLMQ(lmq) {
		l.leaveWildLocked(clientID, c)
	}
	if subs := l.byLMQ[lmq]; subs != nil {
		delete(subs, clientID)
		if len(subs) == 0 {
			delete(l.byLMQ, lmq)
		}
	}
	l.active--
}

// addPartial is addPartialSubscription. Java checks the broker's quota once
// per request; rmqd checks it per queue added, so one request cannot go past it.
// In an exclusive group (lite.sub.model=Exclusive) a lite topic is taken from
// the group's other clients, which are listed to be told.
func (l *liteSubs) addPartial(clientID, group, topic string, lmqs []string, max int64, exclusive bool, conn remoting.Conn) (added []string, evicted []liteEvicted, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if int64(l.active) >= max {
		return nil, nil, errLiteQuota{max}
	}
	c := l.clientLocked(clientID, group, topic, time.Now().UnixMilli(), max)
	if c == nil {
		return nil, nil, errLiteQuota{max}
	}
	c.conn = conn
	for _, q := range lmqs {
		if exclusive {
			evicted = l.excludeLocked(clientID, group, q, evicted)
		}
		if _, ok := c.lmqs[q]; ok {
			continue
		}
		if int64(l.active) >= max {
			return added, evicted, errLiteQuota{max}
		}
		l.addLocked(clientID, c, q)
		added = append(added, q)
	}
	return added, evicted, nil
}

// excludeLocked is excludeClientByLmqName: the group's other clients lose the queue.
func (l *liteSubs) excludeLocked(clientID, group, lmq string, evicted []liteEvicted) []liteEvicted {
	for other, g := range l.byLMQ[lmq] {
		if other == clientID || g != group {
			continue
		}
		oc := l.clients[other]
		if oc == nil {
			continue
		}
		l.removeLocked(other, oc, lmq)
		if len(oc.lmqs) == 0 {
			delete(l.clients, other)
		}
		evicted = append(evicted, liteEvicted{clientID: other, lmq: lmq, conn: oc.conn})
	}
	return evicted
}

// removePartial is removePartialSubscription; it lists the queues the
// client did hold.
func (l *liteSubs) removePartial(clientID string, lmqs []string) (removed []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.clients[clientID]
	if c == nil {
		return nil
	}
	c.updated = time.Now().UnixMilli()
	for _, q := range lmqs {
		if _, ok := c.lmqs[q]; ok {
			l.removeLocked(clientID, c, q)
			removed = append(removed, q)
		}
	}
	return removed
}

// addComplete is addCompleteSubscription: the client's set becomes lmqs
// (a wildcard group's client: the group's made-up name; newWild when that
// group is new to the parent).
// Java takes the whole set whatever the quota; rmqd refuses what would go
// past it (a proxy's client is bounded by its group's lite.sub.client.quota
// already, 2,000 by default).
func (l *liteSubs) addComplete(clientID, group, topic string, lmqs []string, wildcard bool, max int64, conn remoting.Conn) (newWild bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.clientLocked(clientID, group, topic, time.Now().UnixMilli(), max)
	if c == nil {
		return false, errLiteQuota{max}
	}
	if wildcard {
		lmqs = []string{wildcardLMQ(c.topic, c.group)}
	}
	c.conn = conn
	want := make(map[string]struct{}, len(lmqs))
	for _, q := range lmqs {
		want[q] = struct{}{}
	}
	for q := range c.lmqs {
		if _, ok := want[q]; !ok {
			l.removeLocked(clientID, c, q)
		}
	}
	for _, q := range lmqs {
		if _, ok := c.lmqs[q]; ok {
			continue
		}
		if int64(l.active) >= max {
			return newWild, errLiteQuota{max}
		}
		newWild = l.addLocked(clientID, c, q) || newWild
	}
	return newWild, nil
}

// removeComplete is removeCompleteSubscription: the client is gone.
func (l *liteSubs) removeComplete(clientID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.clients[clientID]; c != nil {
		l.dropLocked(clientID, c)
	}
}

// dropLocked forgets a client and its subscriptions.
func (l *liteSubs) dropLocked(clientID string, c *liteClient) {
	for q := range c.lmqs {
		l.removeLocked(clientID, c, q)
	}
	delete(l.clients, clientID)
}

// queuesOf lists the queues clientID subscribes to under group and topic,
// starting a little further on each time so that no queue is always last.
// A wildcard group's client gets its group's marked lite topics, with their
// marks (nil for others).
func (l *liteSubs) queuesOf(clientID, group, topic string) ([]string, []uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.clients[clientID]
	if c == nil || c.group != group || c.topic != topic || len(c.lmqs) == 0 {
		return nil, nil
	}
	c.accessed = time.Now().UnixMilli()
	if _, ok := c.lmqs[wildcardLMQ(topic, group)]; ok {
		return l.wildQueuesLocked(c)
	}
	qs := slices.Sorted(maps.Keys(c.lmqs))
	c.next = (c.next + 1) % len(qs)
	return append(qs[c.next:], qs[:c.next]...), nil
}

// LiteQueues lists, sorted, the lite topic queues a client subscribes to
// under group and topic.
func (s *Service) LiteQueues(clientID, group, topic string) []string {
	qs, _, ok := s.LiteClient(clientID, 0)
	if !ok || qs.Group != group || qs.Topic != topic {
		return nil
	}
	return qs.Queues
}

// LiteClientInfo is what GET_LITE_CLIENT_INFO shows of a client.
type LiteClientInfo struct {
	Group, Topic string
	Queues       []string // sorted
	LastAccess   int64    // ms of its last POP_LITE_MESSAGE, 0 if none
}

// LiteClient describes a client's lite subscription; n is how many lite
// topics it holds (Queues lists at most max of them; max <= 0: all).
func (s *Service) LiteClient(clientID string, max int) (info LiteClientInfo, n int, ok bool) {
	l := s.lite
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.clients[clientID]
	if c == nil {
		return LiteClientInfo{}, 0, false
	}
	qs := slices.Sorted(maps.Keys(c.lmqs))
	if max > 0 && len(qs) > max {
		qs = qs[:max]
	}
	return LiteClientInfo{Group: c.group, Topic: c.topic, Queues: qs, LastAccess: c.accessed}, len(c.lmqs), true
}

// LiteSubscriptions is how many (client, lite topic) subscriptions the
// broker holds; LiteOrderCount how many lite topic batches it tracks.
func (s *Service) LiteSubscriptions() int {
	s.lite.mu.Lock()
	defer s.lite.mu.Unlock()
	return s.lite.active
}

// LiteOrderCount is how many lite topics' batch states the broker keeps.
func (s *Service) LiteOrderCount() int { return s.liteOrder.Count() }

// LiteSubscribers lists the (client id, group) pairs subscribed to a lite
// topic's queue.
func (s *Service) LiteSubscribers(lmq string) [][2]string { return s.lite.subscribers(lmq) }

// TriggerLite is TRIGGER_LITE_DISPATCH: the held POPs of the client (or of
// every client of the group) look at their lite topics again.
func (s *Service) TriggerLite(group, clientID string) {
	if g, ok := s.h.Group(group); ok && g.LiteWildcard {
		s.seedWild(g.LiteBindTopic, group)
	}
	if clientID != "" {
		s.poll.notifyLite(clientID, group)
		return
	}
	s.lite.mu.Lock()
	var ids []string
	for id, c := range s.lite.clients {
		if c.group == group {
			ids = append(ids, id)
		}
	}
	s.lite.mu.Unlock()
	for _, id := range ids {
		s.poll.notifyLite(id, group)
	}
}

// subscribers lists the (client, group) pairs subscribed to a queue, the
// clients of its parent's wildcard groups included.
func (l *liteSubs) subscribers(lmq string) [][2]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	subs := l.byLMQ[lmq]
	var out [][2]string
	if len(subs) != 0 {
		out = make([][2]string, 0, len(subs))
	}
	for c, g := range subs {
		out = append(out, [2]string{c, g})
	}
	return l.wildSubscribersLocked(lmq, out)
}

// expire is cleanupExpiredSubscriptions: clients whose subscription did not
// change for timeout are dropped (a proxy re-sends it every so often).
func (l *liteSubs) expire(now int64, timeout time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, c := range l.clients {
		if now-c.updated > timeout.Milliseconds() {
			l.dropLocked(id, c)
		}
	}
}

// forget drops every subscription to the queues matched.
func (l *liteSubs) forget(match func(lmq string) bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for lmq, subs := range l.byLMQ {
		if !match(lmq) {
			continue
		}
		for id := range subs {
			if c := l.clients[id]; c != nil {
				l.removeLocked(id, c, lmq)
			}
		}
	}
	for _, groups := range l.wild {
		for _, w := range groups {
			for q := range w.dirty {
				if match(q) {
					delete(w.dirty, q)
				}
			}
		}
	}
}

// handleLiteSubscriptionCtl is LITE_SUBSCRIPTION_CTL (Java 5.5's
// LiteSubscriptionCtlProcessor): a proxy adds or removes lite subscriptions
// of its clients.
func (s *Service) handleLiteSubscriptionCtl(_ context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	if len(req.Body) == 0 {
		return codec.NewResponse(req, codec.RespIllegalOperation, "Request body is null."), nil
	}
	body, err := codec.DecodeLiteSubscriptionCtlBody(req.Body)
	if err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	if len(body.SubscriptionSet) == 0 {
		return codec.NewResponse(req, codec.RespIllegalOperation, "LiteSubscriptionCtlRequestBody is empty."), nil
	}
	max := s.h.Conf().MaxLiteSubscriptionCount
	for _, e := range body.SubscriptionSet {
		if isBlank(e.ClientID) || isBlank(e.Group) || isBlank(e.Topic) {
			continue
		}
		// The header gate cannot see the body's names: they key offsets and subscriptions.
		if remark, ok := compat.ValidateGroup(e.Group); !ok {
			return codec.NewResponse(req, codec.RespInvalidParameter, remark), nil
		}
		if remark, ok := compat.ValidateTopic(e.Topic); !ok {
			return codec.NewResponse(req, codec.RespInvalidParameter, remark), nil
		}
		lmqs := make([]string, 0, len(e.LiteTopicSet))
		for _, t := range e.LiteTopicSet {
			if q := compat.LiteLMQ(e.Topic, t); q != "" {
				lmqs = append(lmqs, q)
			}
		}
		switch e.Action {
		case "PARTIAL_ADD", "COMPLETE_ADD":
			g, ok := s.h.Group(e.Group)
			if !ok || !g.ConsumeEnable {
				return codec.NewResponse(req, codec.RespIllegalOperation,
					"java.lang.IllegalStateException: Consumer group is not allowed to consume."), nil
			}
			if g.LiteWildcard && e.Action == "PARTIAL_ADD" {
				return codec.NewResponse(req, codec.RespIllegalOperation,
					"java.lang.IllegalStateException: subscribe lite operation is not supported for this group"), nil
			}
			if err := s.liteAdd(c, &e, lmqs, g, max); err != nil {
				return codec.NewResponse(req, codec.RespLiteSubscriptionQuotaExceeded, err.Error()), nil
			}
			// The queues may hold messages already: a held POP of the client looks again.
			s.poll.notifyLite(e.ClientID, e.Group)
		case "PARTIAL_REMOVE":
			removed := s.lite.removePartial(e.ClientID, lmqs)
			if len(removed) == 0 {
				continue
			}
			if g, ok := s.h.Group(e.Group); ok && g.LiteResetOnUnsubscribe {
				for _, q := range removed {
					s.resetLiteOffset(q, e.Group, liteFromStart)
				}
			}
		case "COMPLETE_REMOVE":
			s.lite.removeComplete(e.ClientID)
		}
	}
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// liteFromStart is the offset option of a reset to a lite topic's start
// (Java's POLICY_MIN_VALUE).
var liteFromStart = &codec.LiteOffsetOption{Type: "POLICY", Value: codec.LitePolicyMin}

// liteAdd is a PARTIAL_ADD or COMPLETE_ADD of a consume-enabled group: the
// lite topics a partial add brings get the entry's offset option, and in an
// exclusive group the clients they were taken from are told.
func (s *Service) liteAdd(c remoting.Conn, e *codec.LiteSubscriptionDTO, lmqs []string, g Group, max int64) error {
	// Only the lite topics sharded here, or with messages here, are kept (isSubscriptionActive).
	lmqs = slices.DeleteFunc(lmqs, func(q string) bool { return !s.h.LiteActive(e.Topic, q) })
	if e.Action == "COMPLETE_ADD" {
		newWild, err := s.lite.addComplete(e.ClientID, e.Group, e.Topic, lmqs, g.LiteWildcard, max, c)
		if newWild {
			s.seedWild(e.Topic, e.Group)
		}
		return err
	}
	added, evicted, err := s.lite.addPartial(e.ClientID, e.Group, e.Topic, lmqs, max, g.LiteExclusive, c)
	for _, ev := range evicted {
		s.notifyUnsubscribeLite(ev, e.Group)
		if g.LiteResetOnExclusive {
			s.resetLiteOffset(ev.lmq, e.Group, liteFromStart)
		}
	}
	for _, q := range added {
		s.resetLiteOffset(q, e.Group, e.OffsetOption)
	}
	return err
}

// notifyUnsubscribeLite is Broker2Client.notifyUnsubscribeLite: the proxy
// connection of a client that lost a lite topic is told so (oneway).
func (s *Service) notifyUnsubscribeLite(ev liteEvicted, group string) {
	_, lite, ok := compat.SplitLiteLMQ(ev.lmq)
	if ev.conn == nil || ev.conn.Closed() || !ok {
		return
	}
	req := codec.NewRequest(codec.ReqNotifyUnsubscribeLite)
	req.Ext.Set("liteTopic", lite)
	req.Ext.Set("consumerGroup", group)
	req.Ext.Set("clientId", ev.clientID)
	if err := ev.conn.InvokeOneway(req); err != nil {
		s.log.Warn("notify unsubscribe lite", "client", ev.clientID, "liteTopic", lite, "err", err)
	}
}

func isBlank(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] > ' ' {
			return false
		}
	}
	return true
}

// resetLiteOffset is LiteSubscriptionRegistryImpl.resetOffset: a subscription
// added with an offset option moves the group's offset in the queue
// (applied by the next POP, as an admin reset is).
func (s *Service) resetLiteOffset(lmq, group string, o *codec.LiteOffsetOption) {
	if o == nil {
		return
	}
	cur := s.h.QueryOffset(group, lmq, 0)
	target := int64(-1)
	switch o.Type {
	case "POLICY":
		switch o.Value {
		case codec.LitePolicyMin:
			target = 0
		case codec.LitePolicyMax:
			target = max(s.h.MaxOffset(lmq, 0), 0)
		}
	case "OFFSET":
		target = o.Value
	case "TAIL_N":
		if cur >= 0 {
			target = max(0, cur-o.Value)
		}
	}
	if target >= 0 && target != cur {
		s.h.AssignReset(group, lmq, 0, target)
		s.liteOrder.ClearBlock(lmq, group, 0)
	}
}
