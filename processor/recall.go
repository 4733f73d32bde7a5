package processor

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"rmqd/codec"
	"rmqd/processor/delivery"
	"rmqd/remoting"
)

// Recall of timer messages (5.3's RecallMessageProcessor): a send that parks a
// message in the timer wheel answers a recall handle; RECALL_MESSAGE with it
// puts a delete marker for the same second, and the wheel drops the message
// when that second comes.

const (
	recallVersion1 = "v1"
	recallTag      = "_RECALL_TAG_"
)

// recallHandle is RecallMessageHandle.HandleV1.
type recallHandle struct {
	topic, brokerName, timestamp, msgID string
}

// buildRecallHandle is HandleV1.buildHandle: "v1 topic brokerName timestamp
// messageId", URL-safe base64 with padding.
func buildRecallHandle(topic, brokerName, timestamp, msgID string) string {
	raw := strings.Join([]string{recallVersion1, topic, brokerName, timestamp, msgID}, " ")
	return base64.URLEncoding.EncodeToString([]byte(raw))
}

// decodeRecallHandle is RecallMessageHandle.decodeHandle; ok is false where
// Java throws "recall handle is invalid".
func decodeRecallHandle(h string) (recallHandle, bool) {
	if h == "" {
		return recallHandle{}, false
	}
	raw, err := base64.URLEncoding.DecodeString(h)
	if err != nil {
		// Java's URL decoder also takes the handle without its padding.
		if raw, err = base64.RawURLEncoding.DecodeString(strings.TrimRight(h, "=")); err != nil {
			return recallHandle{}, false
		}
	}
	items := strings.Split(string(raw), " ")
	if len(items) < 5 || items[0] != recallVersion1 {
		return recallHandle{}, false
	}
	return recallHandle{topic: items[1], brokerName: items[2], timestamp: items[3], msgID: items[4]}, true
}

// recallHandleFor is SendMessageProcessor.attachRecallHandle for a message
// applyTimer parked: "" unless it waits in the timer wheel for a topic that is
// not a retry topic. The timestamp is TIMER_OUT_MS+1, as Java's ("consider of
// floor": the marker floors to the same second).
func (b *Broker) recallHandleFor(msg *codec.Message) string {
	if msg.Topic != TopicTimer {
		return ""
	}
	out, ok := codec.PropertyValue(msg.Properties, codec.PropTimerOutMs)
	real, ok2 := codec.PropertyValue(msg.Properties, codec.PropRealTopic)
	if !ok || !ok2 || strings.HasPrefix(real, RetryGroupTopicPrefix) {
		return ""
	}
	ms, err := strconv.ParseInt(out, 10, 64)
	if err != nil {
		return ""
	}
	uniq, _ := codec.PropertyValue(msg.Properties, codec.PropUniqKey)
	return buildRecallHandle(real, b.conf().BrokerName, strconv.FormatInt(ms+1, 10), uniq)
}

// handleRecallMessage is RECALL_MESSAGE (RecallMessageProcessor), with Java's
// checks, codes and remarks in Java's order.
func (b *Broker) handleRecallMessage(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	cfg := b.conf()
	var h codec.RecallMessageRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	topic, handle, group := h.Topic, h.RecallHandle, h.ProducerGroup
	fail := func(code int32, remark string) (*codec.RemotingCommand, error) {
		return codec.NewResponse(req, code, remark), nil
	}
	if !cfg.RecallMessageEnable {
		return fail(codec.RespNoPermission, "recall failed, operation is forbidden")
	}
	if cfg.IsSlave() {
		return fail(codec.RespSlaveNotAvailable, "recall failed, broker service not available")
	}
	if !permWritable(cfg.BrokerPermission) && !cfg.AllowRecallWhenBrokerNotWriteable {
		return fail(codec.RespServiceNotAvailable, "recall failed, broker service not available")
	}
	if _, ok := b.topics.Select(topic); !ok {
		return fail(codec.RespTopicNotExist, "recall failed, the topic["+topic+"] not exist")
	}
	rh, ok := decodeRecallHandle(handle)
	if !ok {
		return fail(codec.RespIllegalOperation, "recall handle is invalid")
	}
	if rh.topic != topic {
		return fail(codec.RespIllegalOperation, "recall failed, topic not match")
	}
	if rh.brokerName != cfg.BrokerName {
		return fail(codec.RespIllegalOperation, "recall failed, broker service not available")
	}
	ts, err := strconv.ParseInt(rh.timestamp, 10, 64)
	if err != nil {
		ts = -1
	}
	now := time.Now().UnixMilli()
	if left := ts - now; left <= 0 || left >= cfg.TimerMaxDelaySec*1000 {
		return fail(codec.RespIllegalOperation, "recall failed, timestamp invalid")
	}
	e := codec.EditProperties("")
	e.Set(codec.PropTags, recallTag)
	e.Set(delivery.PropTimerDelUniqKey, rh.topic+"+"+rh.msgID)
	e.Set(codec.PropUniqKey, rh.msgID)
	e.Set(codec.PropTimerDeliverMs, rh.timestamp)
	e.SetInt("BORN_TIMESTAMP", now)
	e.Set("TRACE_CONTEXT", "")
	e.Set(codec.PropProducerGroup, group)
	msg := &codec.Message{Topic: rh.topic, QueueID: 0, BornTimestamp: now, BornHost: addrPortOf(c.RemoteAddr()),
		StoreHost: b.storeHost, Body: []byte("0"), Properties: e.String()}
	msg.SysFlag = hostFlags(0, msg.BornHost, msg.StoreHost)
	// Without the wheel the marker would be an ordinary message for the
	// topic's consumers: Java's put fails (WHEEL_TIMER_NOT_ENABLE).
	if !cfg.TimerWheelEnable || !b.applyTimer(msg, nil) {
		return fail(codec.RespSystemError, "recall failed, execute error")
	}
	res := b.store.PutMessage(ctx, msg)
	if !res.Status.Written() {
		return fail(codec.RespSystemError, "recall failed, execute error")
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Ext.Set("msgId", rh.msgID)
	return resp, nil
}
