package processor

import (
	"context"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/remoting"
	"rmqd/store"
)

// handleSendReplyMessage is SEND_REPLY_MESSAGE and SEND_REPLY_MESSAGE_V2
// (ReplyMessageProcessor): the reply is pushed to the requesting client named
// by REPLY_TO_CLIENT with PUSH_REPLY_MESSAGE_TO_CLIENT, then stored. The push
// decides the response code.
func (b *Broker) handleSendReplyMessage(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	hdr := &codec.SendMessageResponseHeader{MsgRegion: b.conf().RegionID, TraceOn: b.conf().TraceOn}
	var h codec.SendMessageRequestHeader
	if err := h.DecodeSend(req.Code, req.Ext); err != nil {
		return b.sendFailure(resp, hdr, codec.RespSystemError, err.Error()), nil
	}
	tc, ok := b.sendCheck(ctx, c, &h, resp, false)
	if !ok {
		return b.sendFailure(resp, hdr, resp.Code, resp.Remark), nil
	}
	queueID := h.QueueID
	if queueID < 0 {
		queueID = randomQueue(tc.WriteQueueNums)
	}
	born := addrPortOf(c.RemoteAddr())
	now := time.Now().UnixMilli()

	// The reply's properties, pushed and stored alike: the replier's plus
	// MSG_REGION and TRACE_ON (buildMsgContext) and, once the requester is
	// found, PUSH_REPLY_TIME. Unlike a send, no CLUSTER and no UNIQ_KEY.
	props := codec.EditProperties(h.Properties)
	props.Set(codec.PropMsgRegion, b.conf().RegionID)
	props.Set(codec.PropTraceSwitch, strconv.FormatBool(b.conf().TraceOn))

	// Push first.
	target, _ := codec.PropertyValue(h.Properties, codec.PropReplyToClient)
	var pushErr string
	switch ch, found := b.producers.FindByClientID(target); {
	case target == "":
		pushErr = "reply message properties[" + codec.PropReplyToClient + "] is null"
	case !found:
		pushErr = "push reply message fail, channel of <" + target + "> not found."
	default:
		props.Set(codec.PropPushReplyTime, i64s(now))
		push := codec.NewRequest(codec.ReqPushReplyMessageToClient)
		for _, kv := range [][2]string{{"producerGroup", h.ProducerGroup}, {"topic", h.Topic},
			{"defaultTopic", h.DefaultTopic}, {"defaultTopicQueueNums", i32s(h.DefaultTopicQueueNums)},
			{"queueId", i32s(h.QueueID)}, {"sysFlag", i32s(h.SysFlag)}, {"bornTimestamp", i64s(h.BornTimestamp)},
			{"flag", i32s(h.Flag)}, {"properties", props.String()},
			{"reconsumeTimes", i32s(h.ReconsumeTimes)}, {"unitMode", strconv.FormatBool(h.UnitMode)},
			{"bornHost", compat.JavaHostPort(born)}, {"storeHost", compat.JavaHostPort(b.storeHost)}, {"storeTimestamp", i64s(now)}} {
			push.Ext.Set(kv[0], strings.Clone(kv[1]))
		}
		push.Body = append([]byte(nil), req.Body...)
		cctx, cancel := context.WithTimeout(ctx, callClientTimeout)
		presp, err := ch.Conn.Invoke(cctx, push)
		cancel()
		if err != nil || presp.Code != codec.RespSuccess {
			pushErr = "push reply message to " + target + "fail."
		}
	}

	// Then store, pushed or not (storeReplyMessageEnable).
	var res store.PutResult
	stored := false
	if b.conf().StoreReplyMessageEnable {
		res, stored = b.storeReply(ctx, &h, props.String(), tc.TopicName, queueID, born, req.Body)
	}

	if pushErr != "" {
		return b.sendFailure(resp, hdr, codec.RespSystemError, pushErr), nil
	}
	// Java answers "0" unless the store took the message.
	hdr.MsgID, hdr.QueueID, hdr.QueueOffset = "0", queueID, 0
	if stored {
		hdr.MsgID = compat.OffsetMsgID(b.storeHost, res.WroteOffset)
		hdr.QueueOffset = res.QueueOffset
	}
	resp.CustomHeader = hdr
	return resp, nil
}

// storeReply puts a reply in the commit log and counts it in the put
// statistics as any stored send is (ReplyMessageProcessor.handlePutMessageResult).
func (b *Broker) storeReply(ctx context.Context, h *codec.SendMessageRequestHeader, props, topic string, queueID int32,
	born netip.AddrPort, body []byte) (store.PutResult, bool) {
	msg := codec.Message{Topic: topic, QueueID: queueID, Flag: h.Flag, SysFlag: h.SysFlag,
		BornTimestamp: h.BornTimestamp, BornHost: born, StoreHost: b.storeHost, ReconsumeTimes: h.ReconsumeTimes,
		Body: body, Properties: props}
	msg.SysFlag = hostFlags(msg.SysFlag, msg.BornHost, msg.StoreHost)
	start := time.Now()
	res := b.store.PutMessage(ctx, &msg)
	b.admin.storeStats.CountPut(time.Since(start))
	if !res.Status.Written() {
		b.admin.storeStats.CountPutFailed()
		return res, false
	}
	b.countPut(topic, max(res.MsgNum, 1), res.WroteBytes)
	return res, true
}

// sendFailure answers a failed send with only MSG_REGION and TRACE_ON.
func (b *Broker) sendFailure(resp *codec.RemotingCommand, hdr *codec.SendMessageResponseHeader, code int32, remark string) *codec.RemotingCommand {
	setCode(resp, code, remark)
	resp.CustomHeader = nil
	resp.Ext.Set(codec.ExtMsgRegion, hdr.MsgRegion)
	resp.Ext.Set(codec.ExtTraceOn, strconv.FormatBool(hdr.TraceOn))
	return resp
}
