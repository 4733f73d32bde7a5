package acl

import (
	"fmt"
	"testing"

	"rmqd/codec"
)

const codesYAML = `accounts:
  - accessKey: aliceak
    secretKey: "12345678"
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - mine=PUB|SUB
    groupPerms:
      - g1=SUB
`

func batchAck(group, topic string) []byte {
	return fmt.Appendf(nil, `{"acks":[{"b":"Bw==","c":%q,"it":30000,"pt":1733000000000,"q":3,"r":"0","rq":5,"so":17,"t":%q}],"brokerName":"broker-a"}`, group, topic)
}

// TestServedCodesAuthorized: every code that reads or writes a topic's
// messages asks for the topic (and the group): the reply sends as a send,
// LITE_PULL_MESSAGE as PULL_MESSAGE, and the POP codes as a pull (Java 4.9
// and 5.x map none of the latter).
func TestServedCodesAuthorized(t *testing.T) {
	m := newManager(t, codesYAML)
	h := m.Hook()
	c := from("127.0.0.1")
	sub := func(g, tp string) codec.ExtFields {
		return codec.ExtFields{{Key: "consumerGroup", Value: g}, {Key: "topic", Value: tp}, {Key: "queueId", Value: "0"}}
	}
	type req struct {
		ext  codec.ExtFields
		body []byte
	}
	for _, tc := range []struct {
		name        string
		code        int32
		ok          req
		otherTopic  req
		otherGroup  *req
		otherRemark string
	}{
		{"SEND_REPLY_MESSAGE", codec.ReqSendReplyMessage,
			req{ext: codec.ExtFields{{Key: "producerGroup", Value: "pg"}, {Key: "topic", Value: "mine"}}},
			req{ext: codec.ExtFields{{Key: "producerGroup", Value: "pg"}, {Key: "topic", Value: "secret"}}}, nil, ""},
		{"SEND_REPLY_MESSAGE_V2", codec.ReqSendReplyMessageV2,
			req{ext: codec.ExtFields{{Key: "a", Value: "pg"}, {Key: "b", Value: "mine"}}},
			req{ext: codec.ExtFields{{Key: "a", Value: "pg"}, {Key: "b", Value: "secret"}}}, nil, ""},
		{"LITE_PULL_MESSAGE", codec.ReqLitePullMessage, req{ext: sub("g1", "mine")}, req{ext: sub("g1", "secret")}, &req{ext: sub("g2", "mine")}, ""},
		{"POP_MESSAGE", codec.ReqPopMessage, req{ext: sub("g1", "mine")}, req{ext: sub("g1", "secret")}, &req{ext: sub("g2", "mine")}, ""},
		{"ACK_MESSAGE", codec.ReqAckMessage, req{ext: sub("g1", "mine")}, req{ext: sub("g1", "secret")}, &req{ext: sub("g2", "mine")}, ""},
		{"CHANGE_MESSAGE_INVISIBLETIME", codec.ReqChangeMessageInvisibletime, req{ext: sub("g1", "mine")}, req{ext: sub("g1", "secret")}, &req{ext: sub("g2", "mine")}, ""},
		{"PEEK_MESSAGE", codec.ReqPeekMessage, req{ext: sub("g1", "mine")}, req{ext: sub("g1", "secret")}, &req{ext: sub("g2", "mine")}, ""},
		{"NOTIFICATION", codec.ReqNotification, req{ext: sub("g1", "mine")}, req{ext: sub("g1", "secret")}, &req{ext: sub("g2", "mine")}, ""},
		{"POLLING_INFO", codec.ReqPollingInfo, req{ext: sub("g1", "mine")}, req{ext: sub("g1", "secret")}, &req{ext: sub("g2", "mine")}, ""},
		{"BATCH_ACK_MESSAGE", codec.ReqBatchAckMessage, req{body: batchAck("g1", "mine")}, req{body: batchAck("g1", "secret")}, &req{body: batchAck("g2", "mine")}, ""},
	} {
		if resp := h.Before(c, signed(tc.code, "aliceak", "12345678", tc.ok.ext, tc.ok.body)); resp != nil {
			t.Errorf("%s on its own topic and group: refused: %s", tc.name, resp.Remark)
		}
		resp := h.Before(c, signed(tc.code, "aliceak", "12345678", tc.otherTopic.ext, tc.otherTopic.body))
		if resp == nil || resp.Code != codec.RespNoPermission || resp.Remark != "No default permission for topic:secret" {
			t.Errorf("%s on another topic: %+v", tc.name, resp)
		}
		if tc.otherGroup == nil {
			continue
		}
		resp = h.Before(c, signed(tc.code, "aliceak", "12345678", tc.otherGroup.ext, tc.otherGroup.body))
		if resp == nil || resp.Code != codec.RespNoPermission || resp.Remark != "No default permission for group:g2" {
			t.Errorf("%s for another group: %+v", tc.name, resp)
		}
	}
	// A batch ack body that does not parse is refused, not waved through.
	if resp := h.Before(c, signed(codec.ReqBatchAckMessage, "aliceak", "12345678", nil, []byte("{"))); resp == nil {
		t.Error("BATCH_ACK_MESSAGE with a bad body allowed")
	}
}
