package processor

import (
	"context"
	"errors"
	"fmt"

	"rmqd/codec"
	"rmqd/store"
)

// Server-side offset reset (INVOKE_BROKER_TO_RESET_OFFSET with
// useServerSideResetOffset) of a static topic. Java resets every physical
// queue of every broker by its own search, so a consumer reading a remapped
// queue's leader item is moved inside that item only, however far back the
// time lies, and the older items' resets wait for pulls that never come.
// rmqd resets each logical queue where it is led, by the logical search over
// its items (staticSearch, as SEARCH_OFFSET_BY_TIMESTAMP): the target is
// committed in the item holding it, the group's offsets in later items are
// cleared (the query reads the latest item first), and the next pull of the
// logical queue answers PULL_OFFSET_MOVED with it.

// staticResetOffset resets the logical queues of static topic d led here:
// queueID (logical) alone when not negative, at offset when that is not -1,
// else each at timestamp ts (-1: its max offset). Queues led elsewhere are
// left to their leaders, so a broker leading none answers an empty table.
func (b *Broker) staticResetOffset(ctx context.Context, req *codec.RemotingCommand, d *codec.TopicQueueMappingDetail,
	group string, ts int64, queueID int32, offset int64) *codec.RemotingCommand {
	var ids []int32
	if queueID >= 0 {
		ids = []int32{queueID}
	} else {
		for _, id := range codec.SortedKeys(d.HostedQueues) {
			if items := d.HostedQueues[id]; len(items) > 0 && items[len(items)-1].Bname == d.Bname {
				ids = append(ids, id)
			}
		}
	}
	offsets := make(map[mqKey]int64, len(ids))
	for _, id := range ids {
		items := d.HostedQueues[id]
		if len(items) == 0 || items[len(items)-1].Bname != d.Bname {
			return codec.NewResponse(req, codec.RespNotLeaderForQueue,
				fmt.Sprintf("%s-%d does not exit in request process of current broker %s", d.Topic, id, d.Bname))
		}
		s := &staticCtx{d: d, logical: id, items: items}
		target, err := b.staticResetTarget(ctx, s, ts, queueID >= 0 && offset != -1, offset)
		if err != nil {
			if r := (*staticRefusal)(nil); errors.As(err, &r) {
				return r.response(req)
			}
			return staticFailed(req, err)
		}
		if err := b.assignStaticReset(ctx, s, group, target); err != nil {
			return staticFailed(req, err)
		}
		offsets[mqKey{d.Topic, id}] = target
	}
	b.log.Info("static topic offsets reset", "topic", d.Topic, "group", group, "timestamp", ts, "queues", len(offsets))
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = b.resetOffsetBody(offsets)
	return resp
}

func (r *staticRefusal) Error() string { return r.remark }

// staticResetTarget is the logical offset a reset moves logical queue s to:
// offset when given (inside the queue's logical range, as Java checks a
// physical one), else the queue's max (ts < 0) or the first message stored
// at or after ts.
func (b *Broker) staticResetTarget(ctx context.Context, s *staticCtx, ts int64, given bool, offset int64) (int64, error) {
	switch {
	case given:
		lo, err := b.staticMin(ctx, s)
		if err != nil {
			return 0, err
		}
		hi, err := b.staticMax(ctx, s)
		if err != nil {
			return 0, err
		}
		if lo >= 0 && offset < lo || offset > hi+1 {
			return 0, &staticRefusal{codec.RespSystemError,
				fmt.Sprintf("Target offset %d not in consume queue range [%d-%d]", offset, lo, hi)}
		}
		return offset, nil
	case ts < 0:
		return b.staticMax(ctx, s)
	}
	return b.staticSearch(ctx, s, ts, "")
}

// assignStaticReset records a reset of logical queue s to logical offset
// target. A queue served as its one physical queue is reset as any queue.
func (b *Broker) assignStaticReset(ctx context.Context, s *staticCtx, group string, target int64) error {
	topic := s.d.Topic
	if s.physical() {
		b.offsets.AssignReset(group, topic, s.items[0].QueueID, target)
		return nil
	}
	i := codec.FindMappingItem(s.items, target, true)
	if i < 0 {
		return errNoDecidedItem
	}
	it := &s.items[i]
	phys := it.PhysicalOffset(target)
	if s.local(it) {
		b.offsets.Commit(group, topic, it.QueueID, phys)
	} else {
		// Only a consumer restarting before its next pull reads this commit:
		// the pull below moves a running one, so a refusal is logged, not fatal.
		b.commitOnItemBroker(ctx, s, it, group, phys, "static topic reset: commit on the item's broker")
	}
	for j := i + 1; j < len(s.items); j++ {
		later := &s.items[j]
		switch {
		case later.Bname == it.Bname && later.QueueID == it.QueueID: // the same physical queue again
		case s.local(later):
			b.offsets.Forget(group, topic, later.QueueID)
		default:
			// No request deletes one queue's offset: -1 reads as none there
			// (QUERY_NOT_FOUND to the double read), on a Java broker too.
			b.commitOnItemBroker(ctx, s, later, group, -1, "static topic reset: clear a later item's offset")
		}
	}
	b.offsets.AssignLogicalReset(group, topic, s.logical, target)
	return nil
}

// commitOnItemBroker commits the group's offset of item it's physical queue on
// the item's broker (UPDATE_CONSUMER_OFFSET, forwarded); a failure is logged
// as what.
func (b *Broker) commitOnItemBroker(ctx context.Context, s *staticCtx, it *codec.LogicQueueMappingItem, group string, offset int64, what string) {
	if err := remoteRefusal(b.forwardCommit(ctx, s.d.Topic, it, group, offset)); err != nil {
		b.log.Warn(what, "topic", s.d.Topic, "group", group, "queue", s.logical, "broker", it.Bname, "err", err)
	}
}

// staticResetPull answers a pull of remapped logical queue logical (items)
// with its pending reset, if any (nil otherwise): PULL_OFFSET_MOVED to the
// logical offset, with offsetDelta of the item holding it, as every static
// pull answer carries one. It runs before the pull is turned to an item (one
// on another broker is forwarded) and again when a held pull is re-run.
func (b *Broker) staticResetPull(items []codec.LogicQueueMappingItem, logical int32, h *codec.PullMessageRequestHeader, reply pullReply) *codec.RemotingCommand {
	s := &staticCtx{logical: logical, items: items} // no d: nothing here asks which broker is local
	if s.physical() {
		return nil // its reset is a physical one, taken by pull
	}
	if _, ok := b.offsets.LogicalReset(h.ConsumerGroup, h.Topic, s.logical); !ok {
		return nil
	}
	// A pull the broker, group or topic refuses is refused before a reset
	// is handed out, as Java's checks come before its reset.
	if _, _, resp := b.pullAllowed(h, reply); resp != nil {
		return resp
	}
	off, ok := b.offsets.TakeLogicalReset(h.ConsumerGroup, h.Topic, s.logical)
	if !ok || !b.conf().UseServerSideResetOffset {
		return nil
	}
	hdr := codec.PullMessageResponseHeader{SuggestWhichBrokerID: b.suggestBrokerID(h.ConsumerGroup, &store.GetResult{}),
		NextBeginOffset: off, MinOffset: off, MaxOffset: off}
	if i := codec.FindMappingItem(s.items, off, true); i >= 0 {
		hdr.OffsetDelta, hdr.HasOffsetDelta = s.items[i].OffsetDelta(), true
		hdr.MinOffset = min(off, s.items[codec.FindMappingItem(s.items, 0, true)].LogicOffset)
	}
	leader := s.leader() // led here: its end is read locally
	hdr.MaxOffset = max(off, leader.StaticOffsetStrictly(b.store.MaxOffsetInQueue(h.Topic, leader.QueueID)))
	return reply.withHeader(codec.RespPullOffsetMoved, store.GetOffsetReset.String(), hdr)
}
