package processor

import (
	"context"
	"fmt"
	"strings"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/remoting"
)

// dlqQueueNums is DLQ_NUMS_PER_GROUP.
const dlqQueueNums = 1

// handleConsumerSendMsgBack is CONSUMER_SEND_MSG_BACK
// (AbstractSendMessageProcessor.consumerSendMsgBack): a message the consumer
// failed goes to %RETRY%<group> with a delay level, or to %DLQ%<group> once its
// reconsume count is used up.
func (b *Broker) handleConsumerSendMsgBack(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	if r := b.rejectOnSlave(req); r != nil {
		return r, nil
	}
	var h codec.ConsumerSendMsgBackRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	offset, group, delayLevel, unitMode := h.Offset, h.Group, h.DelayLevel, h.UnitMode
	sgc, ok := b.groups.Find(group)
	if !ok {
		return codec.NewResponse(req, codec.RespSubscriptionGroupNotExist, "subscription group not exist, "+group), nil
	}
	if !permWritable(b.conf().BrokerPermission) {
		return codec.NewResponse(req, codec.RespNoPermission, "the broker["+b.conf().BrokerIP1+"] sending message is forbidden"), nil
	}
	if sgc.RetryQueueNums <= 0 {
		return codec.NewResponse(req, codec.RespSuccess, ""), nil
	}
	var topicSysFlag int32
	if unitMode {
		topicSysFlag = 0x2
	}
	newTopic := RetryGroupTopicPrefix + sgc.GroupName
	if _, ok := checkTopicName(newTopic); !ok {
		// A group near the 255 limit has no room for the prefix: no topic is
		// made that the store could not hold (Java fails at the store instead).
		return codec.NewResponse(req, codec.RespSystemError, "topic["+newTopic+"] not exist"), nil
	}
	tc := b.topics.CreateInSendMessageBack(newTopic, sgc.RetryQueueNums, PermWrite|PermRead, topicSysFlag)
	if !permWritable(tc.Perm) {
		return codec.NewResponse(req, codec.RespNoPermission, fmt.Sprintf("the topic[%s] sending message is forbidden", newTopic)), nil
	}
	queueID := randomQueue(sgc.RetryQueueNums)

	orig, err := b.store.LookMessageByOffset(offset)
	if err != nil || orig == nil {
		return codec.NewResponse(req, codec.RespSystemError, fmt.Sprintf("look message by offset failed, %d", offset)), nil
	}
	if b.checksTopics() {
		// The hook checked the group only: the message copied must be one
		// the caller may consume (Java copies any). A retried message names
		// the topic it came from.
		topic := orig.Topic
		if rt, ok := codec.PropertyValue(orig.Properties, codec.PropRetryTopic); ok && rt != "" && strings.HasPrefix(topic, RetryGroupTopicPrefix) {
			topic = rt
		}
		if r := b.authorizeTopic(c, req, topic, accessConsume); r != nil {
			return r, nil
		}
	}
	// The copy keeps the consumer's view (RETRY_TOPIC, ORIGIN_MESSAGE_ID) when
	// the message has been retried before; DELAY is the broker's, and
	// applyDelay replaces REAL_TOPIC and REAL_QID.
	e := codec.EditProperties(orig.Properties)
	if !e.Has(codec.PropRetryTopic) {
		e.Set(codec.PropRetryTopic, orig.Topic)
	}
	// Java's setWaitStoreMsgOK(false): the copy is stored with WAIT=false and
	// its put waits for neither the disk nor a slave, so a slow slave does not
	// hold the answer past the client's timeout (the client would resend it).
	e.Set(codec.PropWait, "false")
	maxTimes := sgc.RetryMaxTimes
	if h.MaxReconsumeTimes != nil && req.Version >= versionV3_4_9 {
		maxTimes = *h.MaxReconsumeTimes
	}
	if orig.ReconsumeTimes >= maxTimes || delayLevel < 0 {
		b.events.countDLQ(group, h.OriginTopic)
		newTopic = DLQGroupTopicPrefix + sgc.GroupName
		queueID = randomQueue(dlqQueueNums)
		b.topics.CreateInSendMessageBack(newTopic, dlqQueueNums, PermWrite|PermRead, 0)
		e.Set(codec.PropDelay, "0") // Java's msgExt.setDelayTimeLevel(0): DLQ messages carry DELAY=0
	} else {
		if delayLevel == 0 {
			delayLevel = 3 + orig.ReconsumeTimes
		}
		e.SetInt(codec.PropDelay, int64(delayLevel))
	}
	if !e.Has(codec.PropOriginMessageID) {
		e.Set(codec.PropOriginMessageID, compat.OffsetMsgID(orig.StoreHost, orig.CommitLogOffset))
	}
	props := e.String()
	msg := &codec.Message{Topic: newTopic, QueueID: queueID, Flag: orig.Flag, SysFlag: orig.SysFlag,
		BornTimestamp: orig.BornTimestamp, BornHost: orig.BornHost, StoreHost: b.storeHost,
		ReconsumeTimes: orig.ReconsumeTimes + 1, Body: orig.Body, Properties: props}
	msg.SysFlag = hostFlags(msg.SysFlag, msg.BornHost, msg.StoreHost)
	b.applyDelay(msg, nil)
	res := b.store.PutMessage(ctx, msg)
	if !res.Status.Written() {
		return codec.NewResponse(req, codec.RespSystemError, res.Status.String()), nil
	}
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// versionV3_4_9 is MQVersion.Version.V3_4_9's ordinal: clients from there on
// send maxReconsumeTimes.
const versionV3_4_9 = 121
