package namesrv

import (
	"context"
	"hash/crc32"
	"strconv"
	"testing"
	"time"

	"rmqd/codec"
	"rmqd/remoting"
)

func crc32IEEE(b []byte) uint32 { return crc32.ChecksumIEEE(b) }

// benchNameServer has 1,000 topics on two brokers (master and slave) of one name.
func benchNameServer(b *testing.B) *NameServer {
	ns := newTestNameServer(b, nil, nil)
	queues := make(map[string]int32, 1000)
	for i := 0; i < 1000; i++ {
		queues["Topic-"+strconv.Itoa(i)] = 8
	}
	for id, addr := range []string{"10.0.0.5:10911", "10.0.0.6:10911"} {
		_, ok := ns.Routes().RegisterBroker(registration("DefaultCluster", "broker-a", int64(id), addr,
			topicTable(codec.DataVersion{Counter: 1}, queues)))
		if !ok {
			b.Fatal("register failed")
		}
	}
	return ns
}

// BenchmarkGetRouteInfoByTopic: GET_ROUTEINFO_BY_TOPIC through ProcessRequest.
func BenchmarkGetRouteInfoByTopic(b *testing.B) {
	ns := benchNameServer(b)
	req := codec.NewRequest(codec.ReqGetRouteinfoByTopic)
	req.Ext.Set("topic", "Topic-512")
	conn := newFakeConn()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := ns.ProcessRequest(context.Background(), conn, req)
		if err != nil || resp.Code != codec.RespSuccess {
			b.Fatal(err, resp)
		}
	}
}

// BenchmarkGetRouteInfoByTopicParallel: the same from all cores at once (read lock).
func BenchmarkGetRouteInfoByTopicParallel(b *testing.B) {
	ns := benchNameServer(b)
	conn := newFakeConn()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req := codec.NewRequest(codec.ReqGetRouteinfoByTopic)
		req.Ext.Set("topic", "Topic-512")
		for pb.Next() {
			if resp, err := ns.ProcessRequest(context.Background(), conn, req); err != nil || resp.Code != codec.RespSuccess {
				b.Fatal(err, resp)
			}
		}
	})
}

// BenchmarkGetRouteInfoByTopicLoopback: a synchronous round trip over loopback
// through remoting.Server and remoting.Client.
func BenchmarkGetRouteInfoByTopicLoopback(b *testing.B) {
	ns := benchNameServer(b)
	addr, stop := startLoopback(b, ns)
	defer stop()
	cl := remoting.NewClient(remoting.ClientConfig{Logger: quietLogger()})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := codec.NewRequest(codec.ReqGetRouteinfoByTopic)
		req.Ext.Set("topic", "Topic-512")
		resp, err := cl.InvokeSync(ctx, addr, req)
		if err != nil || resp.Code != codec.RespSuccess {
			b.Fatal(err, resp)
		}
	}
}

// BenchmarkRegisterBroker1000Topics: a periodic re-registration (same version) of
// a broker with 1,000 topics, plain JSON body, through ProcessRequest.
func BenchmarkRegisterBroker1000Topics(b *testing.B) {
	ns := benchNameServer(b)
	queues := make(map[string]int32, 1000)
	for i := 0; i < 1000; i++ {
		queues["Topic-"+strconv.Itoa(i)] = 8
	}
	body := (&codec.RegisterBrokerBody{TopicConfigSerializeWrapper: *topicTable(codec.DataVersion{Counter: 1}, queues)}).AppendJSON(nil)
	req := newReq(codec.ReqRegisterBroker, body, "brokerAddr", "10.0.0.5:10911", "brokerId", "0",
		"brokerName", "broker-a", "clusterName", "DefaultCluster", "haServerAddr", "10.0.0.5:10912")
	conn := newFakeConn()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if resp, err := ns.ProcessRequest(context.Background(), conn, req); err != nil || resp.Code != codec.RespSuccess {
			b.Fatal(err, resp)
		}
	}
}
