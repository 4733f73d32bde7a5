package pop

import (
	"strings"

	"rmqd/compat"
)

// Wildcard lite groups (Java 5.5's lite.sub.wildcard): the clients of such a
// group subscribe to no lite topic; they consume every lite topic of the
// parent, each lite topic in order with one batch in flight for the group,
// whichever client pops it. A client joins with COMPLETE_ADD (client-java
// 5.2 sends it every 30 s) and holds the one made-up queue name
// parent@group, as in Java; PARTIAL_ADD is refused.

// maxWildWalk bounds the lite topics one POP of a wildcard client looks at.
const maxWildWalk = 1024

// liteWild is one wildcard group of a parent topic. dirty holds the lite
// topics that may have messages for it (Java's lite events): every one when
// the group appears or an admin triggers it, then each that gets a message or
// an ack. Each is kept with the mark that put it there, so a POP that found
// it empty drops it only if nothing marked it since.
type liteWild struct {
	clients map[string]struct{}
	dirty   map[string]uint64
}

// wildcardLMQ is mockLmqNameForWildcardGroup.
func wildcardLMQ(topic, group string) string { return topic + "@" + group }

// isWildcardLMQ tells the made-up name from a lite topic's queue.
func isWildcardLMQ(lmq string) bool { return !strings.HasPrefix(lmq, compat.LiteLMQPrefix) }

// joinWildLocked records a wildcard client; true when its group is new to
// the parent, whose lite topics then all need a look.
func (l *liteSubs) joinWildLocked(clientID string, c *liteClient) bool {
	groups := l.wild[c.topic]
	if groups == nil {
		groups = map[string]*liteWild{}
		l.wild[c.topic] = groups
	}
	w := groups[c.group]
	made := w == nil
	if made {
		w = &liteWild{clients: map[string]struct{}{}, dirty: map[string]uint64{}}
		groups[c.group] = w
		l.wilds.Add(1)
	}
	w.clients[clientID] = struct{}{}
	return made
}

// leaveWildLocked forgets a wildcard client, and its group with the last one.
func (l *liteSubs) leaveWildLocked(clientID string, c *liteClient) {
	w := l.wild[c.topic][c.group]
	if w == nil {
		return
	}
	delete(w.clients, clientID)
	if len(w.clients) == 0 {
		delete(l.wild[c.topic], c.group)
		if len(l.wild[c.topic]) == 0 {
			delete(l.wild, c.topic)
		}
		l.wilds.Add(-1)
	}
}

// markDirty marks lite topics' queues as worth a look for the wildcard
// groups of their parent (every group, or only group when set).
func (l *liteSubs) markDirty(topic, group string, lmqs []string) {
	if l.wilds.Load() == 0 || len(lmqs) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for g, w := range l.wild[topic] {
		if group != "" && g != group {
			continue
		}
		for _, q := range lmqs {
			l.seq++
			w.dirty[q] = l.seq
		}
	}
}

// wildQueuesLocked is what a wildcard client's POP looks at: up to
// maxWildWalk marked lite topics (in Go's map order, so no one is always
// last) and their marks.
func (l *liteSubs) wildQueuesLocked(c *liteClient) ([]string, []uint64) {
	w := l.wild[c.topic][c.group]
	if w == nil || len(w.dirty) == 0 {
		return nil, nil
	}
	n := min(len(w.dirty), maxWildWalk)
	qs, marks := make([]string, 0, n), make([]uint64, 0, n)
	for q, m := range w.dirty {
		if len(qs) == n {
			break
		}
		qs, marks = append(qs, q), append(marks, m)
	}
	return qs, marks
}

// settleWild drops the lite topics a wildcard group's POP found nothing in,
// unless marked again since.
func (l *liteSubs) settleWild(topic, group string, qs []string, marks []uint64) {
	if len(qs) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.wild[topic][group]
	if w == nil {
		return
	}
	for i, q := range qs {
		if w.dirty[q] == marks[i] {
			delete(w.dirty, q)
		}
	}
}

// wildSubscribersLocked adds the clients of the wildcard groups of lmq's
// parent to out.
func (l *liteSubs) wildSubscribersLocked(lmq string, out [][2]string) [][2]string {
	if len(l.wild) == 0 {
		return out
	}
	parent, _, ok := compat.SplitLiteLMQ(lmq)
	if !ok {
		return out
	}
	for g, w := range l.wild[parent] {
		for id := range w.clients {
			out = append(out, [2]string{id, g})
		}
	}
	return out
}

// seedWild marks every lite topic of the parent for a wildcard group (Java's
// doFullDispatchForWildcardGroup).
func (s *Service) seedWild(topic, group string) {
	s.lite.markDirty(topic, group, s.h.LiteQueuesOf(topic))
}
