package namesrv

import (
	"context"
	"strings"
	"testing"

	"rmqd/codec"
)

// FuzzZoneRoute: __ZONE_MODE and __ZONE_NAME are a client's ext fields.
// GET_ROUTEINFO_BY_TOPIC never panics on them; a route comes back decodable,
// and in zone mode it holds no group of another zone that has a master, and
// no queues or filter servers of a group left out.
func FuzzZoneRoute(f *testing.F) {
	f.Add("T", "true", "zone-1", true)
	f.Add("T", "TRUE", "Zone-2", true)
	f.Add("T", "false", "zone-1", true)
	f.Add("T", "true", "  ", true)
	f.Add("U", "true", "zone-3", false)
	f.Add("T", "true", "", false)
	f.Add("%RETRY%x", "tRuE", "\u212a", true) // KELVIN SIGN: folds to k
	ns := newTestNameServer(f, newFakeClock(), nil)
	for _, b := range []struct {
		name    string
		id      int64
		addr    string
		zone    string
		filters []string
	}{{"a", 0, "a:1", "zone-1", []string{"fa:1"}}, {"b", 0, "b:1", "zone-2", []string{"fb:1"}}, {"c", 0, "c:1", "", nil},
		{"d", 0, "d:0", "zone-2", nil}, {"d", 1, "d:1", "zone-2", nil}, {"e", 0, "e:1", "k", nil}} {
		reg := registration("c", b.name, b.id, b.addr, topicTable(codec.DataVersion{Counter: 1}, map[string]int32{"T": 4, "U": 4}))
		reg.ZoneName, reg.FilterServerList = b.zone, b.filters
		if _, ok := ns.Routes().RegisterBroker(reg); !ok {
			f.Fatalf("register %s", b.addr)
		}
	}
	ns.Routes().UnregisterBrokers(UnregisterRequest{ClusterName: "c", BrokerAddr: "d:0", BrokerName: "d"})
	if r := call(f, ns, newReq(codec.ReqGetRouteinfoByTopic, nil, "topic", "T")); r.Code != codec.RespSuccess {
		f.Fatalf("route of T: %d %s", r.Code, r.Remark)
	}
	f.Fuzz(func(t *testing.T, topic, mode, zone string, withZone bool) {
		kv := []string{"topic", topic, codec.ZoneModeExtKey, mode}
		if withZone {
			kv = append(kv, codec.ZoneNameExtKey, zone)
		}
		req := newReq(codec.ReqGetRouteinfoByTopic, nil, kv...)
		resp, err := ns.ProcessRequest(context.Background(), newFakeConn(), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Code != codec.RespSuccess {
			return
		}
		r, err := codec.DecodeTopicRouteData(resp.Body)
		if err != nil {
			t.Fatalf("route %s: %v", resp.Body, err)
		}
		z := clientZone(req.Ext)
		if !withZone && z != "" {
			t.Fatalf("zone %q without __ZONE_NAME", z)
		}
		kept := map[string]bool{}
		for _, bd := range r.BrokerDatas {
			kept[bd.BrokerName] = true
			if _, master := bd.BrokerAddrs[codec.MasterID]; z != "" && master && !strings.EqualFold(bd.ZoneName, z) {
				t.Fatalf("zone %q route holds %s of zone %q", z, bd.BrokerName, bd.ZoneName)
			}
		}
		for _, q := range r.QueueDatas {
			if !kept[q.BrokerName] {
				t.Fatalf("queues of %s, left out", q.BrokerName)
			}
		}
		for addr := range r.FilterServerTable {
			if !strings.HasPrefix(addr, "a:") && !strings.HasPrefix(addr, "b:") || !kept[addr[:1]] {
				t.Fatalf("filter servers of %s, left out", addr)
			}
		}
	})
}
