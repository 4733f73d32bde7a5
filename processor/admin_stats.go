package processor

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/processor/stats"
	"rmqd/remoting"
)

// queryBodyMax bounds the records one QUERY_MESSAGE answers with: Java's
// clients refuse a frame over 16 MiB, so more would only cost memory (Java
// itself answers any size, from its mapped files).
const queryBodyMax = remoting.DefaultMaxFrameLength - 64<<10

// indexTypeTag is MessageConst.INDEX_TAG_TYPE (5.5).
const indexTypeTag = "T"

// handleQueryMessage is QUERY_MESSAGE: records found through the index by key
// (or by UNIQ_KEY when _UNIQUE_KEY_QUERY=true, by TAGS when indexType=T).
func (b *Broker) handleQueryMessage(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.QueryMessageRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	topic, key, maxNum, begin, end := h.Topic, h.Key, h.MaxNum, h.BeginTimestamp, h.EndTimestamp
	// Java compares the flag with equals("true"), not as a boolean; the asked
	// maxNum is replaced.
	query := b.store.QueryMessage
	if v, _ := req.Ext.Get("_UNIQUE_KEY_QUERY"); v == "true" {
		maxNum = b.conf().Store.DefaultQueryMaxNum
	} else if t, _ := req.Ext.Get("indexType"); t == indexTypeTag {
		query = b.store.QueryMessageByTag // 5.5's mqadmin queryMsgByKey -p T
	}
	body, count, lastTs, lastPhy := query(topic, key, maxNum, queryBodyMax, begin, end)
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Ext.Set("indexLastUpdateTimestamp", i64s(lastTs))
	resp.Ext.Set("indexLastUpdatePhyoffset", i64s(lastPhy))
	if count == 0 {
		return setCode(resp, codec.RespQueryNotFound, "can not find message, maybe time range not correct"), nil
	}
	resp.Body = body
	return resp, nil
}

// handleViewMessageByID is VIEW_MESSAGE_BY_ID: the record at a commitlog offset.
func (b *Broker) handleViewMessageByID(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.ViewMessageRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	off := h.Offset
	rec, err := b.store.ReadRecordByOffset(off)
	if err != nil || len(rec) == 0 {
		return codec.NewResponse(req, codec.RespSystemError, fmt.Sprintf("can not find message by the offset, %d", off)), nil
	}
	if b.checksTopics() {
		// The header's topic (if any) is what the hook checked; the record's
		// own topic is what is shown (Java checks neither).
		var m codec.Message
		if _, err := codec.DecodeRecord(rec, &m); err != nil {
			return codec.NewResponse(req, codec.RespSystemError, fmt.Sprintf("can not find message by the offset, %d", off)), nil
		}
		if r := b.authorizeTopic(c, req, m.Topic, accessView); r != nil {
			return r, nil
		}
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = rec
	return resp, nil
}

type mqKey struct {
	topic string
	queue int32
}

func cmpMQ(a, b mqKey) int {
	if a.topic != b.topic {
		return strings.Compare(a.topic, b.topic)
	}
	return int(a.queue) - int(b.queue)
}

func (b *Broker) appendMQ(dst []byte, k mqKey) []byte {
	return codec.AppendMessageQueueKey(dst, b.conf().BrokerName, k.queue, k.topic)
}

// handleGetTopicStatsInfo is GET_TOPIC_STATS_INFO: min/max offset and last
// store time per queue (of max(write, read) queues, as Java), MessageQueue-keyed
// in fastjson's object-key form, and the topic's put rate over the last minute.
func (b *Broker) handleGetTopicStatsInfo(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.TopicOnlyRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return headerError(req, err), nil
	}
	topic := h.Topic
	tc, ok := b.topics.Select(topic)
	if !ok {
		return codec.NewResponse(req, codec.RespTopicNotExist, "topic["+topic+"] not exist"), nil
	}
	queues := max(tc.WriteQueueNums, tc.ReadQueueNums)
	spans := []mqSpan{{topic: topic, key: tc.TopicName, queues: queues}}
	// 65,535 queues of a 127-character topic can pass 16 MiB.
	if size, ok := offsetTableSize(b, spans, statsBodyMax-64, 3, appendTopicStat, b.topicStat); !ok {
		return codec.NewResponse(req, codec.RespSystemError, statsTooLarge("topic stats", int(queues), size)), nil
	}
	table := make(map[mqKey]topicStat, queues)
	for q := int32(0); q < queues; q++ {
		table[mqKey{tc.TopicName, q}] = b.topicStat(topic, q)
	}
	body := []byte(`{"offsetTable":`)
	body = codec.AppendJSONObjectKeyMap(body, table, cmpMQ, b.appendMQ, appendTopicStat)
	body = append(body, `,"topicPutTps":`...)
	body = append(body, stats.JavaDouble(b.admin.stats.TopicPutTps(topic))...)
	body = append(body, '}')
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = body
	return resp, nil
}

// handleGetConsumeStats is GET_CONSUME_STATS: broker and consumer offsets of a
// group per queue of one topic, or of every topic the group has offsets on.
func (b *Broker) handleGetConsumeStats(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.GetConsumeStatsRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return headerError(req, err), nil
	}
	group := h.ConsumerGroup
	var topics []string
	if t := h.Topic; t != "" {
		topics = []string{t}
	} else if tl := h.TopicList; tl != "" {
		// Each topic once: a list naming one topic of 65,535 queues two million
		// times (a 4 MiB header) walked those queues two million times.
		topics = strings.Split(tl, ";")
		slices.Sort(topics)
		topics = slices.Compact(topics)
	} else {
		topics = b.offsets.TopicsOfGroup(group)
	}
	var spans []mqSpan
	queues := 0
	for _, topic := range topics {
		if tc, ok := b.topics.Select(topic); ok {
			n := max(tc.WriteQueueNums, tc.ReadQueueNums)
			spans = append(spans, mqSpan{topic: topic, key: tc.TopicName, queues: n})
			queues += int(max(n, 0))
		}
	}
	lookup := func(topic string, q int32) consumeStat { return b.consumeStat(group, topic, q) }
	head := `{"consumeTps":` + b.consumeTpsJSON(group, topics) + `,"offsetTable":`
	// Counted before anything is built: a topicList of a few topics of 65,535
	// queues (or a group with offsets on thousands of topics) made a body of
	// tens of MiB, or GiB, that no client can read.
	if size, ok := offsetTableSize(b, spans, statsBodyMax-len(head)-1, 4, appendConsumeStat, lookup); !ok {
		return codec.NewResponse(req, codec.RespSystemError, statsTooLarge("consume stats", queues, size)), nil
	}
	table := make(map[mqKey]consumeStat, queues)
	for _, s := range spans {
		for q := int32(0); q < s.queues; q++ {
			table[mqKey{s.key, q}] = lookup(s.topic, q)
		}
	}
	body := []byte(head)
	body = codec.AppendJSONObjectKeyMap(body, table, cmpMQ, b.appendMQ, appendConsumeStat)
	body = append(body, '}')
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = body
	return resp, nil
}

// connectionJSON is Java's Connection.
type connectionJSON struct {
	ClientAddr string `json:"clientAddr"`
	ClientID   string `json:"clientId"`
	Language   string `json:"language"`
	Version    int32  `json:"version"`
}

func connectionOf(ch *ClientChannel) connectionJSON {
	addr := ""
	if a := ch.Conn.RemoteAddr(); a != nil {
		addr = a.String()
	}
	return connectionJSON{ClientAddr: addr, ClientID: ch.ClientID, Language: languageName(ch.Language), Version: ch.Version}
}

func languageName(l codec.LanguageCode) string {
	names := [...]string{"JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY", "OTHER", "HTTP", "GO", "PHP", "OMS", "RUST", "NODE_JS"}
	if int(l) < len(names) {
		return names[l]
	}
	return "OTHER"
}

// handleGetConsumerConnectionList is GET_CONSUMER_CONNECTION_LIST.
func (b *Broker) handleGetConsumerConnectionList(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.ConsumerGroupRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return headerError(req, err), nil
	}
	group := h.ConsumerGroup
	g, ok := b.consumers.Group(group)
	if !ok {
		return codec.NewResponse(req, codec.RespConsumerNotOnline, "the consumer group["+group+"] not online"), nil
	}
	conns := make([]connectionJSON, 0, len(g.Channels))
	for _, ch := range g.Channels {
		conns = append(conns, connectionOf(ch))
	}
	sort.Slice(conns, func(i, j int) bool { return conns[i].ClientID < conns[j].ClientID })
	subs := g.Subscriptions
	if subs == nil {
		subs = map[string]codec.SubscriptionData{}
	}
	body, err := codec.MarshalBody(struct {
		ConnectionSet     []connectionJSON                  `json:"connectionSet"`
		ConsumeFromWhere  string                            `json:"consumeFromWhere,omitempty"`
		ConsumeType       string                            `json:"consumeType,omitempty"`
		MessageModel      string                            `json:"messageModel,omitempty"`
		SubscriptionTable map[string]codec.SubscriptionData `json:"subscriptionTable"`
	}{conns, g.ConsumeFromWhere, g.ConsumeType, g.MessageModel, subs})
	if err != nil {
		return nil, err
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = body
	return resp, nil
}

// handleGetProducerConnectionList is GET_PRODUCER_CONNECTION_LIST.
func (b *Broker) handleGetProducerConnectionList(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.GetProducerConnectionListRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return headerError(req, err), nil
	}
	group := h.ProducerGroup
	chs := b.producers.Channels(group)
	if len(chs) == 0 {
		return codec.NewResponse(req, codec.RespSystemError, "the producer group["+group+"] not exist"), nil
	}
	conns := make([]connectionJSON, 0, len(chs))
	for i := range chs {
		conns = append(conns, connectionOf(&chs[i]))
	}
	sort.Slice(conns, func(i, j int) bool { return conns[i].ClientID < conns[j].ClientID })
	body, err := codec.MarshalBody(struct {
		ConnectionSet []connectionJSON `json:"connectionSet"`
	}{conns})
	if err != nil {
		return nil, err
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = body
	return resp, nil
}

// handleQueryTopicConsumeByWho is QUERY_TOPIC_CONSUME_BY_WHO: online groups
// subscribing the topic plus groups with offsets on it (mqadmin prints one
// MessageTrack per group under queryMsgById). Apache 5.3.3 alone answers the
// topic's own name instead of the online groups (its new topicGroupTable was
// filled with the subscription's topic, apache/rocketmq #9352/#9443, fixed
// after the release); this is 4.9.x's, 5.3.2's and the fixed answer.
func (b *Broker) handleQueryTopicConsumeByWho(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.TopicOnlyRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return headerError(req, err), nil
	}
	topic := h.Topic
	set := map[string]bool{}
	for _, g := range b.consumers.GroupsOfTopic(topic) {
		set[g] = true
	}
	for _, g := range b.offsets.GroupsOfTopic(topic) {
		set[g] = true
	}
	groups := codec.SortedKeys(set)
	body, err := codec.MarshalBody(struct {
		GroupList []string `json:"groupList"`
	}{groups})
	if err != nil {
		return nil, err
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = body
	return resp, nil
}

// handleGetSystemTopicListFromBroker is GET_SYSTEM_TOPIC_LIST_FROM_BROKER.
func (b *Broker) handleGetSystemTopicListFromBroker(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var sys []string
	for _, t := range b.topics.TopicNames() {
		if b.isSystemTopic(t) {
			sys = append(sys, t)
		}
	}
	if sys == nil {
		sys = []string{}
	}
	body, err := codec.MarshalBody(struct {
		TopicList []string `json:"topicList"`
	}{sys})
	if err != nil {
		return nil, err
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = body
	return resp, nil
}

// isSystemTopic is TopicValidator.isSystemTopic over the topics this broker
// creates for itself.
func (b *Broker) isSystemTopic(t string) bool {
	switch t {
	case TopicTimer, b.conf().BrokerClusterName, b.conf().BrokerName,
		b.conf().MsgTraceTopicName, b.conf().BrokerClusterName + "_REPLY_TOPIC":
		return true
	}
	return compat.IsSystemTopic(t)
}
