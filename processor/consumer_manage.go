package processor

import (
	"context"
	"encoding/binary"
	"math"
	"strings"

	"rmqd/codec"
	"rmqd/remoting"
	"rmqd/store"
)

// handleQueryConsumerOffset is QUERY_CONSUMER_OFFSET
// (ConsumerManageProcessor.queryConsumerOffset). A stored offset is answered
// as is. Without one the answer is 0 when the queue still starts at offset 0
// and its first message is not cold (Java 4.9's rule, see firstOffsetRule),
// else QUERY_NOT_FOUND, upon which the client picks its start itself
// (ConsumeFromWhere: the max offset for CONSUME_FROM_LAST_OFFSET).
func (b *Broker) handleQueryConsumerOffset(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.QueryConsumerOffsetRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	if s, resp := b.staticQueueHeader(req, h.Topic, &h.QueueID); resp != nil {
		return resp, nil
	} else if s != nil {
		return b.staticQueryConsumerOffset(ctx, req, s, &h), nil
	}
	group, topic, queueID := h.ConsumerGroup, h.Topic, h.QueueID
	// 5.x: an explicit setZeroIfNotFound=false turns the offset-0 rule off.
	noZero := h.SetZeroIfNotFound != nil && !*h.SetZeroIfNotFound
	off := b.offsets.Query(group, topic, queueID)
	if off < 0 {
		if noZero {
			return codec.NewResponse(req, codec.RespQueryNotFound, "Not found, do not set to zero, maybe this group boot first"), nil
		}
		if b.startsAtZero(topic, queueID) {
			off = 0
		}
	}
	if off < 0 {
		return codec.NewResponse(req, codec.RespQueryNotFound, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"), nil
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Ext.Set("offset", i64s(off))
	return resp, nil
}

// recordPhyOffsetAt is where a commitlog record keeps its own commitlog offset
// (TOTALSIZE, MAGICCODE, BODYCRC, QUEUEID, FLAG, QUEUEOFFSET, PHYSICALOFFSET).
const recordPhyOffsetAt = 28

// startsAtZero reports whether a group without a stored offset starts a queue
// at 0: Java 4.9's queryConsumerOffset answers 0 when the queue's min offset is
// <= 0 and its first message is not on disk only (checkInDiskByConsumeOffset),
// so a new group reads a young queue from its start but not the whole history
// of an old one.
func (b *Broker) startsAtZero(topic string, queueID int32) bool {
	if b.store.MinOffsetInQueue(topic, queueID) > 0 {
		return false
	}
	if b.store.MaxOffsetInQueue(topic, queueID) <= 0 {
		return true // empty queue: no unit at 0
	}
	res := b.store.GetMessage("", topic, queueID, 0, 1, 0, nil)
	if res == nil {
		return true
	}
	defer res.Release()
	switch {
	case res.Status == store.GetFound && len(res.Records) > 0 && len(res.Records[0]) >= recordPhyOffsetAt+8:
		phy := int64(binary.BigEndian.Uint64(res.Records[0][recordPhyOffsetAt:]))
		return firstOffsetRule(phy, b.store.MaxPhyOffset(), b.store.HotCommitLogBytes())
	case res.Status == store.GetMessageWasRemoving:
		return false // its commitlog file is gone: as cold as it gets
	}
	return true
}

// firstOffsetRule is the in-memory estimate of the queue's first message: not
// more than hot bytes behind the commitlog's end.
func firstOffsetRule(firstPhy, maxPhy, hot int64) bool {
	return maxPhy-firstPhy <= hot
}

// handleUpdateConsumerOffset is UPDATE_CONSUMER_OFFSET
// (ConsumerManageProcessor.updateConsumerOffset).
func (b *Broker) handleUpdateConsumerOffset(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.UpdateConsumerOffsetRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	if s, resp := b.staticQueueHeader(req, h.Topic, &h.QueueID); resp != nil {
		return resp, nil
	} else if s != nil {
		// A commit in an item held here goes on below with its physical queue.
		if resp := b.staticUpdateConsumerOffset(ctx, req, s, &h); resp != nil {
			return resp, nil
		}
	}
	group, topic, queueID, off := h.ConsumerGroup, h.Topic, h.QueueID, h.CommitOffset
	// Java 5.x's containsSubscriptionGroup: a commit never creates the group
	// (the heartbeat does, under autoCreateSubscriptionGroup).
	if _, ok := b.groups.Get(group); !ok {
		return codec.NewResponse(req, codec.RespSubscriptionGroupNotExist, "Group "+group+" not exist!"), nil
	}
	if !b.topics.Exists(topic) {
		return codec.NewResponse(req, codec.RespTopicNotExist, "Topic "+topic+" not exist!"), nil
	}
	if b.conf().UseServerSideResetOffset && b.offsets.HasReset(group, topic, queueID) {
		// A pending admin reset wins over what the client still believes.
		return codec.NewResponse(req, codec.RespSuccess, ""), nil
	}
	b.offsets.Commit(group, topic, queueID, off)
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// handleGetMaxOffset is GET_MAX_OFFSET. Like a pull at the end of its queue
// (see dispatchProgress), the answer counts every message stored before the
// request arrived: it waits up to syncDispatchWait for consume-queue dispatch
// to pass that point, so a producer that was just acknowledged (or a tool
// checking what it sent) does not see a count short by the messages still in
// dispatch. Java answers from wherever dispatch is.
func (b *Broker) handleGetMaxOffset(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.QueueRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	if s, resp := b.staticQueueHeader(req, h.Topic, &h.QueueID); resp != nil {
		return resp, nil
	} else if s != nil {
		return b.staticMaxOffset(ctx, req, s, &h), nil
	}
	topic, q := h.Topic, h.QueueID
	b.waitDispatch(b.store.MaxPhyOffset(), syncDispatchWait, c)
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Ext.Set("offset", i64s(b.store.MaxOffsetInQueue(topic, q)))
	return resp, nil
}

// handleGetMinOffset is GET_MIN_OFFSET.
func (b *Broker) handleGetMinOffset(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.QueueRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	if s, resp := b.staticQueueHeader(req, h.Topic, &h.QueueID); resp != nil {
		return resp, nil
	} else if s != nil {
		return b.staticMinOffset(ctx, req, s, &h), nil
	}
	topic, q := h.Topic, h.QueueID
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Ext.Set("offset", i64s(b.store.MinOffsetInQueue(topic, q)))
	return resp, nil
}

// handleSearchOffsetByTimestamp is SEARCH_OFFSET_BY_TIMESTAMP with Java's
// boundaryType (5.x ConsumeQueue.getOffsetInQueueByTime): LOWER (the default,
// any name but "upper") is the first message stored at or after the time,
// the max offset when all are older; UPPER is the last one stored at or
// before it, so in a gap between store times UPPER < LOWER, as Java answers.
// Both are clamped into [min, max] as ConsumeQueueStore clamps: UPPER before
// the first message is the min offset.
func (b *Broker) handleSearchOffsetByTimestamp(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.SearchOffsetRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	if s, resp := b.staticQueueHeader(req, h.Topic, &h.QueueID); resp != nil {
		return resp, nil
	} else if s != nil {
		return b.staticSearchOffset(ctx, req, s, &h), nil
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Ext.Set("offset", i64s(b.searchOffset(h.Topic, h.QueueID, h.Timestamp, strings.EqualFold(h.BoundaryType, "upper"))))
	return resp, nil
}

// searchOffset is the search of one physical queue (see
// handleSearchOffsetByTimestamp).
func (b *Broker) searchOffset(topic string, q int32, ts int64, upper bool) int64 {
	if !upper {
		return b.store.OffsetInQueueByTime(topic, q, ts)
	}
	// One below the first message stored after ts: a binary search, where a
	// walk would read every message of a millisecond (a batch stores
	// thousands in one).
	after := b.store.MaxOffsetInQueue(topic, q)
	if ts < math.MaxInt64 {
		after = b.store.OffsetInQueueByTime(topic, q, ts+1)
	}
	return max(after-1, b.store.MinOffsetInQueue(topic, q))
}

// handleGetEarliestMsgStoretime is GET_EARLIEST_MSG_STORETIME.
func (b *Broker) handleGetEarliestMsgStoretime(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.QueueRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	if s, resp := b.staticQueueHeader(req, h.Topic, &h.QueueID); resp != nil {
		return resp, nil
	} else if s != nil {
		return b.staticEarliestMsgStoretime(ctx, req, s, &h), nil
	}
	topic, q := h.Topic, h.QueueID
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Ext.Set("timestamp", i64s(b.store.EarliestMessageTime(topic, q)))
	return resp, nil
}
