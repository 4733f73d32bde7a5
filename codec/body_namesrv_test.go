package codec

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// javaFixture reads a file written by Apache RocketMQ 5.3.3 (testdata/java/README.md).
func javaFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "java", "out", name))
	require.NoError(t, err)
	return b
}

func TestDataVersionJSONMatchesJava(t *testing.T) {
	v := DataVersion{Counter: 3, Timestamp: 1700000000000}
	require.Equal(t, string(javaFixture(t, "dataversion.json")), string(v.AppendJSON(nil)))
	back, err := DecodeDataVersion(javaFixture(t, "dataversion.json"))
	require.NoError(t, err)
	require.Equal(t, v, back)
	v.Next(1700000000001)
	require.Equal(t, DataVersion{Counter: 4, Timestamp: 1700000000001}, v)
}

func TestTopicConfigJSONAndTextMatchJava(t *testing.T) {
	tc := TopicConfig{TopicName: "TopicTest", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6,
		TopicFilterType: TopicFilterSingleTag, Attributes: map[string]string{"+message.type": "NORMAL"}}
	require.Equal(t, string(javaFixture(t, "topicconfig.json")), string(tc.AppendJSON(nil)))
	require.Equal(t, string(javaFixture(t, "topicconfig.txt")), string(tc.AppendText(nil)))

	back, err := ParseTopicConfigText(string(javaFixture(t, "topicconfig.txt")))
	require.NoError(t, err)
	require.Equal(t, tc, back)
	// Java writes a trailing blank when attributes is null.
	back, err = ParseTopicConfigText(string(javaFixture(t, "topicconfig_nullattrs.txt")))
	require.NoError(t, err)
	require.Equal(t, TopicConfig{TopicName: "T2", ReadQueueNums: 1, WriteQueueNums: 2, Perm: 4,
		TopicFilterType: TopicFilterSingleTag, Attributes: map[string]string{}}, back)

	// Attributes with a blank inside split the JSON: Java ignores them.
	back, err = ParseTopicConfigText(`T 1 1 6 SINGLE_TAG {"a":"b c"}`)
	require.NoError(t, err)
	require.Empty(t, back.Attributes)
	for _, bad := range []string{"", "T 1 1 6", "T x 1 6 SINGLE_TAG", "T 1 1 6 NOPE", "T  1 1 6 SINGLE_TAG"} {
		_, err := ParseTopicConfigText(bad)
		require.Error(t, err, bad)
	}
}

// javaRegisterBody is the table Gen.java registers.
func javaRegisterBody(withMapping bool) *RegisterBrokerBody {
	mdv := DataVersion{Timestamp: 1700000000000}
	b := &RegisterBrokerBody{
		FilterServerList: []string{"10.0.0.9:30000"},
		TopicConfigSerializeWrapper: TopicConfigSerializeWrapper{
			DataVersion:        DataVersion{Counter: 7, Timestamp: 1700000000123},
			MappingDataVersion: &mdv,
			TopicConfigTable: map[string]*TopicConfig{
				"TBW102": {TopicName: "TBW102", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 7,
					TopicFilterType: TopicFilterSingleTag, Attributes: map[string]string{}},
				"TopicTest": {TopicName: "TopicTest", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6,
					TopicFilterType: TopicFilterSingleTag, Attributes: map[string]string{"+message.type": "NORMAL"}},
				"OrderTopic": {TopicName: "OrderTopic", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6,
					TopicFilterType: TopicFilterMultiTag, TopicSysFlag: 3, Order: true, Attributes: map[string]string{}},
			},
		},
	}
	if withMapping {
		b.TopicConfigSerializeWrapper.TopicQueueMappingInfoMap = map[string]*TopicQueueMappingInfo{
			"StaticTopic": {Bname: "broker-a", CurrIDMap: map[int32]int32{0: 0, 1: 1}, Epoch: 1,
				Scope: MetadataScopeGlobal, Topic: "StaticTopic", TotalQueues: 2},
		}
	}
	return b
}

func TestRegisterBrokerBodyPlainFromJava(t *testing.T) {
	for _, name := range []string{"register_plain.json", "register_mapping_plain.json"} {
		got, err := DecodeRegisterBrokerBody(javaFixture(t, name), false, BrokerVersion)
		require.NoError(t, err, name)
		require.Equal(t, javaRegisterBody(strings.Contains(name, "mapping")), got, name)
	}
}

func TestRegisterBrokerBodyPlainJSONShape(t *testing.T) {
	// Java orders the topic table by hash; ours is sorted. Same document otherwise.
	want := map[string]any{}
	require.NoError(t, json.Unmarshal(javaFixture(t, "register_plain.json"), &want))
	got := map[string]any{}
	require.NoError(t, json.Unmarshal(javaRegisterBody(false).AppendJSON(nil), &got))
	require.Equal(t, want, got)
	require.True(t, strings.HasPrefix(string(javaRegisterBody(false).AppendJSON(nil)),
		`{"filterServerList":["10.0.0.9:30000"],"topicConfigSerializeWrapper":{"dataVersion":{"counter":7,"stateVersion":0,"timestamp":1700000000123},"mappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":1700000000000},"topicConfigTable":{"OrderTopic":{"attributes":{},"order":true,"perm":6,"readQueueNums":2,"topicFilterType":"MULTI_TAG","topicName":"OrderTopic","topicSysFlag":3,"writeQueueNums":2},`))

	empty := &RegisterBrokerBody{}
	require.Equal(t, `{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":0,"stateVersion":0,"timestamp":0},"topicConfigTable":{}}}`,
		string(empty.AppendJSON(nil)))
}

// compressedView drops what the compressed form does not carry (topicSysFlag,
// order, the mapping data version).
func compressedView(b *RegisterBrokerBody) *RegisterBrokerBody {
	c := *b
	c.TopicConfigSerializeWrapper.MappingDataVersion = nil
	c.TopicConfigSerializeWrapper.TopicConfigTable = map[string]*TopicConfig{}
	for k, v := range b.TopicConfigSerializeWrapper.TopicConfigTable {
		tc := *v
		tc.TopicSysFlag, tc.Order = 0, false
		c.TopicConfigSerializeWrapper.TopicConfigTable[k] = &tc
	}
	return &c
}

func TestRegisterBrokerBodyCompressedFromJava(t *testing.T) {
	for _, name := range []string{"register_compressed.bin", "register_mapping_compressed.bin"} {
		got, err := DecodeRegisterBrokerBody(javaFixture(t, name), true, BrokerVersion)
		require.NoError(t, err, name)
		require.Equal(t, compressedView(javaRegisterBody(strings.Contains(name, "mapping"))), got, name)
	}
	// A 4.x broker version: the mapping part is not read.
	got, err := DecodeRegisterBrokerBody(javaFixture(t, "register_mapping_compressed.bin"), true, 407)
	require.NoError(t, err)
	require.Nil(t, got.TopicConfigSerializeWrapper.TopicQueueMappingInfoMap)
}

func TestRegisterBrokerBodyRoundTrip(t *testing.T) {
	for _, mapping := range []bool{false, true} {
		b := javaRegisterBody(mapping)
		plain, err := b.Encode(false)
		require.NoError(t, err)
		back, err := DecodeRegisterBrokerBody(plain, false, BrokerVersion)
		require.NoError(t, err)
		require.Equal(t, b, back)

		z, err := b.Encode(true)
		require.NoError(t, err)
		back, err = DecodeRegisterBrokerBody(z, true, BrokerVersion)
		require.NoError(t, err)
		require.Equal(t, compressedView(b), back)
	}
	back, err := DecodeRegisterBrokerBody(nil, false, BrokerVersion)
	require.NoError(t, err)
	require.NotNil(t, back.TopicConfigSerializeWrapper.TopicConfigTable)
}

func TestRegisterBrokerBodyCompressedRejectsGarbage(t *testing.T) {
	z, err := javaRegisterBody(false).Encode(true)
	require.NoError(t, err)
	for i := 0; i < len(z); i += 7 { // truncations never panic
		_, _ = DecodeRegisterBrokerBody(z[:i], true, BrokerVersion)
	}
	_, err = DecodeRegisterBrokerBody([]byte("not zlib"), true, BrokerVersion)
	require.Error(t, err)
	_, err = DecodeRegisterBrokerBody([]byte("{"), false, BrokerVersion)
	require.Error(t, err)
}

func TestRouteDataJSONMatchesJava(t *testing.T) {
	r := &TopicRouteData{
		QueueDatas: []QueueData{{BrokerName: "broker-a", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}},
		BrokerDatas: []*BrokerData{{Cluster: "DefaultCluster", BrokerName: "broker-a",
			BrokerAddrs: map[int64]string{0: "10.0.0.5:10911", 1: "10.0.0.6:10911"}}},
	}
	require.Equal(t, string(javaFixture(t, "route_browser.json")), string(r.AppendJSON(nil)))
	r.OrderTopicConf = "broker-a:4"
	require.Equal(t, string(javaFixture(t, "route_order_browser.json")), string(r.AppendJSON(nil)))
	r.OrderTopicConf = ""

	// Both Java forms decode, bare keys included.
	for _, name := range []string{"route_default.json", "route_browser.json"} {
		got, err := DecodeTopicRouteData(javaFixture(t, name))
		require.NoError(t, err, name)
		require.Equal(t, r.QueueDatas, got.QueueDatas)
		require.Equal(t, r.BrokerDatas, got.BrokerDatas)
	}
	live, err := DecodeTopicRouteData(javaFixture(t, "live_route_v479.body"))
	require.NoError(t, err)
	require.Equal(t, map[string][]string{"10.0.0.5:10911": {"10.0.0.9:30000"}, "10.0.0.6:10911": {"10.0.0.9:30000"}},
		live.FilterServerTable)
	require.Equal(t, string(javaFixture(t, "live_route_v479.body")), string(live.AppendJSON(nil)))

	empty := &TopicRouteData{BrokerDatas: []*BrokerData{{BrokerName: "b"}}}
	require.Equal(t, `{"brokerDatas":[{"brokerAddrs":{},"brokerName":"b","cluster":"","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[]}`,
		string(empty.AppendJSON(nil)))
	zone := &BrokerData{BrokerName: "b", ZoneName: "z", BrokerAddrs: map[int64]string{0: "a"}}
	require.Equal(t, `{"brokerAddrs":{"0":"a"},"brokerName":"b","cluster":"","enableActingMaster":false,"zoneName":"z"}`,
		string(zone.AppendJSON(nil)))
}

func TestClusterInfoJSON(t *testing.T) {
	ci, err := DecodeClusterInfo(javaFixture(t, "clusterinfo.json"))
	require.NoError(t, err)
	want := &ClusterInfo{
		BrokerAddrTable: map[string]*BrokerData{"broker-a": {Cluster: "DefaultCluster", BrokerName: "broker-a",
			BrokerAddrs: map[int64]string{0: "10.0.0.5:10911", 1: "10.0.0.6:10911"}}},
		ClusterAddrTable: map[string][]string{"DefaultCluster": {"broker-a"}},
	}
	require.Equal(t, want, ci)
	// Java writes bare ids here; rmqd quotes them, otherwise identical.
	javaText := string(javaFixture(t, "clusterinfo.json"))
	quoted := strings.NewReplacer(`{0:`, `{"0":`, `,1:`, `,"1":`).Replace(javaText)
	require.Equal(t, quoted, string(ci.AppendJSON(nil)))
	require.Equal(t, `{"brokerAddrTable":{},"clusterAddrTable":{}}`, string((&ClusterInfo{}).AppendJSON(nil)))
}

func TestSmallBodiesMatchJava(t *testing.T) {
	require.Equal(t, string(javaFixture(t, "topiclist.json")), string((&TopicList{TopicList: []string{"TopicTest"}}).AppendJSON(nil)))
	require.Equal(t, string(javaFixture(t, "topiclist_addr.json")),
		string((&TopicList{TopicList: []string{"TopicTest"}, BrokerAddr: "10.0.0.5:10911"}).AppendJSON(nil)))
	require.Equal(t, string(javaFixture(t, "topiclist_empty.json")), string((&TopicList{}).AppendJSON(nil)))
	require.Equal(t, string(javaFixture(t, "kvtable.json")),
		string((&KVTable{Table: map[string]string{"TopicTest": "broker-a:4"}}).AppendJSON(nil)))

	tl, err := DecodeTopicList(javaFixture(t, "live_systopics.body"))
	require.NoError(t, err)
	require.Equal(t, &TopicList{TopicList: []string{"broker-a", "DefaultCluster"}, BrokerAddr: "10.0.0.5:10911"}, tl)
	kv, err := DecodeKVTable(javaFixture(t, "kvtable.json"))
	require.NoError(t, err)
	require.Equal(t, map[string]string{"TopicTest": "broker-a:4"}, kv.Table)
}

func TestNamesrvHeaders(t *testing.T) {
	ext := ExtFields{{"brokerName", "broker-a"}, {"brokerAddr", "10.0.0.5:10911"}, {"clusterName", "c"},
		{"haServerAddr", "10.0.0.5:10912"}, {"brokerId", "1"}, {"compressed", "TRUE"}, {"bodyCrc32", "123"},
		{"heartbeatTimeoutMillis", "x"}, {"__ZONE_NAME", "z1"}}
	var rb RegisterBrokerRequestHeader
	require.NoError(t, rb.Decode(ext))
	require.Equal(t, RegisterBrokerRequestHeader{BrokerName: "broker-a", BrokerAddr: "10.0.0.5:10911", ClusterName: "c",
		HaServerAddr: "10.0.0.5:10912", BrokerID: 1, Compressed: true, BodyCrc32: 123, ZoneName: "z1"}, rb)

	ext.Set("brokerId", "one")
	require.EqualError(t, rb.Decode(ext), "the custom field <brokerId> is null")
	ext.Del("haServerAddr")
	require.EqualError(t, rb.Decode(ext), "the custom field <haServerAddr> is null")

	var rh GetRouteInfoRequestHeader
	require.EqualError(t, rh.Decode(nil), "the custom field <topic> is null")
	require.NoError(t, rh.Decode(ExtFields{{"topic", "T"}}))
	require.Equal(t, "T", rh.Topic)

	var kv KVConfigHeader
	require.EqualError(t, kv.DecodePut(ExtFields{{"namespace", "n"}, {"key", "k"}}), "the custom field <value> is null")

	// Round trip through a JSON frame.
	cmd := NewRequest(ReqRegisterBroker)
	rb = RegisterBrokerRequestHeader{BrokerName: "b", BrokerAddr: "a:1", ClusterName: "c", HaServerAddr: "a:2", BrokerID: 0, Compressed: true, BodyCrc32: 9}
	cmd.CustomHeader = &rb
	frame := cmd.Encode(nil)
	var back RemotingCommand
	require.NoError(t, DecodeCommand(frame[4:], &back))
	var rb2 RegisterBrokerRequestHeader
	require.NoError(t, rb2.Decode(back.Ext))
	require.Equal(t, rb, rb2)
}

func FuzzDecodeRegisterBrokerBodyPlain(f *testing.F) {
	f.Add(javaFixture(f, "register_plain.json"))
	f.Add(javaFixture(f, "register_mapping_plain.json"))
	f.Add([]byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"a":null,"b":{"topicFilterType":1}}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		b, err := DecodeRegisterBrokerBody(body, false, BrokerVersion)
		if err != nil {
			return
		}
		// What decodes must encode and decode again.
		again, err := DecodeRegisterBrokerBody(b.AppendJSON(nil), false, BrokerVersion)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		_ = again
	})
}

func FuzzDecodeRegisterBrokerBodyCompressed(f *testing.F) {
	f.Add(javaFixture(f, "register_compressed.bin"), int32(479))
	f.Add(javaFixture(f, "register_mapping_compressed.bin"), int32(479))
	f.Add(javaFixture(f, "register_compressed.bin"), int32(400))
	f.Fuzz(func(t *testing.T, body []byte, version int32) {
		b, err := DecodeRegisterBrokerBody(body, true, version)
		if err != nil {
			return
		}
		if _, err := b.Encode(true); err != nil {
			t.Fatalf("re-encode: %v", err)
		}
	})
}

// FuzzDecodeNamesrvBodies: the bodies a broker or client reads from a name
// server (which may be anyone's) never panic their decoders.
func FuzzDecodeNamesrvBodies(f *testing.F) {
	f.Add([]byte(`{"brokerDatas":[{"brokerAddrs":{"0":"a:1"},"brokerName":"b","cluster":"c"}],"queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":4,"writeQueueNums":4}],"filterServerTable":{}}`))
	f.Add([]byte(`{"brokerAddrTable":{"b":{"brokerAddrs":{0:"a"},"brokerName":"b","cluster":"c"}},"clusterAddrTable":{"c":["b"]}}`))
	f.Add([]byte(`{"table":{"a":"b"}}`))
	f.Add([]byte(`{"topicList":["a"],"brokerAddr":"x"}`))
	f.Add([]byte(`{"dataVersion":{"counter":1,"timestamp":2},"topicConfigTable":{"t":{"topicName":"t","readQueueNums":1}}}`))
	f.Add([]byte(`t 4 4 6 0`))
	f.Add([]byte(`{"brokerDatas":[],"queueDatas":[],"topicQueueMappingByBroker":{"b":{"bname":"b","currIdMap":{"0":1},"epoch":2,"scope":"__global__","topic":"T","totalQueues":2},"c":null}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = DecodeTopicRouteData(b)
		_, _ = DecodeClusterInfo(b)
		_, _ = DecodeKVTable(b)
		_, _ = DecodeTopicList(b)
		_, _ = DecodeTopicConfigSerializeWrapper(b)
		_, _ = DecodeDataVersion(b)
		_, _ = ParseTopicConfigText(string(b))
	})
}
