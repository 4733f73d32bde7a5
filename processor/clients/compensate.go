package clients

import (
	"slices"
	"sort"
	"strings"
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
	at                        int64                             // the group's last request (ms)
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
	// The strings may alias a request frame that is recycled once the request is answered: what the table
	// keeps owns its bytes, cloned when it changes (every pull of the group lands here).
	c, ok := m.compensated[group]
	if !ok {
		c = &compensation{subs: map[string]codec.SubscriptionData{}}
		m.compensated[strings.Clone(group)] = c
	}
	c.at = now
	if c.consumeType != consumeType {
		c.consumeType = strings.Clone(consumeType)
	}
	if c.messageModel != messageModel {
		c.messageModel = strings.Clone(messageModel)
	}
	for _, s := range subs {
		if s.Topic == "" {
			continue
		}
		if old, ok := c.subs[s.Topic]; ok && old.SubString == s.SubString && old.ExpressionType == s.ExpressionType &&
			old.ClassFilterMode == s.ClassFilterMode {
			// Tags and codes follow from the expression: only the date moves.
			// Keyed by the kept copy: assigning a string key replaces the key too.
			old.SubVersion = now
			c.subs[old.Topic] = old
			continue
		}
		s = ownedSubscription(s)
		s.SubVersion = now
		c.subs[s.Topic] = s
	}
}

// ownedSubscription is s with every string and slice copied.
func ownedSubscription(s codec.SubscriptionData) codec.SubscriptionData {
	s.Topic, s.SubString, s.ExpressionType = strings.Clone(s.Topic), strings.Clone(s.SubString), strings.Clone(s.ExpressionType)
	s.TagsSet = slices.Clone(s.TagsSet) // nil stays nil, empty stays empty: both show in JSON
	for i, t := range s.TagsSet {
		s.TagsSet[i] = strings.Clone(t)
	}
	s.CodeSet = slices.Clone(s.CodeSet)
	return s
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
// (removeExpireConsumerGroupInfo). A group that never had a subscription (pulls without one, as a push
// consumer's are by default) goes once it made no request within timeout: Java keeps it for the broker's
// life, so every such group name ever seen would stay.
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
		if len(c.subs) == 0 && (removed || c.at < limit) {
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
