package processor

import (
	"context"
	"math"
	"strconv"
	"time"

	"rmqd/codec"
)

// escapePullTimeout is EscapeBridge's DEFAULT_PULL_TIMEOUT_MILLIS.
const escapePullTimeout = 10 * time.Second

// pullSysFlagSubscription is PullSysFlag's FLAG_SUBSCRIPTION: the request
// carries its subscription ("*").
const pullSysFlagSubscription = 1 << 2

// innerConsumerGroup is EscapeBridge's innerConsumerGroupName.
func (b *Broker) innerConsumerGroup() string {
	cfg := b.conf()
	return "InnerConsumerGroup_" + cfg.BrokerName + "_" + strconv.FormatInt(cfg.BrokerID, 10)
}

// getMessageFromRemote is EscapeBridge.getMessageFromRemoteAsync: the record
// at offset of topic's queue on the master of group brokerName (as the name
// servers' route names it: an acting slave stands in for a master that is
// gone), pulled as Java's pullMessageFromSpecificBrokerAsync pulls it. retry
// is true when the master could not be found or asked (Java's needRetry),
// false with a nil record when it answered without the message.
func (b *Broker) getMessageFromRemote(ctx context.Context, brokerName, topic string, queueID int32, offset int64) (rec []byte, retry bool) {
	if b.ns == nil || len(b.nameServerAddrs()) == 0 {
		return nil, true
	}
	route, err := b.topicRoute(ctx, topic)
	if err != nil {
		b.log.Warn("escape: no route to read a message of another group", "broker", brokerName, "topic", topic, "err", err)
		return nil, true
	}
	addr := ""
	for _, bd := range route.BrokerDatas {
		if bd.BrokerName == brokerName {
			addr = bd.BrokerAddrs[codec.MasterID]
		}
	}
	if addr == "" {
		b.log.Warn("escape: no master address of the group", "broker", brokerName, "topic", topic)
		return nil, true
	}
	h := codec.PullMessageRequestHeader{ConsumerGroup: b.innerConsumerGroup(), Topic: topic, QueueID: queueID,
		QueueOffset: offset, MaxMsgNums: 1, SysFlag: pullSysFlagSubscription, Subscription: subAll,
		SubVersion: time.Now().UnixMilli(), ExpressionType: exprTag, MaxMsgBytes: math.MaxInt32, HasMaxMsgBytes: true,
		BrokerName: brokerName}
	req := codec.NewRequest(codec.ReqPullMessage)
	req.CustomHeader = &h
	cctx, cancel := context.WithTimeout(ctx, escapePullTimeout)
	defer cancel()
	resp, err := b.ns.InvokeSync(cctx, addr, req)
	if err != nil {
		b.log.Warn("escape: pull from another group failed", "broker", brokerName, "addr", addr, "err", err)
		return nil, true
	}
	switch resp.Code {
	case codec.RespSuccess:
		var m codec.Message
		n, err := codec.DecodeRecord(resp.Body, &m)
		if err != nil {
			b.log.Warn("escape: pulled record undecodable", "broker", brokerName, "topic", topic, "err", err)
			return nil, false
		}
		return resp.Body[:n:n], false
	case codec.RespPullNotFound, codec.RespPullRetryImmediately, codec.RespPullOffsetMoved:
		return nil, false // found or not found really (Java: no retry)
	}
	// NO_PERMISSION, SUBSCRIPTION_GROUP_NOT_EXIST, ...: Java retries these.
	b.log.Warn("escape: pull from another group refused", "broker", brokerName, "code", resp.Code, "remark", resp.Remark)
	return nil, true
}
