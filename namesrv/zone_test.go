package namesrv

import (
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// registerZoned registers a broker instance of cluster "c" in a zone.
func registerZoned(t *testing.T, ns *NameServer, name string, id int64, addr, zone string, filters ...string) {
	t.Helper()
	reg := registration("c", name, id, addr, topicTable(codec.DataVersion{Counter: 1}, map[string]int32{"T": 4, "U": 4}))
	reg.ZoneName = zone
	reg.FilterServerList = filters
	_, ok := ns.Routes().RegisterBroker(reg)
	require.True(t, ok)
}

func zonedRoute(t *testing.T, ns *NameServer, kv ...string) *codec.TopicRouteData {
	t.Helper()
	resp := call(t, ns, newReq(codec.ReqGetRouteinfoByTopic, nil, append([]string{"topic", "T"}, kv...)...))
	require.Equal(t, codec.RespSuccess, resp.Code, resp.Remark)
	r, err := codec.DecodeTopicRouteData(resp.Body)
	require.NoError(t, err)
	return r
}

func routeBrokerNames(r *codec.TopicRouteData) (brokers, queues []string) {
	for _, b := range r.BrokerDatas {
		brokers = append(brokers, b.BrokerName)
	}
	for _, q := range r.QueueDatas {
		queues = append(queues, q.BrokerName)
	}
	return brokers, queues
}

// A client in zone mode (-Drocketmq.zone.mode=true -Drocketmq.zone=Z, sent as
// __ZONE_MODE/__ZONE_NAME by Java's DynamicalExtFieldRPCHook) gets only the
// broker groups of its zone, plus any group whose master is down (Java's
// ZoneRouteRPCHook); other clients get the whole route.
func TestRouteFilteredByClientZone(t *testing.T) {
	ns := newTestNameServer(t, newFakeClock(), nil)
	registerZoned(t, ns, "a", 0, "a:1", "zone-1", "fa:1")
	registerZoned(t, ns, "b", 0, "b:1", "zone-2", "fb:1")
	registerZoned(t, ns, "c", 0, "c:1", "", "fc:1")
	// Group d lost its master: only its slave is left (queues stay, read from it).
	registerZoned(t, ns, "d", 0, "d:0", "zone-2")
	registerZoned(t, ns, "d", 1, "d:1", "zone-2")
	ns.Routes().UnregisterBrokers(UnregisterRequest{ClusterName: "c", BrokerAddr: "d:0", BrokerName: "d"})

	all := []string{"a", "b", "c", "d"}
	for _, kv := range [][]string{
		nil,
		{"__ZONE_NAME", "zone-1"}, // zone without zone mode
		{"__ZONE_MODE", "false", "__ZONE_NAME", "zone-1"}, // zone mode off
		{"__ZONE_MODE", "true", "__ZONE_NAME", "  "},      // blank zone
		{"__ZONE_MODE", "true"},
	} {
		brokers, queues := routeBrokerNames(zonedRoute(t, ns, kv...))
		require.Equal(t, all, brokers, kv)
		require.Equal(t, all, queues, kv)
	}

	r := zonedRoute(t, ns, "__ZONE_MODE", "TRUE", "__ZONE_NAME", "Zone-1")
	brokers, queues := routeBrokerNames(r)
	require.Equal(t, []string{"a", "d"}, brokers, "zone match ignores case; a master-less group stays")
	require.Equal(t, []string{"a", "d"}, queues)
	require.Equal(t, map[string][]string{"a:1": {"fa:1"}}, r.FilterServerTable)

	brokers, _ = routeBrokerNames(zonedRoute(t, ns, "__ZONE_MODE", "true", "__ZONE_NAME", "zone-3"))
	require.Equal(t, []string{"d"}, brokers)
}
