package store

import (
	"strconv"
	"strings"

	"rmqd/codec"
	"rmqd/compat"
)

// LMQQueueID is the one queue of a light message queue (compat.IsLMQ: a
// topic with no configuration, filled only by multi-dispatch; MixAll.LMQ_QUEUE_ID).
const LMQQueueID = 0

// topicAllowsLMQ is MixAll.topicAllowsLMQ: retry, system and schedule records
// carry a copy of the original properties and must not dispatch again. Java
// lets a transaction's half (and op, and check-max) records and DLQ records
// through: a half would reach the LMQs before its commit, and again with
// it, and a dead message would reach them a second time.
func topicAllowsLMQ(topic string) bool {
	switch topic {
	case scheduleTopic, compat.SysTopicTransHalf, compat.SysTopicTransOpHalf, compat.SysTopicTransCheckMax:
		return false
	}
	return !strings.HasPrefix(topic, "%RETRY%") && !strings.HasPrefix(topic, "%DLQ%") &&
		!strings.HasPrefix(topic, compat.SystemTopicPrefix)
}

// splitLMQ splits an INNER_MULTI_* value as Java's String.split(","): trailing
// empty pieces are dropped, so both properties keep Java's element counts.
func splitLMQ(v string) []string {
	parts := strings.Split(v, codec.LMQDispatchSeparator)
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// lmqDispatchList is the INNER_MULTI_DISPATCH value of a record the store
// multi-dispatches at put (MessageExtBrokerInner.needDispatchLMQ), or "".
func lmqDispatchList(topic string, sysFlag int32, props string) string {
	if !assignsQueueOffset(sysFlag) || !topicAllowsLMQ(topic) {
		return ""
	}
	v, ok := codec.PropertyValue(props, codec.PropInnerMultiDispatch)
	if !ok || strings.TrimSpace(v) == "" {
		return ""
	}
	return v
}

// lmqList is lmqDispatchList when the store assigns LMQ offsets (enableLmq).
func (c *commitLog) lmqList(m *codec.Message) string {
	if !c.lmq {
		return ""
	}
	return lmqDispatchList(m.Topic, m.SysFlag, m.Properties)
}

// assignLMQ fills INNER_MULTI_QUEUE_OFFSET as LmqDispatch.wrapLmqDispatch
// does: each LMQ's next offset, joined by ","; a name that is not an LMQ gets
// an empty element (Java joins a null). WAIT leaves the stored properties, as
// removeWaitStorePropertyString does. An LMQ name that cannot be a directory
// under consumequeue/ refuses the message (Java stores it and skips only
// names holding '/' at dispatch), as does one more LMQ than
// maxLmqConsumeQueueNum (Java 5 no longer checks it). Called with mu held;
// bumpLMQ moves the offsets once the record is written.
func (c *commitLog) assignLMQ(props, list string) (string, []string, PutStatus) {
	names := splitLMQ(list)
	var b strings.Builder
	lmqs := c.lmqScratch[:0]
	fresh := 0
	for i, n := range names {
		if i > 0 {
			b.WriteString(codec.LMQDispatchSeparator)
		}
		if !compat.IsLMQ(n) {
			continue
		}
		if !safeTopicDir(n) {
			return "", nil, PutMessageIllegal
		}
		p := c.table[tqKey{n, LMQQueueID}]
		off := int64(0)
		if p != nil {
			off = *p
		}
		b.WriteString(strconv.FormatInt(off, 10))
		dup := false
		for _, seen := range lmqs {
			dup = dup || seen == n
		}
		if dup {
			continue
		}
		lmqs = append(lmqs, n)
		if p == nil {
			fresh++
		}
	}
	c.lmqScratch = lmqs[:0]
	if fresh > 0 && c.maxLMQ > 0 && c.lmqQueues+fresh > c.maxLMQ {
		return "", nil, PutLMQConsumeQueueNumExceeded
	}
	e := codec.EditProperties(props)
	e.Delete(codec.PropWait)
	e.Set(codec.PropInnerMultiQueueOffset, b.String())
	return e.String(), lmqs, PutOK
}

// bumpLMQ advances each LMQ named once (LmqDispatch.updateLmqOffsets; a name
// listed twice takes one offset, where Java takes two and leaves a hole).
// Called with mu held.
func (c *commitLog) bumpLMQ(names []string) {
	for _, n := range names {
		key := tqKey{n, LMQQueueID}
		c.bumpOffset(key, c.nextOffset(key)+1)
	}
}

// dispatchLMQ writes the record's unit into each LMQ its properties name, at
// the offsets put assigned (ConsumeQueue.multiDispatchLmqQueue), and tells the
// arriving listener of each. Only LMQ names that are safe directory names are
// dispatched: Java also dispatches other names to the record's queue id, at
// offsets a client may have written itself.
func (s *DefaultStore) dispatchLMQ(m *codec.Message, size int, tags int64) error {
	if !s.cfg.EnableMultiDispatch || !s.cfg.EnableLmq || !topicAllowsLMQ(m.Topic) {
		return nil
	}
	var vals [2]string
	var found [2]bool
	codec.PropertyValues(m.Properties, []string{codec.PropInnerMultiDispatch, codec.PropInnerMultiQueueOffset}, vals[:], found[:])
	if strings.TrimSpace(vals[0]) == "" || strings.TrimSpace(vals[1]) == "" {
		return nil
	}
	names, offs := splitLMQ(vals[0]), splitLMQ(vals[1])
	if len(names) != len(offs) {
		s.log.Error("dispatch: INNER_MULTI_DISPATCH and INNER_MULTI_QUEUE_OFFSET differ in length", "offset", m.CommitLogOffset)
		return nil
	}
	for i, n := range names {
		if !compat.IsLMQ(n) || !safeTopicDir(n) {
			continue
		}
		off, err := strconv.ParseInt(offs[i], 10, 64)
		if err != nil || off < 0 {
			continue
		}
		cq := s.findOrCreateCQ(n, LMQQueueID)
		if cq == nil {
			continue
		}
		if err := cq.put(m.CommitLogOffset, int32(size), tags, off); err != nil {
			return err
		}
		if l := s.listener.Load(); l != nil {
			(*l)(cq.topic, LMQQueueID, off+1, tags, m.StoreTimestamp, m.Properties)
		}
	}
	return nil
}
