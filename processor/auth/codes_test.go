package auth

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"rmqd/codec"
	jauth "rmqd/compat/auth"
	"rmqd/remoting"
)

// newAlice makes a manager with a normal user alice granted Pub, Sub and Get
// on Topic:mine and Sub on Group:g1 only.
func newAlice(t *testing.T) (*Manager, remoting.Conn) {
	t.Helper()
	m := newTestManager(t, t.TempDir(), nil)
	local := from("127.0.0.1")
	admin := func(code int32, e codec.ExtFields, body string) {
		t.Helper()
		if r := serve(t, m, local, signed(code, "rocketmq", "12345678", e, []byte(body))); r.Code != codec.RespSuccess {
			t.Fatal(r.Remark)
		}
	}
	admin(codec.ReqAuthCreateUser, ext("username", "alice"), `{"password":"alicepw","userType":"Normal"}`)
	admin(codec.ReqAuthCreateAcl, ext("subject", "User:alice"), `{"subject":"User:alice","policies":[{"policyType":"Custom","entries":[
		{"resource":"Topic:mine","actions":["Pub","Sub","Get"],"decision":"Allow"},{"resource":"Group:g1","actions":["Sub"],"decision":"Allow"}]}]}`)
	return m, local
}

func batchAck(group, topic string) string {
	return fmt.Sprintf(`{"acks":[{"b":"Bw==","c":%q,"it":30000,"pt":1733000000000,"q":3,"r":"0","rq":5,"so":17,"t":%q}],"brokerName":"broker-a"}`, group, topic)
}

func liteCtl(group, topic string) string {
	return fmt.Sprintf(`{"subscriptionSet":[{"action":"PARTIAL_ADD","clientId":"c","group":%q,"liteTopicSet":["x"],"topic":%q,"version":1}]}`, group, topic)
}

// TestServedCodesAuthorized: codes served by the broker that Java 5.3 leaves
// without a resource (or that rmqd did) ask for the topic and group they touch.
func TestServedCodesAuthorized(t *testing.T) {
	m, local := newAlice(t)
	const (
		noTopic = "User:alice has no permission to access Topic:secret from 127.0.0.1, no matched policies."
		noGroup = "User:alice has no permission to access Group:g2 from 127.0.0.1, no matched policies."
	)
	type req struct {
		e    codec.ExtFields
		body string
	}
	for _, tc := range []struct {
		name                       string
		code                       int32
		ok, otherTopic, otherGroup req
		checkGroup                 bool
	}{
		{"LITE_PULL_MESSAGE", codec.ReqLitePullMessage, req{e: ext("consumerGroup", "g1", "topic", "mine")},
			req{e: ext("consumerGroup", "g1", "topic", "secret")}, req{e: ext("consumerGroup", "g2", "topic", "mine")}, true},
		{"SEND_REPLY_MESSAGE", codec.ReqSendReplyMessage, req{e: ext("producerGroup", "pg", "topic", "mine")},
			req{e: ext("producerGroup", "pg", "topic", "secret")}, req{}, false},
		{"SEND_REPLY_MESSAGE_V2", codec.ReqSendReplyMessageV2, req{e: ext("a", "pg", "b", "mine")},
			req{e: ext("a", "pg", "b", "secret")}, req{}, false},
		{"BATCH_ACK_MESSAGE", codec.ReqBatchAckMessage, req{body: batchAck("g1", "mine")},
			req{body: batchAck("g1", "secret")}, req{body: batchAck("g2", "mine")}, true},
		{"POP_MESSAGE", codec.ReqPopMessage, req{e: ext("consumerGroup", "g1", "topic", "mine")},
			req{e: ext("consumerGroup", "g1", "topic", "secret")}, req{e: ext("consumerGroup", "g2", "topic", "mine")}, true},
		{"POP_LITE_MESSAGE", codec.ReqPopLiteMessage, req{e: ext("clientId", "c", "consumerGroup", "g1", "topic", "mine")},
			req{e: ext("clientId", "c", "consumerGroup", "g1", "topic", "secret")}, req{e: ext("clientId", "c", "consumerGroup", "g2", "topic", "mine")}, true},
		{"LITE_SUBSCRIPTION_CTL", codec.ReqLiteSubscriptionCtl, req{body: liteCtl("g1", "mine")},
			req{body: liteCtl("g1", "secret")}, req{body: liteCtl("g2", "mine")}, true},
	} {
		if r := m.Hook().Before(local, signed(tc.code, "alice", "alicepw", tc.ok.e, []byte(tc.ok.body))); r != nil {
			t.Errorf("%s on its own topic: refused: %s", tc.name, r.Remark)
		}
		r := m.Hook().Before(local, signed(tc.code, "alice", "alicepw", tc.otherTopic.e, []byte(tc.otherTopic.body)))
		if r == nil || r.Code != codec.RespNoPermission || r.Remark != noTopic {
			t.Errorf("%s on another topic: %+v", tc.name, r)
		}
		if !tc.checkGroup {
			continue
		}
		r = m.Hook().Before(local, signed(tc.code, "alice", "alicepw", tc.otherGroup.e, []byte(tc.otherGroup.body)))
		if r == nil || r.Code != codec.RespNoPermission || r.Remark != noGroup {
			t.Errorf("%s for another group: %+v", tc.name, r)
		}
	}
	if r := m.Hook().Before(local, signed(codec.ReqBatchAckMessage, "alice", "alicepw", nil, []byte("{"))); r == nil {
		t.Error("BATCH_ACK_MESSAGE with a bad body allowed")
	}
}

// TestUserPasswordOnlyForSuper: AUTH_GET_USER and AUTH_LIST_USER show
// passwords to super users only, not to every user granted Cluster Get.
func TestUserPasswordOnlyForSuper(t *testing.T) {
	m, local := newAlice(t)
	if r := serve(t, m, local, signed(codec.ReqAuthUpdateAcl, "rocketmq", "12345678", ext("subject", "User:alice"),
		[]byte(`{"subject":"User:alice","policies":[{"policyType":"Custom","entries":[{"resource":"Cluster:DefaultCluster","actions":["Get"],"decision":"Allow"}]}]}`))); r.Code != codec.RespSuccess {
		t.Fatal(r.Remark)
	}
	for _, c := range []struct {
		ak, sk string
		want   bool
	}{{"alice", "alicepw", false}, {"rocketmq", "12345678", true}} {
		r := serve(t, m, local, signed(codec.ReqAuthGetUser, c.ak, c.sk, ext("username", "alice"), nil))
		if r.Code != codec.RespSuccess || strings.Contains(string(r.Body), "alicepw") != c.want ||
			!strings.Contains(string(r.Body), `"username":"alice"`) {
			t.Errorf("getUser by %s: %d %s", c.ak, r.Code, r.Body)
		}
		r = serve(t, m, local, signed(codec.ReqAuthListUser, c.ak, c.sk, ext("filter", ""), nil))
		var users []jauth.UserInfo
		if err := json.Unmarshal(r.Body, &users); err != nil || len(users) != 2 {
			t.Fatalf("listUser by %s: %s %v", c.ak, r.Body, err)
		}
		for _, u := range users {
			if (u.Password != "") != c.want {
				t.Errorf("listUser by %s: %+v", c.ak, u)
			}
		}
	}
	// Without authentication the AccessKey field proves nothing: no passwords.
	m2 := newTestManager(t, t.TempDir(), func(c *Config) { c.AuthenticationEnabled = false })
	r := serve(t, m2, local, signed(codec.ReqAuthGetUser, "rocketmq", "12345678", ext("username", "rocketmq"), nil))
	if r.Code != codec.RespSuccess || strings.Contains(string(r.Body), "password") {
		t.Errorf("getUser without authentication: %d %s", r.Code, r.Body)
	}
}

// TestBigHeaderRefused: a header of ~1,020 distinct 4,000-byte keys in
// descending order, with a SecurityToken and a wrong signature, is refused by
// authentication (the signer's sort is O(n log n), see compat/acl
// TestSortFieldsComparisons).
func TestBigHeaderRefused(t *testing.T) {
	m, local := newAlice(t)
	req := codec.NewRequest(codec.ReqSendMessageV2)
	pad := strings.Repeat("x", 4000)
	for i := 1019; i >= 0; i-- {
		req.Ext = append(req.Ext, codec.ExtField{Key: fmt.Sprintf("é%04d", i) + pad})
	}
	req.Ext = append(req.Ext, ext("b", "mine", "AccessKey", "alice", "SecurityToken", "t", "Signature", "wrong")...)
	r := m.Hook().Before(local, req)
	if r == nil || r.Code != codec.RespNoPermission || r.Remark != "check signature failed." {
		t.Fatalf("%+v", r)
	}
}

// TestRetrySendAuthorizesTheRetryTopicsGroup: a send to a %RETRY% topic
// writes into that group's retry topic, so the group named by the topic is
// the one authorized. Java 5.3.3 authorizes the header's producer group
// instead when it is not blank, so Sub on any one group let a user write into
// every group's retry topic (rmqd is stricter on purpose).
func TestRetrySendAuthorizesTheRetryTopicsGroup(t *testing.T) {
	m, local := newAlice(t)
	const noVictim = "User:alice has no permission to access Group:victim from 127.0.0.1, no matched policies."
	for _, tc := range []struct {
		name  string
		code  int32
		e     codec.ExtFields
		label string // "" when allowed, else the refusal
	}{
		{"v1 own retry topic", codec.ReqSendMessage, ext("producerGroup", "CLIENT_INNER_PRODUCER", "topic", "%RETRY%g1"), ""},
		{"v2 own retry topic", codec.ReqSendMessageV2, ext("a", "CLIENT_INNER_PRODUCER", "b", "%RETRY%g1"), ""},
		{"batch own retry topic", codec.ReqSendBatchMessage, ext("a", "", "b", "%RETRY%g1"), ""},
		{"v1 victim's retry topic", codec.ReqSendMessage, ext("producerGroup", "g1", "topic", "%RETRY%victim"), noVictim},
		{"v2 victim's retry topic", codec.ReqSendMessageV2, ext("a", "g1", "b", "%RETRY%victim"), noVictim},
		{"reply victim's retry topic", codec.ReqSendReplyMessageV2, ext("a", "g1", "b", "%RETRY%victim"), noVictim},
	} {
		r := m.Hook().Before(local, signed(tc.code, "alice", "alicepw", tc.e, nil))
		switch {
		case tc.label == "" && r != nil:
			t.Errorf("%s: refused: %s", tc.name, r.Remark)
		case tc.label != "" && (r == nil || r.Code != codec.RespNoPermission || r.Remark != tc.label):
			t.Errorf("%s: %+v, want %q", tc.name, r, tc.label)
		}
	}
}

// TestSetMessageRequestModeAuthorized: SET_MESSAGE_REQUEST_MODE switches a
// group between pull and pop on a topic; 5.3.3 lets any user do it to any
// group. rmqd asks Update on the body's group and topic, as
// UPDATE_AND_GET_GROUP_FORBIDDEN does.
func TestSetMessageRequestModeAuthorized(t *testing.T) {
	m, local := newAlice(t)
	body := func(g, tp string) []byte {
		return fmt.Appendf(nil, `{"consumerGroup":%q,"mode":"POP","popShareQueueNum":0,"topic":%q}`, g, tp)
	}
	r := m.Hook().Before(local, signed(codec.ReqSetMessageRequestMode, "alice", "alicepw", nil, body("victim", "mine")))
	if r == nil || r.Code != codec.RespNoPermission ||
		r.Remark != "User:alice has no permission to access Group:victim from 127.0.0.1, no matched policies." {
		t.Errorf("another group: %+v", r)
	}
	if r := m.Hook().Before(local, signed(codec.ReqSetMessageRequestMode, "alice", "alicepw", nil, []byte("{"))); r == nil {
		t.Error("a body that does not parse allowed")
	}
	if r := m.Hook().Before(local, signed(codec.ReqSetMessageRequestMode, "rocketmq", "12345678", nil, body("victim", "mine"))); r != nil {
		t.Errorf("super user refused: %s", r.Remark)
	}
	// Unsigned, with authentication off: the body still names resources.
	m2 := newTestManager(t, t.TempDir(), func(c *Config) { c.AuthenticationEnabled = false })
	req := codec.NewRequest(codec.ReqSetMessageRequestMode)
	req.Body = body("victim", "mine")
	if r := m2.Hook().Before(local, req); r == nil {
		t.Error("unsigned request with no header fields allowed")
	}
}

// TestRouteInfoCode: GET_ROUTEINFO_BY_TOPIC names the topic (Pub, Sub or
// Get) or, for a retry topic, its group, as DefaultAuthorizationContextBuilder
// builds it; not the cluster.
func TestRouteInfoCode(t *testing.T) {
	m, local := newAlice(t)
	if r := m.Hook().Before(local, signed(codec.ReqGetRouteinfoByTopic, "alice", "alicepw", ext("topic", "mine"), nil)); r != nil {
		t.Errorf("own topic: %s", r.Remark)
	}
	if r := m.Hook().Before(local, signed(codec.ReqGetRouteinfoByTopic, "alice", "alicepw", ext("topic", "%RETRY%g1"), nil)); r != nil {
		t.Errorf("own group's retry topic: %s", r.Remark)
	}
	r := m.Hook().Before(local, signed(codec.ReqGetRouteinfoByTopic, "alice", "alicepw", ext("topic", "secret"), nil))
	if r == nil || r.Remark != "User:alice has no permission to access Topic:secret from 127.0.0.1, no matched policies." {
		t.Errorf("another topic: %+v", r)
	}
}

// TestCreateTopicListAuthorized: UPDATE_AND_CREATE_TOPIC_LIST's 5.3.3 header
// names no topic, so Java lets any user create or rewrite any topic with it;
// rmqd asks Create on each topic of the body, as UPDATE_AND_CREATE_TOPIC does.
func TestCreateTopicListAuthorized(t *testing.T) {
	m, local := newAlice(t)
	if r := serve(t, m, local, signed(codec.ReqAuthUpdateAcl, "rocketmq", "12345678", ext("subject", "User:alice"),
		[]byte(`{"subject":"User:alice","policies":[{"policyType":"Custom","entries":[{"resource":"Topic:mine","actions":["Create"],"decision":"Allow"}]}]}`))); r.Code != codec.RespSuccess {
		t.Fatal(r.Remark)
	}
	list := func(topics ...string) []byte {
		var b strings.Builder
		b.WriteString(`{"topicConfigList":[`)
		for i, tp := range topics {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"topicName":%q,"readQueueNums":8,"writeQueueNums":8,"perm":6}`, tp)
		}
		b.WriteString(`]}`)
		return []byte(b.String())
	}
	if r := m.Hook().Before(local, signed(codec.ReqUpdateAndCreateTopicList, "alice", "alicepw", nil, list("mine"))); r != nil {
		t.Errorf("own topic: %s", r.Remark)
	}
	r := m.Hook().Before(local, signed(codec.ReqUpdateAndCreateTopicList, "alice", "alicepw", nil, list("mine", "secret")))
	if r == nil || r.Remark != "User:alice has no permission to access Topic:secret from 127.0.0.1, no matched policies." {
		t.Errorf("another topic: %+v", r)
	}
	if r := m.Hook().Before(local, signed(codec.ReqUpdateAndCreateTopicList, "alice", "alicepw", nil, []byte("{"))); r == nil {
		t.Error("a body that does not parse allowed")
	}
}

// TestPopRetryTopicIsTheGroups: a pop consumer acks a retried message with its
// pop retry topic (%RETRY%<group>+<topic>, or _ before 5.x's retry v2), which
// 5.3.3 authorizes as a group named "<group>+<topic>", so a user granted its
// group literally cannot ack retries. rmqd authorizes such a topic as the
// request's consumer group when it is that group's; another group's retry
// topic is still asked for as Java asks it.
func TestPopRetryTopicIsTheGroups(t *testing.T) {
	m, local := newAlice(t)
	for _, tc := range []struct {
		name   string
		code   int32
		e      codec.ExtFields
		body   string
		remark string
	}{
		{"ack v2", codec.ReqAckMessage, ext("consumerGroup", "g1", "topic", "%RETRY%g1+mine", "extraInfo", "x", "offset", "0", "queueId", "0"), "", ""},
		{"ack v1", codec.ReqAckMessage, ext("consumerGroup", "g1", "topic", "%RETRY%g1_mine", "extraInfo", "x", "offset", "0", "queueId", "0"), "", ""},
		{"change invisible v2", codec.ReqChangeMessageInvisibletime, ext("consumerGroup", "g1", "topic", "%RETRY%g1+mine", "extraInfo", "x", "offset", "0", "queueId", "0"), "", ""},
		{"batch ack v2", codec.ReqBatchAckMessage, nil, batchAck("g1", "%RETRY%g1+mine"), ""},
		{"ack another group's", codec.ReqAckMessage, ext("consumerGroup", "g1", "topic", "%RETRY%victim+mine", "extraInfo", "x", "offset", "0", "queueId", "0"), "",
			"User:alice has no permission to access Group:victim+mine from 127.0.0.1, no matched policies."},
		{"batch ack another group's", codec.ReqBatchAckMessage, nil, batchAck("g1", "%RETRY%victim+mine"),
			"User:alice has no permission to access Group:victim+mine from 127.0.0.1, no matched policies."},
	} {
		r := m.Hook().Before(local, signed(tc.code, "alice", "alicepw", tc.e, []byte(tc.body)))
		switch {
		case tc.remark == "" && r != nil:
			t.Errorf("%s: refused: %s", tc.name, r.Remark)
		case tc.remark != "" && (r == nil || r.Remark != tc.remark):
			t.Errorf("%s: %+v, want %q", tc.name, r, tc.remark)
		}
	}
}

// TestPopOfAnotherGroupsRetryTopic: POP_MESSAGE names the topic read, so a
// retry topic there is its group's (%RETRY%g1_x is group g1_x's), as in Java.
func TestPopOfAnotherGroupsRetryTopic(t *testing.T) {
	m, local := newAlice(t)
	r := m.Hook().Before(local, signed(codec.ReqPopMessage, "alice", "alicepw", ext("consumerGroup", "g1", "topic", "%RETRY%g1_x"), nil))
	if r == nil || r.Remark != "User:alice has no permission to access Group:g1_x from 127.0.0.1, no matched policies." {
		t.Errorf("%+v", r)
	}
}
