package namesrv

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// tableSizes are the route tables' sizes, in the order of the fields.
func (m *RouteInfoManager) tableSizes() [6]int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return [6]int{len(m.topicQueueTable), len(m.brokerAddrTable), len(m.clusterAddrTable),
		len(m.brokerLiveTable), len(m.filterServerTable), len(m.mappingInfoTable)}
}

// 200 brokers, with topics, filter servers and static-topic mappings, come
// and go (half by closing their connection, half by missing heartbeats), and
// 200 topics are registered and deleted by admin tools: every route table is
// empty at the end.
func TestBrokerAndTopicChurnLeavesNothing(t *testing.T) {
	clock := newFakeClock()
	m := newTestManager(t, clock)
	var conns []*fakeConn
	for i := range 200 {
		topic := fmt.Sprintf("T%d", i)
		w := topicTable(codec.DataVersion{Counter: 1}, map[string]int32{topic: 2, "Shared": 1})
		name := fmt.Sprintf("broker-%d", i)
		w.TopicQueueMappingInfoMap = map[string]*codec.TopicQueueMappingInfo{topic: {Topic: topic, TotalQueues: 2, Bname: name}}
		reg := registration(fmt.Sprintf("c%d", i%5), name, int64(i%2), fmt.Sprintf("10.0.0.%d:10911", i), w)
		reg.FilterServerList = []string{fmt.Sprintf("10.0.1.%d:1", i)}
		c := newFakeConn()
		reg.Conn = c
		_, ok := m.RegisterBroker(reg)
		require.True(t, ok)
		conns = append(conns, c)

		admin := fmt.Sprintf("Admin%d", i)
		m.RegisterTopic(admin, []codec.QueueData{{BrokerName: name, ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}})
		m.DeleteTopic(admin, "")
	}
	for i, c := range conns {
		if i%2 == 0 {
			m.OnConnClosed(c.ID())
		}
	}
	clock.Advance(DefaultBrokerChannelExpiredMillis*time.Millisecond + time.Second)
	require.Equal(t, 100, m.ScanNotActiveBrokers())
	require.Equal(t, [6]int{}, m.tableSizes(), "topics, broker names, clusters, live brokers, filter servers, mappings")
}
