package processor

import (
	"strings"

	"rmqd/remoting"
)

// consumeActively is a pull (lite pull) consumer's ConsumeType.
const consumeActively = "CONSUME_ACTIVELY"

// rejectPullConsumerRemark is PullMessageProcessor's remark, FAQ tip included.
const rejectPullConsumerRemark = "the consumer's group info not exist, or the pull consumer is rejected by server." +
	"\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."

// rejectPullConsumer is Java's rejectPullConsumerEnable check: a pull is
// refused unless its group is registered by heartbeat as a push consumer, or
// its connection is a registered member, or the group is one of the system's.
func (b *Broker) rejectPullConsumer(c remoting.Conn, group string) bool {
	consumeType, online, member := b.consumers.Member(group, c)
	if online && consumeType != consumeActively {
		return false
	}
	return !member && !sysConsumerGroupPulls(group)
}

// sysConsumerGroupPulls is MixAll.isSysConsumerGroupPullMessage: the groups
// the broker's own tools pull with.
func sysConsumerGroupPulls(group string) bool {
	switch group {
	case "DEFAULT_CONSUMER", "TOOLS_CONSUMER", "SCHEDULE_CONSUMER", "FILTERSRV_CONSUMER", "__MONITOR_CONSUMER",
		"SELF_TEST_C_GROUP", "CID_ONS-HTTP-PROXY", "CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER", "CID_ONSAPI_PULL",
		"CID_RMQ_SYS_TRANS":
		return true
	}
	return strings.HasPrefix(group, "CID_RMQ_SYS_")
}
