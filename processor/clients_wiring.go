package processor

import "rmqd/processor/clients"

// The client registry and rebalance locks live in processor/clients; these
// names keep the handlers' spelling.
type (
	ClientChannel        = clients.ClientChannel
	ConsumerGroupInfo    = clients.ConsumerGroupInfo
	ConsumerManager      = clients.ConsumerManager
	ProducerManager      = clients.ProducerManager
	RebalanceLockManager = clients.RebalanceLockManager
)

// DefaultLockMaxLiveTime is clients.DefaultLockMaxLiveTime (Java's
// rocketmq.broker.rebalance.lockMaxLiveTime).
const DefaultLockMaxLiveTime = clients.DefaultLockMaxLiveTime
