package processor

import (
	"context"
	"math"
	"strconv"
	"strings"

	"rmqd/codec"
)

// Requests on a remapped logical queue (several mapping items), served as
// Java's processors serve them: each finds the item holding the offset it is
// about (findLogicQueueMappingItem), reads it here or forwards to its broker
// (static_forward.go), and answers logical offsets.

// staticFailed is Java's answer when a rewrite throws: SYSTEM_ERROR with the
// cause.
func staticFailed(req *codec.RemotingCommand, err error) *codec.RemotingCommand {
	return codec.NewResponse(req, codec.RespSystemError, err.Error())
}

// errNoDecidedItem: every item's logic offset is undecided (a remapping
// between its two writes), where Java's rewrite throws.
type staticError string

func (e staticError) Error() string { return string(e) }

const errNoDecidedItem = staticError("no mapping item of the logical queue has a decided logic offset")

// itemOffset reads one number of an item's physical queue: local here, or
// asked of its broker with code (the answer's key).
func (b *Broker) itemOffset(ctx context.Context, s *staticCtx, it *codec.LogicQueueMappingItem, code int32, key string,
	local func(q int32) int64, kv ...string) (int64, error) {
	if s.local(it) {
		return local(it.QueueID), nil
	}
	resp, err := b.forwardStatic(ctx, s.d.Topic, it.Bname, forwardQueueRequest(code, s.d.Topic, it.QueueID, it.Bname, kv...))
	if err != nil {
		return 0, err
	}
	return forwardedOffset(resp, key)
}

func (b *Broker) itemMax(ctx context.Context, s *staticCtx, it *codec.LogicQueueMappingItem) (int64, error) {
	return b.itemOffset(ctx, s, it, codec.ReqGetMaxOffset, "offset", func(q int32) int64 { return b.store.MaxOffsetInQueue(s.d.Topic, q) })
}

func (b *Broker) itemMin(ctx context.Context, s *staticCtx, it *codec.LogicQueueMappingItem) (int64, error) {
	return b.itemOffset(ctx, s, it, codec.ReqGetMinOffset, "offset", func(q int32) int64 { return b.store.MinOffsetInQueue(s.d.Topic, q) })
}

func (b *Broker) itemEarliest(ctx context.Context, s *staticCtx, it *codec.LogicQueueMappingItem) (int64, error) {
	return b.itemOffset(ctx, s, it, codec.ReqGetEarliestMsgStoretime, "timestamp",
		func(q int32) int64 { return b.store.EarliestMessageTime(s.d.Topic, q) })
}

func offsetAnswer(req *codec.RemotingCommand, key string, v int64) *codec.RemotingCommand {
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Ext.Set(key, i64s(v))
	return resp
}

// staticMaxOffset is GET_MAX_OFFSET of a remapped queue: the end of the last
// item with a decided logic offset. Java reads the leader's physical queue
// id on that item's broker, another queue while the leader's logic offset is
// undecided; rmqd reads that item's own queue.
func (b *Broker) staticMaxOffset(ctx context.Context, req *codec.RemotingCommand, s *staticCtx, _ *codec.QueueRequestHeader) *codec.RemotingCommand {
	off, err := b.staticMax(ctx, s)
	if err != nil {
		return staticFailed(req, err)
	}
	return offsetAnswer(req, "offset", off)
}

func (b *Broker) staticMax(ctx context.Context, s *staticCtx) (int64, error) {
	i := codec.FindMappingItem(s.items, math.MaxInt64, true)
	if i < 0 {
		return 0, errNoDecidedItem
	}
	it := &s.items[i]
	phys, err := b.itemMax(ctx, s, it)
	if err != nil {
		return 0, err
	}
	return it.StaticOffsetStrictly(phys), nil
}

// staticMinOffset is GET_MIN_OFFSET of a remapped queue: the start of the
// earliest item (Java's handleGetMinOffsetForStaticTopic).
func (b *Broker) staticMinOffset(ctx context.Context, req *codec.RemotingCommand, s *staticCtx, _ *codec.QueueRequestHeader) *codec.RemotingCommand {
	off, err := b.staticMin(ctx, s)
	if err != nil {
		return staticFailed(req, err)
	}
	return offsetAnswer(req, "offset", off)
}

func (b *Broker) staticMin(ctx context.Context, s *staticCtx) (int64, error) {
	i := codec.FindMappingItem(s.items, 0, true)
	if i < 0 {
		return 0, errNoDecidedItem
	}
	it := &s.items[i]
	phys, err := b.itemMin(ctx, s, it)
	if err != nil {
		return 0, err
	}
	return it.StaticOffsetLoosely(phys), nil
}

// staticEarliestMsgStoretime is GET_EARLIEST_MSG_STORETIME of a remapped
// queue: the earliest item's first message (Java forwards the logical id
// there, reading another queue).
func (b *Broker) staticEarliestMsgStoretime(ctx context.Context, req *codec.RemotingCommand, s *staticCtx, _ *codec.QueueRequestHeader) *codec.RemotingCommand {
	i := codec.FindMappingItem(s.items, 0, true)
	if i < 0 {
		return staticFailed(req, errNoDecidedItem)
	}
	ts, err := b.itemEarliest(ctx, s, &s.items[i])
	if err != nil {
		return staticFailed(req, err)
	}
	return offsetAnswer(req, "timestamp", ts)
}

// staticSearchOffset is SEARCH_OFFSET_BY_TIMESTAMP of a remapped queue, with
// the single queue's boundaries over the items: LOWER is the first message
// stored at or after the time in the earliest item that has one (else the
// queue's max offset), UPPER the last one at or before it in the latest item
// that has one (else the queue's min offset). Java asks every item and keeps
// the last answer that is not past its item's end, so a time inside an old
// item was answered with the leader's offset 0 (its physical, not logical).
func (b *Broker) staticSearchOffset(ctx context.Context, req *codec.RemotingCommand, s *staticCtx, h *codec.SearchOffsetRequestHeader) *codec.RemotingCommand {
	off, err := b.staticSearch(ctx, s, h.Timestamp, h.BoundaryType)
	if err != nil {
		return staticFailed(req, err)
	}
	return offsetAnswer(req, "offset", off)
}

// staticSearch is staticSearchOffset's logical offset; boundary is the
// request's boundaryType ("" is LOWER).
func (b *Broker) staticSearch(ctx context.Context, s *staticCtx, ts int64, boundary string) (int64, error) {
	upper := strings.EqualFold(boundary, "upper")
	search := func(it *codec.LogicQueueMappingItem) (int64, error) {
		kv := []string{"timestamp", strconv.FormatInt(ts, 10)}
		if boundary != "" {
			kv = append(kv, "boundaryType", boundary)
		}
		return b.itemOffset(ctx, s, it, codec.ReqSearchOffsetByTimestamp, "offset",
			func(q int32) int64 { return b.searchOffset(s.d.Topic, q, ts, upper) }, kv...)
	}
	var decided []int
	for i := range s.items {
		if s.items[i].LogicOffset >= 0 {
			decided = append(decided, i)
		}
	}
	if len(decided) == 0 {
		return 0, errNoDecidedItem
	}
	if !upper {
		var last int64
		for _, i := range decided {
			it := &s.items[i]
			r, err := search(it)
			if err != nil {
				return 0, err
			}
			end, err := b.itemMax(ctx, s, it)
			if err != nil {
				return 0, err
			}
			if it.EndDecided() {
				end = min(end, it.EndOffset)
			}
			if r >= 0 && r < end {
				return it.StaticOffsetStrictly(r), nil
			}
			last = it.StaticOffsetStrictly(end)
		}
		return last, nil
	}
	var first int64
	for k := len(decided) - 1; k >= 0; k-- {
		it := &s.items[decided[k]]
		r, err := search(it)
		if err != nil {
			return 0, err
		}
		lo, err := b.itemMin(ctx, s, it)
		if err != nil {
			return 0, err
		}
		lo = max(lo, it.StartOffset)
		first = it.StaticOffsetStrictly(lo)
		if r > lo {
			return it.StaticOffsetStrictly(r), nil
		}
		if r == lo {
			// The item's first message, or nothing at or before ts in it.
			t, err := b.itemEarliest(ctx, s, it)
			if err != nil {
				return 0, err
			}
			if t >= 0 && t <= ts {
				return first, nil
			}
		}
	}
	return first, nil
}

// staticQueryConsumerOffset is QUERY_CONSUMER_OFFSET of a remapped queue:
// Java's "double read", the leader's item first, then the older ones, each
// offset kept under its item's physical queue; the first found is answered
// logical. Items with an undecided logic offset are skipped (Java adds -1).
func (b *Broker) staticQueryConsumerOffset(ctx context.Context, req *codec.RemotingCommand, s *staticCtx, h *codec.QueryConsumerOffsetRequestHeader) *codec.RemotingCommand {
	if off, ok := b.offsets.LogicalReset(h.ConsumerGroup, h.Topic, s.logical); ok && b.conf().UseServerSideResetOffset {
		return offsetAnswer(req, "offset", off) // a pending reset is read as the offset, as Java's queryOffset
	}
	for i := len(s.items) - 1; i >= 0; i-- {
		it := &s.items[i]
		if it.LogicOffset < 0 {
			continue
		}
		var off int64
		if s.local(it) {
			if off = b.offsets.Query(h.ConsumerGroup, h.Topic, it.QueueID); off < 0 {
				continue
			}
		} else {
			fwd := forwardQueueRequest(codec.ReqQueryConsumerOffset, h.Topic, it.QueueID, it.Bname,
				"consumerGroup", h.ConsumerGroup, "setZeroIfNotFound", "false")
			resp, err := b.forwardStatic(ctx, h.Topic, it.Bname, fwd)
			if err != nil {
				return staticFailed(req, err)
			}
			if resp.Code == codec.RespQueryNotFound {
				continue
			}
			if off, err = forwardedOffset(resp, "offset"); err != nil {
				return staticFailed(req, err)
			}
		}
		return offsetAnswer(req, "offset", it.StaticOffsetStrictly(off))
	}
	return codec.NewResponse(req, codec.RespQueryNotFound, "Not found, maybe this group consumer boot first")
}

// staticUpdateConsumerOffset is UPDATE_CONSUMER_OFFSET of a remapped queue:
// the commit goes to the item holding its offset, as a physical offset under
// its physical queue. One held here rewrites h and answers nil (the caller
// commits); another is forwarded and its answer returned.
func (b *Broker) staticUpdateConsumerOffset(ctx context.Context, req *codec.RemotingCommand, s *staticCtx, h *codec.UpdateConsumerOffsetRequestHeader) *codec.RemotingCommand {
	if _, ok := b.offsets.LogicalReset(h.ConsumerGroup, h.Topic, s.logical); ok && b.conf().UseServerSideResetOffset {
		// A pending admin reset wins over what the client still believes.
		return codec.NewResponse(req, codec.RespSuccess, "")
	}
	i := codec.FindMappingItem(s.items, h.CommitOffset, true)
	if i < 0 {
		return staticFailed(req, errNoDecidedItem)
	}
	it := &s.items[i]
	phys := it.PhysicalOffset(h.CommitOffset)
	if s.local(it) {
		h.QueueID, h.CommitOffset = it.QueueID, phys
		return nil
	}
	resp, err := b.forwardCommit(ctx, h.Topic, it, h.ConsumerGroup, phys)
	if err != nil {
		return staticFailed(req, err)
	}
	return codec.NewResponse(req, resp.Code, resp.Remark)
}
