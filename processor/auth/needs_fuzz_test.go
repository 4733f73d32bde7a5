package auth

import (
	"slices"
	"strings"
	"testing"

	"rmqd/codec"
)

// FuzzNeeds: which resources a request touches is read from a peer's ext
// fields and, for some codes, its body (UPDATE_AND_CREATE_TOPIC_LIST,
// BATCH_ACK, SET_MESSAGE_REQUEST_MODE, LOCK/UNLOCK, HEART_BEAT). Every
// mapped code, on any fields and body, answers without panicking, and a
// body that does not decode is an error, never a request let through
// unchecked with resources it did not name.
func FuzzNeeds(f *testing.F) {
	codes := []int32{codec.ReqSendMessage, codec.ReqSendMessageV2, codec.ReqSendBatchMessage, codec.ReqSendReplyMessage,
		codec.ReqSendReplyMessageV2, codec.ReqRecallMessage, codec.ReqEndTransaction, codec.ReqConsumerSendMsgBack,
		codec.ReqPullMessage, codec.ReqLitePullMessage, codec.ReqQueryMessage, codec.ReqHeartBeat, codec.ReqUnregisterClient,
		codec.ReqGetConsumerListByGroup, codec.ReqQueryConsumerOffset, codec.ReqUpdateConsumerOffset, codec.ReqBatchAckMessage,
		codec.ReqGetRouteinfoByTopic, codec.ReqSetMessageRequestMode, codec.ReqUpdateAndCreateTopicList,
		codec.ReqLockBatchMq, codec.ReqUnlockBatchMq}
	for c := range actions {
		codes = append(codes, c)
	}
	for c := range stricter {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	codes = slices.Compact(codes)
	at := func(code int32) uint16 { return uint16(slices.Index(codes, code)) }
	f.Add(at(codec.ReqUpdateAndCreateTopicList), "", []byte(`{"topicConfigList":[{"topicName":"a"},{"topicName":"%RETRY%g"},{}]}`))
	f.Add(at(codec.ReqUpdateAndCreateTopicList), "x=y", []byte(`{"topicConfigList":null}`))
	f.Add(at(codec.ReqBatchAckMessage), "", []byte(`{"acks":[{"c":"g","t":"%RETRY%g_t","q":1,"so":1,"b":"AA=="}],"brokerName":"b"}`))
	f.Add(at(codec.ReqSetMessageRequestMode), "", []byte(`{"consumerGroup":"g","topic":"t","mode":"POP"}`))
	f.Add(at(codec.ReqLockBatchMq), "a=b", []byte(`{"consumerGroup":"g","mqSet":[{"topic":"%RETRY%g","queueId":1}]}`))
	f.Add(at(codec.ReqHeartBeat), "a=b", []byte(`{"clientID":"c","withoutSub":true,"heartbeatFingerprint":7,"consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"t"}]}]}`))
	f.Add(at(codec.ReqSendMessageV2), "b=%RETRY%g\na=pg", []byte(nil))
	f.Add(at(codec.ReqQueryCorrectionOffset), "filterGroups=a,,b\ntopic=t\ncompareGroup=", []byte(nil))
	f.Add(at(codec.ReqAuthCreateAcl), "subject=User:alice", []byte(`{"policies":[]}`))
	f.Fuzz(func(t *testing.T, which uint16, ext string, body []byte) {
		req := codec.NewRequest(codes[int(which)%len(codes)])
		for _, line := range strings.Split(ext, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				req.Ext.Set(k, v)
			}
		}
		req.Body = body
		got, err := needs(nil, req, "c")
		if err != nil && len(got) != 0 {
			t.Fatalf("code %d: error %v with needs %v", req.Code, err, got)
		}
	})
}
