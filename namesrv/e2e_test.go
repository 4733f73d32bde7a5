package namesrv

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/remoting"
)

// startLoopback serves ns on 127.0.0.1 through the real remoting server.
func startLoopback(t testing.TB, ns *NameServer) (addr string, stop func()) {
	t.Helper()
	srv := remoting.NewServer(remoting.ServerConfig{Addr: "127.0.0.1:0", Logger: quietLogger()})
	ns.Register(srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, srv.Start(ctx))
	require.NoError(t, ns.Start(context.Background()))
	return srv.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = ns.Shutdown()
	}
}

func invoke(t testing.TB, cl *remoting.Client, addr string, req *codec.RemotingCommand) *codec.RemotingCommand {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cl.InvokeSync(ctx, addr, req)
	require.NoError(t, err)
	return resp
}

func TestEndToEndOverLoopback(t *testing.T) {
	ns := newTestNameServer(t, nil, nil)
	addr, stop := startLoopback(t, ns)
	defer stop()

	broker := remoting.NewClient(remoting.ClientConfig{Logger: quietLogger()})
	defer broker.Close()
	client := remoting.NewClient(remoting.ClientConfig{Logger: quietLogger()})
	defer client.Close()

	resp := registerAsJavaBroker(t, broker, addr)
	require.Equal(t, codec.RespSuccess, resp.Code, resp.Remark)

	// A Go-client-like request (JSON, version 317) gets the route.
	q := codec.NewRequest(codec.ReqGetRouteinfoByTopic)
	q.Language, q.Version = codec.LangGo, 317
	q.Ext.Set("topic", "TopicTest")
	resp = invoke(t, client, addr, q)
	require.Equal(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Equal(t, `{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}`,
		string(resp.Body))

	// Binary-header requests work as well.
	qb := codec.NewRequest(codec.ReqGetRouteinfoByTopic)
	qb.SerializeType = codec.SerializeRocketMQ
	qb.Ext.Set("topic", "Missing")
	resp = invoke(t, client, addr, qb)
	require.Equal(t, codec.RespTopicNotExist, resp.Code)

	// Closing the broker's connection unregisters it.
	broker.CloseConn(addr)
	require.Eventually(t, func() bool {
		return invoke(t, client, addr, q).Code == codec.RespTopicNotExist
	}, 5*time.Second, 10*time.Millisecond)
}

// registerAsJavaBroker registers broker-a the way a Java broker does (typed
// header, compressed body) with TopicTest (4 queues) and TBW102.
func registerAsJavaBroker(t testing.TB, cl *remoting.Client, addr string) *codec.RemotingCommand {
	t.Helper()
	body := &codec.RegisterBrokerBody{TopicConfigSerializeWrapper: *topicTable(codec.DataVersion{Counter: 1, Timestamp: 1},
		map[string]int32{"TopicTest": 4, "TBW102": 8})}
	z, err := body.Encode(true)
	require.NoError(t, err)
	reg := codec.NewRequest(codec.ReqRegisterBroker)
	reg.CustomHeader = &codec.RegisterBrokerRequestHeader{BrokerName: "broker-a", BrokerAddr: "127.0.0.1:10911",
		ClusterName: "DefaultCluster", HaServerAddr: "127.0.0.1:10912", Compressed: true, BodyCrc32: crcOf(z)}
	reg.Body = z
	return invoke(t, cl, addr, reg)
}

func crcOf(b []byte) int32 {
	return int32(crc32IEEE(b) & 0x7FFFFFFF)
}
