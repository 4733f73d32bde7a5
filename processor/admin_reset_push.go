package processor

import (
	"fmt"
	"slices"
	"strconv"

	"rmqd/codec"
)

// minResetClientVersion is MQVersion.Version.V3_0_7_SNAPSHOT's ordinal: older
// clients cannot take RESET_CONSUMER_CLIENT_OFFSET.
const minResetClientVersion = 28

// resetOffsetOnClients is INVOKE_BROKER_TO_RESET_OFFSET with
// useServerSideResetOffset=false (Broker2Client.resetOffset, the only way of
// 4.9.x brokers): the broker computes each queue's new offset and pushes
// RESET_CONSUMER_CLIENT_OFFSET (oneway) to every online client of the group. A
// client drops its process queues of the topic, waits 10 s, stores the new
// offsets, commits them and lets rebalance pull from there. The broker records
// nothing itself; with no client online nothing changes and the answer is
// CONSUMER_NOT_ONLINE (mqadmin then falls back to setting offsets directly).
func (b *Broker) resetOffsetOnClients(req *codec.RemotingCommand, topic, group string, ts int64, isForce bool) *codec.RemotingCommand {
	tc, ok := b.topics.Select(topic)
	if !ok {
		return codec.NewResponse(req, codec.RespTopicNotExist,
			"[reset-offset] reset offset failed, no topic in this broker. topic="+topic)
	}
	offsets := make(map[mqKey]int64, tc.WriteQueueNums)
	for q := int32(0); q < tc.WriteQueueNums; q++ {
		consumer := b.offsets.Query(group, topic, q)
		if consumer == -1 {
			return codec.NewResponse(req, codec.RespSystemError, fmt.Sprintf("THe consumer group <%s> not exist", group))
		}
		var at int64
		if ts == -1 {
			at = b.store.MaxOffsetInQueue(topic, q)
		} else {
			at = b.store.OffsetInQueueByTime(topic, q, ts)
		}
		if at < 0 {
			at = 0
		}
		if isForce || at < consumer {
			offsets[mqKey{tc.TopicName, q}] = at
		} else {
			offsets[mqKey{tc.TopicName, q}] = consumer
		}
	}
	g, online := b.consumers.Group(group)
	if !online || len(g.Channels) == 0 {
		return codec.NewResponse(req, codec.RespConsumerNotOnline, fmt.Sprintf(
			"Consumer not online, so can not reset offset, Group: %s Topic: %s Timestamp: %d", group, topic, ts))
	}
	push := codec.NewRequest(codec.ReqResetConsumerClientOffset)
	push.Ext.Set("topic", topic)
	push.Ext.Set("group", group)
	push.Ext.Set("queueId", "-1")
	push.Ext.Set("timestamp", strconv.FormatInt(ts, 10))
	push.Ext.Set("isForce", "false")
	if req.Language == codec.LangCPP {
		push.Body = b.resetOffsetBodyForC(offsets)
	} else {
		push.Body = b.resetOffsetBody(offsets)
	}
	for _, ch := range g.Channels {
		if ch.Version < minResetClientVersion {
			return codec.NewResponse(req, codec.RespSystemError,
				fmt.Sprintf("the client does not support this feature. version=%d", ch.Version))
		}
	}
	for _, ch := range g.Channels {
		if err := ch.Conn.InvokeOneway(push); err != nil {
			b.log.Error("reset offset push failed", "topic", topic, "group", group, "clientId", ch.ClientID, "err", err)
			continue
		}
		b.log.Info("reset offset pushed", "topic", topic, "group", group, "clientId", ch.ClientID)
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = b.resetOffsetBody(offsets)
	return resp
}

// resetOffsetBody is ResetOffsetBody in fastjson's form: MessageQueue object
// keys.
func (b *Broker) resetOffsetBody(offsets map[mqKey]int64) []byte {
	body := []byte(`{"offsetTable":`)
	body = codec.AppendJSONObjectKeyMap(body, offsets, cmpMQ, b.appendMQ, func(dst []byte, v int64) []byte {
		return strconv.AppendInt(dst, v, 10)
	})
	return append(body, '}')
}

// resetOffsetBodyForC is ResetOffsetBodyForC, what C++ clients read: a list
// of MessageQueueForC.
func (b *Broker) resetOffsetBodyForC(offsets map[mqKey]int64) []byte {
	keys := make([]mqKey, 0, len(offsets))
	for k := range offsets {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmpMQ)
	body := []byte(`{"offsetTable":[`)
	for i, k := range keys {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, `{"brokerName":`...)
		body = codec.AppendJSONString(body, b.conf().BrokerName)
		body = append(body, `,"offset":`...)
		body = strconv.AppendInt(body, offsets[k], 10)
		body = append(body, `,"queueId":`...)
		body = strconv.AppendInt(body, int64(k.queue), 10)
		body = append(body, `,"topic":`...)
		body = codec.AppendJSONString(body, k.topic)
		body = append(body, '}')
	}
	return append(body, "]}"...)
}
