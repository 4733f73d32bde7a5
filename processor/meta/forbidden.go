package meta

import "strings"

// Java's SubscriptionGroupManager.forbiddenTable: per group, per topic, a bit
// set of PermName indexes an admin has forbidden the group on that topic
// (UPDATE_AND_GET_GROUP_FORBIDDEN). It lives in subscriptionGroup.json and the
// GET_ALL_SUBSCRIPTIONGROUP_CONFIG body under "forbiddenTable".

// IndexPermRead is PermName.INDEX_PERM_READ, the bit a read ban sets.
const IndexPermRead = 2

// Forbidden reports whether bit index of group's ban on topic is set.
func (m *SubscriptionGroupManager) Forbidden(group, topic string, index int) bool {
	bit := int32(1) << index
	m.mu.RLock()
	v := m.forbidden[group][topic]
	m.mu.RUnlock()
	return v > 0 && v&bit == bit
}

// UpdateForbidden sets or clears bit index of group's ban on topic and
// persists the table when it changed. Java's clear of a group's last bit on one
// topic drops the group's bans on every topic and is neither versioned nor
// written; here only that topic's entry goes, and the change is kept.
func (m *SubscriptionGroupManager) UpdateForbidden(group, topic string, index int, set bool) error {
	bit := int32(1) << index
	m.mu.Lock()
	old := max(m.forbidden[group][topic], 0)
	v := old &^ bit
	if set {
		v = old | bit
	}
	if v == old {
		m.mu.Unlock()
		return nil
	}
	if v == 0 {
		delete(m.forbidden[group], topic)
		if len(m.forbidden[group]) == 0 {
			delete(m.forbidden, group)
		}
	} else {
		topics, ok := m.forbidden[group]
		if !ok {
			group = strings.Clone(group) // header strings alias the request frame
			topics = map[string]int32{}
			m.forbidden[group] = topics
		}
		if _, ok := topics[topic]; !ok {
			topic = strings.Clone(topic)
		}
		topics[topic] = v
	}
	m.version.Next()
	m.mu.Unlock()
	return m.Persist()
}

// forbiddenCopy copies the table; the caller holds mu.
func (m *SubscriptionGroupManager) forbiddenCopy() map[string]map[string]int32 {
	out := make(map[string]map[string]int32, len(m.forbidden))
	for g, topics := range m.forbidden {
		t := make(map[string]int32, len(topics))
		for k, v := range topics {
			t[k] = v
		}
		out[g] = t
	}
	return out
}

// takeForbidden installs a decoded table (file or master); the caller holds mu.
// Entries of no ban are left out, as Java's setter would never store them.
func (m *SubscriptionGroupManager) takeForbidden(t map[string]map[string]int32) {
	m.forbidden = map[string]map[string]int32{}
	for g, topics := range t {
		for k, v := range topics {
			if v <= 0 {
				continue
			}
			if m.forbidden[g] == nil {
				m.forbidden[g] = map[string]int32{}
			}
			m.forbidden[g][k] = v
		}
	}
}
