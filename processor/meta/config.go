// Package meta holds the broker's persisted metadata: topic configs,
// subscription groups, consumer offsets, static topics' queue mappings and the
// config files they live in (Java's TopicConfigManager,
// SubscriptionGroupManager, ConsumerOffsetManager, TopicQueueMappingManager
// and ConfigManager). It knows no connection or request, so it is tested alone;
// processor's handlers and replication read and change it through the managers.
package meta

import (
	"strings"

	"rmqd/compat"
)

// Config is what the managers read of the broker's configuration. The managers
// take it through a function, so a changed setting (UPDATE_BROKER_CONFIG)
// applies from the next call on.
type Config struct {
	ConfigDir                   string // where the .json files live
	BrokerName                  string
	BrokerClusterName           string
	AutoCreateTopicEnable       bool
	AutoCreateSubscriptionGroup bool
	ClusterTopicEnable          bool
	BrokerTopicEnable           bool
	DefaultTopicQueueNums       int32
	TraceTopicEnable            bool
	MsgTraceTopicName           string
	ReviveQueueNum              int32
	TimerWheelEnable            bool
	// EnableCreateSysGroup auto-creates CID_RMQ_SYS_ groups even with
	// AutoCreateSubscriptionGroup off (MixAll.isSysConsumerGroupAndEnableCreate).
	EnableCreateSysGroup bool
	// EnableLmq answers for light message queues (%LMQ%...) and their groups
	// without a table entry, and keeps LMQ groups' offsets apart (Java's
	// LmqTopicConfigManager, LmqSubscriptionGroupManager, LmqConsumerOffsetManager).
	EnableLmq bool
}

// lmqName says whether name is an LMQ the broker answers for: one that can be
// a directory under consumequeue/ (no '/', '\\' or NUL, at most 255 bytes, as
// the store requires). Java answers for any %LMQ% name.
func lmqName(name string) bool {
	return compat.IsLMQ(name) && len(name) <= 255 && !strings.ContainsAny(name, "/\\\x00")
}
