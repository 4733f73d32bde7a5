package stats

import "sync/atomic"

// retired holds what the counters of deleted topics and groups had counted,
// so the broker totals summed from the live counters (sampleBroker,
// PutSizeTotal) do not go back when a counter is dropped.
type retired struct {
	nums, calls [4]atomic.Int64 // by Broker.broker index
	putSize     atomic.Int64
}

// DeleteTopic drops topic's put counter and every topic@group get counter of
// it (BrokerStatsManager.onTopicDeleted, autoDeleteUnusedStats): a broker that
// sees topics come and go keeps counters only for the ones alive. A count
// added by a send or pull racing the delete may be lost from the totals.
func (s *Broker) DeleteTopic(topic string) {
	s.DeleteTopics(func(t string) bool { return t == topic })
}

// DeleteTopics is DeleteTopic of every topic matched, in one pass.
func (s *Broker) DeleteTopics(match func(topic string) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.grow.Lock()
	defer s.grow.Unlock()
	cowDrop(&s.topics, match, s.retirePut)
	cowDrop(&s.groups, func(k topicGroup) bool { return match(k.topic) }, s.retireGet)
}

// DeleteGroup drops group's get counters on every topic (onGroupDeleted).
func (s *Broker) DeleteGroup(group string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.grow.Lock()
	defer s.grow.Unlock()
	cowDrop(&s.groups, func(k topicGroup) bool { return k.group == group }, s.retireGet)
}

func (s *Broker) retirePut(c *Counter) {
	n, t := c.nums.Load(), c.sizes.total()
	s.retired.nums[brokerPut].Add(n)
	s.retired.calls[brokerPut].Add(t)
	if !c.system {
		s.retired.nums[brokerPutUser].Add(n)
		s.retired.calls[brokerPutUser].Add(t)
	}
	s.retired.putSize.Add(c.size.Load())
}

func (s *Broker) retireGet(c *Counter) {
	n, t := c.nums.Load(), c.times.Load()
	s.retired.nums[brokerGet].Add(n)
	s.retired.calls[brokerGet].Add(t)
	if !c.system {
		s.retired.nums[brokerGetUser].Add(n)
		s.retired.calls[brokerGetUser].Add(t)
	}
}
