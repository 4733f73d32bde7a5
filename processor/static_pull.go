package processor

import (
	"bytes"
	"context"

	"rmqd/codec"
)

// staticPull is what a pull on a static topic's logical queue keeps to
// rewrite its answer (PullMessageProcessor.rewriteResponseForStaticTopic):
// the queue's items and the one read. It rides in pullReply, so a held or
// dispatch-waiting pull is rewritten when it is finally answered.
type staticPull struct {
	items   []codec.LogicQueueMappingItem // the stored mapping's: read only
	cur     int
	logical int32
}

// staticPullRequest turns a pull of a logical queue into one of the item
// holding its offset: h gets the item's physical queue and offset. An item
// held here is pulled by the caller (the result non-nil); another broker's
// is forwarded, and the answer returned.
func (b *Broker) staticPullRequest(ctx context.Context, s *staticCtx, h *codec.PullMessageRequestHeader, reply pullReply) (*staticPull, *codec.RemotingCommand) {
	i := codec.FindMappingItem(s.items, h.QueueOffset, true)
	if i < 0 {
		return nil, reply.response(codec.RespSystemError, errNoDecidedItem.Error())
	}
	it := &s.items[i]
	p := &staticPull{items: s.items, cur: i, logical: s.logical}
	// The consumer's commit (a logical offset) is taken when it falls in the
	// item read here, as a physical offset of its queue. Java stores it as
	// sent under the physical queue, a wrong offset past the first item.
	if h.SysFlag&codec.PullFlagCommitOffset != 0 {
		if s.local(it) && codec.FindMappingItem(s.items, h.CommitOffset, true) == i {
			h.CommitOffset = it.PhysicalOffset(h.CommitOffset)
		} else {
			h.SysFlag &^= codec.PullFlagCommitOffset
		}
	}
	h.QueueID, h.QueueOffset = it.QueueID, it.PhysicalOffset(h.QueueOffset)
	if it.EndDecided() {
		h.MaxMsgNums = int32(min(int64(h.MaxMsgNums), it.EndOffset-it.StartOffset))
	}
	if s.local(it) {
		return p, nil
	}
	if _, _, resp := b.pullAllowed(h, reply); resp != nil {
		return nil, resp
	}
	return nil, b.forwardPull(ctx, s.d.Topic, it, p, h, reply)
}

// forwardPull pulls item it from its broker as Java's rewriteRequestForStaticTopic
// does (lo=false, neither held there nor committing) and rewrites the answer.
func (b *Broker) forwardPull(ctx context.Context, topic string, it *codec.LogicQueueMappingItem, p *staticPull,
	h *codec.PullMessageRequestHeader, reply pullReply) *codec.RemotingCommand {
	f := *h
	f.Logical, f.BrokerName = codec.BoolFalse, it.Bname
	f.SysFlag &^= codec.PullFlagSuspend | codec.PullFlagCommitOffset
	req := codec.NewRequest(codec.ReqPullMessage)
	req.CustomHeader = &f
	resp, err := b.forwardStatic(ctx, topic, it.Bname, req)
	if err != nil {
		return reply.response(codec.RespSystemError, err.Error())
	}
	switch resp.Code {
	case codec.RespSuccess, codec.RespPullNotFound, codec.RespPullRetryImmediately, codec.RespPullOffsetMoved:
	default:
		// Java turns these into SYSTEM_ERROR "unexpected remote response
		// code"; the remote's own code tells the consumer more.
		return reply.response(resp.Code, resp.Remark)
	}
	var hdr codec.PullMessageResponseHeader
	if err := hdr.Decode(resp.Ext); err != nil {
		return reply.response(codec.RespSystemError, "forwarded pull answer: "+err.Error())
	}
	code := p.rewrite(resp.Code, f.QueueOffset, &hdr)
	out := reply.withHeader(code, resp.Remark, hdr)
	if code == codec.RespSuccess {
		out.Body = bytes.Clone(resp.Body)
	}
	return out
}

// rewrite turns the answer to a pull of item p.cur at physical offset
// reqOffset into the logical queue's: at an item's end the consumer is sent
// on to the next item (PULL_RETRY_IMMEDIATELY at its start) or, while that
// one's logic offset is undecided, waits (PULL_NOT_FOUND); offsets become
// logical and offsetDelta tells the client how to shift the messages' queue
// offsets. A pull past the end of a single item (leader and earliest at
// once) keeps PULL_OFFSET_MOVED, where Java turns it into PULL_NOT_FOUND and
// leaves the consumer waiting at an offset no message will reach.
func (p *staticPull) rewrite(code int32, reqOffset int64, hdr *codec.PullMessageResponseHeader) int32 {
	items := p.items
	leader, earliest, cur := len(items)-1, codec.FindMappingItem(items, 0, true), p.cur
	next, lo, hi := hdr.NextBeginOffset, hdr.MinOffset, hdr.MaxOffset
	out := code
	if code != codec.RespSuccess {
		revised := false
		if cur == leader {
			switch {
			case reqOffset > hi:
				if code == codec.RespPullOffsetMoved {
					next = hi
				}
			case reqOffset < lo:
				next, out = lo, codec.RespPullRetryImmediately
			}
		}
		if cur == earliest {
			switch {
			case reqOffset < lo:
				next, out = lo, codec.RespPullOffsetMoved
			case reqOffset >= hi:
				if n := codec.NextMappingItem(items, cur, true); n >= 0 {
					revised, cur = true, n
					next, lo, hi = items[n].StartOffset, items[n].StartOffset, items[n].StartOffset
					out = codec.RespPullRetryImmediately
				} else if cur != leader || code != codec.RespPullOffsetMoved {
					out = codec.RespPullNotFound
				}
			}
		}
		if !revised && cur != leader && cur != earliest {
			switch {
			case reqOffset < lo:
				next, out = lo, codec.RespPullRetryImmediately
			case reqOffset >= hi:
				if n := codec.NextMappingItem(items, cur, true); n >= 0 {
					cur = n
					next, lo, hi = items[n].StartOffset, items[n].StartOffset, items[n].StartOffset
					out = codec.RespPullRetryImmediately
				} else {
					out = codec.RespPullNotFound
				}
			}
		}
	}
	it := &items[cur]
	if it.EndDecided() && next >= it.EndOffset {
		next = it.EndOffset
	}
	hdr.NextBeginOffset = it.StaticOffsetStrictly(next)
	hdr.MinOffset = it.StaticOffsetStrictly(max(it.StartOffset, lo))
	hdr.MaxOffset = max(it.StaticOffsetStrictly(hi), items[leader].MaxStaticOffset())
	hdr.OffsetDelta, hdr.HasOffsetDelta = it.OffsetDelta(), true
	return out
}
