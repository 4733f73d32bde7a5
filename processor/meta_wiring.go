package processor

import (
	"rmqd/compat"
	"rmqd/processor/meta"
)

// The persisted metadata lives in processor/meta; these names keep the
// handlers' spelling (TopicConfig, PermRead, ...) so they read as before.
type (
	TopicConfig              = meta.TopicConfig
	TopicConfigTable         = meta.TopicConfigTable
	TopicConfigManager       = meta.TopicConfigManager
	SubscriptionGroupConfig  = meta.SubscriptionGroupConfig
	SubscriptionGroupTable   = meta.SubscriptionGroupTable
	SubscriptionGroupManager = meta.SubscriptionGroupManager
	GroupRetryPolicy         = meta.GroupRetryPolicy
	ConsumerOffsetManager    = meta.ConsumerOffsetManager
	DataVersion              = meta.DataVersion
	TopicSpec                = meta.TopicSpec
)

// PermName bits and the topic names the broker treats specially.
const (
	PermPriority = meta.PermPriority
	PermRead     = meta.PermRead
	PermWrite    = meta.PermWrite
	PermInherit  = meta.PermInherit

	TopicAutoCreate       = meta.TopicAutoCreate
	TopicSchedule         = meta.TopicSchedule
	TopicTransHalf        = meta.TopicTransHalf
	TopicTransOpHalf      = meta.TopicTransOpHalf
	TopicTransCheckMax    = meta.TopicTransCheckMax
	TopicSelfTest         = meta.TopicSelfTest
	TopicOffsetMovedEvent = meta.TopicOffsetMovedEvent
	TopicBenchmark        = meta.TopicBenchmark
	TopicTimer            = meta.TopicTimer
	RetryGroupTopicPrefix = meta.RetryGroupTopicPrefix
	DLQGroupTopicPrefix   = meta.DLQGroupTopicPrefix
)

// NewTopicConfig is meta.NewTopicConfig (Java's TopicConfig defaults).
func NewTopicConfig(name string) TopicConfig { return meta.NewTopicConfig(name) }

// NewSubscriptionGroupConfig is meta.NewSubscriptionGroupConfig.
func NewSubscriptionGroupConfig(group string) SubscriptionGroupConfig {
	return meta.NewSubscriptionGroupConfig(group)
}

// metaConfig is what the metadata managers read of the configuration in force.
func (c *BrokerConfig) metaConfig() meta.Config {
	return meta.Config{
		ConfigDir: c.ConfigDir(), BrokerName: c.BrokerName, BrokerClusterName: c.BrokerClusterName,
		AutoCreateTopicEnable: c.AutoCreateTopicEnable, AutoCreateSubscriptionGroup: c.AutoCreateSubscriptionGroup,
		ClusterTopicEnable: c.ClusterTopicEnable, BrokerTopicEnable: c.BrokerTopicEnable,
		DefaultTopicQueueNums: c.DefaultTopicQueueNums, TraceTopicEnable: c.TraceTopicEnable,
		MsgTraceTopicName: c.MsgTraceTopicName, ReviveQueueNum: c.ReviveQueueNum, TimerWheelEnable: c.TimerWheelEnable,
		EnableCreateSysGroup: c.EnableCreateSysGroup,
		EnableLmq:            c.Store.EnableLmq,
	}
}

func permReadable(p int32) bool { return p&PermRead != 0 }
func permWritable(p int32) bool { return p&PermWrite != 0 }

// validateTopic is TopicValidator.validateTopic (5.3.x: 127 for every topic),
// the rule of sends and topic creation.
func validateTopic(topic string) (string, bool) { return compat.ValidateTopic(topic) }

// brokerOnlyTopic is TopicValidator.isNotAllowedSendTopic, and the revive and
// timer topics (compat.IsBrokerOnlyTopic).
func brokerOnlyTopic(topic string) bool { return compat.IsBrokerOnlyTopic(topic) }

// metaConf is the managers' view of the configuration in force.
func (b *Broker) metaConf() meta.Config { return b.conf().metaConfig() }
