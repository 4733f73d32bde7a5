package namesrv

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

func route(t *testing.T, m *RouteInfoManager, topic string) *codec.TopicRouteData {
	t.Helper()
	r, ok := m.TopicRouteData(topic)
	require.True(t, ok, "route of %s", topic)
	return r
}

func TestRegisterBrokerCreatesRoutes(t *testing.T) {
	m := newTestManager(t, newFakeClock())
	dv := codec.DataVersion{Counter: 1, Timestamp: 1}
	res, ok := m.RegisterBroker(registration("c1", "broker-a", 0, "10.0.0.1:10911",
		topicTable(dv, map[string]int32{"T1": 4, "TBW102": 8})))
	require.True(t, ok)
	require.Equal(t, RegisterResult{}, res, "a master gets no master address")

	r := route(t, m, "T1")
	require.Equal(t, []codec.QueueData{{BrokerName: "broker-a", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}}, r.QueueDatas)
	require.Equal(t, []*codec.BrokerData{{Cluster: "c1", BrokerName: "broker-a",
		BrokerAddrs: map[int64]string{0: "10.0.0.1:10911"}}}, r.BrokerDatas)
	require.Equal(t, []string{"T1", "TBW102"}, m.AllTopics())
	_, ok = m.TopicRouteData("nope")
	require.False(t, ok)

	got, known := m.QueryBrokerTopicConfig("c1", "10.0.0.1:10911")
	require.True(t, known)
	require.Equal(t, dv, got)
}

func TestReRegistrationAppliesTopicsOnlyWhenDataVersionChanges(t *testing.T) {
	m := newTestManager(t, newFakeClock())
	dv1 := codec.DataVersion{Counter: 1, Timestamp: 100}
	_, ok := m.RegisterBroker(registration("c", "b", 0, "a:1", topicTable(dv1, map[string]int32{"T": 4, "X": 1})))
	require.True(t, ok)

	// Admin made the broker read-only; a periodic re-registration with the same
	// version must not undo it, and a changed table with the same version is not
	// looked at either (Java compares versions, not tables).
	require.Equal(t, 2, m.WipeWritePermOfBroker("b"))
	_, ok = m.RegisterBroker(registration("c", "b", 0, "a:1", topicTable(dv1, map[string]int32{"T": 8})))
	require.True(t, ok)
	require.Equal(t, codec.QueueData{BrokerName: "b", ReadQueueNums: 4, WriteQueueNums: 4, Perm: codec.PermRead},
		route(t, m, "T").QueueDatas[0])

	// A topic new to this broker is added even with the same version.
	_, ok = m.RegisterBroker(registration("c", "b", 0, "a:1", topicTable(dv1, map[string]int32{"T": 8, "U": 2})))
	require.True(t, ok)
	require.Equal(t, int32(2), route(t, m, "U").QueueDatas[0].WriteQueueNums)

	// A newer version rewrites the queue data.
	dv2 := codec.DataVersion{Counter: 2, Timestamp: 200}
	_, ok = m.RegisterBroker(registration("c", "b", 0, "a:1", topicTable(dv2, map[string]int32{"T": 8})))
	require.True(t, ok)
	require.Equal(t, codec.QueueData{BrokerName: "b", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6},
		route(t, m, "T").QueueDatas[0])
	got, _ := m.QueryBrokerTopicConfig("c", "a:1")
	require.Equal(t, dv2, got)
}

func TestMasterAndSlaveInOneBrokerName(t *testing.T) {
	m := newTestManager(t, newFakeClock())
	dv := codec.DataVersion{Counter: 1}
	_, ok := m.RegisterBroker(registration("c", "b", 0, "m:1", topicTable(dv, map[string]int32{"T": 4, "X": 1})))
	require.True(t, ok)
	// The slave's table (different queue counts, an extra topic) is ignored.
	res, ok := m.RegisterBroker(registration("c", "b", 1, "s:1", topicTable(dv, map[string]int32{"T": 16, "SlaveOnly": 1})))
	require.True(t, ok)
	require.Equal(t, RegisterResult{HaServerAddr: "m:1-ha", MasterAddr: "m:1"}, res)

	r := route(t, m, "T")
	require.Equal(t, int32(4), r.QueueDatas[0].WriteQueueNums)
	require.Equal(t, map[int64]string{0: "m:1", 1: "s:1"}, r.BrokerDatas[0].BrokerAddrs)
	_, ok = m.TopicRouteData("SlaveOnly")
	require.False(t, ok)

	// The master goes: the slave stays in the route, topics stay.
	m.UnregisterBrokers(UnregisterRequest{ClusterName: "c", BrokerAddr: "m:1", BrokerName: "b", BrokerID: 0})
	r = route(t, m, "T")
	require.Equal(t, map[int64]string{1: "s:1"}, r.BrokerDatas[0].BrokerAddrs)

	// The slave is promoted at the same address: one id per address.
	_, ok = m.RegisterBroker(registration("c", "b", 0, "s:1", topicTable(codec.DataVersion{Counter: 5}, map[string]int32{"T": 4, "X": 1})))
	require.True(t, ok)
	require.Equal(t, map[int64]string{0: "s:1"}, route(t, m, "T").BrokerDatas[0].BrokerAddrs)
}

func TestPrimeSlaveRegistersTopicsWhenMasterAbsent(t *testing.T) {
	m := newTestManager(t, newFakeClock())
	yes := true
	reg := registration("c", "b", 2, "s:2", topicTable(codec.DataVersion{Counter: 1}, map[string]int32{"T": 4, "U": 4}))
	reg.EnableActingMaster = &yes
	_, ok := m.RegisterBroker(reg)
	require.True(t, ok)
	// Acting master: registered read-only.
	require.Equal(t, codec.PermRead, route(t, m, "T").QueueDatas[0].Perm)

	// Brokers older than 5.0 (no enableActingMaster field) never act as master.
	m2 := newTestManager(t, newFakeClock())
	_, ok = m2.RegisterBroker(registration("c", "b", 2, "s:2", topicTable(codec.DataVersion{Counter: 1}, map[string]int32{"T": 4, "U": 4})))
	require.True(t, ok)
	_, ok = m2.TopicRouteData("T")
	require.False(t, ok)
}

func TestSingleTopicRegistrationNeedsAFullOneFirst(t *testing.T) {
	m := newTestManager(t, newFakeClock())
	_, ok := m.RegisterBroker(registration("c", "b", 0, "a:1", topicTable(codec.DataVersion{}, map[string]int32{"T": 4})))
	require.False(t, ok)
	_, ok = m.RegisterBroker(registration("c", "b", 0, "a:1", topicTable(codec.DataVersion{}, map[string]int32{"T": 4, "U": 1})))
	require.True(t, ok)
	_, ok = m.RegisterBroker(registration("c", "b", 0, "a:1", topicTable(codec.DataVersion{Counter: 1}, map[string]int32{"V": 4})))
	require.True(t, ok)
	route(t, m, "V")
}

func TestOlderStateVersionCannotTakeOverAnID(t *testing.T) {
	m := newTestManager(t, newFakeClock())
	_, ok := m.RegisterBroker(registration("c", "b", 0, "new:1", topicTable(codec.DataVersion{StateVersion: 5}, map[string]int32{"T": 4, "U": 1})))
	require.True(t, ok)
	_, ok = m.RegisterBroker(registration("c", "b", 0, "old:1", topicTable(codec.DataVersion{StateVersion: 3}, map[string]int32{"T": 4, "U": 1})))
	require.True(t, ok)
	require.Equal(t, map[int64]string{0: "new:1"}, route(t, m, "T").BrokerDatas[0].BrokerAddrs)
	_, live := m.QueryBrokerTopicConfig("c", "old:1")
	require.False(t, live)
}

func TestLivenessExpiry(t *testing.T) {
	clock := newFakeClock()
	m := newTestManager(t, clock)
	conn := newFakeConn()
	reg := registration("c", "b", 0, "a:1", topicTable(codec.DataVersion{Counter: 1}, map[string]int32{"T": 4, "U": 1}))
	reg.Conn = conn
	_, ok := m.RegisterBroker(reg)
	require.True(t, ok)
	short := registration("c", "fast", 0, "f:1", topicTable(codec.DataVersion{Counter: 1}, map[string]int32{"F": 1, "U": 1}))
	short.HeartbeatTimeoutMillis = 10_000
	_, ok = m.RegisterBroker(short)
	require.True(t, ok)

	clock.Advance(11 * time.Second)
	require.Equal(t, 1, m.ScanNotActiveBrokers(), "the broker with a 10 s timeout")
	_, ok = m.TopicRouteData("F")
	require.False(t, ok)
	require.Equal(t, []codec.QueueData{{BrokerName: "b", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}}, route(t, m, "U").QueueDatas)

	clock.Advance(100 * time.Second) // 111 s since registration
	m.UpdateBrokerInfoUpdateTimestamp("c", "a:1")
	clock.Advance(100 * time.Second) // 100 s since the heartbeat
	require.Zero(t, m.ScanNotActiveBrokers())
	require.False(t, conn.Closed())

	clock.Advance(21 * time.Second)
	require.Equal(t, 1, m.ScanNotActiveBrokers())
	require.True(t, conn.Closed(), "an expired broker's connection is closed")
	require.Empty(t, m.AllTopics())
	require.Empty(t, m.ClusterInfo().ClusterAddrTable)
	require.Empty(t, m.ClusterInfo().BrokerAddrTable)
}

func TestSeveralClusters(t *testing.T) {
	m := newTestManager(t, newFakeClock())
	dv := codec.DataVersion{Counter: 1}
	for _, r := range []*BrokerRegistration{
		registration("c1", "a", 0, "a:1", topicTable(dv, map[string]int32{"Shared": 4, "OnlyA": 1})),
		registration("c1", "b", 0, "b:1", topicTable(dv, map[string]int32{"Shared": 2, "OnlyB": 1})),
		registration("c2", "x", 0, "x:1", topicTable(dv, map[string]int32{"Shared": 8, "OnlyX": 1})),
	} {
		_, ok := m.RegisterBroker(r)
		require.True(t, ok)
	}
	r := route(t, m, "Shared")
	require.Len(t, r.QueueDatas, 3)
	require.Equal(t, []string{"a", "b", "x"}, []string{r.QueueDatas[0].BrokerName, r.QueueDatas[1].BrokerName, r.QueueDatas[2].BrokerName})
	require.Equal(t, []string{"OnlyA", "OnlyB", "Shared"}, m.TopicsByCluster("c1"))
	require.Equal(t, []string{"OnlyX", "Shared"}, m.TopicsByCluster("c2"))
	require.Empty(t, m.TopicsByCluster("nope"))
	ci := m.ClusterInfo()
	require.Equal(t, map[string][]string{"c1": {"a", "b"}, "c2": {"x"}}, ci.ClusterAddrTable)
	require.Equal(t, &codec.TopicList{TopicList: []string{"c1", "a", "b", "c2", "x"}, BrokerAddr: "a:1"}, m.SystemTopicList())

	m.DeleteTopic("Shared", "c1")
	r = route(t, m, "Shared")
	require.Len(t, r.QueueDatas, 1)
	require.Equal(t, "x", r.QueueDatas[0].BrokerName)
	m.DeleteTopic("Shared", "")
	_, ok := m.TopicRouteData("Shared")
	require.False(t, ok)
}

func TestUnregisterCleansTopics(t *testing.T) {
	m := newTestManager(t, newFakeClock())
	dv := codec.DataVersion{Counter: 1}
	_, _ = m.RegisterBroker(registration("c", "a", 0, "a:1", topicTable(dv, map[string]int32{"Shared": 4, "OnlyA": 1})))
	_, _ = m.RegisterBroker(registration("c", "b", 0, "b:1", topicTable(dv, map[string]int32{"Shared": 2, "OnlyB": 1})))

	m.UnregisterBrokers(UnregisterRequest{ClusterName: "c", BrokerAddr: "a:1", BrokerName: "a", BrokerID: 0})
	require.Equal(t, []string{"OnlyB", "Shared"}, m.AllTopics())
	require.Equal(t, "b", route(t, m, "Shared").QueueDatas[0].BrokerName)
	require.Equal(t, map[string][]string{"c": {"b"}}, m.ClusterInfo().ClusterAddrTable)

	m.UnregisterBrokers(UnregisterRequest{ClusterName: "c", BrokerAddr: "b:1", BrokerName: "b", BrokerID: 0})
	require.Empty(t, m.AllTopics())
	require.Empty(t, m.ClusterInfo().ClusterAddrTable)
	// Unknown brokers are a no-op.
	m.UnregisterBrokers(UnregisterRequest{ClusterName: "c", BrokerAddr: "z:1", BrokerName: "z"})
}

func TestConnectionCloseUnregistersItsBrokers(t *testing.T) {
	m := newTestManager(t, newFakeClock())
	dv := codec.DataVersion{Counter: 1}
	c1, c2 := newFakeConn(), newFakeConn()
	r1 := registration("c", "a", 0, "a:1", topicTable(dv, map[string]int32{"A": 1, "S": 1}))
	r1.Conn = c1
	r2 := registration("c", "b", 0, "b:1", topicTable(dv, map[string]int32{"B": 1, "S": 1}))
	r2.Conn = c2
	_, _ = m.RegisterBroker(r1)
	_, _ = m.RegisterBroker(r2)

	require.Equal(t, 1, m.OnConnClosed(c1.ID()))
	require.Equal(t, []string{"B", "S"}, m.AllTopics())
	require.Zero(t, m.OnConnClosed(c1.ID()), "idempotent")
	require.Zero(t, m.OnConnClosed(12345))
}

func TestWritePermAndRegisterTopic(t *testing.T) {
	m := newTestManager(t, newFakeClock())
	dv := codec.DataVersion{Counter: 1}
	_, _ = m.RegisterBroker(registration("c", "a", 0, "a:1", topicTable(dv, map[string]int32{"T": 4, "U": 1})))
	require.Equal(t, 2, m.WipeWritePermOfBroker("a"))
	require.Equal(t, codec.PermRead, route(t, m, "T").QueueDatas[0].Perm)
	require.Equal(t, 2, m.AddWritePermOfBroker("a"))
	require.Equal(t, codec.PermRead|codec.PermWrite, route(t, m, "T").QueueDatas[0].Perm)
	require.Zero(t, m.WipeWritePermOfBroker("nope"))

	require.False(t, m.RegisterTopic("New", []codec.QueueData{{BrokerName: "unknown", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}}))
	require.True(t, m.RegisterTopic("New", []codec.QueueData{{BrokerName: "a", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6}}))
	require.Equal(t, int32(2), route(t, m, "New").QueueDatas[0].ReadQueueNums)
}

func TestDeleteTopicWithBrokerRegistration(t *testing.T) {
	cfg := testConfig(t, newFakeClock())
	cfg.DeleteTopicWithBrokerRegistration = true
	m := NewRouteInfoManager(func() *Config { return &cfg }, quietLogger())
	_, _ = m.RegisterBroker(registration("c", "a", 0, "a:1", topicTable(codec.DataVersion{Counter: 1}, map[string]int32{"T": 4, "U": 1})))
	_, _ = m.RegisterBroker(registration("c", "a", 0, "a:1", topicTable(codec.DataVersion{Counter: 2}, map[string]int32{"T": 4, "V": 1})))
	require.Equal(t, []string{"T", "V"}, m.AllTopics())
}

func TestUnitTopicLists(t *testing.T) {
	m := newTestManager(t, newFakeClock())
	w := topicTable(codec.DataVersion{Counter: 1}, map[string]int32{"Plain": 1, "Unit": 1, "UnitSub": 1, "Both": 1})
	w.TopicConfigTable["Unit"].TopicSysFlag = codec.TopicSysFlagUnit
	w.TopicConfigTable["UnitSub"].TopicSysFlag = codec.TopicSysFlagUnitSub
	w.TopicConfigTable["Both"].TopicSysFlag = codec.TopicSysFlagUnit | codec.TopicSysFlagUnitSub
	_, _ = m.RegisterBroker(registration("c", "a", 0, "a:1", w))
	require.Equal(t, []string{"Both", "Unit"}, m.TopicsWithSysFlag(hasUnit))
	require.Equal(t, []string{"Both", "UnitSub"}, m.TopicsWithSysFlag(hasUnitSub))
	require.Equal(t, []string{"UnitSub"}, m.TopicsWithSysFlag(func(f int32) bool { return !hasUnit(f) && hasUnitSub(f) }))
}

func TestStaticTopicMappingInRoute(t *testing.T) {
	m := newTestManager(t, newFakeClock())
	w := topicTable(codec.DataVersion{Counter: 1}, map[string]int32{"T": 2, "U": 1})
	info := `{"bname":"b","currIdMap":{"0":0},"dirty":false,"epoch":1,"scope":"__global__","topic":"T","totalQueues":2}`
	mapping, err := codec.DecodeTopicQueueMappingInfo([]byte(info))
	require.NoError(t, err)
	w.TopicQueueMappingInfoMap = map[string]*codec.TopicQueueMappingInfo{"T": mapping}
	_, ok := m.RegisterBroker(registration("c", "b", 0, "a:1", w))
	require.True(t, ok)
	b, ok := m.AppendTopicRouteJSON(nil, "T", "", "")
	require.True(t, ok)
	require.Contains(t, string(b), `"queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":2,"topicSysFlag":0,"writeQueueNums":2}],"topicQueueMappingByBroker":{"b":`+info+`}}`)
	require.True(t, json.Valid(b))
	b, _ = m.AppendTopicRouteJSON(nil, "U", "", "")
	require.NotContains(t, string(b), "topicQueueMappingByBroker")
	m.DeleteTopic("T", "")
	require.Empty(t, m.mappingInfoTable)
}

func TestFilterServersInRoute(t *testing.T) {
	m := newTestManager(t, newFakeClock())
	dv := codec.DataVersion{Counter: 1}
	a := registration("c", "a", 0, "a:1", topicTable(dv, map[string]int32{"T": 1, "X": 1}))
	a.FilterServerList = []string{"f:1"}
	_, _ = m.RegisterBroker(a)
	_, _ = m.RegisterBroker(registration("c", "a", 1, "a:2", topicTable(dv, map[string]int32{"T": 1, "X": 1})))
	require.Equal(t, map[string][]string{"a:1": {"f:1"}}, route(t, m, "T").FilterServerTable)
	a.FilterServerList = []string{}
	_, _ = m.RegisterBroker(a)
	require.Empty(t, route(t, m, "T").FilterServerTable)
}
