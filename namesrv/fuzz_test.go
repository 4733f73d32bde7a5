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
	f.Fuzz(func(t *testing.T, codeIdx uint8, ext string, body []byte, compressed bool, version int32) {
		ns, err := New(Config{ScanNotActiveBrokerInterval: 1000, EnableTopicList: true, EnableAllTopicList: true}, quietLogger())
		if err != nil {
			t.Fatal(err)
		}
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
		// Whatever registered must still produce routes that encode.
		for _, topic := range ns.Routes().AllTopics() {
			ns.Routes().AppendTopicRouteJSON(nil, topic, "", "")
		}
		ns.Routes().ClusterInfo().AppendJSON(nil)
	})
}
