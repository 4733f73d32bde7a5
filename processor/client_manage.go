package processor

import (
	"context"
	"fmt"
	"strconv"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/remoting"
)

// DefaultMaxClientGroups bounds the producer groups, and apart the consumer
// groups, of one heartbeat and of one connection. A client instance sends all
// its groups on each of its connections, and real ones have a handful; 1,000
// leaves room for the largest while a hostile heartbeat (16 MiB held ~750k
// groups, some 300 MB of registry) costs at most a few hundred KB.
const DefaultMaxClientGroups = 1000

// subscriptionsPerGroup is how many subscriptions one heartbeat may carry per
// group it may carry: a group's subscription table is kept for the group, and
// 750,000 subscriptions in one 16 MiB heartbeat held some 300 MB.
const subscriptionsPerGroup = 10

// maxClientGroups is the configured bound; 0 when none.
func (c *BrokerConfig) maxClientGroups() int { return max(c.MaxClientGroups, 0) }

// handleHeartBeat is HEART_BEAT (ClientManageProcessor.heartBeat): register the
// client's producer and consumer groups on this connection, create each
// consumer group's %RETRY% topic, and answer heartbeat V2's two fields.
func (b *Broker) handleHeartBeat(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	hb, err := codec.DecodeHeartbeatData(req.Body)
	if err != nil {
		return codec.NewResponse(req, codec.RespSystemError, "decode heartbeat body: "+err.Error()), nil
	}
	if remark, ok := checkHeartbeatNames(&hb); !ok {
		return refuseName(req, remark), nil
	}
	if b.conf().RejectPullConsumerEnable {
		hb.ConsumerDataSet = withoutPullConsumers(hb.ConsumerDataSet)
	}
	ch := ClientChannel{Conn: c, ClientID: hb.ClientID, Language: req.Language, Version: req.Version}
	names := make([]string, len(hb.ConsumerDataSet))
	for i := range hb.ConsumerDataSet {
		names[i] = hb.ConsumerDataSet[i].GroupName
	}
	producers := make([]string, len(hb.ProducerDataSet))
	for i := range hb.ProducerDataSet {
		producers[i] = hb.ProducerDataSet[i].GroupName
	}
	// Bounded before anything is created or registered: a refused heartbeat
	// leaves no trace, and clients log the failure and retry.
	limit := b.conf().maxClientGroups()
	if limit > 0 && (len(names) > limit || len(producers) > limit) {
		return codec.NewResponse(req, codec.RespInvalidParameter, fmt.Sprintf(
			"heartbeat carries %d producer and %d consumer groups, more than the %d of each a heartbeat may carry",
			len(producers), len(names), limit)), nil
	}
	if subs := heartbeatSubscriptions(&hb); limit > 0 && subs > limit*subscriptionsPerGroup {
		return codec.NewResponse(req, codec.RespInvalidParameter, fmt.Sprintf(
			"heartbeat carries %d subscriptions, more than the %d a heartbeat may carry", subs, limit*subscriptionsPerGroup)), nil
	}
	if !b.consumers.Fits(c, names, limit) {
		return refuseClientGroups(req, limit), nil
	}
	// Without transactions nothing needs a producer's connection, so with
	// enableRegisterProducer off only producers already known are kept alive.
	if conf := b.conf(); conf.RejectTransactionMessage && !conf.EnableRegisterProducer {
		b.producers.RefreshAll(producers, ch)
	} else if !b.producers.RegisterAll(producers, ch, limit) {
		return refuseClientGroups(req, limit), nil
	}
	// Groups and their retry topics are looked up (and auto-created) all at once:
	// one write of each config file per heartbeat, not one per group.
	found := b.groups.FindAll(names)
	var retries []TopicSpec
	for i := range hb.ConsumerDataSet {
		cd := &hb.ConsumerDataSet[i]
		// No retry topic for a group too long to carry the prefix.
		if retry := RetryGroupTopicPrefix + cd.GroupName; found[i].OK && len(retry) <= compat.GroupMaxLength {
			var sysFlag int32
			if cd.UnitMode {
				sysFlag = 0x2
			}
			retries = append(retries, TopicSpec{Name: retry, QueueNums: found[i].Config.RetryQueueNums,
				Perm: PermWrite | PermRead, SysFlag: sysFlag, SetOrder: true, Order: b.subscribesOrderTopic(cd)})
		}
	}
	b.topics.CreateAllInSendMessageBack(retries)
	refused := false
	// A V1 heartbeat (no fingerprint) is always told to send its subscriptions
	// (Java: IS_SUB_CHANGE true), which it does anyway.
	subChanged := hb.HeartbeatFingerprint == 0
	for i := range hb.ConsumerDataSet {
		cd := &hb.ConsumerDataSet[i]
		if !found[i].OK {
			// No such group and none auto-created: Java's heartBeat skips it, so
			// the client is neither listed to its peers nor to mqadmin (its
			// pulls are refused SUBSCRIPTION_GROUP_NOT_EXIST either way).
			continue
		}
		notify := b.conf().NotifyConsumerIdsChanged && found[i].Config.NotifyConsumerIdsChangedEnable
		for i := range cd.SubscriptionDataSet {
			s := &cd.SubscriptionDataSet[i]
			if s.ExpressionType == "" {
				s.ExpressionType = exprTag
			}
		}
		subs := cd.SubscriptionDataSet
		if hb.WithoutSub {
			subs = nil // heartbeat V2: subscriptions unchanged since the last full heartbeat
		}
		// Fits checked the bound; only a heartbeat racing on the same
		// connection can find it reached here.
		changed, ok := b.consumers.RegisterWithin(limit, cd.GroupName, ch, cd.ConsumeType, cd.MessageModel, cd.ConsumeFromWhere, subs, notify)
		if changed {
			b.log.Info("consumer group changed", "group", cd.GroupName, "client", hb.ClientID, "remote", c.RemoteAddr())
		}
		refused = refused || !ok
		if ok && b.consumers.NoteFingerprint(cd.GroupName, hb.HeartbeatFingerprint, hb.WithoutSub) {
			subChanged = true
		}
	}
	// A heartbeat handled after its connection closed (the close event may run first: handlers run on
	// worker pools) would register a dead channel the group lists for channelExpiredTimeout (2 min), and
	// the members would share the queues out with a ghost that never pulls its own.
	if c.Closed() {
		b.OnClose(c)
	}
	if refused {
		return refuseClientGroups(req, limit), nil
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	// Heartbeat V2: 5.x clients with useHeartbeatV2 then leave the
	// subscriptions out while their fingerprint is unchanged.
	resp.Ext.Set("IS_SUPPORT_HEART_BEAT_V2", "true")
	resp.Ext.Set("IS_SUB_CHANGE", strconv.FormatBool(subChanged))
	return resp, nil
}

// withoutPullConsumers drops the CONSUME_ACTIVELY groups of a heartbeat, as
// Java's heartBeat does under rejectPullConsumerEnable: neither registered nor
// auto-created, so their pulls are then refused (rejectPullConsumer).
func withoutPullConsumers(cds []codec.ConsumerData) []codec.ConsumerData {
	kept := cds[:0]
	for _, cd := range cds {
		if cd.ConsumeType != consumeActively {
			kept = append(kept, cd)
		}
	}
	return kept
}

func heartbeatSubscriptions(hb *codec.HeartbeatData) int {
	n := 0
	for i := range hb.ConsumerDataSet {
		n += len(hb.ConsumerDataSet[i].SubscriptionDataSet)
	}
	return n
}

func refuseClientGroups(req *codec.RemotingCommand, limit int) *codec.RemotingCommand {
	return codec.NewResponse(req, codec.RespInvalidParameter, fmt.Sprintf(
		"a connection may hold %d producer and %d consumer groups; unregister some or use another client instance", limit, limit))
}

// handleUnregisterClient is UNREGISTER_CLIENT.
func (b *Broker) handleUnregisterClient(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.UnregisterClientRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return headerError(req, err), nil
	}
	if g := h.ProducerGroup; g != "" {
		b.producers.Unregister(g, c)
	}
	if g := h.ConsumerGroup; g != "" {
		notify := b.conf().NotifyConsumerIdsChanged
		if sgc, ok := b.groups.Get(g); ok {
			notify = notify && sgc.NotifyConsumerIdsChangedEnable
		}
		b.consumers.Unregister(g, c, notify)
	}
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// handleGetConsumerListByGroup is GET_CONSUMER_LIST_BY_GROUP.
func (b *Broker) handleGetConsumerListByGroup(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.ConsumerGroupRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return headerError(req, err), nil
	}
	group := h.ConsumerGroup
	ids := b.consumers.ClientIDs(group)
	if len(ids) == 0 {
		return codec.NewResponse(req, codec.RespSystemError, "no consumer for this group, "+group), nil
	}
	body, err := codec.MarshalBody(codec.GetConsumerListByGroupResponseBody{ConsumerIDList: ids})
	if err != nil {
		return nil, err
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = body
	return resp, nil
}

// handleCheckClientConfig is CHECK_CLIENT_CONFIG: TAG subscriptions are fine,
// SQL92 needs enablePropertyFilter and a parseable expression.
func (b *Broker) handleCheckClientConfig(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	body, err := codec.DecodeCheckClientRequestBody(req.Body)
	if err != nil {
		return codec.NewResponse(req, codec.RespSystemError, "decode body: "+err.Error()), nil
	}
	if body.Group != "" {
		if remark, ok := checkGroupName(body.Group); !ok {
			return refuseName(req, remark), nil
		}
	}
	if body.SubscriptionData != nil && body.SubscriptionData.Topic != "" {
		if remark, ok := checkTopicName(body.SubscriptionData.Topic); !ok {
			return refuseName(req, remark), nil
		}
	}
	if body.SubscriptionData == nil || isTagType(body.SubscriptionData.ExpressionType) {
		return codec.NewResponse(req, codec.RespSuccess, ""), nil
	}
	if !b.conf().EnablePropertyFilter {
		return codec.NewResponse(req, codec.RespSystemError,
			"The broker does not support consumer to filter message by "+body.SubscriptionData.ExpressionType), nil
	}
	if _, err := b.newMessageFilter(body.SubscriptionData); err != nil {
		return codec.NewResponse(req, codec.RespSubscriptionParseFailed, err.Error()), nil
	}
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// handleLockBatchMQ is LOCK_BATCH_MQ.
func (b *Broker) handleLockBatchMQ(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	body, err := codec.DecodeLockBatchRequestBody(req.Body)
	if err != nil {
		return codec.NewResponse(req, codec.RespSystemError, "decode body: "+err.Error()), nil
	}
	if remark, ok := checkLockBatchNames(&body); !ok {
		return refuseName(req, remark), nil
	}
	locked := b.locks.TryLockBatch(body.ConsumerGroup, body.MQSet, body.ClientID)
	if q := b.strictQuorum(&body); q > 0 {
		locked = b.strictLock(ctx, body, locked, q)
	}
	out, err := codec.MarshalBody(codec.LockBatchResponseBody{LockOKMQSet: locked})
	if err != nil {
		return nil, err
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = out
	return resp, nil
}

// handleUnlockBatchMQ is UNLOCK_BATCH_MQ.
func (b *Broker) handleUnlockBatchMQ(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	body, err := codec.DecodeLockBatchRequestBody(req.Body)
	if err != nil {
		return codec.NewResponse(req, codec.RespSystemError, "decode body: "+err.Error()), nil
	}
	if remark, ok := checkLockBatchNames(&body); !ok {
		return refuseName(req, remark), nil
	}
	b.locks.UnlockBatch(body.ConsumerGroup, body.MQSet, body.ClientID)
	if b.strictQuorum(&body) > 0 {
		b.strictUnlock(ctx, body)
	}
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// subscribesOrderTopic is Java's hasOrderTopicSub: whether the consumer
// subscribes a topic marked order. A heartbeat without subscriptions (V2's
// withoutSub) has none, so its retry topic is made or set not order, as Java's.
func (b *Broker) subscribesOrderTopic(cd *codec.ConsumerData) bool {
	for i := range cd.SubscriptionDataSet {
		if b.topics.IsOrderTopic(cd.SubscriptionDataSet[i].Topic) {
			return true
		}
	}
	return false
}
