package processor

import (
	"context"
	"strings"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/remoting"
)

// The name gate. Every topic and consumer-group name that arrives over the wire
// is checked here, with Java's rules (compat.ValidateTopic / ValidateGroup),
// before any handler turns it into a table key, a retry topic or a store path:
// header fields by the wrapper Handlers puts around each code, JSON bodies by the
// handlers through checkTopicName / checkGroupName. The charset has no '.', '/',
// '\\' or NUL, so a name that passes is a single safe path element as well.
//
// Producer groups are labels only (the producer table, PGROUP): Java's broker
// never checks them and the Go client sends any, so they are not gated.
//
// The send family is gated by sendCheck, which is Java's msgCheck (its
// validateTopic, with Java's remark, in Java's order, in a response that keeps
// the send headers); UPDATE_AND_CREATE_TOPIC checks its topic itself for the
// same reason.

type nameKind uint8

const (
	kindTopic     nameKind = iota + 1
	kindGroup              // a consumer or subscription group
	kindTopicList          // topics separated by ';'
)

// nameField is one request header field that carries a name.
type nameField struct {
	key  string
	kind nameKind
}

// headerNames lists, per request code the broker serves, the header fields
// that carry topic or group names (Java's *RequestHeader classes). A field that
// is absent or empty is left to the handler, which knows whether it is required.
var headerNames = map[int32][]nameField{
	codec.ReqPullMessage:                     {{"topic", kindTopic}, {"consumerGroup", kindGroup}},
	codec.ReqLitePullMessage:                 {{"topic", kindTopic}, {"consumerGroup", kindGroup}},
	codec.ReqQueryMessage:                    {{"topic", kindTopic}},
	codec.ReqQueryConsumerOffset:             {{"topic", kindTopic}, {"consumerGroup", kindGroup}},
	codec.ReqUpdateConsumerOffset:            {{"topic", kindTopic}, {"consumerGroup", kindGroup}},
	codec.ReqSearchOffsetByTimestamp:         {{"topic", kindTopic}},
	codec.ReqGetMaxOffset:                    {{"topic", kindTopic}},
	codec.ReqGetMinOffset:                    {{"topic", kindTopic}},
	codec.ReqGetEarliestMsgStoretime:         {{"topic", kindTopic}},
	codec.ReqUnregisterClient:                {{"consumerGroup", kindGroup}},
	codec.ReqConsumerSendMsgBack:             {{"group", kindGroup}, {"originTopic", kindTopic}},
	codec.ReqEndTransaction:                  {{"topic", kindTopic}},
	codec.ReqGetConsumerListByGroup:          {{"consumerGroup", kindGroup}},
	codec.ReqGetTopicConfig:                  {{"topic", kindTopic}},
	codec.ReqDeleteTopicInBroker:             {{"topic", kindTopic}},
	codec.ReqDeleteSubscriptiongroup:         {{"groupName", kindGroup}},
	codec.ReqGetSubscriptiongroupConfig:      {{"group", kindGroup}},
	codec.ReqGetTopicStatsInfo:               {{"topic", kindTopic}},
	codec.ReqGetConsumeStats:                 {{"consumerGroup", kindGroup}, {"topic", kindTopic}, {"topicList", kindTopicList}},
	codec.ReqGetConsumerConnectionList:       {{"consumerGroup", kindGroup}},
	codec.ReqQueryTopicConsumeByWho:          {{"topic", kindTopic}},
	codec.ReqInvokeBrokerToResetOffset:       {{"topic", kindTopic}, {"group", kindGroup}},
	codec.ReqGetConsumerRunningInfo:          {{"consumerGroup", kindGroup}},
	codec.ReqConsumeMessageDirectly:          {{"consumerGroup", kindGroup}, {"topic", kindTopic}},
	codec.ReqQueryConsumeQueue:               {{"topic", kindTopic}, {"consumerGroup", kindGroup}},
	codec.ReqPopMessage:                      {{"topic", kindTopic}, {"consumerGroup", kindGroup}},
	codec.ReqAckMessage:                      {{"topic", kindTopic}, {"consumerGroup", kindGroup}},
	codec.ReqPeekMessage:                     {{"topic", kindTopic}, {"consumerGroup", kindGroup}},
	codec.ReqChangeMessageInvisibletime:      {{"topic", kindTopic}, {"consumerGroup", kindGroup}},
	codec.ReqNotification:                    {{"topic", kindTopic}, {"consumerGroup", kindGroup}},
	codec.ReqPollingInfo:                     {{"topic", kindTopic}, {"consumerGroup", kindGroup}},
	codec.ReqQueryTopicsByConsumer:           {{"group", kindGroup}},
	codec.ReqQueryConsumeTimeSpan:            {{"topic", kindTopic}, {"group", kindGroup}},
	codec.ReqCloneGroupOffset:                {{"srcGroup", kindGroup}, {"destGroup", kindGroup}, {"topic", kindTopic}},
	codec.ReqInvokeBrokerToGetConsumerStatus: {{"topic", kindTopic}, {"group", kindGroup}},
}

// checkTopicName is the gate's rule for a topic that is looked up, written or
// deleted: Java's validateTopic, except that a %RETRY% or %DLQ% topic may be
// as long as a group allows (255; later Java versions' retry limit), since the
// broker itself creates those from groups up to 255 long. remark is Java's.
func checkTopicName(topic string) (remark string, ok bool) {
	if i := strings.IndexByte(topic, '+'); i >= 0 && strings.HasPrefix(topic, RetryGroupTopicPrefix) {
		// POP's V2 retry topic joins group and topic with '+'
		// (KeyBuilder.buildPopRetryTopicV2); '+' is no path separator.
		topic = topic[:i] + "_" + topic[i+1:]
	}
	if len(topic) > compat.TopicMaxLength && len(topic) <= compat.GroupMaxLength && isGroupTopic(topic) &&
		!compat.NameHasIllegalChar(topic) {
		return "", true
	}
	return compat.ValidateTopic(topic)
}

// isGroupTopic reports a consumer group's %RETRY% or %DLQ% topic.
func isGroupTopic(topic string) bool {
	return strings.HasPrefix(topic, RetryGroupTopicPrefix) || strings.HasPrefix(topic, DLQGroupTopicPrefix)
}

// checkGroupName is the gate's rule for a consumer or subscription group.
func checkGroupName(group string) (remark string, ok bool) {
	return compat.ValidateGroup(group)
}

// checkHeaderNames checks the name fields of req; a non-empty remark is the
// refusal.
func checkHeaderNames(fields []nameField, ext codec.ExtFields) (remark string, ok bool) {
	for _, f := range fields {
		v, present := ext.Get(f.key)
		if !present || v == "" {
			continue
		}
		switch f.kind {
		case kindTopic:
			remark, ok = checkTopicName(v)
		case kindGroup:
			remark, ok = checkGroupName(v)
		case kindTopicList:
			for t := range strings.SplitSeq(v, ";") {
				if remark, ok = checkTopicName(t); !ok {
					break
				}
			}
		}
		if !ok {
			return remark, false
		}
	}
	return "", true
}

// gateNames wraps p so that a request whose header names fail the gate is
// answered INVALID_PARAMETER with Java's remark and never reaches p.
func gateNames(fields []nameField, p remoting.Processor) remoting.Processor {
	return remoting.ProcessorFunc(func(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
		if remark, ok := checkHeaderNames(fields, req.Ext); !ok {
			return codec.NewResponse(req, codec.RespInvalidParameter, remark), nil
		}
		return p.ProcessRequest(ctx, c, req)
	})
}

// gateHandlers puts the gate in front of every code that has header names.
func gateHandlers(m map[int32]remoting.Processor) {
	for code, fields := range headerNames {
		if p, ok := m[code]; ok {
			m[code] = gateNames(fields, p)
		}
	}
}

// refuseName is the answer to a request whose body carries a name that fails
// the gate.
func refuseName(req *codec.RemotingCommand, remark string) *codec.RemotingCommand {
	return codec.NewResponse(req, codec.RespInvalidParameter, remark)
}

// checkHeartbeatNames gates a heartbeat's consumer groups and subscribed
// topics (producer groups are labels, see above). Java and Go clients check
// both before they send, so only a hand-made heartbeat is refused.
func checkHeartbeatNames(hb *codec.HeartbeatData) (remark string, ok bool) {
	for i := range hb.ConsumerDataSet {
		cd := &hb.ConsumerDataSet[i]
		if remark, ok := checkGroupName(cd.GroupName); !ok {
			return remark, false
		}
		for j := range cd.SubscriptionDataSet {
			if remark, ok := checkTopicName(cd.SubscriptionDataSet[j].Topic); !ok {
				return remark, false
			}
		}
	}
	return "", true
}

// checkLockBatchNames gates a LOCK_BATCH_MQ / UNLOCK_BATCH_MQ body.
func checkLockBatchNames(body *codec.LockBatchRequestBody) (remark string, ok bool) {
	if remark, ok := checkGroupName(body.ConsumerGroup); !ok {
		return remark, false
	}
	for i := range body.MQSet {
		if remark, ok := checkTopicName(body.MQSet[i].Topic); !ok {
			return remark, false
		}
	}
	return "", true
}
