package processor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"rmqd/codec"
	"rmqd/processor/meta"
	"rmqd/remoting"
)

// The consumer-group admin codes mqadmin and the dashboard send besides
// GET_CONSUME_STATS: which topics a group consumes, how far behind in time it
// is, copying its offsets, every group's stats at once and the offsets its
// clients hold (AdminBrokerProcessor and Broker2Client).

// headerError answers a header that fails to decode as Java's remoting layer
// answers the RemotingCommandException: SYSTEM_ERROR with its message.
func headerError(req *codec.RemotingCommand, err error) *codec.RemotingCommand {
	return codec.NewResponse(req, codec.RespSystemError, err.Error())
}

// handleQueryTopicsByConsumer is QUERY_TOPICS_BY_CONSUMER: the topics the group
// has offsets on (ConsumerOffsetManager.whichTopicByConsumer) and this broker's
// address, a TopicList.
func (b *Broker) handleQueryTopicsByConsumer(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.QueryTopicsByConsumerRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return headerError(req, err), nil
	}
	topics := b.offsets.TopicsOfGroup(h.Group)
	if topics == nil {
		topics = []string{}
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = (&codec.TopicList{TopicList: topics, BrokerAddr: b.conf().BrokerAddr()}).AppendJSON(nil)
	return resp, nil
}

// javaSpanTime is QueueTimeSpan's *TimeStampStr: UtilAll.formatDate with
// "yyyy-MM-dd#HH:mm:ss:SSS" in the broker's time zone.
func javaSpanTime(dst []byte, ms int64) []byte {
	t := time.UnixMilli(ms)
	dst = t.AppendFormat(dst, "2006-01-02#15:04:05")
	return fmt.Appendf(dst, ":%03d", t.Nanosecond()/int(time.Millisecond))
}

// handleQueryConsumeTimeSpan is QUERY_CONSUME_TIME_SPAN: per write queue of the
// topic the store times of its first and last message and of the group's last
// consumed one, and how long the next one to consume has waited. One
// difference from Java: a queue the group has no offset on (or whose offset
// has expired) measures that wait from the queue's first message, and a wait
// whose message is not found is 0; Java reads the time at offset -1, finds
// none and reports now+1 ms (56 years).
func (b *Broker) handleQueryConsumeTimeSpan(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.QueryConsumeTimeSpanRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return headerError(req, err), nil
	}
	tc, ok := b.topics.Select(h.Topic)
	if !ok {
		return codec.NewResponse(req, codec.RespTopicNotExist, "topic["+h.Topic+"] not exist"), nil
	}
	brokerName := b.conf().BrokerName
	now := time.Now().UnixMilli()
	body := []byte(`{"consumeTimeSpanSet":[`)
	for q := int32(0); q < tc.WriteQueueNums; q++ {
		minTime := b.store.EarliestMessageTime(h.Topic, q)
		maxOff := b.store.MaxOffsetInQueue(h.Topic, q)
		maxTime := b.store.MessageStoreTimestamp(h.Topic, q, maxOff-1)
		consumerOff := b.offsets.Query(h.Group, h.Topic, q)
		consumeTime := minTime
		if consumerOff > 0 {
			consumeTime = b.store.MessageStoreTimestamp(h.Topic, q, consumerOff-1)
		}
		var delay int64
		if consumerOff < maxOff {
			next := max(consumerOff, b.store.MinOffsetInQueue(h.Topic, q))
			if ts := b.store.MessageStoreTimestamp(h.Topic, q, next); ts >= 0 {
				delay = now - ts
			}
		}
		if q > 0 {
			body = append(body, ',')
		}
		body = append(body, `{"consumeTimeStamp":`...)
		body = strconv.AppendInt(body, consumeTime, 10)
		body = append(body, `,"consumeTimeStampStr":"`...)
		body = javaSpanTime(body, consumeTime)
		body = append(body, `","delayTime":`...)
		body = strconv.AppendInt(body, delay, 10)
		body = append(body, `,"maxTimeStamp":`...)
		body = strconv.AppendInt(body, maxTime, 10)
		body = append(body, `,"maxTimeStampStr":"`...)
		body = javaSpanTime(body, maxTime)
		body = append(body, `","messageQueue":`...)
		body = codec.AppendMessageQueueKey(body, brokerName, q, h.Topic)
		body = append(body, `,"minTimeStamp":`...)
		body = strconv.AppendInt(body, minTime, 10)
		body = append(body, `,"minTimeStampStr":"`...)
		body = javaSpanTime(body, minTime)
		body = append(body, `"}`...)
		if len(body) > statsBodyMax {
			return codec.NewResponse(req, codec.RespSystemError, statsTooLarge("consume time spans", int(tc.WriteQueueNums), len(body))), nil
		}
	}
	body = append(body, "]}"...)
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = body
	return resp, nil
}

// handleCloneGroupOffset is CLONE_GROUP_OFFSET (mqadmin cloneGroupOffset):
// destGroup takes srcGroup's offsets on topic, or on every topic srcGroup has
// offsets on when topic is empty. Unless offline is set, a topic the online
// srcGroup does not subscribe to is skipped, as in Java. Java's handler, for
// an empty topic, clones each topic under the request's empty topic name and
// so copies nothing; rmqd copies each topic.
func (b *Broker) handleCloneGroupOffset(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.CloneGroupOffsetRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return headerError(req, err), nil
	}
	topics := []string{h.Topic}
	if strings.TrimSpace(h.Topic) == "" {
		topics = b.offsets.TopicsOfGroup(h.SrcGroup)
	}
	onlineSubs := 0
	if g, ok := b.consumers.Group(h.SrcGroup); ok {
		onlineSubs = len(g.Subscriptions)
	}
	var cloned []string
	for _, topic := range topics {
		if _, ok := b.topics.Select(topic); !ok {
			continue
		}
		if !h.Offline && onlineSubs > 0 {
			if _, ok := b.consumers.FindSubscription(h.SrcGroup, topic); !ok {
				continue
			}
		}
		if b.offsets.Clone(h.SrcGroup, h.DestGroup, topic) {
			cloned = append(cloned, topic)
		}
	}
	b.log.Info("clone group offset", "src", h.SrcGroup, "dest", h.DestGroup, "topics", cloned, "remote", c.RemoteAddr())
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// handleGetBrokerConsumeStats is GET_BROKER_CONSUME_STATS (mqadmin
// brokerConsumeStats): a ConsumeStatsList of every subscription group's
// ConsumeStats per topic it has offsets on (order topics only with isOrder),
// with the summed lag. Each OffsetWrapper is GET_CONSUME_STATS's (pullOffset is
// where the last pull left the queue; Java leaves it 0 here, which makes
// totalInflightDiff the negated sum of every consumer offset), so
// totalInflightDiff sums what is pulled and not yet committed.
func (b *Broker) handleGetBrokerConsumeStats(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.GetConsumeStatsInBrokerHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return headerError(req, err), nil
	}
	groups := codec.SortedKeys(b.groups.Snapshot().SubscriptionGroupTable)
	const tailMax = 2 + 3*20 + len(`,"totalDiff":,"totalInflightDiff":}`)
	body := []byte(`{"brokerAddr":`)
	body = codec.AppendJSONString(body, b.conf().BrokerAddr())
	body = append(body, `,"consumeStatsList":[`...)
	var totalDiff, totalInflight int64
	queues := 0
	for gi, group := range groups {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("broker consume stats: %w", ctx.Err())
		}
		onlineSubs := 0
		if g, ok := b.consumers.Group(group); ok {
			onlineSubs = len(g.Subscriptions)
		}
		if gi > 0 {
			body = append(body, ',')
		}
		body = append(body, '{')
		body = codec.AppendJSONString(body, group)
		body = append(body, ":["...)
		first := true
		for _, topic := range b.offsets.TopicsOfGroup(group) {
			tc, ok := b.topics.Select(topic)
			if !ok || (h.IsOrder && !tc.Order) {
				continue
			}
			if _, ok := b.consumers.FindSubscription(group, topic); !ok && onlineSubs > 0 {
				continue
			}
			span := []mqSpan{{topic: topic, key: tc.TopicName, queues: tc.WriteQueueNums}}
			lookup := func(topic string, q int32) consumeStat { return b.consumeStat(group, topic, q) }
			head := `{"consumeTps":` + b.consumeTpsJSON(group, []string{topic}) + `,"offsetTable":`
			room := statsBodyMax - len(body) - len(head) - tailMax
			queues += int(max(tc.WriteQueueNums, 0))
			if size, ok := offsetTableSize(b, span, room, 4, appendConsumeStat, lookup); !ok {
				return codec.NewResponse(req, codec.RespSystemError,
					statsTooLarge("broker consume stats", queues, len(body)+size)), nil
			}
			table := make(map[mqKey]consumeStat, max(tc.WriteQueueNums, 0))
			for q := int32(0); q < tc.WriteQueueNums; q++ {
				s := lookup(topic, q)
				table[mqKey{tc.TopicName, q}] = s
				totalDiff += s.broker - s.consumer
				totalInflight += s.pull - s.consumer
			}
			if !first {
				body = append(body, ',')
			}
			first = false
			body = append(body, head...)
			body = codec.AppendJSONObjectKeyMap(body, table, cmpMQ, b.appendMQ, appendConsumeStat)
			body = append(body, '}')
		}
		body = append(body, "]}"...)
		if len(body) > statsBodyMax-tailMax {
			return codec.NewResponse(req, codec.RespSystemError, statsTooLarge("broker consume stats", queues, len(body))), nil
		}
	}
	body = append(body, `],"totalDiff":`...)
	body = strconv.AppendInt(body, totalDiff, 10)
	body = append(body, `,"totalInflightDiff":`...)
	body = strconv.AppendInt(body, totalInflight, 10)
	body = append(body, '}')
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = body
	return resp, nil
}

// minConsumerStatusVersion is MQVersion V3_0_7_SNAPSHOT's ordinal: older
// clients cannot answer GET_CONSUMER_STATUS_FROM_CLIENT.
const minConsumerStatusVersion = 28

// clientMQ is a MessageQueue a client reports, of any broker.
type clientMQ struct {
	broker, topic string
	queue         int32
}

func cmpClientMQ(a, b clientMQ) int {
	if c := strings.Compare(a.topic, b.topic); c != 0 {
		return c
	}
	if c := strings.Compare(a.broker, b.broker); c != 0 {
		return c
	}
	return int(a.queue) - int(b.queue)
}

func appendClientMQ(dst []byte, k clientMQ) []byte {
	return codec.AppendMessageQueueKey(dst, k.broker, k.queue, k.topic)
}

func appendLong(dst []byte, v int64) []byte { return strconv.AppendInt(dst, v, 10) }

// decodeConsumerStatus reads a client's GetConsumerStatusBody: its
// messageQueueTable, MessageQueue keys in fastjson's object-key form.
func decodeConsumerStatus(body []byte) (map[clientMQ]int64, error) {
	var j struct {
		MessageQueueTable map[string]int64 `json:"messageQueueTable"`
	}
	if err := codec.UnmarshalBody(body, &j); err != nil {
		return nil, fmt.Errorf("consumer status body: %w", err)
	}
	out := make(map[clientMQ]int64, len(j.MessageQueueTable))
	for k, v := range j.MessageQueueTable {
		broker, q, topic, err := codec.ParseMessageQueueKey(k)
		if err != nil {
			return nil, err
		}
		out[clientMQ{broker, topic, q}] = v
	}
	return out, nil
}

// handleInvokeBrokerToGetConsumerStatus is INVOKE_BROKER_TO_GET_CONSUMER_STATUS
// (mqadmin getConsumerStatus, Broker2Client.getConsumeStatus): each online
// client of the group (or only the one whose id is clientAddr) is asked
// GET_CONSUMER_STATUS_FROM_CLIENT, one after the other as in Java, and the
// offsets they hold for topic are answered by client id. A client that fails
// or answers what cannot be read is left out, as in Java.
func (b *Broker) handleInvokeBrokerToGetConsumerStatus(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.GetConsumerStatusRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return headerError(req, err), nil
	}
	g, ok := b.consumers.Group(h.Group)
	if !ok || len(g.Channels) == 0 {
		return codec.NewResponse(req, codec.RespSystemError, "No Any Consumer online in the consumer group: ["+h.Group+"]"), nil
	}
	chans := make([]*ClientChannel, 0, len(g.Channels))
	for _, ch := range g.Channels {
		if ch.Version < minConsumerStatusVersion {
			return codec.NewResponse(req, codec.RespSystemError,
				"the client does not support this feature. version="+strconv.Itoa(int(ch.Version))), nil
		}
		if h.ClientAddr == "" || h.ClientAddr == ch.ClientID {
			chans = append(chans, ch)
		}
	}
	tables := map[string]map[clientMQ]int64{}
	for _, ch := range chans {
		out := codec.NewRequest(codec.ReqGetConsumerStatusFromClient)
		out.Ext.Set("topic", h.Topic)
		out.Ext.Set("group", h.Group)
		cctx, cancel := context.WithTimeout(ctx, consumeStatusTimeout)
		cresp, err := ch.Conn.Invoke(cctx, out)
		cancel()
		if err != nil {
			if errors.Is(ctx.Err(), context.Canceled) {
				return nil, fmt.Errorf("get consumer status: %w", ctx.Err())
			}
			b.log.Warn("get consumer status", "group", h.Group, "client", ch.ClientID, "err", err)
			continue
		}
		if cresp.Code != codec.RespSuccess || cresp.Body == nil {
			continue
		}
		t, err := decodeConsumerStatus(cresp.Body)
		if err != nil {
			b.log.Warn("get consumer status", "group", h.Group, "client", ch.ClientID, "err", err)
			continue
		}
		tables[ch.ClientID] = t
	}
	body := []byte(`{"consumerTable":{`)
	for i, id := range codec.SortedKeys(tables) {
		if i > 0 {
			body = append(body, ',')
		}
		body = codec.AppendJSONString(body, id)
		body = append(body, ':')
		body = codec.AppendJSONObjectKeyMap(body, tables[id], cmpClientMQ, appendClientMQ, appendLong)
		if len(body) > statsBodyMax {
			return codec.NewResponse(req, codec.RespSystemError,
				fmt.Sprintf("consumer status of %d clients exceeds the frame limit (max %d bytes)", len(tables), statsBodyMax)), nil
		}
	}
	body = append(body, `},"messageQueueTable":{}}`...)
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = body
	return resp, nil
}

// handleQueryCorrectionOffset is QUERY_CORRECTION_OFFSET: per queue of topic,
// the least offset any group has committed (not below the queue's minimum;
// filterGroups left out), or Long.MAX_VALUE where compareGroup's offset is
// behind it, as a QueryCorrectionOffsetBody. Java's
// queryMinOffsetInAllGroup deletes the filtered groups' offsets as it skips
// them, and a queue compareGroup has but no other group fails the request:
// rmqd only skips either.
func (b *Broker) handleQueryCorrectionOffset(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.QueryCorrectionOffsetRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return headerError(req, err), nil
	}
	filtered := map[string]bool{}
	if strings.TrimSpace(h.FilterGroups) != "" {
		for _, g := range strings.Split(h.FilterGroups, ",") {
			filtered[g] = true
		}
	}
	least := map[int32]int64{}
	for _, g := range b.offsets.GroupsOfTopic(h.Topic) {
		if filtered[g] {
			continue
		}
		for q, off := range b.offsets.QueryAll(g, h.Topic) {
			if off < b.store.MinOffsetInQueue(h.Topic, q) {
				continue
			}
			if cur, ok := least[q]; !ok || off < cur {
				least[q] = off
			}
		}
	}
	for q, off := range b.offsets.QueryAll(h.CompareGroup, h.Topic) {
		if cur, ok := least[q]; ok && cur > off {
			least[q] = math.MaxInt64
		}
	}
	var body bytes.Buffer
	body.WriteString(`{"correctionOffsets":`)
	meta.WriteIntKeyedMap(&body, least)
	body.WriteByte('}')
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = body.Bytes()
	return resp, nil
}
