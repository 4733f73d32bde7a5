package processor

import (
	"context"
	"strings"
	"testing"

	"rmqd/codec"
	"rmqd/store"
)

// fuzzPeer is the broker a slave copies from (or a returning master takes
// back from): it answers the fuzzed code with the fuzzed answer and every
// other code with an empty success.
type fuzzPeer struct {
	code   int32
	status int32
	ext    string
	body   []byte
}

func (p *fuzzPeer) InvokeSync(_ context.Context, _ string, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	if req.Code != p.code {
		resp := codec.NewResponse(req, codec.RespSuccess, "")
		resp.Body = []byte("{}")
		return resp, nil
	}
	resp := codec.NewResponse(req, p.status, "")
	for _, line := range strings.Split(p.ext, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			resp.Ext.Set(k, v)
		}
	}
	resp.Body = p.body
	return resp, nil
}

// FuzzPeerAnswers feeds a slave's copy from its master (SyncFromMaster) and a
// returning master's pre-online (syncMetadataReverse) one hostile answer at a
// time: topic configs, consumer and delay offsets, subscription groups,
// request modes, the timer checkpoint's body and header fields. A peer's
// answer is network input too: nothing may panic, and the broker still
// answers its own tables afterwards.
func FuzzPeerAnswers(f *testing.F) {
	codes := []int32{codec.ReqGetAllTopicConfig, codec.ReqGetAllConsumerOffset, codec.ReqGetAllDelayOffset,
		codec.ReqGetAllSubscriptiongroupConfig, codec.ReqGetAllMessageRequestMode, codec.ReqGetTimerCheckPoint}
	f.Add(uint8(0), true, "", []byte(`{"topicConfigTable":{"T":{"topicName":"T","readQueueNums":4,"writeQueueNums":4,"perm":6}},"dataVersion":{"counter":1,"timestamp":1}}`))
	f.Add(uint8(1), true, "", []byte(`{"offsetTable":{"T@g":{0:5,1:-1}},"dataVersion":{"counter":2}}`))
	f.Add(uint8(2), true, "", []byte(`{"offsetTable":{1:7,18:9223372036854775807}}`))
	f.Add(uint8(3), true, "", []byte(`{"subscriptionGroupTable":{"g":{"groupName":"g","retryQueueNums":1}}}`))
	f.Add(uint8(4), true, "", []byte(`{"mode":{"T":{"g":{"mode":"POP","popShareQueueNum":-1}}}}`))
	f.Add(uint8(5), true, "rmqdTimerQueueOffset=3\nrmqdTimerReadOffset=9\nrmqdTimerDeliveredBeforeMs=1700000000000",
		make([]byte, 56))
	f.Add(uint8(5), true, "rmqdTimerQueueOffset=x", []byte{0, 0, 1, 0x8b, 0xcf, 0xe5, 0x68, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3})
	f.Add(uint8(5), false, "", []byte("The checkpoint is null"))
	b := newTestBrokerWith(f, slaveConf, func(s *store.Config) { s.BrokerRole = store.RoleSlave }, nil)
	peer := &fuzzPeer{}
	b.SetNameServerInvoker(peer)
	handlers := b.Handlers()
	f.Fuzz(func(t *testing.T, which uint8, ok bool, ext string, body []byte) {
		*peer = fuzzPeer{code: codes[int(which)%len(codes)], status: codec.RespSystemError, ext: ext, body: body}
		if ok {
			peer.status = codec.RespSuccess
		}
		ctx := context.Background()
		if err := b.SyncFromMaster(ctx, "127.0.0.1:1"); err != nil {
			t.Logf("sync: %v", err)
		}
		if err := b.syncMetadataReverse(ctx, "127.0.0.1:2"); err != nil {
			t.Logf("reverse sync: %v", err)
		}
		for _, code := range codes {
			resp, err := handlers[code].ProcessRequest(ctx, newTestConn(1), codec.NewRequest(code))
			if err != nil || resp == nil {
				t.Fatalf("code %d after the peer's answer: %v %v", code, resp, err)
			}
		}
	})
}
