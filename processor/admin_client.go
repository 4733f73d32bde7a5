package processor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/remoting"
)

// callClientTimeout bounds a broker→client call: an admin tool's call on a
// consumer and the push of a reply to its requester (Broker2Client.callClient).
const callClientTimeout = 10 * time.Second

// consumeStatusTimeout bounds each GET_CONSUMER_STATUS_FROM_CLIENT
// (Broker2Client.getConsumeStatus).
const consumeStatusTimeout = 5 * time.Second

// handleInvokeBrokerToResetOffset is INVOKE_BROKER_TO_RESET_OFFSET. With
// server-side reset (useServerSideResetOffset, the 5.x default) the new offsets
// are recorded here and handed out by the next pull of each queue as
// PULL_OFFSET_MOVED, which every client (4.9.x included) follows; without it
// they are pushed to the group's clients (resetOffsetOnClients).
func (b *Broker) handleInvokeBrokerToResetOffset(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	h := codec.ResetOffsetRequestHeader{QueueID: -1, Offset: -1}
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	topic, group, ts, queueID, offset := h.Topic, h.Group, h.Timestamp, h.QueueID, h.Offset
	if !b.conf().UseServerSideResetOffset {
		return b.resetOffsetOnClients(req, topic, group, ts, h.IsForce), nil
	}
	if b.conf().IsSlave() {
		// Its offsets are the master's copy, replaced by the next sync; a reset
		// kept here would only move consumers that happen to pull from it.
		return codec.NewResponse(req, codec.RespSystemError, "Can not reset offset in slave broker"), nil
	}
	tc, ok := b.topics.Select(topic)
	if !ok {
		return codec.NewResponse(req, codec.RespTopicNotExist, "Topic "+topic+" does not exist"), nil
	}
	if _, ok := b.groups.Get(group); !ok {
		return codec.NewResponse(req, codec.RespSubscriptionGroupNotExist, "Group "+group+" does not exist"), nil
	}
	if d := b.mappings.Get(topic); d != nil {
		return b.staticResetOffset(ctx, req, d, group, ts, queueID, offset), nil
	}
	search := func(q int32) int64 {
		if ts < 0 {
			return b.store.MaxOffsetInQueue(topic, q)
		}
		return b.store.OffsetInQueueByTime(topic, q, ts)
	}
	offsets := map[mqKey]int64{}
	if queueID >= 0 {
		if offset != -1 {
			min, max := b.store.MinOffsetInQueue(topic, queueID), b.store.MaxOffsetInQueue(topic, queueID)
			if min >= 0 && offset < min || offset > max+1 {
				return codec.NewResponse(req, codec.RespSystemError,
					fmt.Sprintf("Target offset %d not in consume queue range [%d-%d]", offset, min, max)), nil
			}
		} else {
			offset = search(queueID)
		}
		offsets[mqKey{tc.TopicName, queueID}] = offset
	} else {
		for q := int32(0); q < tc.ReadQueueNums; q++ {
			offsets[mqKey{tc.TopicName, q}] = search(q)
		}
	}
	if len(offsets) == 0 {
		return codec.NewResponse(req, codec.RespSystemError, "No queues to reset."), nil
	}
	for k, off := range offsets {
		b.offsets.AssignReset(group, topic, k.queue, off)
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = b.resetOffsetBody(offsets)
	return resp, nil
}

// findConsumerConn finds the connection of one client of a consumer group.
func (b *Broker) findConsumerConn(group, clientID string) (remoting.Conn, bool) {
	g, ok := b.consumers.Group(group)
	if !ok {
		return nil, false
	}
	// A client that reconnected while its old connection lingers is listed on
	// both: the one that heartbeat last is the one that answers.
	var best *ClientChannel
	for _, ch := range g.Channels {
		if ch.ClientID == clientID && !ch.Conn.Closed() && (best == nil || ch.LastUpdate.After(best.LastUpdate)) {
			best = ch
		}
	}
	if best == nil {
		return nil, false
	}
	return best.Conn, true
}

// callConsumer relays an admin request to one consumer client of group and its
// answer back (AdminBrokerProcessor.callConsumer).
func (b *Broker) callConsumer(ctx context.Context, req *codec.RemotingCommand, group, clientID string, body []byte) (*codec.RemotingCommand, error) {
	conn, ok := b.findConsumerConn(group, clientID)
	if !ok {
		return codec.NewResponse(req, codec.RespSystemError, fmt.Sprintf("The Consumer <%s> <%s> not online", group, clientID)), nil
	}
	out := codec.NewRequest(req.Code)
	out.Ext = append(codec.ExtFields(nil), req.Ext...)
	out.Body = body
	cctx, cancel := context.WithTimeout(ctx, callClientTimeout)
	defer cancel()
	cresp, err := conn.Invoke(cctx, out)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return codec.NewResponse(req, codec.RespConsumeMsgTimeout, fmt.Sprintf("consumer <%s> <%s> Timeout: %v", group, clientID, err)), nil
		}
		return codec.NewResponse(req, codec.RespSystemError, fmt.Sprintf("invoke consumer <%s> <%s> Exception: %v", group, clientID, err)), nil
	}
	resp := codec.NewResponse(req, cresp.Code, cresp.Remark)
	resp.Ext = append(codec.ExtFields(nil), cresp.Ext...)
	resp.Body = cresp.Body
	return resp, nil
}

// handleGetConsumerRunningInfo is GET_CONSUMER_RUNNING_INFO, relayed to the
// client.
func (b *Broker) handleGetConsumerRunningInfo(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.GetConsumerRunningInfoRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return headerError(req, err), nil
	}
	return b.callConsumer(ctx, req, h.ConsumerGroup, h.ClientID, nil)
}

// handleConsumeMessageDirectly is CONSUME_MESSAGE_DIRECTLY: the message named by
// msgId (an offsetMsgId) is sent to the client to consume.
func (b *Broker) handleConsumeMessageDirectly(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.ConsumeMessageDirectlyRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return headerError(req, err), nil
	}
	msgID := h.MsgID
	_, off, err := compat.DecodeOffsetMsgID(msgID)
	if err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	rec, err := b.store.ReadRecordByOffset(off)
	if err != nil {
		return codec.NewResponse(req, codec.RespSystemError, "no message for msgId "+msgID), nil
	}
	return b.callConsumer(ctx, req, h.ConsumerGroup, h.ClientID, rec)
}

// handleQuerySubscriptionByConsumer is QUERY_SUBSCRIPTION_BY_CONSUMER: the group's subscription of topic,
// heartbeat or compensated (a POP or proxied pull consumer), absent from the body when there is none.
func (b *Broker) handleQuerySubscriptionByConsumer(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.QuerySubscriptionByConsumerRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return headerError(req, err), nil
	}
	group, topic := h.Group, h.Topic
	var sub *codec.SubscriptionData
	if s, ok := b.consumers.FindSubscription(group, topic); ok {
		sub = &s
	}
	body, err := codec.MarshalBody(struct {
		Group            string                  `json:"group"`
		SubscriptionData *codec.SubscriptionData `json:"subscriptionData,omitempty"`
		Topic            string                  `json:"topic"`
	}{group, sub, topic})
	if err != nil {
		return nil, err
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = body
	return resp, nil
}
