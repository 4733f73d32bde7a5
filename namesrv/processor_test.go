package namesrv

import (
	"context"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/compat"
)

// javaOut reads a fixture captured from Apache RocketMQ 5.3.3
// (codec/testdata/java/README.md).
func javaOut(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "codec", "testdata", "java", "out", name))
	require.NoError(t, err)
	return b
}

func newTestNameServer(t testing.TB, clock *fakeClock, edit func(*Config)) *NameServer {
	t.Helper()
	cfg := testConfig(t, clock)
	if edit != nil {
		edit(&cfg)
	}
	ns, err := New(cfg, quietLogger())
	require.NoError(t, err)
	return ns
}

func newReq(code int32, body []byte, kv ...string) *codec.RemotingCommand {
	req := codec.NewRequest(code)
	req.Opaque = 42
	for i := 0; i+1 < len(kv); i += 2 {
		req.Ext.Set(kv[i], kv[i+1])
	}
	req.Body = body
	return req
}

// call runs a request through ProcessRequest and then through the wire codec, so
// typed response headers show up in Ext as a client sees them. A processor error
// comes back as the SYSTEM_ERROR the server would send.
func call(t testing.TB, ns *NameServer, req *codec.RemotingCommand) *codec.RemotingCommand {
	return callOn(t, ns, newFakeConn(), req)
}

func callOn(t testing.TB, ns *NameServer, c *fakeConn, req *codec.RemotingCommand) *codec.RemotingCommand {
	t.Helper()
	resp, err := ns.ProcessRequest(context.Background(), c, req)
	if err != nil {
		return &codec.RemotingCommand{Code: codec.RespSystemError, Remark: err.Error()}
	}
	require.NotNil(t, resp)
	require.Equal(t, req.Opaque, resp.Opaque)
	require.True(t, resp.IsResponse())
	frame := resp.Encode(nil)
	var back codec.RemotingCommand
	require.NoError(t, codec.DecodeCommand(frame[4:], &back))
	return &back
}

func extMap(cmd *codec.RemotingCommand) map[string]string {
	m := map[string]string{}
	for _, f := range cmd.Ext {
		m[f.Key] = f.Value
	}
	return m
}

func javaCRC(b []byte) string {
	return strconv.FormatInt(int64(crc32.ChecksumIEEE(b)&0x7FFFFFFF), 10)
}

// registerJavaPair registers what Gen.java registered with the Java name server:
// master 0 with the plain body, slave 1 with the compressed one.
func registerJavaPair(t *testing.T, ns *NameServer) (master, slave *codec.RemotingCommand) {
	plain := javaOut(t, "register_plain.json")
	master = call(t, ns, newReq(codec.ReqRegisterBroker, plain,
		"brokerAddr", "10.0.0.5:10911", "brokerId", "0", "brokerName", "broker-a", "clusterName", "DefaultCluster",
		"haServerAddr", "10.0.0.5:10912", "compressed", "false", "enableActingMaster", "false", "bodyCrc32", javaCRC(plain)))
	z := javaOut(t, "register_compressed.bin")
	slave = call(t, ns, newReq(codec.ReqRegisterBroker, z,
		"brokerAddr", "10.0.0.6:10911", "brokerId", "1", "brokerName", "broker-a", "clusterName", "DefaultCluster",
		"haServerAddr", "10.0.0.6:10912", "compressed", "true", "enableActingMaster", "false", "bodyCrc32", javaCRC(z)))
	return master, slave
}

func TestProcessorMatchesJavaNameServer(t *testing.T) {
	ns := newTestNameServer(t, newFakeClock(), nil)
	master, slave := registerJavaPair(t, ns)
	require.Equal(t, codec.RespSuccess, master.Code, master.Remark)
	require.Empty(t, extMap(master))
	require.Empty(t, master.Body)
	require.Equal(t, codec.RespSuccess, slave.Code, slave.Remark)
	require.Equal(t, map[string]string{"haServerAddr": "10.0.0.5:10912", "masterAddr": "10.0.0.5:10911"}, extMap(slave))

	// Same bytes as the Java name server sent a 5.x client.
	route := call(t, ns, newReq(codec.ReqGetRouteinfoByTopic, nil, "topic", "TopicTest"))
	require.Equal(t, codec.RespSuccess, route.Code)
	require.False(t, route.HasRemark)
	require.Equal(t, string(javaOut(t, "live_route_v479.body")), string(route.Body))
	// The Go client (version 317) gets the same quoted form.
	old := newReq(codec.ReqGetRouteinfoByTopic, nil, "topic", "TopicTest")
	old.Version, old.Language = 317, codec.LangGo
	require.Equal(t, string(javaOut(t, "live_route_v479.body")), string(call(t, ns, old).Body))

	missing := call(t, ns, newReq(codec.ReqGetRouteinfoByTopic, nil, "topic", "NoSuchTopic"))
	require.Equal(t, codec.RespTopicNotExist, missing.Code)
	require.Equal(t, "No topic route info in name server for the topic: NoSuchTopic\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.",
		missing.Remark)

	cluster := call(t, ns, newReq(codec.ReqGetBrokerClusterInfo, nil))
	require.Equal(t, strings.NewReplacer(`{0:`, `{"0":`, `,1:`, `,"1":`).Replace(string(javaOut(t, "live_cluster.body"))),
		string(cluster.Body))

	all := call(t, ns, newReq(codec.ReqGetAllTopicListFromNameserver, nil))
	javaAll, err := codec.DecodeTopicList(javaOut(t, "live_alltopics.body"))
	require.NoError(t, err)
	sort.Strings(javaAll.TopicList)
	require.Equal(t, string((&codec.TopicList{TopicList: javaAll.TopicList}).AppendJSON(nil)), string(all.Body))

	sys := call(t, ns, newReq(codec.ReqGetSystemTopicListFromNs, nil))
	require.Equal(t, `{"brokerAddr":"10.0.0.5:10911","topicList":["DefaultCluster","broker-a"]}`, string(sys.Body))

	dv := codec.DataVersion{Counter: 7, Timestamp: 1700000000123}
	q := call(t, ns, newReq(codec.ReqQueryDataVersion, dv.AppendJSON(nil),
		"brokerAddr", "10.0.0.5:10911", "brokerId", "0", "brokerName", "broker-a", "clusterName", "DefaultCluster"))
	require.Equal(t, map[string]string{"changed": "false"}, extMap(q))
	require.Equal(t, string(javaOut(t, "live_querydv_same.body")), string(q.Body))
	dv.Counter++
	q = call(t, ns, newReq(codec.ReqQueryDataVersion, dv.AppendJSON(nil),
		"brokerAddr", "10.0.0.5:10911", "brokerId", "0", "brokerName", "broker-a", "clusterName", "DefaultCluster"))
	require.Equal(t, map[string]string{"changed": "true"}, extMap(q))

	wipe := call(t, ns, newReq(codec.ReqWipeWritePermOfBroker, nil, "brokerName", "broker-a"))
	require.Equal(t, map[string]string{"wipeTopicCount": "3"}, extMap(wipe))
	route = call(t, ns, newReq(codec.ReqGetRouteinfoByTopic, nil, "topic", "TopicTest"))
	require.Equal(t, string(javaOut(t, "live_route_wiped.body")), string(route.Body))
	add := call(t, ns, newReq(codec.ReqAddWritePermOfBroker, nil, "brokerName", "broker-a"))
	require.Equal(t, map[string]string{"addTopicCount": "3"}, extMap(add))

	unknown := call(t, ns, newReq(999, nil))
	require.Equal(t, codec.RespRequestCodeNotSupported, unknown.Code)
	require.Equal(t, " request type 999 not supported", unknown.Remark)

	kv := call(t, ns, newReq(codec.ReqGetKvConfig, nil, "namespace", "ns", "key", "k"))
	require.Equal(t, codec.RespQueryNotFound, kv.Code)
	require.Equal(t, "No config item, Namespace: ns Key: k", kv.Remark)
}

func TestRegisterBrokerErrors(t *testing.T) {
	ns := newTestNameServer(t, newFakeClock(), nil)
	body := javaOut(t, "register_plain.json")
	base := []string{"brokerAddr", "a:1", "brokerId", "0", "brokerName", "b", "clusterName", "c", "haServerAddr", "a:2"}

	r := call(t, ns, newReq(codec.ReqRegisterBroker, body, append(base, "bodyCrc32", "12345")...))
	require.Equal(t, codec.RespSystemError, r.Code)
	require.Equal(t, "crc32 not match", r.Remark)

	r = call(t, ns, newReq(codec.ReqRegisterBroker, []byte("{not json"), base...))
	require.Equal(t, codec.RespSystemError, r.Code)
	r = call(t, ns, newReq(codec.ReqRegisterBroker, []byte("garbage"), append(base, "compressed", "true")...))
	require.Equal(t, codec.RespSystemError, r.Code)

	r = call(t, ns, newReq(codec.ReqRegisterBroker, body, base[:8]...))
	require.Equal(t, codec.RespSystemError, r.Code)
	require.Equal(t, "the custom field <haServerAddr> is null", r.Remark)

	single := &codec.RegisterBrokerBody{TopicConfigSerializeWrapper: *topicTable(codec.DataVersion{}, map[string]int32{"T": 1})}
	r = call(t, ns, newReq(codec.ReqRegisterBroker, single.AppendJSON(nil), base...))
	require.Equal(t, codec.RespSystemError, r.Code)
	require.Equal(t, "register broker failed", r.Remark)

	// Brokers older than 3.0.11 send a bare TopicConfigSerializeWrapper.
	w := topicTable(codec.DataVersion{Counter: 1}, map[string]int32{"Old": 2, "Older": 1})
	old := newReq(codec.ReqRegisterBroker, w.AppendJSON(nil), base...)
	old.Version = 30
	require.Equal(t, codec.RespSuccess, call(t, ns, old).Code)
	require.Equal(t, codec.RespSuccess, call(t, ns, newReq(codec.ReqGetRouteinfoByTopic, nil, "topic", "Old")).Code)

	// No body at all: the broker is registered without topics.
	r = call(t, ns, newReq(codec.ReqRegisterBroker, nil, "brokerAddr", "e:1", "brokerId", "0", "brokerName", "e",
		"clusterName", "c", "haServerAddr", "e:2"))
	require.Equal(t, codec.RespSuccess, r.Code)
}

func TestRegisterReturnsOrderTopicConfig(t *testing.T) {
	ns := newTestNameServer(t, newFakeClock(), func(c *Config) { c.OrderMessageEnable = true })
	require.Equal(t, codec.RespSuccess, call(t, ns, newReq(codec.ReqPutKvConfig, nil,
		"namespace", NamespaceOrderTopicConfig, "key", "TopicTest", "value", "broker-a:4")).Code)
	master, _ := registerJavaPair(t, ns)
	require.Equal(t, string(javaOut(t, "kvtable.json")), string(master.Body))
	route := call(t, ns, newReq(codec.ReqGetRouteinfoByTopic, nil, "topic", "TopicTest"))
	r, err := codec.DecodeTopicRouteData(route.Body)
	require.NoError(t, err)
	require.Equal(t, "broker-a:4", r.OrderTopicConf)
}

func TestUnregisterHeartbeatAndConnClose(t *testing.T) {
	clock := newFakeClock()
	ns := newTestNameServer(t, clock, nil)
	conn := newFakeConn()
	body := javaOut(t, "register_plain.json")
	reg := newReq(codec.ReqRegisterBroker, body, "brokerAddr", "a:1", "brokerId", "0", "brokerName", "b",
		"clusterName", "c", "haServerAddr", "a:2", "heartbeatTimeoutMillis", "30000")
	require.Equal(t, codec.RespSuccess, callOn(t, ns, conn, reg).Code)

	clock.Advance(20 * time.Second)
	hb := call(t, ns, newReq(codec.ReqBrokerHeartbeat, nil, "clusterName", "c", "brokerAddr", "a:1", "brokerName", "b"))
	require.Equal(t, codec.RespSuccess, hb.Code)
	clock.Advance(20 * time.Second)
	require.Zero(t, ns.Routes().ScanNotActiveBrokers(), "heartbeat refreshed the 30 s timeout")
	clock.Advance(11 * time.Second)
	require.Equal(t, 1, ns.Routes().ScanNotActiveBrokers())
	require.True(t, conn.Closed())

	// The scan closed the connection: a registration still queued on it is refused.
	require.Equal(t, codec.RespSystemError, callOn(t, ns, conn, reg).Code)
	require.Equal(t, codec.RespSuccess, callOn(t, ns, newFakeConn(), reg).Code)
	unreg := call(t, ns, newReq(codec.ReqUnregisterBroker, nil, "brokerAddr", "a:1", "brokerId", "0", "brokerName", "b", "clusterName", "c"))
	require.Equal(t, codec.RespSuccess, unreg.Code)
	require.Equal(t, codec.RespTopicNotExist, call(t, ns, newReq(codec.ReqGetRouteinfoByTopic, nil, "topic", "TopicTest")).Code)

	conn2 := newFakeConn()
	require.Equal(t, codec.RespSuccess, callOn(t, ns, conn2, reg).Code)
	ns.OnConnect(conn2)
	ns.OnClose(conn2)
	require.Equal(t, codec.RespTopicNotExist, call(t, ns, newReq(codec.ReqGetRouteinfoByTopic, nil, "topic", "TopicTest")).Code)
}

func TestTopicRequests(t *testing.T) {
	ns := newTestNameServer(t, newFakeClock(), nil)
	registerJavaPair(t, ns)

	byCluster := call(t, ns, newReq(codec.ReqGetTopicsByCluster, nil, "cluster", "DefaultCluster"))
	require.Equal(t, `{"topicList":["OrderTopic","TBW102","TopicTest"]}`, string(byCluster.Body))
	require.Equal(t, "the custom field <cluster> is null", call(t, ns, newReq(codec.ReqGetTopicsByCluster, nil)).Remark)

	// OrderTopic has sysFlag 3 in the plain body (unit and unit-sub).
	require.Equal(t, `{"topicList":["OrderTopic"]}`, string(call(t, ns, newReq(codec.ReqGetUnitTopicList, nil)).Body))
	require.Equal(t, `{"topicList":["OrderTopic"]}`, string(call(t, ns, newReq(codec.ReqGetHasUnitSubTopicList, nil)).Body))
	require.Equal(t, `{"topicList":[]}`, string(call(t, ns, newReq(codec.ReqGetHasUnitSubUnunitTopicList, nil)).Body))

	rt := &codec.TopicRouteData{QueueDatas: []codec.QueueData{{BrokerName: "broker-a", ReadQueueNums: 3, WriteQueueNums: 3, Perm: 6}}}
	require.Equal(t, codec.RespSuccess, call(t, ns, newReq(codec.ReqRegisterTopicInNamesrv, rt.AppendJSON(nil), "topic", "Fresh")).Code)
	fresh := call(t, ns, newReq(codec.ReqGetRouteinfoByTopic, nil, "topic", "Fresh"))
	require.Equal(t, codec.RespSuccess, fresh.Code)
	// Counts beyond what a broker may create are cut (Java keeps 2^31, which every client expands).
	huge := &codec.TopicRouteData{QueueDatas: []codec.QueueData{{BrokerName: "broker-a", ReadQueueNums: 2147483647, WriteQueueNums: -3, Perm: 6}}}
	require.Equal(t, codec.RespSuccess, call(t, ns, newReq(codec.ReqRegisterTopicInNamesrv, huge.AppendJSON(nil), "topic", "Huge")).Code)
	hr, err := codec.DecodeTopicRouteData(call(t, ns, newReq(codec.ReqGetRouteinfoByTopic, nil, "topic", "Huge")).Body)
	require.NoError(t, err)
	require.Len(t, hr.QueueDatas, 1)
	require.EqualValues(t, 65535, hr.QueueDatas[0].ReadQueueNums)
	require.EqualValues(t, 0, hr.QueueDatas[0].WriteQueueNums)

	require.Equal(t, codec.RespSuccess, call(t, ns, newReq(codec.ReqDeleteTopicInNamesrv, nil, "topic", "Fresh", "clusterName", "DefaultCluster")).Code)
	require.Equal(t, codec.RespTopicNotExist, call(t, ns, newReq(codec.ReqGetRouteinfoByTopic, nil, "topic", "Fresh")).Code)
	require.Equal(t, codec.RespSuccess, call(t, ns, newReq(codec.ReqDeleteTopicInNamesrv, nil, "topic", "TopicTest")).Code)
	require.Equal(t, codec.RespTopicNotExist, call(t, ns, newReq(codec.ReqGetRouteinfoByTopic, nil, "topic", "TopicTest")).Code)
	require.Equal(t, "the custom field <topic> is null", call(t, ns, newReq(codec.ReqGetRouteinfoByTopic, nil)).Remark)

	member := call(t, ns, newReq(codec.ReqGetBrokerMemberGroup, nil, "clusterName", "DefaultCluster", "brokerName", "broker-a"))
	require.Equal(t, `{"brokerMemberGroup":{"brokerAddrs":{"0":"10.0.0.5:10911","1":"10.0.0.6:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}}`,
		string(member.Body))
	for _, missing := range []string{"clusterName", "brokerName"} {
		req := newReq(codec.ReqGetBrokerMemberGroup, nil, "clusterName", "DefaultCluster", "brokerName", "broker-a")
		req.Ext.Del(missing)
		member = call(t, ns, req)
		require.Equal(t, codec.RespSystemError, member.Code)
		require.Equal(t, "the custom field <"+missing+"> is null", member.Remark)
	}
}

func TestKVConfigRequestsPersistLikeJava(t *testing.T) {
	ns := newTestNameServer(t, newFakeClock(), nil)
	put := func(k, v string) {
		require.Equal(t, codec.RespSuccess, call(t, ns, newReq(codec.ReqPutKvConfig, nil,
			"namespace", NamespaceOrderTopicConfig, "key", k, "value", v)).Code)
	}
	put("TopicTest", "broker-a:4")
	path := ns.Config().KvConfigPath
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(javaOut(t, "kvconfig.json")), string(b))

	get := call(t, ns, newReq(codec.ReqGetKvConfig, nil, "namespace", NamespaceOrderTopicConfig, "key", "TopicTest"))
	require.Equal(t, map[string]string{"value": "broker-a:4"}, extMap(get))
	list := call(t, ns, newReq(codec.ReqGetKvlistByNamespace, nil, "namespace", NamespaceOrderTopicConfig))
	require.Equal(t, string(javaOut(t, "kvtable.json")), string(list.Body))
	none := call(t, ns, newReq(codec.ReqGetKvlistByNamespace, nil, "namespace", "nope"))
	require.Equal(t, codec.RespQueryNotFound, none.Code)
	require.Equal(t, "No config item, Namespace: nope", none.Remark)
	require.Equal(t, "the custom field <value> is null",
		call(t, ns, newReq(codec.ReqPutKvConfig, nil, "namespace", "n", "key", "k")).Remark)

	put("Other", "x")
	require.Equal(t, codec.RespSuccess, call(t, ns, newReq(codec.ReqDeleteKvConfig, nil,
		"namespace", NamespaceOrderTopicConfig, "key", "Other")).Code)

	// A restart reads the file back.
	ns2, err := New(ns.Config(), quietLogger())
	require.NoError(t, err)
	v, ok := ns2.KV().Get(NamespaceOrderTopicConfig, "TopicTest")
	require.True(t, ok)
	require.Equal(t, "broker-a:4", v)
	_, ok = ns2.KV().Get(NamespaceOrderTopicConfig, "Other")
	require.False(t, ok)

	// A corrupt file gives way to its .bak; with the .bak corrupt too it is
	// reported, not silently dropped (TestKVConfigSurvivesKill).
	require.NoError(t, os.WriteFile(path, []byte("{"), 0o644))
	_, err = New(ns.Config(), quietLogger())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path+".bak", []byte("{"), 0o644))
	_, err = New(ns.Config(), quietLogger())
	require.Error(t, err)
}

func TestNamesrvConfigRequests(t *testing.T) {
	ns := newTestNameServer(t, newFakeClock(), nil)
	got := call(t, ns, newReq(codec.ReqGetNamesrvConfig, nil))
	props, err := compat.ParseProperties(strings.NewReader(string(got.Body)))
	require.NoError(t, err)
	// Every key the Java name server reports for its NamesrvConfig is there.
	javaProps, err := compat.ParseProperties(strings.NewReader(string(javaOut(t, "live_config.body"))))
	require.NoError(t, err)
	for _, k := range []string{"kvConfigPath", "configStorePath", "enableAllTopicList", "enableTopicList",
		"orderMessageEnable", "scanNotActiveBrokerInterval", "listenPort", "waitSecondsForService",
		"configBlackList", "returnOrderTopicConfigToBroker", "deleteTopicWithBrokerRegistration", "supportActingMaster"} {
		require.Contains(t, javaProps, k)
		require.Contains(t, props, k)
	}
	require.Equal(t, "true", props["enableAllTopicList"])
	require.Equal(t, "9876", props["listenPort"])

	bl := call(t, ns, newReq(codec.ReqUpdateNamesrvConfig, []byte("kvConfigPath=/etc/passwd\n")))
	require.Equal(t, codec.RespNoPermission, bl.Code)
	require.Equal(t, "Can not update config in black list.", bl.Remark)

	// A feature rmqd lacks is refused, the whole update with it, and nothing is persisted.
	ref := call(t, ns, newReq(codec.ReqUpdateNamesrvConfig, []byte("enableAllTopicList=false\nenableControllerInNamesrv=true\n")))
	require.Equal(t, codec.RespSystemError, ref.Code)
	require.Contains(t, ref.Remark, "enableControllerInNamesrv")
	require.True(t, ns.Config().EnableAllTopicList)
	require.False(t, ns.Config().EnableControllerInNamesrv)

	up := call(t, ns, newReq(codec.ReqUpdateNamesrvConfig, []byte("enableAllTopicList=false\nenableTopicList = false\nwaitSecondsForService=oops\nunknownKey=1\n")))
	require.Equal(t, codec.RespSuccess, up.Code)
	require.False(t, ns.Config().EnableAllTopicList)
	require.Equal(t, int32(45), ns.Config().WaitSecondsForService, "bad numbers are skipped")
	d := call(t, ns, newReq(codec.ReqGetAllTopicListFromNameserver, nil))
	require.Equal(t, codec.RespSystemError, d.Code)
	require.Equal(t, "disable", d.Remark)
	require.Equal(t, "disable", call(t, ns, newReq(codec.ReqGetTopicsByCluster, nil, "cluster", "c")).Remark)
	require.Equal(t, "disable", call(t, ns, newReq(codec.ReqGetUnitTopicList, nil)).Remark)

	stored, err := os.ReadFile(ns.Config().ConfigStorePath)
	require.NoError(t, err)
	require.Contains(t, string(stored), "enableAllTopicList=false\n")
	require.Equal(t, codec.RespSystemError, call(t, ns, newReq(codec.ReqUpdateNamesrvConfig, []byte("a=\\uZZZZ"))).Code)
}

func TestNeedWaitForService(t *testing.T) {
	clock := newFakeClock()
	ns := newTestNameServer(t, clock, func(c *Config) { c.NeedWaitForService = true; c.WaitSecondsForService = 10 })
	r := call(t, ns, newReq(codec.ReqGetRouteinfoByTopic, nil, "topic", "T"))
	require.Equal(t, codec.RespSystemError, r.Code)
	require.Equal(t, "name server not ready", r.Remark)
	clock.Advance(10 * time.Second)
	require.Equal(t, codec.RespTopicNotExist, call(t, ns, newReq(codec.ReqGetRouteinfoByTopic, nil, "topic", "T")).Code)
}

func TestConfigApplyProperties(t *testing.T) {
	cfg := DefaultConfig()
	require.Equal(t, int32(9876), cfg.ListenPort)
	require.Equal(t, int64(5000), cfg.ScanNotActiveBrokerInterval)
	require.True(t, cfg.EnableAllTopicList)
	require.False(t, cfg.OrderMessageEnable)
	require.True(t, strings.HasSuffix(cfg.KvConfigPath, filepath.Join("namesrv", "kvConfig.json")))

	unknown, err := cfg.ApplyProperties(map[string]string{"listenPort": " 19876 ", "orderMessageEnable": "TRUE",
		"kvConfigPath": "/tmp/kv.json", "scanNotActiveBrokerInterval": "x", "brokerName": "ignored"})
	require.ErrorContains(t, err, "scanNotActiveBrokerInterval")
	require.Equal(t, []string{"brokerName"}, unknown)
	require.Equal(t, int32(19876), cfg.ListenPort)
	require.True(t, cfg.OrderMessageEnable)
	require.Equal(t, "/tmp/kv.json", cfg.KvConfigPath)
	require.Equal(t, int64(5000), cfg.ScanNotActiveBrokerInterval)

	back := DefaultConfig()
	unknown, err = back.ApplyProperties(cfg.Properties())
	require.NoError(t, err)
	require.Empty(t, unknown)
	back.Now, cfg.Now = nil, nil
	require.Equal(t, cfg, back)
}

func TestStartShutdownScans(t *testing.T) {
	clock := newFakeClock()
	ns := newTestNameServer(t, clock, func(c *Config) { c.ScanNotActiveBrokerInterval = 10 })
	require.NoError(t, ns.Start(context.Background()))
	require.Error(t, ns.Start(context.Background()))
	conn := newFakeConn()
	body := javaOut(t, "register_plain.json")
	require.Equal(t, codec.RespSuccess, callOn(t, ns, conn, newReq(codec.ReqRegisterBroker, body, "brokerAddr", "a:1",
		"brokerId", "0", "brokerName", "b", "clusterName", "c", "haServerAddr", "a:2")).Code)
	clock.Advance(121 * time.Second)
	require.Eventually(t, conn.Closed, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, ns.Shutdown())
	require.NoError(t, ns.Shutdown())
}

func TestRegisterTopicInNamesrvRefusesIllegalNames(t *testing.T) {
	ns := newTestNameServer(t, newFakeClock(), nil)
	rt := codec.TopicRouteData{}
	for _, bad := range []string{"../x", "/tmp/x", "x\x00y", strings.Repeat("a", 300), "a.b", " "} {
		resp := call(t, ns, newReq(codec.ReqRegisterTopicInNamesrv, rt.AppendJSON(nil), "topic", bad))
		require.Equal(t, codec.RespInvalidParameter, resp.Code, "%q", bad)
	}
	resp := call(t, ns, newReq(codec.ReqRegisterTopicInNamesrv, rt.AppendJSON(nil), "topic", "%RETRY%"+strings.Repeat("g", 200)))
	require.Equal(t, codec.RespSuccess, resp.Code)
}
