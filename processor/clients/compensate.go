package clients

import (
	"sort"
	"time"

	"rmqd/codec"
)

// Consumers that never heartbeat (POP consumers behind rocketmq-proxy, pull consumers through the proxy or
// Java's lite pull consumer) are known to Java's broker only through its compensation table
// (ConsumerManager.compensateBasicConsumerInfo / compensateSubscribeData): filled by every POP and PULL,
// read where Java reads findSubscriptionData(group, topic) and by the consumer-lag metrics, never by the
// connection list or the rebalance (those want live channels). Entries leave
// subscriptionExpiredTimeout after their last request.

// compensation is one group's entry in the compensation table.
type compensation struct {
	consumeType, messageModel string
	subs                      map[string]codec.SubscriptionData // by topic; SubVersion is the last request (ms)
}

// Compensate records that group consumes topic with sub (consumeType and messageModel as Java's callers
// pass them: CONSUME_POP/CLUSTERING for POP, CONSUME_PASSIVELY/CLUSTERING for pull). sub.SubVersion is set
// to now, as FilterAPI.build does, which also dates the entry for expiry. An empty sub.Topic records the
// group's basic info only.
func (m *ConsumerManager) Compensate(group, consumeType, messageModel string, subs ...codec.SubscriptionData) {
	now := time.Now().UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.compensated == nil {
		m.compensated = map[string]*compensation{}
	}
	c, ok := m.compensated[group]
	if !ok {
		c = &compensation{subs: map[string]codec.SubscriptionData{}}
		m.compensated[group] = c
	}
	c.consumeType, c.messageModel = consumeType, messageModel
	for _, s := range subs {
		if s.Topic == "" {
			continue
		}
		s.SubVersion = now
		c.subs[s.Topic] = s
	}
}

// FindSubscription is Java's findSubscriptionData(group, topic): the subscription of a heartbeat-registered
// group, else the compensated one.
func (m *ConsumerManager) FindSubscription(group, topic string) (codec.SubscriptionData, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if g, ok := m.groups[group]; ok {
		if s, ok := g.Subscriptions[topic]; ok {
			return s, true
		}
	}
	if c, ok := m.compensated[group]; ok {
		s, ok := c.subs[topic]
		return s, ok
	}
	return codec.SubscriptionData{}, false
}

// CompensatedGroup is the compensation entry of group (getConsumerGroupInfo(group, true) for a group with
// no live channel): its consume type, message model and subscribed topics, sorted.
func (m *ConsumerManager) CompensatedGroup(group string) (consumeType, messageModel string, topics []string, ok bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	c, ok := m.compensated[group]
	if !ok {
		return "", "", nil, false
	}
	for t := range c.subs {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	return c.consumeType, c.messageModel, topics, true
}

// CompensatedGroups lists the groups with a compensation entry, sorted.
func (m *ConsumerManager) CompensatedGroups() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]string, 0, len(m.compensated))
	for g := range m.compensated {
		out = append(out, g)
	}
	sort.Strings(out)
	return out
}

// ExpireCompensation drops compensated subscriptions not renewed within timeout, and groups left with none
// (removeExpireConsumerGroupInfo). A group that never had a subscription stays, as in Java.
func (m *ConsumerManager) ExpireCompensation(now time.Time, timeout time.Duration) {
	limit := now.Add(-timeout).UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	for g, c := range m.compensated {
		removed := false
		for t, s := range c.subs {
			if s.SubVersion < limit {
				delete(c.subs, t)
				removed = true
			}
		}
		if removed && len(c.subs) == 0 {
			delete(m.compensated, g)
		}
	}
}

// CompensatePull is Compensate for a PULL (sub nil: the request carried no subscription), skipped for a
// group registered by heartbeat: every read of the table looks at the live group first, so the entry would
// only matter for a topic that group does not subscribe, and the pull path then takes no write lock.
func (m *ConsumerManager) CompensatePull(group, consumeType, messageModel string, sub *codec.SubscriptionData) {
	m.mu.RLock()
	_, live := m.groups[group]
	m.mu.RUnlock()
	if live {
		return
	}
	if sub == nil {
		m.Compensate(group, consumeType, messageModel)
		return
	}
	m.Compensate(group, consumeType, messageModel, *sub)
}
