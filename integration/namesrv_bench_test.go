package integration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"rmqd/codec"
	"rmqd/integration/harness"
	"rmqd/remoting"
)

// BenchmarkNamesrvRouteInfo measures GET_ROUTEINFO_BY_TOPIC requests per second against rmqd's name server
// and the Apache 5.3.3 name server in the same run. Each gets, from this driver, a REGISTER_BROKER of a
// fake broker with 1,000 topics (8 queues each); then many goroutines share one remoting.Client connection
// per server, each asking for topic i%1000 in turn, so many requests are in flight at once.
//
//	go test -run '^$' -bench NamesrvRouteInfo -benchtime 10s -count 3 ./integration/
//
// Not run by `make test` (benchmarks only run with -bench). The driver shares the machine with the server
// under test; both servers are measured by the same driver the same way.
func BenchmarkNamesrvRouteInfo(b *testing.B) {
	harness.RequireJars(b, "apache")
	const topics = 1000
	// "apache" runs with the harness's JVM set-up (256 MB, serial GC, C1 only: quick to start on 2 cores);
	// "apache-c2" with the full tiered JIT and 1 GB, as a production name server would.
	servers := []struct {
		name string
		ns   *harness.Namesrv
	}{
		{"rmqd", harness.StartNamesrv(b, harness.KindRmqd, harness.Options{})},
		{"apache", harness.StartNamesrv(b, harness.KindApache, harness.Options{})},
		{"apache-c2", harness.StartNamesrv(b, harness.KindApache, harness.Options{
			JVMArgs: []string{"-XX:TieredStopAtLevel=4", "-Xms1g", "-Xmx1g"}})},
	}
	names := make([]string, topics)
	for i := range names {
		names[i] = fmt.Sprintf("BenchRouteTopic-%04d", i)
	}
	body := registerBody(names)
	for _, s := range servers {
		ns := s.ns
		cl := remoting.NewClient(remoting.ClientConfig{})
		b.Cleanup(func() { _ = cl.Close() })
		registerFakeBroker(b, cl, ns.Addr, body)
		// A real broker re-registers every 30 s; the name servers drop a silent broker after 120 s.
		ctx, cancel := context.WithCancel(b.Context())
		b.Cleanup(cancel)
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(30 * time.Second):
					_ = sendRegister(ctx, cl, ns.Addr, body)
				}
			}
		}()
		// The route is there, with the fake broker as master.
		r, err := route(b.Context(), cl, ns.Addr, names[topics-1])
		if err != nil || len(r.BrokerDatas) != 1 || len(r.QueueDatas) != 1 || r.QueueDatas[0].ReadQueueNums != 8 {
			b.Fatalf("%s: route after registration: %+v %v", s.name, r, err)
		}
		b.Run(s.name, func(b *testing.B) { benchRoutes(b, cl, ns.Addr, names) })
	}
}

func benchRoutes(b *testing.B, cl *remoting.Client, addr string, names []string) {
	b.Logf("loadavg before: %s", loadavg())
	var seq atomic.Uint64
	var failed atomic.Int64
	var firstErr atomic.Value
	ctx := b.Context()
	b.SetParallelism(64) // 64 × GOMAXPROCS goroutines, all on the one connection
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := codec.NewRequest(codec.ReqGetRouteinfoByTopic)
			req.Ext.Set("topic", names[seq.Add(1)%uint64(len(names))])
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			resp, err := cl.InvokeSync(cctx, addr, req)
			cancel()
			if err != nil || resp.Code != codec.RespSuccess || len(resp.Body) == 0 {
				if failed.Add(1) == 1 {
					firstErr.Store(fmt.Sprintf("%v %+v", err, resp))
				}
			}
		}
	})
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d requests failed; first: %v", n, b.N, firstErr.Load())
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	b.Logf("loadavg after: %s (N=%d in %v)", loadavg(), b.N, b.Elapsed().Round(time.Millisecond))
}

// registerBody is a plain-JSON RegisterBrokerBody of the topics, 8 queues each, read+write.
func registerBody(names []string) []byte {
	w := codec.TopicConfigSerializeWrapper{TopicConfigTable: make(map[string]*codec.TopicConfig, len(names)),
		DataVersion: codec.DataVersion{Timestamp: time.Now().UnixMilli(), Counter: 1}}
	for _, n := range names {
		tc := codec.NewTopicConfig(n)
		tc.ReadQueueNums, tc.WriteQueueNums = 8, 8
		w.TopicConfigTable[n] = &tc
	}
	return (&codec.RegisterBrokerBody{TopicConfigSerializeWrapper: w}).AppendJSON(nil)
}

func sendRegister(ctx context.Context, cl *remoting.Client, addr string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req := codec.NewRequest(codec.ReqRegisterBroker)
	for _, kv := range [][2]string{{"brokerName", "bench-broker"}, {"brokerAddr", "127.0.0.1:1"},
		{"clusterName", "BenchCluster"}, {"haServerAddr", "127.0.0.1:2"}, {"brokerId", "0"},
		{"enableActingMaster", "false"}, {"compressed", "false"}, {"bodyCrc32", "0"}} {
		req.Ext.Set(kv[0], kv[1])
	}
	req.Body = body
	resp, err := cl.InvokeSync(ctx, addr, req)
	if err != nil {
		return fmt.Errorf("register with %s: %w", addr, err)
	}
	if resp.Code != codec.RespSuccess {
		return fmt.Errorf("register with %s: code %d %s", addr, resp.Code, resp.Remark)
	}
	return nil
}

func registerFakeBroker(b *testing.B, cl *remoting.Client, addr string, body []byte) {
	b.Helper()
	if err := sendRegister(b.Context(), cl, addr, body); err != nil {
		b.Fatal(err)
	}
}

func loadavg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(raw))
}
