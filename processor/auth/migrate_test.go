package auth

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"rmqd/codec"
	jacl "rmqd/compat/acl"
	jauth "rmqd/compat/auth"
	"rmqd/processor/acl"
)

// plainACL is an ACL 1.0 configuration: a normal account with topic and group
// perms, defaults and a white address; an admin account; an account whose
// user already exists (the init user rocketmq); a duplicate of an account of
// the acl directory.
const plainACL = `globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: RocketMQ
    secretKey: "12345678"
    whiteRemoteAddress: 192.168.0.*
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
      - " topicD = PUB "
      - bad=x=y
    groupPerms:
      - groupA=DENY
      - groupB=PUB|SUB
      - "%RETRY%groupC=SUB"
  - accessKey: rocketmq2
    secretKey: "87654321"
    whiteRemoteAddress: 192.168.1.*
    admin: true
  - accessKey: rocketmq
    secretKey: v1secret
    admin: false
    topicPerms:
      - topicA=PUB
  - accessKey: carol
    secretKey: mainfile
    admin: true
`

// aclDirFile is in conf/acl: Java reads that directory before plain_acl.yml
// and keeps the first account of each access key.
const aclDirFile = `accounts:
  - accessKey: carol
    secretKey: dirfile
    admin: false
`

// What AuthMigrator makes of plainACL, read off its code:
//   - createUser: username = accessKey, password = secretKey, Super when
//     admin, else Normal; status enable.
//   - createAcl: topicPerms then groupPerms, each "name=perm" split on '='
//     (other than two pieces: skipped), trimmed, as one Custom policy of
//     LITERAL resources (Resource.ofGroup drops %RETRY%); defaultTopicPerm then
//     defaultGroupPerm as a Default policy on Topic:* / Group:*. parseActions:
//     PUB -> Pub, SUB -> Sub, PUB|SUB and SUB|PUB -> Pub,Sub, DENY -> All;
//     parseDecision: DENY -> Deny, else Allow. No environment (the white
//     addresses are dropped). No perms: no ACL.
//   - a user that exists is skipped entirely (rocketmq, the init user).
const (
	wantUsers = `[{"password":"12345678","userStatus":"enable","userType":"Normal","username":"RocketMQ"},` +
		`{"password":"dirfile","userStatus":"enable","userType":"Normal","username":"carol"},` +
		`{"password":"12345678","userStatus":"enable","userType":"Super","username":"rocketmq"},` +
		`{"password":"87654321","userStatus":"enable","userType":"Super","username":"rocketmq2"}]`
	wantAcls = `[{"policies":[{"entries":[` +
		`{"actions":["All"],"decision":"Deny","resource":"Topic:topicA"},` +
		`{"actions":["Pub","Sub"],"decision":"Allow","resource":"Topic:topicB"},` +
		`{"actions":["Sub"],"decision":"Allow","resource":"Topic:topicC"},` +
		`{"actions":["Pub"],"decision":"Allow","resource":"Topic:topicD"},` +
		`{"actions":["All"],"decision":"Deny","resource":"Group:groupA"},` +
		`{"actions":["Pub","Sub"],"decision":"Allow","resource":"Group:groupB"},` +
		`{"actions":["Sub"],"decision":"Allow","resource":"Group:groupC"}],"policyType":"Custom"},` +
		`{"entries":[{"actions":["All"],"decision":"Deny","resource":"Topic:*"},` +
		`{"actions":["Sub"],"decision":"Allow","resource":"Group:*"}],"policyType":"Default"}],` +
		`"subject":"User:RocketMQ"}]`
)

func writeV1(t *testing.T) string {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "conf")
	if err := os.MkdirAll(filepath.Join(conf, "acl"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(conf, acl.FileName)
	if err := os.WriteFile(path, []byte(plainACL), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(conf, "acl", "extra.yml"), []byte(aclDirFile), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func migrateV1(t *testing.T, m *Manager, path string) {
	t.Helper()
	accounts, err := acl.ReadAccounts(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.MigrateV1(accounts); err != nil {
		t.Fatal(err)
	}
}

func TestMigrateV1(t *testing.T) {
	root, path := t.TempDir(), writeV1(t)
	m := newTestManager(t, root, nil)
	migrateV1(t, m, path)
	local := from("127.0.0.1")
	super := func(code int32, e codec.ExtFields) *codec.RemotingCommand {
		return serve(t, m, local, signed(code, "rocketmq", "12345678", e, nil))
	}
	if resp := super(codec.ReqAuthListUser, ext("filter", "")); string(resp.Body) != wantUsers {
		t.Fatalf("LIST_USER %d %q\n got %s\nwant %s", resp.Code, resp.Remark, resp.Body, wantUsers)
	}
	if resp := super(codec.ReqAuthListAcl, ext("subjectFilter", "", "resourceFilter", "")); string(resp.Body) != wantAcls {
		t.Fatalf("LIST_ACL %d %q\n got %s\nwant %s", resp.Code, resp.Remark, resp.Body, wantAcls)
	}

	// The migrated accounts sign ACL 2.0 requests; the perms decide.
	sendV2 := func(topic string) codec.ExtFields { return ext("a", "pg", "b", topic, "c", "TBW102") }
	pull := func(group, topic string) codec.ExtFields { return ext("consumerGroup", group, "topic", topic) }
	const denied = "User:RocketMQ has no permission to access "
	for _, c := range []struct {
		name, ak, sk, ip string
		code             int32
		e                codec.ExtFields
		want             int32
		remark           string
	}{
		{"pub granted", "RocketMQ", "12345678", "10.1.2.3", codec.ReqSendMessageV2, sendV2("topicB"), codec.RespSuccess, ""},
		{"pub granted, trimmed name", "RocketMQ", "12345678", "10.1.2.3", codec.ReqSendMessageV2, sendV2("topicD"), codec.RespSuccess, ""},
		{"topic DENY", "RocketMQ", "12345678", "10.1.2.3", codec.ReqSendMessageV2, sendV2("topicA"), codec.RespNoPermission,
			denied + "Topic:topicA from 10.1.2.3, the decision is deny."},
		{"SUB only: pub falls to the default DENY", "RocketMQ", "12345678", "10.1.2.3", codec.ReqSendMessageV2, sendV2("topicC"),
			codec.RespNoPermission, denied + "Topic:topicC from 10.1.2.3, the decision is deny."},
		{"unlisted topic: default DENY", "RocketMQ", "12345678", "10.1.2.3", codec.ReqSendMessageV2, sendV2("other"),
			codec.RespNoPermission, denied + "Topic:other from 10.1.2.3, the decision is deny."},
		{"pull granted group and topic", "RocketMQ", "12345678", "10.1.2.3", codec.ReqPullMessage, pull("groupB", "topicC"), codec.RespSuccess, ""},
		{"retry-named group granted", "RocketMQ", "12345678", "10.1.2.3", codec.ReqPullMessage, pull("groupC", "topicB"), codec.RespSuccess, ""},
		{"unlisted group: default SUB", "RocketMQ", "12345678", "10.1.2.3", codec.ReqPullMessage, pull("groupZ", "topicB"), codec.RespSuccess, ""},
		{"group DENY", "RocketMQ", "12345678", "10.1.2.3", codec.ReqPullMessage, pull("groupA", "topicB"), codec.RespNoPermission,
			denied + "Group:groupA from 10.1.2.3, the decision is deny."},
		{"wrong secret", "RocketMQ", "nope", "10.1.2.3", codec.ReqSendMessageV2, sendV2("topicB"), codec.RespNoPermission, "check signature failed."},
		{"the white address lets nothing unsigned in", "", "", "192.168.0.5", codec.ReqSendMessageV2, sendV2("topicB"), codec.RespNoPermission,
			"username cannot be null."},
		{"admin account is a super user", "rocketmq2", "87654321", "10.1.2.3", codec.ReqSendMessageV2, sendV2("topicA"), codec.RespSuccess, ""},
		{"existing user kept its password", "rocketmq", "v1secret", "10.1.2.3", codec.ReqSendMessageV2, sendV2("topicA"), codec.RespNoPermission,
			"check signature failed."},
	} {
		resp := serve(t, m, from(c.ip), signed(c.code, c.ak, c.sk, c.e, nil))
		if resp.Code != c.want || resp.Remark != c.remark {
			t.Errorf("%s: %d %q, want %d %q", c.name, resp.Code, resp.Remark, c.want, c.remark)
		}
	}
	if m.Acl("User:rocketmq") != nil || m.Acl("User:rocketmq2") != nil || m.Acl("User:carol") != nil {
		t.Error("ACL made for an existing user or an account without perms")
	}

	// Idempotent across restarts: changes made since are not undone, and a
	// deleted user comes back (Java migrates every account without a user).
	req := signed(codec.ReqAuthUpdateUser, "rocketmq", "12345678", ext("username", "RocketMQ"), []byte(`{"password":"changed"}`))
	if r := serve(t, m, local, req); r.Code != codec.RespSuccess {
		t.Fatalf("updateUser %d %q", r.Code, r.Remark)
	}
	if r := super(codec.ReqAuthDeleteAcl, ext("subject", "User:RocketMQ", "resource", "Topic:topicA")); r.Code != codec.RespSuccess {
		t.Fatalf("deleteAcl %d %q", r.Code, r.Remark)
	}
	if r := super(codec.ReqAuthDeleteUser, ext("username", "carol")); r.Code != codec.RespSuccess {
		t.Fatalf("deleteUser %d %q", r.Code, r.Remark)
	}
	m2 := newTestManager(t, root, nil)
	migrateV1(t, m2, path)
	if u := m2.User("RocketMQ"); u == nil || u.Password != "changed" {
		t.Errorf("restart overwrote the migrated user: %+v", u)
	}
	for _, e := range m2.Acl("User:RocketMQ").Policy(jauth.PolicyCust).Entries {
		if e.Resource == jauth.Topic("topicA") {
			t.Error("restart put back a deleted ACL entry")
		}
	}
	if u := m2.User("carol"); u == nil || u.Password != "dirfile" {
		t.Errorf("deleted user not migrated again: %+v", u)
	}
	before, err := os.ReadFile(filepath.Join(root, "config", FileName))
	if err != nil {
		t.Fatal(err)
	}
	migrateV1(t, newTestManager(t, root, nil), path)
	if after, _ := os.ReadFile(filepath.Join(root, "config", FileName)); string(after) != string(before) {
		t.Error("a start with nothing to migrate changed auth.json")
	}
}

// TestMigrateV1Perms: the perm strings, blanks and refusals, entry by entry.
func TestMigrateV1Perms(t *testing.T) {
	for perm, want := range map[string]string{
		"PUB": "Pub Allow", "SUB": "Sub Allow", "PUB|SUB": "Pub,Sub Allow", "SUB|PUB": "Pub,Sub Allow", "DENY": "All Deny",
		// Java: All Allow for anything unknown; ACL 1.0 read it as DENY, so rmqd keeps it denied.
		"pub": "All Deny", "ANY": "All Deny", "": "All Deny",
	} {
		e := v1Entry(jauth.Topic("t"), perm)
		got := ""
		for i, n := range e.Actions.Names() {
			if i > 0 {
				got += ","
			}
			got += n
		}
		if e.Deny {
			got += " Deny"
		} else {
			got += " Allow"
		}
		if got != want {
			t.Errorf("perm %q: %s, want %s", perm, got, want)
		}
	}
	m := newTestManager(t, t.TempDir(), nil)
	if err := m.MigrateV1([]jacl.Account{{AccessKey: "nosecret", TopicPerms: []string{"t=PUB"}}, {AccessKey: " ", SecretKey: "x"},
		{AccessKey: "blanks", SecretKey: "pw", TopicPerms: []string{"t= ", "=PUB", "u==SUB"}, DefaultTopicPerm: "  "}}); err != nil {
		t.Fatal(err)
	}
	if m.User("nosecret") != nil || m.User(" ") != nil {
		t.Error("an account with a blank key became a user")
	}
	a := m.Acl("User:blanks")
	want := []jauth.Policy{{Type: jauth.PolicyCust, Entries: []jauth.Entry{
		{Resource: jauth.Topic("t"), Actions: jauth.ActAll, Deny: true}, {Resource: jauth.Topic("u"), Actions: jauth.ActSub}}}}
	if a == nil || !reflect.DeepEqual(a.Policies, want) {
		t.Errorf("blank perms: %+v", a)
	}
}
