package namesrv

import (
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// The 5.x acting-master cycle across a master's departure and return: the
// group turns read-only when its master leaves, a route then shows the lowest
// slave as id 0 (supportActingMaster), the master's return restores its
// permissions, and the last member leaving takes the group, its queues and its
// cluster away. A zone-mode client sees the acting group as one with a master,
// filtered by zone like Java's ZoneRouteRPCHook after pickupTopicRouteData.
func TestActingMasterCycle(t *testing.T) {
	ns := newTestNameServer(t, newFakeClock(), func(c *Config) { c.SupportActingMaster = true })
	yes := true
	register := func(id int64, addr string) RegisterResult {
		r := registration("c", "b", id, addr, topicTable(codec.DataVersion{Counter: 1}, map[string]int32{"T": 4, "U": 4}))
		r.EnableActingMaster, r.ZoneName = &yes, "z1"
		res, ok := ns.Routes().RegisterBroker(r)
		require.True(t, ok)
		return res
	}
	require.Equal(t, RegisterResult{}, register(0, "m:1"))
	require.Equal(t, RegisterResult{HaServerAddr: "m:1-ha", MasterAddr: "m:1"}, register(1, "s:1"))
	register(2, "s:2")

	ns.Routes().UnregisterBrokers(UnregisterRequest{ClusterName: "c", BrokerAddr: "m:1", BrokerName: "b"})
	r := zonedRoute(t, ns)
	require.Equal(t, map[int64]string{0: "s:1", 2: "s:2"}, r.BrokerDatas[0].BrokerAddrs)
	require.EqualValues(t, codec.PermRead, r.QueueDatas[0].Perm)
	require.Empty(t, zonedRoute(t, ns, "__ZONE_MODE", "true", "__ZONE_NAME", "z2").BrokerDatas)
	require.Len(t, zonedRoute(t, ns, "__ZONE_MODE", "true", "__ZONE_NAME", "z1").BrokerDatas, 1)
	// The slaves' periodic registrations (same data version) keep it read-only.
	register(1, "s:1")
	require.EqualValues(t, codec.PermRead, zonedRoute(t, ns).QueueDatas[0].Perm)

	register(0, "m:1")
	r = zonedRoute(t, ns)
	require.Equal(t, map[int64]string{0: "m:1", 1: "s:1", 2: "s:2"}, r.BrokerDatas[0].BrokerAddrs)
	require.EqualValues(t, codec.PermRead|codec.PermWrite, r.QueueDatas[0].Perm)

	ns.Routes().UnregisterBrokers(UnregisterRequest{ClusterName: "c", BrokerAddr: "m:1", BrokerName: "b"},
		UnregisterRequest{ClusterName: "c", BrokerAddr: "s:1", BrokerName: "b", BrokerID: 1},
		UnregisterRequest{ClusterName: "c", BrokerAddr: "s:2", BrokerName: "b", BrokerID: 2})
	require.Equal(t, codec.RespTopicNotExist, call(t, ns, newReq(codec.ReqGetRouteinfoByTopic, nil, "topic", "T")).Code)
	ci := ns.Routes().ClusterInfo()
	require.Empty(t, ci.BrokerAddrTable)
	require.Empty(t, ci.ClusterAddrTable)
	require.Empty(t, ns.Routes().AllTopics())
}
