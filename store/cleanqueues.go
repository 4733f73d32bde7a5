package store

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
)

// QueueTopics lists the topics that have consume queues, sorted (the key set
// of Java's consumeQueueTable, which cleanUnusedTopic walks).
func (s *DefaultStore) QueueTopics() []string {
	s.cqMu.Lock()
	seen := make(map[string]bool)
	for k := range s.cqs {
		seen[k.topic] = true
	}
	s.cqMu.Unlock()
	out := make([]string, 0, len(seen))
	for t := range seen {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// CleanExpiredQueues is ConsumeQueueStore.cleanExpired: every consume queue of
// a topic keep does not hold whose last unit points below the commitlog's
// first byte (all its messages are gone) is destroyed, and its queue offset
// forgotten, so the next message there starts at 0 again, as in Java. Unlike
// Java, a queue with a message whose offset is assigned but not yet dispatched
// is left alone. It returns the queues removed.
func (s *DefaultStore) CleanExpiredQueues(keep func(topic string) bool) int {
	minPhy := s.MinPhyOffset()
	s.dispatchMu.Lock()
	defer s.dispatchMu.Unlock()
	s.cqMu.Lock()
	var cand []*consumeQueue
	for _, cq := range s.cqs {
		if last := cq.maxPhysicOffset.Load(); last != -1 && last < minPhy {
			cand = append(cand, cq)
		}
	}
	s.cqMu.Unlock()
	// keep is the caller's code: never run it under the store's locks.
	cand = slices.DeleteFunc(cand, func(cq *consumeQueue) bool { return keep(cq.topic) })
	removed := 0
	dirs := map[string]bool{}
	for _, cq := range cand {
		k := tqKey{cq.topic, cq.qid}
		if !s.commitLog.removeQueueAt(k, cq.maxOffset()) {
			continue // a put took an offset the dispatcher has not written yet
		}
		s.cqMu.Lock()
		if s.cqs[k] == cq {
			delete(s.cqs, k)
		}
		s.cqMu.Unlock()
		cq.q.destroyAll()
		dirs[filepath.Dir(cq.q.dir)] = true
		removed++
		s.log.Info("expired consume queue removed", "topic", cq.topic, "queueId", cq.qid,
			"minCommitLogOffset", minPhy, "lastUnitEnd", cq.maxPhysicOffset.Load())
	}
	for dir := range dirs {
		_ = os.Remove(dir) // only when no queue of the topic is left
	}
	return removed
}

// removeQueueAt forgets k's next queue offset if it is still next, so no
// assigned offset is lost with it.
func (c *commitLog) removeQueueAt(k tqKey, next int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.table[k]
	if ok && *p != next {
		return false
	}
	c.forget(k)
	return true
}
