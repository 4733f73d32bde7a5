package processor

import (
	"rmqd/codec"
	"rmqd/store"
)

// pullResidency is the store's answer to "would this pull wait for the disk?".
type pullResidency interface {
	PullResident(topic string, queueID int32, offset int64, n int32) bool
}

// loopReader reads for a pull on the event loop without touching the records'
// pages first (store.GetMessageOnLoop).
type loopReader interface {
	GetMessageOnLoop(topic string, queueID int32, offset int64, maxMsgNums, maxTotalBytes int32, filter store.MessageFilter) *store.GetResult
}

// pullInline picks the pulls that run on the network event loop: those of a
// subscription to every tag whose messages are all in the page cache.
// They skip the hand-off to a pull worker and the wake-up of the loop for the
// answer (catch-up reads: about a quarter of the broker's CPU per message).
// The rest keep the workers: a pull that does not suspend and finds nothing
// may wait for the dispatcher, a tag or SQL92 filter may scan thousands of
// units before one matches, and a page out of the page cache would stall
// every connection of the loop while the disk reads it.
func (b *Broker) pullInline(req *codec.RemotingCommand) bool {
	rs, ok := b.store.(pullResidency)
	if !ok {
		return false
	}
	var h codec.PullMessageRequestHeader
	if h.Decode(req.Ext) != nil || !b.subscribesAll(&h) {
		return false
	}
	// A static topic's logical queue may be read from another broker: a
	// forward waits for the network, on a worker.
	if b.mappings.Get(h.Topic) != nil && !forwardedRequest(req) {
		return false
	}
	// An unknown group is auto-created and written to disk by the pull: a
	// worker's job (as a send to an unknown topic is), not the loop's.
	if _, known := b.groups.Get(h.ConsumerGroup); !known {
		return false
	}
	// Only a pull that finds nothing may wait for the dispatcher, and one
	// that suspends waits in the hold service instead.
	if h.SysFlag&codec.PullFlagSuspend == 0 && h.QueueOffset >= b.store.MaxOffsetInQueue(h.Topic, h.QueueID) {
		return false
	}
	return rs.PullResident(h.Topic, h.QueueID, h.QueueOffset, h.MaxMsgNums)
}

// subscribesAll reports a pull whose subscription (its own, or the group's
// from the heartbeats) takes every message of the topic.
func (b *Broker) subscribesAll(h *codec.PullMessageRequestHeader) bool {
	if h.SysFlag&codec.PullFlagSubscription != 0 {
		return isTagType(h.ExpressionType) && allTags(h.Subscription)
	}
	s, _, found, _ := b.consumers.Subscription(h.ConsumerGroup, h.Topic)
	return found && isTagType(s.ExpressionType) && allTags(s.SubString)
}

func allTags(sub string) bool { return sub == "" || sub == "*" }
