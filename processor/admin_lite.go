package processor

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/remoting"
)

// Java 5.5's LiteManagerProcessor: what mqadmin's getBrokerLiteInfo,
// getParentTopicInfo, getLiteTopicInfo, getLiteClientInfo, getLiteGroupInfo
// and triggerLiteDispatch ask a broker (docs/lite.md).

// maxLiteReturn bounds the lite topics one answer lists or one lag query
// looks at (Java's MAX_RETURN_COUNT).
const maxLiteReturn = 10000

func liteInfoHeader(req *codec.RemotingCommand) (codec.LiteInfoRequestHeader, error) {
	h := codec.LiteInfoRequestHeader{MaxCount: 1000}
	err := codec.DecodeHeader(req.Ext, &h)
	return h, err
}

// liteTopicConfig checks a parent topic as every lite admin code does.
func (b *Broker) liteTopicConfig(req *codec.RemotingCommand, topic string) (TopicConfig, *codec.RemotingCommand) {
	tc, ok := b.topics.Select(topic)
	if !ok {
		return tc, codec.NewResponse(req, codec.RespTopicNotExist, fmt.Sprintf("Topic [%s] not exist.", topic))
	}
	if !isLiteTopic(tc) {
		return tc, codec.NewResponse(req, codec.RespInvalidParameter, fmt.Sprintf("Topic [%s] type not match.", topic))
	}
	return tc, nil
}

// liteGroup finds a group bound to a lite topic (Java's "not a LITE group").
func (b *Broker) liteGroup(req *codec.RemotingCommand, group string) (string, *codec.RemotingCommand) {
	g, ok := b.groups.Find(group)
	if !ok {
		return "", codec.NewResponse(req, codec.RespSubscriptionGroupNotExist, fmt.Sprintf("Group [%s] not exist.", group))
	}
	bind := g.Attributes[attrLiteBindTopic]
	if bind == "" {
		return "", codec.NewResponse(req, codec.RespInvalidParameter, fmt.Sprintf("Group [%s] is not a LITE group.", group))
	}
	return bind, nil
}

// lmqTopics lists the topics with consume queues that are LMQs.
func (b *Broker) lmqTopics() (all int, lmqs []string) {
	qc, ok := b.store.(queueCleaner)
	if !ok {
		return 0, nil
	}
	topics := qc.QueueTopics()
	for _, t := range topics {
		if compat.IsLMQ(t) {
			lmqs = append(lmqs, t)
		}
	}
	return len(topics), lmqs
}

func okBody(req *codec.RemotingCommand, v any) (*codec.RemotingCommand, error) {
	body, err := codec.MarshalBody(v)
	if err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = body
	return resp, nil
}

// handleGetBrokerLiteInfo is GET_BROKER_LITE_INFO: the broker's LMQ and lite
// subscription figures, the LITE topics with their expiration, the groups by
// the topic they are bound to.
func (b *Broker) handleGetBrokerLiteInfo(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	cqTopics, lmqs := b.lmqTopics()
	topicMeta := map[string]int32{}
	for name, tc := range b.topics.Snapshot().TopicConfigTable {
		if isLiteTopic(tc) {
			topicMeta[name] = liteExpiration(tc)
		}
	}
	return okBody(req, struct {
		StoreType             string              `json:"storeType"`
		MaxLmqNum             int                 `json:"maxLmqNum"`
		CurrentLmqNum         int                 `json:"currentLmqNum"`
		LiteSubscriptionCount int                 `json:"liteSubscriptionCount"`
		OrderInfoCount        int                 `json:"orderInfoCount"`
		CqTableSize           int                 `json:"cqTableSize"`
		OffsetTableSize       int                 `json:"offsetTableSize"`
		EventMapSize          int                 `json:"eventMapSize"`
		TopicMeta             map[string]int32    `json:"topicMeta"`
		GroupMeta             map[string][]string `json:"groupMeta"`
	}{"default", b.conf().Store.MaxLmqConsumeQueueNum, len(lmqs), b.pop.LiteSubscriptions(), b.pop.LiteOrderCount(),
		cqTopics, b.offsets.Size(), 0, topicMeta, b.liteGroupsByTopic()})
}

// liteExpiration is TopicConfig.getLiteTopicExpiration: the attribute, -1 without.
func liteExpiration(tc TopicConfig) int32 {
	if n, err := strconv.ParseInt(tc.Attributes[attrLiteExpiration], 10, 32); err == nil {
		return int32(n)
	}
	return -1
}

// liteGroupsByTopic is LiteMetadataUtil.getSubscriberGroupMap.
func (b *Broker) liteGroupsByTopic() map[string][]string {
	out := map[string][]string{}
	for name, g := range b.groups.Snapshot().SubscriptionGroupTable {
		if bind := g.Attributes[attrLiteBindTopic]; bind != "" {
			out[bind] = append(out[bind], name)
		}
	}
	for _, gs := range out {
		slices.Sort(gs)
	}
	return out
}

// handleGetParentTopicInfo is GET_PARENT_TOPIC_INFO.
func (b *Broker) handleGetParentTopicInfo(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	h, err := liteInfoHeader(req)
	if err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	tc, bad := b.liteTopicConfig(req, h.Topic)
	if bad != nil {
		return bad, nil
	}
	_, lmqs := b.lmqTopics()
	n := 0
	for _, q := range lmqs {
		if parent, _, ok := compat.SplitLiteLMQ(q); ok && parent == h.Topic {
			n++
		}
	}
	return okBody(req, struct {
		Topic          string   `json:"topic"`
		TTL            int32    `json:"ttl"`
		Groups         []string `json:"groups"`
		LmqNum         int      `json:"lmqNum"`
		LiteTopicCount int      `json:"liteTopicCount"`
	}{h.Topic, liteExpiration(tc), b.liteGroupsByTopic()[h.Topic], len(lmqs), n})
}

type clientGroupJSON struct {
	ClientID string `json:"clientId"`
	Group    string `json:"group"`
}

// handleGetLiteTopicInfo is GET_LITE_TOPIC_INFO: a lite topic's offsets,
// subscribers, and whether it is sharded to this broker.
func (b *Broker) handleGetLiteTopicInfo(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	h, err := liteInfoHeader(req)
	if err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	if _, bad := b.liteTopicConfig(req, h.ParentTopic); bad != nil {
		return bad, nil
	}
	lmq := compat.LiteLMQ(h.ParentTopic, h.LiteTopic)
	var minOff, maxOff, last int64
	if lmq != "" {
		if maxOff = b.store.MaxOffsetInQueue(lmq, 0); maxOff > 0 {
			minOff = b.store.MinOffsetInQueue(lmq, 0)
			last = b.store.MessageStoreTimestamp(lmq, 0, maxOff-1)
		}
	}
	subs := []clientGroupJSON{}
	for _, cg := range b.pop.LiteSubscribers(lmq) {
		subs = append(subs, clientGroupJSON{cg[0], cg[1]})
	}
	slices.SortFunc(subs, func(x, y clientGroupJSON) int { return cmp.Compare(x.Group+"@"+x.ClientID, y.Group+"@"+y.ClientID) })
	type topicOffset struct {
		MinOffset           int64 `json:"minOffset"`
		MaxOffset           int64 `json:"maxOffset"`
		LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"`
	}
	return okBody(req, struct {
		ParentTopic      string            `json:"parentTopic"`
		LiteTopic        string            `json:"liteTopic"`
		Subscriber       []clientGroupJSON `json:"subscriber"`
		TopicOffset      topicOffset       `json:"topicOffset"`
		ShardingToBroker bool              `json:"shardingToBroker"`
	}{h.ParentTopic, h.LiteTopic, subs, topicOffset{max(minOff, 0), max(maxOff, 0), last},
		b.liteShardOf(h.ParentTopic, lmq) == b.conf().BrokerName})
}

// handleGetLiteClientInfo is GET_LITE_CLIENT_INFO: a client's lite topics
// (liteTopicCount -1 when it has no subscription here).
func (b *Broker) handleGetLiteClientInfo(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	h, err := liteInfoHeader(req)
	if err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	if _, bad := b.liteTopicConfig(req, h.ParentTopic); bad != nil {
		return bad, nil
	}
	g, ok := b.groups.Find(h.Group)
	if !ok {
		return codec.NewResponse(req, codec.RespSubscriptionGroupNotExist, fmt.Sprintf("Group [%s] not exist.", h.Group)), nil
	}
	if g.Attributes[attrLiteBindTopic] != h.ParentTopic {
		return codec.NewResponse(req, codec.RespInvalidParameter, fmt.Sprintf("Subscription [%s]-[%s] not match.", h.Group, h.ParentTopic)), nil
	}
	// The set is of queue names (%LMQ%$parent$lite, a wildcard client's
	// parent@group), as Java's LiteSubscription holds them.
	info, n, found := b.pop.LiteClient(h.ClientID, int(min(max(h.MaxCount, 0), maxLiteReturn)))
	lites := info.Queues
	if !found {
		n = -1
	}
	return okBody(req, struct {
		ParentTopic     string   `json:"parentTopic"`
		Group           string   `json:"group"`
		ClientID        string   `json:"clientId"`
		LastAccessTime  int64    `json:"lastAccessTime"`
		LastConsumeTime int64    `json:"lastConsumeTime"`
		LiteTopicCount  int      `json:"liteTopicCount"`
		LiteTopicSet    []string `json:"liteTopicSet"`
	}{h.ParentTopic, h.Group, h.ClientID, info.LastAccess, 0, n, lites})
}

type liteLagJSON struct {
	LiteTopic                   string `json:"liteTopic"`
	LagCount                    int64  `json:"lagCount"`
	EarliestUnconsumedTimestamp int64  `json:"earliestUnconsumedTimestamp"`
}

// handleGetLiteGroupInfo is GET_LITE_GROUP_INFO: a lite topic's lag for the
// group, or without one the group's topK lite topics by lag count and by
// age of the oldest unconsumed message. Java reads the lag its POPs
// recorded; rmqd works it out from the group's offsets in its lite topics
// (at most the first 10,000 by name).
func (b *Broker) handleGetLiteGroupInfo(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	h, err := liteInfoHeader(req)
	if err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	if h.Group == "" {
		return codec.NewResponse(req, codec.RespSystemError, "the custom field <group> is null"), nil
	}
	bind, bad := b.liteGroup(req, h.Group)
	if bad != nil {
		return bad, nil
	}
	type offsetWrapper struct {
		BrokerOffset   int64 `json:"brokerOffset"`
		ConsumerOffset int64 `json:"consumerOffset"`
		PullOffset     int64 `json:"pullOffset"`
		LastTimestamp  int64 `json:"lastTimestamp"`
	}
	out := struct {
		Group                       string         `json:"group"`
		ParentTopic                 string         `json:"parentTopic"`
		LiteTopic                   string         `json:"liteTopic,omitempty"`
		EarliestUnconsumedTimestamp int64          `json:"earliestUnconsumedTimestamp"`
		TotalLagCount               int64          `json:"totalLagCount"`
		LiteTopicOffsetWrapper      *offsetWrapper `json:"liteTopicOffsetWrapper,omitempty"`
		LagCountTopK                []liteLagJSON  `json:"lagCountTopK,omitempty"`
		LagTimestampTopK            []liteLagJSON  `json:"lagTimestampTopK,omitempty"`
	}{Group: h.Group, ParentTopic: bind, LiteTopic: h.LiteTopic, EarliestUnconsumedTimestamp: -1}
	if h.LiteTopic != "" {
		lmq := compat.LiteLMQ(bind, h.LiteTopic)
		if maxOff := b.store.MaxOffsetInQueue(lmq, 0); maxOff > 0 {
			if off := b.offsets.Query(h.Group, lmq, 0); off >= 0 {
				out.TotalLagCount = maxOff - off
				out.EarliestUnconsumedTimestamp = b.store.MessageStoreTimestamp(lmq, 0, off)
				w := &offsetWrapper{BrokerOffset: maxOff, ConsumerOffset: off}
				if off > 0 {
					w.LastTimestamp = b.store.MessageStoreTimestamp(lmq, 0, off-1)
				}
				out.LiteTopicOffsetWrapper = w
			}
		} else {
			out.TotalLagCount = -1
		}
		return okBody(req, out)
	}
	var lags []liteLagJSON
	for _, t := range b.offsets.TopicsOfGroup(h.Group) {
		if len(lags) >= maxLiteReturn {
			break
		}
		parent, lite, ok := compat.SplitLiteLMQ(t)
		if !ok || parent != bind {
			continue
		}
		n, first, ok := b.liteLag(h.Group, t, true)
		if !ok {
			continue
		}
		l := liteLagJSON{LiteTopic: lite, LagCount: n, EarliestUnconsumedTimestamp: first}
		lags = append(lags, l)
		out.TotalLagCount += l.LagCount
		if out.EarliestUnconsumedTimestamp < 0 || l.EarliestUnconsumedTimestamp < out.EarliestUnconsumedTimestamp {
			out.EarliestUnconsumedTimestamp = l.EarliestUnconsumedTimestamp
		}
	}
	k := int(max(h.TopK, 0))
	byCount := slices.Clone(lags)
	slices.SortStableFunc(byCount, func(x, y liteLagJSON) int { return cmp.Compare(y.LagCount, x.LagCount) })
	out.LagCountTopK = byCount[:min(k, len(byCount))]
	slices.SortStableFunc(lags, func(x, y liteLagJSON) int {
		return cmp.Compare(x.EarliestUnconsumedTimestamp, y.EarliestUnconsumedTimestamp)
	})
	out.LagTimestampTopK = lags[:min(k, len(lags))]
	return okBody(req, out)
}

// liteLag is a group's lag in a lite topic's queue: the messages past its
// committed offset and (withTime) the store time of the first of them; ok
// is false without an offset or a lag.
func (b *Broker) liteLag(group, lmq string, withTime bool) (n, first int64, ok bool) {
	off := b.offsets.Query(group, lmq, 0)
	maxOff := b.store.MaxOffsetInQueue(lmq, 0)
	if off < 0 || maxOff <= off {
		return 0, 0, false
	}
	if withTime {
		first = b.store.MessageStoreTimestamp(lmq, 0, off)
	}
	return maxOff - off, first, true
}

// handleTriggerLiteDispatch is TRIGGER_LITE_DISPATCH: the group's (or one
// client's) held POPs look at their lite topics again.
func (b *Broker) handleTriggerLiteDispatch(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	h, err := liteInfoHeader(req)
	if err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	if h.Group == "" {
		return codec.NewResponse(req, codec.RespSystemError, "the custom field <group> is null"), nil
	}
	if _, bad := b.liteGroup(req, h.Group); bad != nil {
		return bad, nil
	}
	b.pop.TriggerLite(h.Group, h.ClientID)
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}
