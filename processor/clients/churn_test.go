package clients

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/remoting"
)

// sizes are the registries' table sizes.
func (m *ConsumerManager) sizes() (groups, conns, compensated int) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.groups), len(m.byConn), len(m.compensated)
}

func (m *ProducerManager) sizes() (groups, conns int) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.groups), len(m.byConn)
}

func (m *RebalanceLockManager) size() (groups, queues int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, g := range m.table {
		queues += len(g)
	}
	return len(m.table), queues
}

// 200 clients come and go, half by closing their connection, half by
// falling silent and being expired as the housekeeping does; groups that
// pull without a heartbeat and ordered consumers' locks come and go too.
// Every table is back to empty at the end.
func TestClientChurnLeavesNothing(t *testing.T) {
	cm := NewConsumerManager(quietLog())
	cm.notify = func(string, []remoting.Conn) {}
	pm := NewProducerManager()
	locks := NewRebalanceLockManager(time.Minute)
	now := time.Now()
	locks.now = func() time.Time { return now }
	const n = 200
	for i := range n {
		c := newTestConn(uint64(i + 1))
		ch := ClientChannel{Conn: c, ClientID: fmt.Sprintf("client-%d", i), LastUpdate: now}
		group := fmt.Sprintf("CG%d", i)
		subs := []codec.SubscriptionData{{Topic: fmt.Sprintf("T%d", i), SubString: "*"}}
		cm.Register(group, ch, "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET", subs, false)
		pm.Register(fmt.Sprintf("PG%d", i), ch)
		cm.CompensatePull(fmt.Sprintf("PULL%d", i), "CONSUME_PASSIVELY", "CLUSTERING", nil)
		cm.CompensatePull(fmt.Sprintf("LITE%d", i), "CONSUME_ACTIVELY", "CLUSTERING", &codec.SubscriptionData{Topic: "T", SubString: "*"})
		mqs := []codec.MessageQueue{{Topic: fmt.Sprintf("T%d", i), BrokerName: "b", QueueID: 0}, {Topic: "T", BrokerName: "b", QueueID: int32(i)}}
		require.Len(t, locks.TryLockBatch(group, mqs, ch.ClientID), 2)
		if i%2 == 0 {
			cm.RemoveConn(c, true) // the connection closed (doChannelCloseEvent)
			pm.RemoveConn(c)
		}
	}
	// The rest stopped heartbeating: ClientHousekeepingService's scan.
	later := now.Add(3 * time.Minute)
	expired := append(cm.Expired(later, 2*time.Minute), pm.Expired(later, 2*time.Minute)...)
	require.Len(t, expired, n)
	for _, c := range expired {
		cm.RemoveConn(c, true)
		pm.RemoveConn(c)
	}
	cm.ExpireCompensation(now.Add(11*time.Minute), 10*time.Minute)
	now = later
	locks.Expire()

	groups, conns, compensated := cm.sizes()
	require.Equal(t, [3]int{0, 0, 0}, [3]int{groups, conns, compensated}, "consumer groups, connections, compensated groups")
	pg, pc := pm.sizes()
	require.Equal(t, [2]int{0, 0}, [2]int{pg, pc}, "producer groups, connections")
	lg, lq := locks.size()
	require.Equal(t, [2]int{0, 0}, [2]int{lg, lq}, "lock groups, queues")
}
