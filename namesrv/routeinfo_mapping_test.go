package namesrv

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/compat"
)

func lenPrefixed(dst, p []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(p)))
	return append(dst, p...)
}

// compressedRegistration builds a compressed REGISTER_BROKER body (a 5.x
// broker's form) with the given topics and raw mapping documents.
func compressedRegistration(t *testing.T, topics []string, mappings ...string) []byte {
	t.Helper()
	var raw []byte
	raw = lenPrefixed(raw, []byte(`{"counter":1,"timestamp":1}`))
	raw = binary.BigEndian.AppendUint32(raw, uint32(len(topics)))
	for _, topic := range topics {
		raw = lenPrefixed(raw, []byte(topic+" 1 1 6 SINGLE_TAG"))
	}
	raw = lenPrefixed(raw, []byte("[]"))
	raw = binary.BigEndian.AppendUint32(raw, uint32(len(mappings)))
	for _, m := range mappings {
		raw = lenPrefixed(raw, []byte(m))
	}
	var out bytes.Buffer
	zw := zlib.NewWriter(&out)
	_, err := zw.Write(raw)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return out.Bytes()
}

func registerReq(body []byte, name, addr string) *codec.RemotingCommand {
	req := newReq(codec.ReqRegisterBroker, body, "brokerName", name, "brokerAddr", addr, "clusterName", "c",
		"haServerAddr", "h", "brokerId", "0", "compressed", "true")
	req.Version = codec.VersionV5_0_0
	return req
}

// A registration padding a mapping with megabytes of unknown fields, for a
// topic its broker does not host, then disconnecting, used to leave every
// route of that topic carrying the padding for good.
func TestStaticTopicMappingFromRegistrationIsBounded(t *testing.T) {
	ns := newTestNameServer(t, newFakeClock(), nil)
	legit := newFakeConn()
	_, ok := ns.Routes().RegisterBroker(&BrokerRegistration{ClusterName: "c", BrokerName: "broker-a",
		BrokerAddr: "10.0.0.1:10911", Conn: legit,
		Topics: topicTable(codec.DataVersion{Counter: 1}, map[string]int32{"TopicTest": 4, "TBW102": 8})})
	require.True(t, ok)

	pad := strings.Repeat("a", 8<<20)
	evil := newFakeConn()
	body := compressedRegistration(t, []string{"X1", "X2"},
		`{"topic":"TopicTest","bname":"evil","pad":"`+pad+`"}`,
		`{"topic":"X1","bname":"evil","pad":"`+pad+`","currIdMap":{0:0}}`)
	require.Equal(t, codec.RespSuccess, callOn(t, ns, evil, registerReq(body, "evil", "6.6.6.6:1")).Code)

	// Not hosted by the registering broker: not taken.
	route := call(t, ns, newReq(codec.ReqGetRouteinfoByTopic, nil, "topic", "TopicTest"))
	require.Equal(t, codec.RespSuccess, route.Code)
	require.NotContains(t, string(route.Body), "topicQueueMappingByBroker")
	// Hosted: taken as Java's fields only.
	route = call(t, ns, newReq(codec.ReqGetRouteinfoByTopic, nil, "topic", "X1"))
	require.Contains(t, string(route.Body), `"topicQueueMappingByBroker":{"evil":{"bname":"evil","currIdMap":{"0":0},"dirty":false,"epoch":0,"scope":"__global__","topic":"X1","totalQueues":0}}}`)
	require.Less(t, len(route.Body), 1024)

	ns.OnClose(evil)
	require.Empty(t, ns.Routes().mappingInfoTable)
	route = call(t, ns, newReq(codec.ReqGetRouteinfoByTopic, nil, "topic", "TopicTest"))
	require.Less(t, len(route.Body), 1024)
}

// A real Java broker's mapping (fixture captured from 5.3.3) comes out in the
// route exactly as Java's name server writes it.
func TestStaticTopicMappingFromJavaBrokerInRoute(t *testing.T) {
	ns := newTestNameServer(t, newFakeClock(), nil)
	z := javaOut(t, "register_mapping_compressed.bin")
	req := newReq(codec.ReqRegisterBroker, z, "brokerAddr", "10.0.0.5:10911", "brokerId", "0", "brokerName", "broker-a",
		"clusterName", "DefaultCluster", "haServerAddr", "10.0.0.5:10912", "compressed", "true")
	req.Version = codec.VersionV5_0_0
	require.Equal(t, codec.RespSuccess, call(t, ns, req).Code)
	// The fixture's mapping names StaticTopic, which its topic table does not
	// hold: not taken. Registered again with StaticTopic in the table, it is.
	require.Empty(t, ns.Routes().mappingInfoTable)

	rb, err := codec.DecodeRegisterBrokerBody(z, true, codec.VersionV5_0_0)
	require.NoError(t, err)
	tc := codec.NewTopicConfig("StaticTopic")
	tc.ReadQueueNums, tc.WriteQueueNums = 2, 2
	rb.TopicConfigSerializeWrapper.TopicConfigTable["StaticTopic"] = &tc
	rb.TopicConfigSerializeWrapper.DataVersion.Counter++
	_, ok := ns.Routes().RegisterBroker(&BrokerRegistration{ClusterName: "DefaultCluster", BrokerName: "broker-a",
		BrokerAddr: "10.0.0.5:10911", Topics: &rb.TopicConfigSerializeWrapper})
	require.True(t, ok)
	route := call(t, ns, newReq(codec.ReqGetRouteinfoByTopic, nil, "topic", "StaticTopic"))
	require.True(t, strings.HasSuffix(string(route.Body),
		`"topicQueueMappingByBroker":{"broker-a":{"bname":"broker-a","currIdMap":{"0":0,"1":1},"dirty":false,"epoch":1,"scope":"__global__","topic":"StaticTopic","totalQueues":2}}}`),
		string(route.Body))
}

func TestStaticTopicMappingLeavesWithItsBroker(t *testing.T) {
	m := newTestManager(t, newFakeClock())
	withMapping := func(name string, counter int64) *BrokerRegistration {
		w := topicTable(codec.DataVersion{Counter: counter}, map[string]int32{"S": 2, "U": 1})
		w.TopicQueueMappingInfoMap = map[string]*codec.TopicQueueMappingInfo{
			"S": {Topic: "S", Bname: name, Scope: codec.MetadataScopeGlobal, TotalQueues: 4, CurrIDMap: map[int32]int32{0: 0}},
		}
		return registration("c", name, 0, name+":1", w)
	}
	for _, name := range []string{"a", "b", "d"} {
		_, ok := m.RegisterBroker(withMapping(name, 1))
		require.True(t, ok)
	}
	require.Len(t, m.mappingInfoTable["S"], 3)

	m.UnregisterBrokers(UnregisterRequest{ClusterName: "c", BrokerAddr: "a:1", BrokerName: "a"})
	require.Len(t, m.mappingInfoTable["S"], 2)
	require.NotContains(t, m.mappingInfoTable["S"], "a")

	// A broker name whose queues leave the topic takes its mapping along.
	m.DeleteTopic("S", "c")
	require.Empty(t, m.mappingInfoTable)

	// A slave of b leaving does not remove b's name (nor its mapping).
	_, _ = m.RegisterBroker(withMapping("b", 2))
	_, _ = m.RegisterBroker(registration("c", "b", 1, "b:2", topicTable(codec.DataVersion{Counter: 2}, map[string]int32{"S": 2, "U": 1})))
	m.UnregisterBrokers(UnregisterRequest{ClusterName: "c", BrokerAddr: "b:2", BrokerName: "b", BrokerID: 1})
	require.Contains(t, m.mappingInfoTable["S"], "b")

	// Liveness expiry removes it too.
	conn := newFakeConn()
	r := withMapping("e", 1)
	r.Conn = conn
	_, _ = m.RegisterBroker(r)
	require.Contains(t, m.mappingInfoTable["S"], "e")
	require.Equal(t, 1, m.OnConnClosed(conn.ID()))
	require.NotContains(t, m.mappingInfoTable["S"], "e")
}

// A broker splitting its registration (enableSplitRegistration) sends every
// mapping with the last part, whose topic table may not hold the static topic.
func TestStaticTopicMappingWithSplitRegistration(t *testing.T) {
	m := newTestManager(t, newFakeClock())
	_, ok := m.RegisterBroker(registration("c", "b", 0, "b:1", topicTable(codec.DataVersion{Counter: 1}, map[string]int32{"S": 2, "A": 1})))
	require.True(t, ok)
	last := topicTable(codec.DataVersion{Counter: 2}, map[string]int32{"U": 1, "V": 1})
	last.TopicQueueMappingInfoMap = map[string]*codec.TopicQueueMappingInfo{
		"S":     {Topic: "S", Bname: "b", TotalQueues: 2, CurrIDMap: map[int32]int32{0: 0, 1: 1}},
		"Other": {Topic: "Other", Bname: "b"}, // hosted nowhere by b
	}
	_, ok = m.RegisterBroker(registration("c", "b", 0, "b:1", last))
	require.True(t, ok)
	require.Contains(t, m.mappingInfoTable["S"], "b")
	require.NotContains(t, m.mappingInfoTable, "Other")
}

func TestMappingQueueLimitMatchesCompat(t *testing.T) {
	require.Equal(t, compat.MaxQueueNums, codec.MaxMappingQueues)
}
