package processor

import (
	"context"
	"strings"

	"rmqd/codec"
	"rmqd/remoting"
)

// handleQueryConsumerOffset is QUERY_CONSUMER_OFFSET
// (ConsumerManageProcessor.queryConsumerOffset): no stored offset is
// QUERY_NOT_FOUND, except that a queue whose first message is still at offset 0
// answers 0 so a new group starts at the beginning.
func (b *Broker) handleQueryConsumerOffset(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	h := headerReader{ext: req.Ext}
	group, topic, queueID := h.reqStr("consumerGroup"), h.reqStr("topic"), h.reqInt32("queueId")
	// 5.x: an explicit setZeroIfNotFound=false turns the offset-0 rule off.
	zv, hasZero := req.Ext.Get("setZeroIfNotFound")
	noZero := hasZero && !parseJavaBool(zv)
	if h.err != nil {
		return codec.NewResponse(req, codec.RespSystemError, h.err.Error()), nil
	}
	off := b.offsets.Query(group, topic, queueID)
	if off < 0 {
		if min := b.store.MinOffsetInQueue(topic, queueID); min <= 0 && !noZero {
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

// handleUpdateConsumerOffset is UPDATE_CONSUMER_OFFSET.
func (b *Broker) handleUpdateConsumerOffset(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	h := headerReader{ext: req.Ext}
	group, topic, queueID, off := h.reqStr("consumerGroup"), h.reqStr("topic"), h.reqInt32("queueId"), h.reqInt64("commitOffset")
	if h.err != nil {
		return codec.NewResponse(req, codec.RespSystemError, h.err.Error()), nil
	}
	if _, ok := b.groups.Find(group); !ok {
		return codec.NewResponse(req, codec.RespSubscriptionGroupNotExist, "subscription group not exist, "+group), nil
	}
	if _, ok := b.topics.Select(topic); !ok {
		return codec.NewResponse(req, codec.RespTopicNotExist, "topic not exist, "+topic), nil
	}
	if b.offsets.HasReset(group, topic, queueID) {
		// A pending admin reset wins over what the client still believes.
		return codec.NewResponse(req, codec.RespSuccess, ""), nil
	}
	b.offsets.Commit(group, topic, queueID, off)
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

func (b *Broker) queueRequest(req *codec.RemotingCommand) (topic string, queueID int32, h *headerReader) {
	h = &headerReader{ext: req.Ext}
	return h.reqStr("topic"), h.reqInt32("queueId"), h
}

// handleGetMaxOffset is GET_MAX_OFFSET.
func (b *Broker) handleGetMaxOffset(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	topic, q, h := b.queueRequest(req)
	if h.err != nil {
		return codec.NewResponse(req, codec.RespSystemError, h.err.Error()), nil
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Ext.Set("offset", i64s(b.store.MaxOffsetInQueue(topic, q)))
	return resp, nil
}

// handleGetMinOffset is GET_MIN_OFFSET.
func (b *Broker) handleGetMinOffset(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	topic, q, h := b.queueRequest(req)
	if h.err != nil {
		return codec.NewResponse(req, codec.RespSystemError, h.err.Error()), nil
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Ext.Set("offset", i64s(b.store.MinOffsetInQueue(topic, q)))
	return resp, nil
}

// handleSearchOffsetByTimestamp is SEARCH_OFFSET_BY_TIMESTAMP.
func (b *Broker) handleSearchOffsetByTimestamp(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	topic, q, h := b.queueRequest(req)
	ts := h.reqInt64("timestamp")
	if h.err != nil {
		return codec.NewResponse(req, codec.RespSystemError, h.err.Error()), nil
	}
	off := b.store.OffsetInQueueByTime(topic, q, ts)
	if strings.EqualFold(h.str("boundaryType"), "upper") {
		// The store answers the lower boundary; walk to the last message stored
		// at or before ts.
		max := b.store.MaxOffsetInQueue(topic, q)
		for off+1 < max && b.store.MessageStoreTimestamp(topic, q, off+1) <= ts {
			off++
		}
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Ext.Set("offset", i64s(off))
	return resp, nil
}

// handleGetEarliestMsgStoretime is GET_EARLIEST_MSG_STORETIME.
func (b *Broker) handleGetEarliestMsgStoretime(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	topic, q, h := b.queueRequest(req)
	if h.err != nil {
		return codec.NewResponse(req, codec.RespSystemError, h.err.Error()), nil
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Ext.Set("timestamp", i64s(b.store.EarliestMessageTime(topic, q)))
	return resp, nil
}
