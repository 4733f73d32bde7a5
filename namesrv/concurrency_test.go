package namesrv

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// TestConcurrentRegistrationAndLookups runs registrations, heartbeats, lookups,
// admin changes, scans and connection closes at once; -race checks the lock
// discipline, the assertions that every route read is well-formed.
func TestConcurrentRegistrationAndLookups(t *testing.T) {
	clock := newFakeClock()
	ns := newTestNameServer(t, clock, nil)
	ctx := context.Background()
	var wg sync.WaitGroup
	deadline := time.Now().Add(500 * time.Millisecond)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			conn := newFakeConn()
			name := "broker-" + strconv.Itoa(w)
			for i := 0; time.Now().Before(deadline) && i < 2000; i++ {
				body := &codec.RegisterBrokerBody{TopicConfigSerializeWrapper: *topicTable(
					codec.DataVersion{Counter: int64(i)}, map[string]int32{"Shared": 4, "T" + strconv.Itoa(i%7): 2})}
				req := newReq(codec.ReqRegisterBroker, body.AppendJSON(nil), "brokerAddr", name+":1", "brokerId", "0",
					"brokerName", name, "clusterName", "c"+strconv.Itoa(w%2), "haServerAddr", name+":2")
				if _, err := ns.ProcessRequest(ctx, conn, req); err != nil {
					t.Error(err)
					return
				}
				if i%50 == 0 {
					ns.OnClose(conn)
				}
			}
		}(w)
	}
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := codec.NewRequest(codec.ReqGetRouteinfoByTopic)
			req.Ext.Set("topic", "Shared")
			for time.Now().Before(deadline) {
				resp, err := ns.ProcessRequest(ctx, nil, req)
				if err != nil {
					t.Error(err)
					return
				}
				if resp.Code == codec.RespSuccess {
					if _, err := codec.DecodeTopicRouteData(resp.Body); err != nil {
						t.Error(err)
						return
					}
				}
				ns.Routes().ClusterInfo()
				ns.Routes().TopicsByCluster("c0")
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for time.Now().Before(deadline) {
			ns.Routes().WipeWritePermOfBroker("broker-1")
			ns.Routes().AddWritePermOfBroker("broker-1")
			ns.Routes().UpdateBrokerInfoUpdateTimestamp("c0", "broker-0:1")
			clock.Advance(time.Second)
			ns.Routes().ScanNotActiveBrokers()
			_ = ns.KV().Put("ns", "k", "v")
		}
	}()
	wg.Wait()
}

func TestActingMasterRoute(t *testing.T) {
	m := newTestManager(t, newFakeClock())
	yes := true
	reg := registration("c", "b", 1, "s:1", topicTable(codec.DataVersion{Counter: 1}, map[string]int32{"T": 4, "U": 4}))
	reg.EnableActingMaster = &yes
	_, ok := m.RegisterBroker(reg)
	require.True(t, ok)
	// Without supportActingMaster the route shows the slave as it is.
	require.Equal(t, map[int64]string{1: "s:1"}, route(t, m, "T").BrokerDatas[0].BrokerAddrs)

	cfg := testConfig(t, newFakeClock())
	cfg.SupportActingMaster = true
	m.cfg = func() *Config { return &cfg }
	require.Equal(t, map[int64]string{0: "s:1"}, route(t, m, "T").BrokerDatas[0].BrokerAddrs,
		"the read-only prime slave answers as id 0")
	// The table itself is untouched.
	require.Equal(t, map[int64]string{1: "s:1"}, m.ClusterInfo().BrokerAddrTable["b"].BrokerAddrs)
}
