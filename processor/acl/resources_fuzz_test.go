package acl

import (
	"strings"
	"testing"

	"rmqd/codec"
)

// FuzzResources: the ACL hook reads a request's topics and groups from a
// peer's ext fields and, for some codes, its body. No code, fields or body
// panics it; a body that does not decode is an error with nothing to check
// (the hook refuses such a request); and the hook itself answers a signed
// request from a known account or refuses it, never panics.
func FuzzResources(f *testing.F) {
	codes := []int32{codec.ReqSendMessage, codec.ReqSendReplyMessage, codec.ReqSendMessageV2, codec.ReqSendBatchMessage,
		codec.ReqSendReplyMessageV2, codec.ReqRecallMessage, codec.ReqConsumerSendMsgBack, codec.ReqPullMessage,
		codec.ReqLitePullMessage, codec.ReqPopMessage, codec.ReqAckMessage, codec.ReqChangeMessageInvisibletime,
		codec.ReqPeekMessage, codec.ReqNotification, codec.ReqPollingInfo, codec.ReqBatchAckMessage, codec.ReqQueryMessage,
		codec.ReqHeartBeat, codec.ReqUnregisterClient, codec.ReqGetConsumerListByGroup, codec.ReqUpdateConsumerOffset,
		codec.ReqInvokeBrokerToResetOffset, codec.ReqCloneGroupOffset, codec.ReqLockBatchMq, codec.ReqUnlockBatchMq,
		codec.ReqConsumeMessageDirectly, codec.ReqSetMessageRequestMode, codec.ReqUpdateAndCreateTopic}
	f.Add(uint8(13), "consumerGroup=g1\ntopic=mine\nqueueId=0\npollTime=1\nbornTime=1", []byte(nil), true)
	f.Add(uint8(13), "consumerGroup=\ntopic=%RETRY%g1_mine\norder=true", []byte(nil), false)
	f.Add(uint8(15), "", batchAck("g1", "%RETRY%g1_mine"), true)
	f.Add(uint8(17), "", []byte(`{"clientID":"c","withoutSub":true,"heartbeatFingerprint":7,"consumerDataSet":[{"groupName":"g1"}]}`), true)
	f.Add(uint8(23), "", []byte(`{"consumerGroup":"g1","mqSet":[{"topic":"%RETRY%g1"}]}`), true)
	f.Add(uint8(26), "", []byte(`{"consumerGroup":"g1","topic":"mine","mode":"POP","popShareQueueNum":1}`), false)
	f.Add(uint8(22), "srcGroup=g1\ndestGroup=g2\ntopic=", []byte(nil), true)
	m := newManager(f, codesYAML)
	h := m.Hook()
	c := from("127.0.0.1")
	f.Fuzz(func(t *testing.T, which uint8, ext string, body []byte, sign bool) {
		req := codec.NewRequest(codes[int(which)%len(codes)])
		for _, line := range strings.Split(ext, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				req.Ext.Set(k, v)
			}
		}
		req.Body = body
		got, err := resources(nil, req)
		if err != nil && len(got) != 0 {
			t.Fatalf("code %d: error %v with resources %v", req.Code, err, got)
		}
		if sign {
			SignRequest(req, "aliceak", "12345678")
		}
		if resp := h.Before(c, req); resp != nil && resp.Code == codec.RespSuccess {
			t.Fatalf("hook answered success: %+v", resp)
		}
	})
}
