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

func liteCtl(group, topic string) []byte {
	return fmt.Appendf(nil, `{"subscriptionSet":[{"action":"PARTIAL_ADD","clientId":"c","group":%q,"liteTopicSet":["x"],"topic":%q,"version":1}]}`, group, topic)
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
		{"POP_LITE_MESSAGE", codec.ReqPopLiteMessage, req{ext: sub("g1", "mine")}, req{ext: sub("g1", "secret")}, &req{ext: sub("g2", "mine")}, ""},
		{"LITE_SUBSCRIPTION_CTL", codec.ReqLiteSubscriptionCtl, req{body: liteCtl("g1", "mine")}, req{body: liteCtl("g1", "secret")}, &req{body: liteCtl("g2", "mine")}, ""},
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

// TestEmptyNamesChecked: a name field present but empty is checked as Java's
// parse checks it (an empty group is "%RETRY%", against the default group
// perm); only a missing field names nothing.
func TestEmptyNamesChecked(t *testing.T) {
	m := newManager(t, codesYAML)
	h := m.Hook()
	c := from("127.0.0.1")
	for _, tc := range []struct {
		name   string
		code   int32
		ext    codec.ExtFields
		body   []byte
		remark string
	}{
		{"PULL_MESSAGE empty group", codec.ReqPullMessage,
			codec.ExtFields{{Key: "consumerGroup", Value: ""}, {Key: "topic", Value: "mine"}}, nil, "No default permission for group:"},
		{"POP_MESSAGE empty group", codec.ReqPopMessage,
			codec.ExtFields{{Key: "consumerGroup", Value: ""}, {Key: "topic", Value: "mine"}}, nil, "No default permission for group:"},
		{"UPDATE_CONSUMER_OFFSET empty group", codec.ReqUpdateConsumerOffset,
			codec.ExtFields{{Key: "consumerGroup", Value: ""}, {Key: "topic", Value: "mine"}}, nil, "No default permission for group:"},
		{"CONSUMER_SEND_MSG_BACK empty group", codec.ReqConsumerSendMsgBack,
			codec.ExtFields{{Key: "group", Value: ""}, {Key: "offset", Value: "0"}}, nil, "No default permission for group:"},
		{"SEND_MESSAGE_V2 empty topic", codec.ReqSendMessageV2,
			codec.ExtFields{{Key: "a", Value: "pg"}, {Key: "b", Value: ""}}, nil, "No default permission for topic:"},
		{"HEART_BEAT empty group", codec.ReqHeartBeat, nil,
			[]byte(`{"clientID":"c1","consumerDataSet":[{"groupName":"","subscriptionDataSet":[{"topic":"mine","subString":"*"}]}],"producerDataSet":[]}`),
			"No default permission for group:"},
	} {
		r := h.Before(c, signed(tc.code, "aliceak", "12345678", tc.ext, tc.body))
		if r == nil || r.Code != codec.RespNoPermission || r.Remark != tc.remark {
			t.Errorf("%s: %+v, want %q", tc.name, r, tc.remark)
		}
	}
	// A producer's unregister has no consumerGroup field: nothing to check.
	if r := h.Before(c, signed(codec.ReqUnregisterClient, "aliceak", "12345678",
		codec.ExtFields{{Key: "clientID", Value: "c1"}, {Key: "producerGroup", Value: "pg"}}, nil)); r != nil {
		t.Errorf("producer unregister refused: %s", r.Remark)
	}
}

// TestGroupChangingCodesChecked: codes that move or switch a consumer group
// are open to any account in Java's ACL 1.0; rmqd asks SUB on the groups and
// the topic they change, as UPDATE_CONSUMER_OFFSET does.
func TestGroupChangingCodesChecked(t *testing.T) {
	m := newManager(t, codesYAML)
	h := m.Hook()
	c := from("127.0.0.1")
	mode := func(g, tp string) []byte {
		return fmt.Appendf(nil, `{"consumerGroup":%q,"mode":"POP","popShareQueueNum":0,"topic":%q}`, g, tp)
	}
	reset := func(g, tp string) codec.ExtFields {
		return codec.ExtFields{{Key: "group", Value: g}, {Key: "topic", Value: tp}, {Key: "timestamp", Value: "0"}, {Key: "isForce", Value: "true"}}
	}
	clone := func(src, dst, tp string) codec.ExtFields {
		return codec.ExtFields{{Key: "srcGroup", Value: src}, {Key: "destGroup", Value: dst}, {Key: "topic", Value: tp}, {Key: "offline", Value: "true"}}
	}
	for _, tc := range []struct {
		name   string
		code   int32
		ext    codec.ExtFields
		body   []byte
		remark string
	}{
		{"SET_MESSAGE_REQUEST_MODE own", codec.ReqSetMessageRequestMode, nil, mode("g1", "mine"), ""},
		{"SET_MESSAGE_REQUEST_MODE other group", codec.ReqSetMessageRequestMode, nil, mode("g2", "mine"), "No default permission for group:g2"},
		{"SET_MESSAGE_REQUEST_MODE other topic", codec.ReqSetMessageRequestMode, nil, mode("g1", "secret"), "No default permission for topic:secret"},
		{"SET_MESSAGE_REQUEST_MODE bad body", codec.ReqSetMessageRequestMode, nil, []byte("{"), "*"},
		{"INVOKE_BROKER_TO_RESET_OFFSET own", codec.ReqInvokeBrokerToResetOffset, reset("g1", "mine"), nil, ""},
		{"INVOKE_BROKER_TO_RESET_OFFSET other group", codec.ReqInvokeBrokerToResetOffset, reset("g2", "mine"), nil, "No default permission for group:g2"},
		{"INVOKE_BROKER_TO_RESET_OFFSET other topic", codec.ReqInvokeBrokerToResetOffset, reset("g1", "secret"), nil, "No default permission for topic:secret"},
		{"CLONE_GROUP_OFFSET own", codec.ReqCloneGroupOffset, clone("g1", "g1", "mine"), nil, ""},
		{"CLONE_GROUP_OFFSET into other group", codec.ReqCloneGroupOffset, clone("g1", "g2", "mine"), nil, "No default permission for group:g2"},
		{"CLONE_GROUP_OFFSET from other group", codec.ReqCloneGroupOffset, clone("g2", "g1", ""), nil, "No default permission for group:g2"},
	} {
		r := h.Before(c, signed(tc.code, "aliceak", "12345678", tc.ext, tc.body))
		switch {
		case tc.remark == "" && r != nil:
			t.Errorf("%s: refused: %s", tc.name, r.Remark)
		case tc.remark == "*" && r == nil:
			t.Errorf("%s: allowed", tc.name)
		case tc.remark != "" && tc.remark != "*" && (r == nil || r.Code != codec.RespNoPermission || r.Remark != tc.remark):
			t.Errorf("%s: %+v, want %q", tc.name, r, tc.remark)
		}
	}
}

// TestPopRetryTopicOfAnotherGroup: a POP code's retry topic is left to the
// group check only when it is the request's group's own; another group's is
// checked as that group's retry topic.
func TestPopRetryTopicOfAnotherGroup(t *testing.T) {
	m := newManager(t, codesYAML)
	h := m.Hook()
	c := from("127.0.0.1")
	ack := func(tp string) codec.ExtFields {
		return codec.ExtFields{{Key: "consumerGroup", Value: "g1"}, {Key: "topic", Value: tp}, {Key: "extraInfo", Value: "x"}}
	}
	for _, tp := range []string{"%RETRY%g1+mine", "%RETRY%g1_mine"} {
		if r := h.Before(c, signed(codec.ReqAckMessage, "aliceak", "12345678", ack(tp), nil)); r != nil {
			t.Errorf("ack on %s: refused: %s", tp, r.Remark)
		}
	}
	r := h.Before(c, signed(codec.ReqAckMessage, "aliceak", "12345678", ack("%RETRY%victim+mine"), nil))
	if r == nil || r.Remark != "No default permission for group:victim+mine" {
		t.Errorf("ack on another group's retry topic: %+v", r)
	}
	r = h.Before(c, signed(codec.ReqBatchAckMessage, "aliceak", "12345678", nil, batchAck("g1", "%RETRY%victim+mine")))
	if r == nil || r.Remark != "No default permission for group:victim+mine" {
		t.Errorf("batch ack on another group's retry topic: %+v", r)
	}
}

// TestPopOfAnotherGroupsRetryTopic: POP_MESSAGE and PEEK_MESSAGE name the
// topic read, so a retry topic there is checked as its group's, even when it
// starts with the caller's group name (%RETRY%g1_x is group g1_x's).
func TestPopOfAnotherGroupsRetryTopic(t *testing.T) {
	m := newManager(t, codesYAML)
	h := m.Hook()
	c := from("127.0.0.1")
	for _, code := range []int32{codec.ReqPopMessage, codec.ReqPeekMessage} {
		r := h.Before(c, signed(code, "aliceak", "12345678",
			codec.ExtFields{{Key: "consumerGroup", Value: "g1"}, {Key: "topic", Value: "%RETRY%g1_x"}}, nil))
		if r == nil || r.Remark != "No default permission for group:g1_x" {
			t.Errorf("code %d: %+v", code, r)
		}
	}
}

// TestLockAndDirectConsumeChecked: LOCK_BATCH_MQ / UNLOCK_BATCH_MQ take a
// group's queues from its orderly consumers and CONSUME_MESSAGE_DIRECTLY
// makes a group's client consume a message again; Java's ACL 1.0 leaves them
// to any account (ACL 2.0 asks the group and topics). rmqd asks SUB on the
// group and the topics.
func TestLockAndDirectConsumeChecked(t *testing.T) {
	m := newManager(t, codesYAML)
	h := m.Hook()
	c := from("127.0.0.1")
	lock := func(g, tp string) []byte {
		return fmt.Appendf(nil, `{"clientId":"c1","consumerGroup":%q,"mqSet":[{"brokerName":"b","queueId":0,"topic":%q}],"onlyThisBroker":false}`, g, tp)
	}
	direct := func(g, tp string) codec.ExtFields {
		return codec.ExtFields{{Key: "consumerGroup", Value: g}, {Key: "clientId", Value: "c1"}, {Key: "msgId", Value: "0A"}, {Key: "topic", Value: tp}}
	}
	for _, tc := range []struct {
		name   string
		code   int32
		ext    codec.ExtFields
		body   []byte
		remark string
	}{
		{"LOCK_BATCH_MQ own", codec.ReqLockBatchMq, nil, lock("g1", "mine"), ""},
		{"LOCK_BATCH_MQ other group", codec.ReqLockBatchMq, nil, lock("g2", "mine"), "No default permission for group:g2"},
		{"LOCK_BATCH_MQ other topic", codec.ReqLockBatchMq, nil, lock("g1", "secret"), "No default permission for topic:secret"},
		{"UNLOCK_BATCH_MQ other group", codec.ReqUnlockBatchMq, nil, lock("g2", "mine"), "No default permission for group:g2"},
		{"LOCK_BATCH_MQ bad body", codec.ReqLockBatchMq, nil, []byte("{"), "*"},
		{"CONSUME_MESSAGE_DIRECTLY own", codec.ReqConsumeMessageDirectly, direct("g1", "mine"), nil, ""},
		{"CONSUME_MESSAGE_DIRECTLY other group", codec.ReqConsumeMessageDirectly, direct("g2", "mine"), nil, "No default permission for group:g2"},
		{"CONSUME_MESSAGE_DIRECTLY other topic", codec.ReqConsumeMessageDirectly, direct("g1", "secret"), nil, "No default permission for topic:secret"},
	} {
		r := h.Before(c, signed(tc.code, "aliceak", "12345678", tc.ext, tc.body))
		switch {
		case tc.remark == "" && r != nil:
			t.Errorf("%s: refused: %s", tc.name, r.Remark)
		case tc.remark == "*" && r == nil:
			t.Errorf("%s: allowed", tc.name)
		case tc.remark != "" && tc.remark != "*" && (r == nil || r.Code != codec.RespNoPermission || r.Remark != tc.remark):
			t.Errorf("%s: %+v, want %q", tc.name, r, tc.remark)
		}
	}
}
