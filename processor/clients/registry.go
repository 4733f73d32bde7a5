// Package clients is the broker's view of its clients: producer and consumer
// groups registered by heartbeat, per connection (Java's ProducerManager and
// ConsumerManager), and the rebalance locks of ordered consumers
// (RebalanceLockManager).
package clients

import (
	"log/slog"
	"sort"
	"sync"
	"time"

	"rmqd/codec"
	"rmqd/remoting"
)

// ClientChannel is one client connection registered by heartbeat
// (ClientChannelInfo).
type ClientChannel struct {
	Conn       remoting.Conn
	ClientID   string
	Language   codec.LanguageCode
	Version    int32
	LastUpdate time.Time
}

// ConsumerGroupInfo is the broker's view of one consumer group.
type ConsumerGroupInfo struct {
	Group            string
	ConsumeType      string
	MessageModel     string
	ConsumeFromWhere string
	Channels         map[uint64]*ClientChannel
	Subscriptions    map[string]codec.SubscriptionData
	LastUpdate       time.Time
	// fingerprint is that of the last heartbeat that brought the group's
	// subscriptions (heartbeat V2; 0 for a V1 one), when hasFingerprint.
	fingerprint    int32
	hasFingerprint bool
}

// ConsumerManager tracks consumer groups per connection and tells group members
// when the membership changes (NOTIFY_CONSUMER_IDS_CHANGED).
type ConsumerManager struct {
	log    *slog.Logger
	mu     sync.RWMutex
	groups map[string]*ConsumerGroupInfo
	// byConn indexes the groups of each connection: closing one costs its
	// own groups, and its registrations can be bounded.
	byConn map[uint64]map[string]struct{}
	// compensated is Java's consumerCompensationTable (compensate.go).
	compensated map[string]*compensation
	// notify sends NOTIFY_CONSUMER_IDS_CHANGED; replaceable in tests.
	notify func(group string, conns []remoting.Conn)
}

// NewConsumerManager makes an empty manager.
func NewConsumerManager(log *slog.Logger) *ConsumerManager {
	m := &ConsumerManager{log: log, groups: map[string]*ConsumerGroupInfo{}, byConn: map[uint64]map[string]struct{}{}}
	m.notify = m.notifyIDsChanged
	return m
}

// Register records a consumer group heartbeat and reports whether the group's
// channel set or subscribed topics changed. When they did and notifyEnable is
// set, every member of a clustering group is told (registerConsumer). nil subs
// leaves the subscriptions as they are (V2 heartbeat withoutSub).
func (m *ConsumerManager) Register(group string, ch ClientChannel, consumeType, messageModel, fromWhere string,
	subs []codec.SubscriptionData, notifyEnable bool) bool {
	changed, _ := m.RegisterWithin(0, group, ch, consumeType, messageModel, fromWhere, subs, notifyEnable)
	return changed
}

// RegisterWithin is Register refusing (ok false, nothing changed) a group that
// would take the connection past maxGroups groups; maxGroups <= 0 bounds nothing.
func (m *ConsumerManager) RegisterWithin(maxGroups int, group string, ch ClientChannel, consumeType, messageModel, fromWhere string,
	subs []codec.SubscriptionData, notifyEnable bool) (changed, ok bool) {
	now := time.Now()
	id := ch.Conn.ID()
	m.mu.Lock()
	if !fits(m.byConn[id], []string{group}, maxGroups) {
		m.mu.Unlock()
		return false, false
	}
	addConnGroup(m.byConn, id, group)
	g, ok := m.groups[group]
	if !ok {
		g = &ConsumerGroupInfo{Group: group, Channels: map[uint64]*ClientChannel{}, Subscriptions: map[string]codec.SubscriptionData{}}
		m.groups[group] = g
	}
	g.ConsumeType, g.MessageModel, g.ConsumeFromWhere, g.LastUpdate = consumeType, messageModel, fromWhere, now
	channelChanged := false
	if old, ok := g.Channels[id]; !ok || old.ClientID != ch.ClientID {
		c := ch
		c.LastUpdate = now
		g.Channels[id] = &c
		channelChanged = true
	} else {
		old.LastUpdate = now
	}
	topicsChanged := subs != nil && g.updateSubscriptions(subs)
	var conns []remoting.Conn
	if (channelChanged || topicsChanged) && notifyEnable && !g.broadcasting() {
		conns = g.conns()
	}
	m.mu.Unlock()
	if conns != nil {
		m.notify(group, conns)
	}
	return channelChanged || topicsChanged, true
}

// updateSubscriptions replaces the group's subscriptions with subs and reports
// whether a topic was added or dropped (updateSubscription); a new expression
// of a topic already subscribed changes no member's queues. As Java, a topic's
// subscription is replaced only by a greater subVersion, so a member still on
// an older expression cannot put it back over the newer one.
func (g *ConsumerGroupInfo) updateSubscriptions(subs []codec.SubscriptionData) bool {
	changed := false
	seen := make(map[string]bool, len(subs))
	for _, s := range subs {
		seen[s.Topic] = true
		old, ok := g.Subscriptions[s.Topic]
		if !ok || s.SubVersion > old.SubVersion {
			g.Subscriptions[s.Topic] = s
		}
		changed = changed || !ok
	}
	for t := range g.Subscriptions {
		if !seen[t] {
			delete(g.Subscriptions, t)
			changed = true
		}
	}
	return changed
}

// broadcasting reports a BROADCASTING group: each member consumes every queue,
// so a change of members moves none and Java tells them nothing.
func (g *ConsumerGroupInfo) broadcasting() bool { return g.MessageModel == "BROADCASTING" }

// NoteFingerprint records the fingerprint of a heartbeat just registered for
// group and reports whether its client must send its subscriptions again
// (IS_SUB_CHANGE): when the group's last fingerprint differs, or when a
// heartbeat without subscriptions finds none recorded (a restarted broker, a
// group that emptied). Such a heartbeat records nothing: only one carrying the
// subscriptions vouches that the group holds what the fingerprint describes.
func (m *ConsumerManager) NoteFingerprint(group string, fp int32, withoutSub bool) (resend bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, ok := m.groups[group]
	if !ok {
		return withoutSub
	}
	if !g.hasFingerprint {
		if withoutSub {
			return true
		}
		g.fingerprint, g.hasFingerprint = fp, true
		return false
	}
	resend = g.fingerprint != fp
	g.fingerprint = fp
	return resend
}

// Fits reports whether conn may register groups (some perhaps held already)
// and stay within maxGroups groups; maxGroups <= 0 bounds nothing.
func (m *ConsumerManager) Fits(conn remoting.Conn, groups []string, maxGroups int) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return fits(m.byConn[conn.ID()], groups, maxGroups)
}

// fits reports whether held plus the new names among groups stays within max.
func fits(held map[string]struct{}, groups []string, max int) bool {
	if max <= 0 || len(held)+len(groups) <= max {
		return true
	}
	n := len(held)
	var seen map[string]struct{}
	for _, g := range groups {
		if _, ok := held[g]; ok {
			continue
		}
		if _, ok := seen[g]; ok {
			continue
		}
		if seen == nil {
			seen = map[string]struct{}{}
		}
		seen[g] = struct{}{}
		if n++; n > max {
			return false
		}
	}
	return true
}

func addConnGroup(byConn map[uint64]map[string]struct{}, id uint64, group string) {
	held := byConn[id]
	if held == nil {
		held = map[string]struct{}{}
		byConn[id] = held
	}
	held[group] = struct{}{}
}

func removeConnGroup(byConn map[uint64]map[string]struct{}, id uint64, group string) {
	if held := byConn[id]; held != nil {
		delete(held, group)
		if len(held) == 0 {
			delete(byConn, id)
		}
	}
}

func (g *ConsumerGroupInfo) conns() []remoting.Conn {
	out := make([]remoting.Conn, 0, len(g.Channels))
	for _, c := range g.Channels {
		out = append(out, c.Conn)
	}
	return out
}

// Unregister removes one client's channel from a group (UNREGISTER_CLIENT).
func (m *ConsumerManager) Unregister(group string, conn remoting.Conn, notifyEnable bool) {
	m.mu.Lock()
	g, ok := m.groups[group]
	var conns []remoting.Conn
	if ok {
		if _, had := g.Channels[conn.ID()]; had {
			delete(g.Channels, conn.ID())
			removeConnGroup(m.byConn, conn.ID(), group)
			if len(g.Channels) == 0 {
				delete(m.groups, group)
			} else if notifyEnable && !g.broadcasting() {
				conns = g.conns()
			}
		}
	}
	m.mu.Unlock()
	if conns != nil {
		m.notify(group, conns)
	}
}

// RemoveConn drops a closed (or expired) connection from every group and, when
// notifyEnable, tells the remaining members of each clustering group it left.
func (m *ConsumerManager) RemoveConn(conn remoting.Conn, notifyEnable bool) {
	type note struct {
		group string
		conns []remoting.Conn
	}
	var notes []note
	m.mu.Lock()
	held := m.byConn[conn.ID()]
	delete(m.byConn, conn.ID())
	for name := range held {
		g, ok := m.groups[name]
		if !ok {
			continue
		}
		if _, ok := g.Channels[conn.ID()]; !ok {
			continue
		}
		delete(g.Channels, conn.ID())
		if len(g.Channels) == 0 {
			delete(m.groups, name)
			continue
		}
		if notifyEnable && !g.broadcasting() {
			notes = append(notes, note{name, g.conns()})
		}
	}
	m.mu.Unlock()
	for _, n := range notes {
		m.notify(n.group, n.conns)
	}
}

// Expired returns connections whose last heartbeat is older than timeout.
func (m *ConsumerManager) Expired(now time.Time, timeout time.Duration) []remoting.Conn {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []remoting.Conn
	for _, g := range m.groups {
		for _, c := range g.Channels {
			if now.Sub(c.LastUpdate) > timeout {
				out = append(out, c.Conn)
			}
		}
	}
	return out
}

// Subscription returns the subscription of group on topic and the group's
// message model.
func (m *ConsumerManager) Subscription(group, topic string) (sub codec.SubscriptionData, groupOnline bool, found bool, model string) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g, ok := m.groups[group]
	if !ok {
		return codec.SubscriptionData{}, false, false, ""
	}
	s, ok := g.Subscriptions[topic]
	return s, true, ok, g.MessageModel
}

// Member reports how group registered by heartbeat (not by compensation) and
// whether conn is one of its channels: what rejectPullConsumerEnable asks on
// every pull, so nothing is copied.
func (m *ConsumerManager) Member(group string, conn remoting.Conn) (consumeType string, online, member bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g, ok := m.groups[group]
	if !ok {
		return "", false, false
	}
	_, member = g.Channels[conn.ID()]
	return g.ConsumeType, true, member
}

// ClientIDs lists the client ids of a group's live channels, sorted.
func (m *ConsumerManager) ClientIDs(group string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g, ok := m.groups[group]
	if !ok {
		return nil
	}
	out := make([]string, 0, len(g.Channels))
	for _, c := range g.Channels {
		out = append(out, c.ClientID)
	}
	sort.Strings(out)
	return out
}

// Group returns a copy of a group's info.
func (m *ConsumerManager) Group(group string) (ConsumerGroupInfo, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g, ok := m.groups[group]
	if !ok {
		return ConsumerGroupInfo{}, false
	}
	cp := *g
	cp.Channels = make(map[uint64]*ClientChannel, len(g.Channels))
	for k, v := range g.Channels {
		c := *v
		cp.Channels[k] = &c
	}
	cp.Subscriptions = make(map[string]codec.SubscriptionData, len(g.Subscriptions))
	for k, v := range g.Subscriptions {
		cp.Subscriptions[k] = v
	}
	return cp, true
}

// GroupsOfTopic lists the online groups subscribing topic.
func (m *ConsumerManager) GroupsOfTopic(topic string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []string
	for name, g := range m.groups {
		if _, ok := g.Subscriptions[topic]; ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func (m *ConsumerManager) notifyIDsChanged(group string, conns []remoting.Conn) {
	for _, c := range conns {
		req := codec.NewRequest(codec.ReqNotifyConsumerIdsChanged)
		req.Ext.Set("consumerGroup", group)
		if err := c.InvokeOneway(req); err != nil {
			m.log.Debug("notify consumer ids changed", "group", group, "remote", c.RemoteAddr(), "err", err)
		}
	}
}

// ProducerManager tracks producer groups per connection.
type ProducerManager struct {
	mu     sync.RWMutex
	groups map[string]map[uint64]*ClientChannel
	byConn map[uint64]map[string]struct{} // as ConsumerManager.byConn
}

// NewProducerManager makes an empty manager.
func NewProducerManager() *ProducerManager {
	return &ProducerManager{groups: map[string]map[uint64]*ClientChannel{}, byConn: map[uint64]map[string]struct{}{}}
}

// Register records a producer heartbeat.
func (m *ProducerManager) Register(group string, ch ClientChannel) {
	m.RegisterAll([]string{group}, ch, 0)
}

// RegisterAll records a producer heartbeat's groups, all of them or, when
// they would take the connection past maxGroups groups, none (false);
// maxGroups <= 0 bounds nothing.
func (m *ProducerManager) RegisterAll(groups []string, ch ClientChannel, maxGroups int) bool {
	id := ch.Conn.ID()
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if !fits(m.byConn[id], groups, maxGroups) {
		return false
	}
	for _, group := range groups {
		g, ok := m.groups[group]
		if !ok {
			g = map[uint64]*ClientChannel{}
			m.groups[group] = g
		}
		if old, ok := g[id]; ok && old.ClientID == ch.ClientID {
			old.LastUpdate = now
		} else {
			c := ch
			c.LastUpdate = now
			g[id] = &c
		}
		addConnGroup(m.byConn, id, group)
	}
	return true
}

// RefreshAll renews the heartbeat time of the groups' entries for ch's
// connection that are already registered and registers nothing new: Java's
// registerProducer with enableRegisterProducer off and rejectTransactionMessage on.
func (m *ProducerManager) RefreshAll(groups []string, ch ClientChannel) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, group := range groups {
		if old, ok := m.groups[group][ch.Conn.ID()]; ok && old.ClientID == ch.ClientID {
			old.LastUpdate = now
		}
	}
}

// Unregister removes one connection from a producer group.
func (m *ProducerManager) Unregister(group string, conn remoting.Conn) {
	m.mu.Lock()
	if g, ok := m.groups[group]; ok {
		delete(g, conn.ID())
		if len(g) == 0 {
			delete(m.groups, group)
		}
	}
	removeConnGroup(m.byConn, conn.ID(), group)
	m.mu.Unlock()
}

// RemoveConn drops a connection from every group it registered.
func (m *ProducerManager) RemoveConn(conn remoting.Conn) {
	m.mu.Lock()
	for name := range m.byConn[conn.ID()] {
		if g, ok := m.groups[name]; ok {
			delete(g, conn.ID())
			if len(g) == 0 {
				delete(m.groups, name)
			}
		}
	}
	delete(m.byConn, conn.ID())
	m.mu.Unlock()
}

// Expired returns connections whose last heartbeat is older than timeout.
func (m *ProducerManager) Expired(now time.Time, timeout time.Duration) []remoting.Conn {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []remoting.Conn
	for _, g := range m.groups {
		for _, c := range g {
			if now.Sub(c.LastUpdate) > timeout {
				out = append(out, c.Conn)
			}
		}
	}
	return out
}

// FindByClientID finds a producer connection by client id, in any group: of a
// client that reconnected while its old connection lingers, the one that
// heartbeat last (Java keeps the channel registered last).
func (m *ProducerManager) FindByClientID(clientID string) (ClientChannel, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var best *ClientChannel
	for _, g := range m.groups {
		for _, c := range g {
			if c.ClientID == clientID && !c.Conn.Closed() && (best == nil || c.LastUpdate.After(best.LastUpdate)) {
				best = c
			}
		}
	}
	if best == nil {
		return ClientChannel{}, false
	}
	return *best, true
}

// Channels returns copies of a group's channels.
func (m *ProducerManager) Channels(group string) []ClientChannel {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.groups[group]
	out := make([]ClientChannel, 0, len(g))
	for _, c := range g {
		out = append(out, *c)
	}
	return out
}

// Each calls f for every registered producer channel, under the read lock (f
// must not call back into m).
func (m *ProducerManager) Each(f func(group string, ch *ClientChannel)) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for g, chs := range m.groups {
		for _, ch := range chs {
			f(g, ch)
		}
	}
}

// EachGroup calls f for every consumer group, under the read lock (f must not
// call back into m or keep info).
func (m *ConsumerManager) EachGroup(f func(info *ConsumerGroupInfo)) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, info := range m.groups {
		f(info)
	}
}
