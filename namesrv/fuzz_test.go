package namesrv

import (
	"context"
	"strings"
	"testing"

	"rmqd/codec"
)

var fuzzCodes = []int32{
	codec.ReqRegisterBroker, codec.ReqGetRouteinfoByTopic, codec.ReqUnregisterBroker, codec.ReqQueryDataVersion,
	codec.ReqBrokerHeartbeat, codec.ReqRegisterTopicInNamesrv, codec.ReqDeleteTopicInNamesrv, codec.ReqPutKvConfig,
	codec.ReqGetKvlistByNamespace, codec.ReqUpdateNamesrvConfig, codec.ReqGetBrokerClusterInfo, codec.ReqGetTopicsByCluster,
	codec.ReqWipeWritePermOfBroker, codec.ReqGetBrokerMemberGroup,
	// Appended, so that the corpus's indexes below 14 keep their codes.
	codec.ReqGetAllTopicListFromNameserver, codec.ReqGetSystemTopicListFromNs, codec.ReqGetUnitTopicList,
	codec.ReqGetHasUnitSubTopicList, codec.ReqGetHasUnitSubUnunitTopicList, codec.ReqAddWritePermOfBroker,
	codec.ReqGetKvConfig, codec.ReqDeleteKvConfig, codec.ReqGetNamesrvConfig,
	fuzzUnknownCode,
}

// fuzzUnknownCode is a broker's code, which the name server must answer
// REQUEST_CODE_NOT_SUPPORTED.
const fuzzUnknownCode = codec.ReqSendMessage

// nsSeed is one request as the broker, the clients or mqadmin send it.
type nsSeed struct {
	code int32
	ext  string
	body []byte
}

// nsSeeds are valid requests of every code in fuzzCodes; they name the
// broker and topics fuzzRegister leaves in the name server.
func nsSeeds(plain []byte) []nsSeed {
	id := "brokerAddr=a:1\nbrokerId=0\nbrokerName=b\nclusterName=c"
	return []nsSeed{
		{codec.ReqRegisterBroker, id + "\nhaServerAddr=a:2\nheartbeatTimeoutMillis=120000\nenableActingMaster=false\ncompressed=false", plain},
		{codec.ReqRegisterBroker, "brokerAddr=a:3\nbrokerId=1\nbrokerName=b\nclusterName=c\nhaServerAddr=a:4", plain},
		{codec.ReqGetRouteinfoByTopic, "topic=TopicTest\nacceptStandardJsonOnly=true", nil},
		{codec.ReqGetRouteinfoByTopic, "topic=OrderTopic\n__ZONE_MODE=true\n__ZONE_NAME=z", nil},
		{codec.ReqUnregisterBroker, id, nil},
		{codec.ReqQueryDataVersion, id, []byte(`{"counter":7,"stateVersion":0,"timestamp":1700000000123}`)},
		{codec.ReqBrokerHeartbeat, id + "\nepoch=1\nmaxOffset=100\nconfirmOffset=100\nheartbeatTimeoutMills=1000\nelectionPriority=0", nil},
		{codec.ReqRegisterTopicInNamesrv, "topic=NT", []byte(`{"queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}],"brokerDatas":[]}`)},
		{codec.ReqDeleteTopicInNamesrv, "topic=TopicTest\nclusterName=c", nil},
		{codec.ReqDeleteTopicInNamesrv, "topic=TopicTest", nil},
		{codec.ReqPutKvConfig, "namespace=ORDER_TOPIC_CONFIG\nkey=TopicTest\nvalue=b:4", nil},
		{codec.ReqGetKvConfig, "namespace=ORDER_TOPIC_CONFIG\nkey=OrderTopic", nil},
		{codec.ReqDeleteKvConfig, "namespace=ORDER_TOPIC_CONFIG\nkey=OrderTopic", nil},
		{codec.ReqGetKvlistByNamespace, "namespace=ORDER_TOPIC_CONFIG", nil},
		{codec.ReqUpdateNamesrvConfig, "", []byte("orderMessageEnable=true\nclusterTest=false\nwaitSecondsForService=0\n")},
		{codec.ReqGetNamesrvConfig, "", nil},
		{codec.ReqGetBrokerClusterInfo, "", nil},
		{codec.ReqGetTopicsByCluster, "cluster=c", nil},
		{codec.ReqWipeWritePermOfBroker, "brokerName=b", nil},
		{codec.ReqAddWritePermOfBroker, "brokerName=b", nil},
		{codec.ReqGetBrokerMemberGroup, "clusterName=c\nbrokerName=b", nil},
		{codec.ReqGetAllTopicListFromNameserver, "", nil},
		{codec.ReqGetSystemTopicListFromNs, "", nil},
		{codec.ReqGetUnitTopicList, "", nil},
		{codec.ReqGetHasUnitSubTopicList, "", nil},
		{codec.ReqGetHasUnitSubUnunitTopicList, "", nil},
		{fuzzUnknownCode, "topic=TopicTest", []byte("x")},
	}
}

// fuzzRegister leaves in ns what the seeds name: broker b (cluster c) with
// the topics of plain (one of them ordered and a unit topic) and an order
// configuration.
func fuzzRegister(t *testing.T, ns *NameServer, plain []byte) {
	req := codec.NewRequest(codec.ReqRegisterBroker)
	req.Version = 479
	for _, kv := range [][2]string{{"brokerAddr", "a:1"}, {"brokerId", "0"}, {"brokerName", "b"}, {"clusterName", "c"}, {"haServerAddr", "a:2"}} {
		req.Ext.Set(kv[0], kv[1])
	}
	req.Body = plain
	if resp, err := ns.ProcessRequest(context.Background(), newFakeConn(), req); err != nil || resp.Code != codec.RespSuccess {
		t.Fatalf("fixture registration: %v %+v", err, resp)
	}
	if err := ns.kv.Put(NamespaceOrderTopicConfig, "OrderTopic", "b:2"); err != nil {
		t.Fatal(err)
	}
}

// FuzzProcessRequest feeds arbitrary headers and bodies to every request the
// name server decodes something from: it must answer, never panic.
func FuzzProcessRequest(f *testing.F) {
	reg := "brokerAddr=a:1\nbrokerId=0\nbrokerName=b\nclusterName=c\nhaServerAddr=a:2"
	f.Add(uint8(0), reg, javaOut(f, "register_plain.json"), false, int32(479))
	f.Add(uint8(0), reg+"\ncompressed=true", javaOut(f, "register_compressed.bin"), true, int32(479))
	f.Add(uint8(0), reg, []byte(`{"topicConfigTable":{"T":{}}}`), false, int32(10))
	f.Add(uint8(3), reg, []byte(`{"counter":1}`), false, int32(479))
	f.Add(uint8(5), "topic=T", []byte(`{"queueDatas":[{"brokerName":"b","perm":6}]}`), false, int32(479))
	f.Add(uint8(9), "", []byte("a=b\\\n c"), false, int32(479))
	plain := javaOut(f, "register_plain.json")
	index := make(map[int32]uint8, len(fuzzCodes))
	for i, c := range fuzzCodes {
		index[c] = uint8(i)
	}
	for _, s := range nsSeeds(plain) {
		f.Add(index[s.code], s.ext, s.body, false, int32(479))
	}
	f.Fuzz(func(t *testing.T, codeIdx uint8, ext string, body []byte, compressed bool, version int32) {
		ns, err := New(Config{ScanNotActiveBrokerInterval: 1000, EnableTopicList: true, EnableAllTopicList: true,
			OrderMessageEnable: true}, quietLogger())
		if err != nil {
			t.Fatal(err)
		}
		fuzzRegister(t, ns, plain)
		req := codec.NewRequest(fuzzCodes[int(codeIdx)%len(fuzzCodes)])
		req.Version = version
		for _, line := range strings.Split(ext, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				req.Ext.Set(k, v)
			}
		}
		if compressed {
			req.Ext.Set("compressed", "true")
		}
		req.Body = body
		resp, err := ns.ProcessRequest(context.Background(), newFakeConn(), req)
		if err == nil && resp == nil {
			t.Fatal("no response and no error")
		}
		if req.Code == fuzzUnknownCode && (err != nil || resp.Code != codec.RespRequestCodeNotSupported) {
			t.Fatalf("unknown code answered %+v, %v", resp, err)
		}
		// Whatever registered must still produce routes that encode.
		for _, topic := range ns.Routes().AllTopics() {
			ns.Routes().AppendTopicRouteJSON(nil, topic, "", "")
		}
		ns.Routes().ClusterInfo().AppendJSON(nil)
	})
}
