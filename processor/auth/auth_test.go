package auth

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rmqd/codec"
	jauth "rmqd/compat/auth"
	"rmqd/processor/acl"
	"rmqd/remoting"
	"rmqd/remoting/remotingtest"
)

// from is a connection from ip that discards what is written to it.
func from(ip string) remoting.Conn { return remotingtest.From(ip) }

func newTestManager(t *testing.T, root string, mod func(*Config)) *Manager {
	t.Helper()
	cfg := Config{AuthenticationEnabled: true, AuthorizationEnabled: true, ClusterName: "DefaultCluster", StoreRoot: root,
		InitAuthenticationUser: `{"username":"rocketmq","password":"12345678"}`}
	if mod != nil {
		mod(&cfg)
	}
	m, err := NewManager(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func signed(code int32, ak, sk string, ext codec.ExtFields, body []byte) *codec.RemotingCommand {
	req := codec.NewRequest(code)
	req.Ext, req.Body = ext, body
	if ak != "" {
		acl.SignRequest(req, ak, sk)
	}
	return req
}

// serve runs req through the hook then, if let through, the admin handler.
func serve(t *testing.T, m *Manager, c remoting.Conn, req *codec.RemotingCommand) *codec.RemotingCommand {
	t.Helper()
	if resp := m.Hook().Before(c, req); resp != nil {
		return resp
	}
	p := Handlers(m)[req.Code]
	if p == nil {
		return codec.NewResponse(req, codec.RespSuccess, "")
	}
	resp, err := p.ProcessRequest(context.Background(), c, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func ext(kv ...string) codec.ExtFields {
	var e codec.ExtFields
	for i := 0; i+1 < len(kv); i += 2 {
		e = append(e, codec.ExtField{Key: kv[i], Value: kv[i+1]})
	}
	return e
}

func TestAdminAndDecisions(t *testing.T) {
	root := t.TempDir()
	m := newTestManager(t, root, nil)
	local := from("127.0.0.1")
	admin := func(code int32, e codec.ExtFields, body string) *codec.RemotingCommand {
		return serve(t, m, local, signed(code, "rocketmq", "12345678", e, []byte(body)))
	}
	want := func(resp *codec.RemotingCommand, code int32, remark string) {
		t.Helper()
		if resp.Code != code || resp.Remark != remark {
			t.Fatalf("got %d %q, want %d %q", resp.Code, resp.Remark, code, remark)
		}
	}
	want(admin(codec.ReqAuthCreateUser, ext("username", "alice"), `{"password":"alicepw","userType":"Normal"}`), codec.RespSuccess, "")
	want(admin(codec.ReqAuthCreateUser, ext("username", "alice"), `{"password":"x"}`), codec.RespNoPermission, "The user is existed")
	want(admin(codec.ReqAuthCreateUser, ext("username", ""), `{}`), codec.RespInvalidParameter, "The username is blank")
	want(admin(codec.ReqAuthCreateAcl, ext("subject", "User:bob"), `{"subject":"User:bob","policies":[{"entries":[{"resource":"Topic:a","actions":["Pub"],"decision":"Allow"}]}]}`),
		codec.RespNoPermission, "The subject of User:bob is not exist.")
	want(admin(codec.ReqAuthCreateAcl, ext("subject", "User:alice"), `{"subject":"User:alice","policies":[{"policyType":"Custom","entries":[
		{"resource":"Topic:orders","actions":["Pub"],"decision":"Allow"},
		{"resource":"Topic:*","actions":["Sub"],"decision":"Allow"},
		{"resource":"Topic:secret","actions":["Sub"],"decision":"Deny"},
		{"resource":"Group:g1","actions":["Sub"],"decision":"Allow"}]}]}`), codec.RespSuccess, "")

	resp := admin(codec.ReqAuthGetUser, ext("username", "alice"), "")
	if string(resp.Body) != `{"password":"alicepw","userStatus":"enable","userType":"Normal","username":"alice"}` {
		t.Fatalf("getUser body %s", resp.Body)
	}
	resp = admin(codec.ReqAuthListUser, ext("filter", ""), "")
	var users []jauth.UserInfo
	if err := json.Unmarshal(resp.Body, &users); err != nil || len(users) != 2 || users[1].UserType != "Super" {
		t.Fatalf("listUser %s %v", resp.Body, err)
	}
	resp = admin(codec.ReqAuthGetAcl, ext("subject", "User:alice"), "")
	if !strings.Contains(string(resp.Body), `{"actions":["Pub"],"decision":"Allow","resource":"Topic:orders"}`) {
		t.Fatalf("getAcl body %s", resp.Body)
	}

	// The hook: right, wrong, unknown and missing credentials; grants and denials.
	sendV2 := func(topic string) codec.ExtFields { return ext("a", "pg", "b", topic, "c", "TBW102") }
	for _, c := range []struct {
		name, ak, sk string
		code         int32
		e            codec.ExtFields
		want         int32
		remark       string
	}{
		{"granted pub", "alice", "alicepw", codec.ReqSendMessageV2, sendV2("orders"), codec.RespSuccess, ""},
		{"pub not granted", "alice", "alicepw", codec.ReqSendMessageV2, sendV2("other"), codec.RespNoPermission,
			"User:alice has no permission to access Topic:other from 127.0.0.1, no matched policies."},
		{"wrong secret", "alice", "nope", codec.ReqSendMessageV2, sendV2("orders"), codec.RespNoPermission, "check signature failed."},
		{"unknown user", "mallory", "x", codec.ReqSendMessageV2, sendV2("orders"), codec.RespNoPermission, "User:mallory is not found."},
		{"unsigned", "", "", codec.ReqSendMessageV2, sendV2("orders"), codec.RespNoPermission, "username cannot be null."},
		{"pull granted", "alice", "alicepw", codec.ReqPullMessage, ext("consumerGroup", "g1", "topic", "anything"), codec.RespSuccess, ""},
		{"pull denied topic", "alice", "alicepw", codec.ReqPullMessage, ext("consumerGroup", "g1", "topic", "secret"), codec.RespNoPermission,
			"User:alice has no permission to access Topic:secret from 127.0.0.1, the decision is deny."},
		{"pull other group", "alice", "alicepw", codec.ReqPullMessage, ext("consumerGroup", "g2", "topic", "t"), codec.RespNoPermission,
			"User:alice has no permission to access Group:g2 from 127.0.0.1, no matched policies."},
		{"retry send back names the group", "alice", "alicepw", codec.ReqSendMessageV2, ext("a", "g1", "b", "%RETRY%g1"), codec.RespSuccess, ""},
		{"admin code for a normal user", "alice", "alicepw", codec.ReqAuthListUser, ext("filter", ""), codec.RespNoPermission,
			"User:alice has no permission to access Cluster:DefaultCluster from 127.0.0.1, no matched policies."},
		{"topic create", "alice", "alicepw", codec.ReqUpdateAndCreateTopic, ext("topic", "orders"), codec.RespNoPermission,
			"User:alice has no permission to access Topic:orders from 127.0.0.1, no matched policies."},
		{"static topic create needs Create on the topic (stricter than Java)", "alice", "alicepw", codec.ReqUpdateAndCreateStaticTopic, ext("topic", "orders"), codec.RespNoPermission,
			"User:alice has no permission to access Topic:orders from 127.0.0.1, no matched policies."},
		{"broker config change needs the cluster (stricter than Java)", "alice", "alicepw", codec.ReqUpdateBrokerConfig, nil, codec.RespNoPermission,
			"User:alice has no permission to access Cluster:DefaultCluster from 127.0.0.1, no matched policies."},
		{"deleting commitlog files needs the cluster (stricter than Java)", "alice", "alicepw", codec.ReqDeleteExpiredCommitlog, nil, codec.RespNoPermission,
			"User:alice has no permission to access Cluster:DefaultCluster from 127.0.0.1, no matched policies."},
		{"deleting unused topics' queues needs the cluster (stricter than Java)", "alice", "alicepw", codec.ReqCleanUnusedTopic, nil, codec.RespNoPermission,
			"User:alice has no permission to access Cluster:DefaultCluster from 127.0.0.1, no matched policies."},
		{"cold-data thresholds need the cluster (stricter than Java)", "alice", "alicepw", codec.ReqUpdateColdDataFlowCtrConfig, nil, codec.RespNoPermission,
			"User:alice has no permission to access Cluster:DefaultCluster from 127.0.0.1, no matched policies."},
		{"the commitlog read mode needs the cluster (stricter than Java)", "alice", "alicepw", codec.ReqSetCommitlogReadMode, ext("READ_AHEAD_MODE", "1"), codec.RespNoPermission,
			"User:alice has no permission to access Cluster:DefaultCluster from 127.0.0.1, no matched policies."},
		{"the timer engine switch needs the cluster (stricter than Java 5.4)", "alice", "alicepw", codec.ReqSwitchTimerEngine, ext("E_T", "F"), codec.RespNoPermission,
			"User:alice has no permission to access Cluster:DefaultCluster from 127.0.0.1, no matched policies."},
		{"a lite client's subscriptions need the cluster (stricter than Java 5.5)", "alice", "alicepw", codec.ReqGetLiteClientInfo,
			ext("parentTopic", "mine", "group", "g1", "clientId", "c"), codec.RespNoPermission,
			"User:alice has no permission to access Cluster:DefaultCluster from 127.0.0.1, no matched policies."},
		{"a lite dispatch needs the cluster (stricter than Java 5.5)", "alice", "alicepw", codec.ReqTriggerLiteDispatch,
			ext("group", "g1"), codec.RespNoPermission,
			"User:alice has no permission to access Cluster:DefaultCluster from 127.0.0.1, no matched policies."},
		{"cold-data counters need the cluster (stricter than Java)", "alice", "alicepw", codec.ReqGetColdDataFlowCtrInfo, nil, codec.RespNoPermission,
			"User:alice has no permission to access Cluster:DefaultCluster from 127.0.0.1, no matched policies."},
		{"unannotated code passes once authenticated", "alice", "alicepw", codec.ReqGetBrokerRuntimeInfo, nil, codec.RespSuccess, ""},
	} {
		resp := serve(t, m, local, signed(c.code, c.ak, c.sk, c.e, nil))
		if resp.Code != c.want || resp.Remark != c.remark {
			t.Errorf("%s: %d %q, want %d %q", c.name, resp.Code, resp.Remark, c.want, c.remark)
		}
	}
	if got := m.refusals.Len(); got != 18 {
		t.Errorf("%d refusal lines queued, want 18", got)
	}
	r := <-m.refusals.Queued()
	if r.User != "alice" || r.Addr != "127.0.0.1:40000" {
		t.Errorf("refusal line %+v", r)
	}

	// A normal user may not make a super user; disabling a user stops it.
	want(admin(codec.ReqAuthUpdateUser, ext("username", "alice"), `{"userStatus":"disable"}`), codec.RespSuccess, "")
	resp = serve(t, m, local, signed(codec.ReqSendMessageV2, "alice", "alicepw", sendV2("orders"), nil))
	want(resp, codec.RespNoPermission, "User:alice is disabled.")

	// Persisted: a new manager over the same store sees the same users and ACLs.
	data, err := os.ReadFile(filepath.Join(root, "config", FileName))
	if err != nil || !strings.Contains(string(data), `"Topic:orders"`) {
		t.Fatalf("auth.json %s %v", data, err)
	}
	if fi, _ := os.Stat(filepath.Join(root, "config", FileName)); fi.Mode().Perm() != 0o600 {
		t.Errorf("auth.json mode %v", fi.Mode())
	}
	m2 := newTestManager(t, root, nil)
	if u := m2.User("alice"); u == nil || !u.Disabled || m2.Acl("User:alice") == nil {
		t.Fatalf("reloaded user %+v", u)
	}

	// deleteAcl of one resource, then the user (with its ACL).
	want(admin(codec.ReqAuthDeleteAcl, ext("subject", "User:alice", "resource", "Topic:orders"), ""), codec.RespSuccess, "")
	resp = admin(codec.ReqAuthListAcl, ext("subjectFilter", "alice", "resourceFilter", "orders"), "")
	if len(resp.Body) != 0 {
		t.Fatalf("listAcl after delete: %s", resp.Body)
	}
	want(admin(codec.ReqAuthDeleteUser, ext("username", "alice"), ""), codec.RespSuccess, "")
	if m.User("alice") != nil || m.Acl("User:alice") != nil {
		t.Fatal("user or acl left after deleteUser")
	}
	want(admin(codec.ReqAuthGetAcl, ext("subject", "User:alice"), ""), codec.RespNoPermission, "The subject is not exist.")
}

func TestWhitelistAndSuperRules(t *testing.T) {
	m := newTestManager(t, t.TempDir(), func(c *Config) {
		c.AuthenticationWhitelist = "34, 11, NOT_A_CODE"
		c.AuthorizationWhitelist = "11"
	})
	local := from("127.0.0.1")
	// Whitelisted for authentication: an unsigned heartbeat without consumers
	// has nothing to authorize; an unsigned pull is whitelisted for both.
	hb := signed(codec.ReqHeartBeat, "", "", ext("x", "y"), []byte(`{"clientID":"c","consumerDataSet":[],"producerDataSet":[]}`))
	if resp := serve(t, m, local, hb); resp.Code != codec.RespSuccess {
		t.Errorf("heartbeat without consumers: %d %q", resp.Code, resp.Remark)
	}
	pull := signed(codec.ReqPullMessage, "", "", ext("consumerGroup", "g", "topic", "t"), nil)
	if resp := serve(t, m, local, pull); resp.Code != codec.RespSuccess {
		t.Errorf("whitelisted pull: %d %q", resp.Code, resp.Remark)
	}
	// A normal user cannot create a super user (Java answers SYSTEM_ERROR).
	if err := m.update(func(st *state) error {
		st.users["n"] = &jauth.User{Username: "n", Password: "npw"}
		st.acls["User:n"] = &jauth.Acl{Subject: "User:n", Policies: []jauth.Policy{{Type: jauth.PolicyCust,
			Entries: []jauth.Entry{{Resource: jauth.Cluster("DefaultCluster"), Actions: jauth.ActAll}}}}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	resp := serve(t, m, local, signed(codec.ReqAuthCreateUser, "n", "npw", ext("username", "s"), []byte(`{"password":"p","userType":"Super"}`)))
	if resp.Code != codec.RespSystemError || resp.Remark != "The super user can only be create by super user" {
		t.Errorf("super by normal: %d %q", resp.Code, resp.Remark)
	}
}

func TestInnerSigningAndProviders(t *testing.T) {
	m := newTestManager(t, t.TempDir(), func(c *Config) {
		c.InnerClientAuthenticationCredentials = `{"accessKey":"rocketmq","secretKey":"12345678"}`
	})
	var got *codec.RemotingCommand
	inv, err := m.SignInner(invokerFunc(func(req *codec.RemotingCommand) { got = req }))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inv.InvokeSync(context.Background(), "x", signed(codec.ReqRegisterBroker, "", "", ext("clusterName", "DefaultCluster"), nil)); err != nil {
		t.Fatal(err)
	}
	// The broker's own request passes the hook of a broker with the same users.
	if resp := m.Hook().Before(from("127.0.0.1"), got); resp != nil {
		t.Fatalf("inner request refused: %q", resp.Remark)
	}
	if err := CheckProviders(map[string]string{"authenticationProvider": "com.example.Custom"}); err == nil {
		t.Error("custom provider accepted")
	}
	if err := CheckProviders(map[string]string{"authorizationStrategy": "org.apache.rocketmq.auth.authorization.strategy.StatefulAuthorizationStrategy"}); err != nil {
		t.Error(err)
	}
}

type invokerFunc func(*codec.RemotingCommand)

func (f invokerFunc) InvokeSync(_ context.Context, _ string, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	f(req)
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// TestKeptNamesDoNotAliasFrames: header values alias the request's frame,
// which the server reuses; a created user must keep its own name.
func TestKeptNamesDoNotAliasFrames(t *testing.T) {
	m := newTestManager(t, t.TempDir(), nil)
	frame := []byte("username-bob")
	name := unsafeString(frame[len("username-"):])
	req := signed(codec.ReqAuthCreateUser, "rocketmq", "12345678", ext("username", name), []byte(`{"password":"pw"}`))
	if resp := serve(t, m, from("127.0.0.1"), req); resp.Code != codec.RespSuccess {
		t.Fatalf("createUser %d %q", resp.Code, resp.Remark)
	}
	copy(frame, "XXXXXXXXXXXX") // the server reuses the buffer for the next frame
	if m.User("bob") == nil {
		t.Fatalf("user lost once the frame was reused; users %v", sortedKeys(m.cur.Load().users))
	}
}
