package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"rmqd/codec"
	"rmqd/integration/harness"
)

var (
	authSuper = primitive.Credentials{AccessKey: "itSuper01", SecretKey: "itSuperSecret"}
	authAlice = primitive.Credentials{AccessKey: "itAlice01", SecretKey: "itAliceSecret"}
)

// authBrokerConf is ACL 2.0 as a 5.3.3 broker.conf turns it on: the super
// user made at first start, and the broker's own requests signed with it.
// Java needs the metadata providers named (it has no default for them and
// stops at start-up); rmqd serves its one store whether they are named or not.
func authBrokerConf() map[string]string {
	return map[string]string{
		"authenticationMetadataProvider":       "org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider",
		"authorizationMetadataProvider":        "org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider",
		"authenticationEnabled":                "true",
		"authorizationEnabled":                 "true",
		"initAuthenticationUser":               `{"username":"itSuper01","password":"itSuperSecret"}`,
		"innerClientAuthenticationCredentials": `{"accessKey":"itSuper01","secretKey":"itSuperSecret"}`,
	}
}

// TestAuth2 runs ACL 2.0 (authenticationEnabled/authorizationEnabled) against each target: users and ACLs
// made through mqadmin 5.3.3 and the AUTH_* codes, then Go and Java 5.3.3 clients and raw requests with
// right, wrong and missing credentials, per-topic Pub/Sub grants and a Deny. The ACL has no overlapping
// entries: 5.3.3 orders overlapping entries with a comparator fixed after the release (apache/rocketmq #9540),
// so only compat/auth's unit table covers those.
func TestAuth2(t *testing.T) {
	for _, kind := range targetsFromEnv(t) {
		t.Run(kind, func(t *testing.T) { runAuth2(t, kind) })
	}
}

func runAuth2(t *testing.T, kind string) {
	tg := harness.Start(t, kind, harness.Options{BrokerConf: authBrokerConf()})
	c := dialFrom(t, "127.0.0.1", tg.BrokerAddr)
	want := func(step string, r *codec.RemotingCommand, code int32, remark string) {
		t.Helper()
		if r.Code != code || remark != "*" && r.Remark != remark {
			t.Fatalf("%s: %d %q, want %d %q", step, r.Code, r.Remark, code, remark)
		}
	}
	want("unsigned create topic", c.call(codec.ReqUpdateAndCreateTopic, nil, createTopicExt("IT_auth_pub"), nil),
		codec.RespNoPermission, "username cannot be null.")
	for _, topic := range []string{"IT_auth_pub", "IT_auth_sub", "IT_auth_deny"} {
		want("super create "+topic, c.call(codec.ReqUpdateAndCreateTopic, &authSuper, createTopicExt(topic), nil), codec.RespSuccess, "*")
	}

	// Users and ACLs through mqadmin 5.3.3, which signs with conf/tools.yml of its home.
	harness.WriteMqadmin4Home(t, filepath.Join(harness.LogDir(t), "java-home"), authSuper.AccessKey, authSuper.SecretKey)
	b := tg.BrokerAddr
	if out := harness.Mqadmin(t, tg, "createUser", "-b", b, "-u", authAlice.AccessKey, "-p", authAlice.SecretKey); !strings.Contains(out, "success") {
		t.Fatalf("createUser:\n%s", out)
	}
	if r := c.call(codec.ReqAuthGetUser, &authSuper, map[string]string{"username": authAlice.AccessKey}, nil); r.Code != codec.RespSuccess || len(r.Body) == 0 {
		t.Fatalf("getUser after createUser: %d %q %s", r.Code, r.Remark, r.Body)
	}
	harness.Mqadmin(t, tg, "createAcl", "-b", b, "-s", "User:"+authAlice.AccessKey, "-r", "Topic:IT_auth_pub", "-a", "Pub", "-d", "Allow")
	harness.Mqadmin(t, tg, "createAcl", "-b", b, "-s", "User:"+authAlice.AccessKey, "-r", "Topic:IT_auth_sub,Group:IT_auth_cg",
		"-a", "Sub", "-d", "Allow")
	harness.Mqadmin(t, tg, "createAcl", "-b", b, "-s", "User:"+authAlice.AccessKey, "-r", "Topic:IT_auth_deny", "-a", "Pub", "-d", "Deny")
	if out := harness.Mqadmin(t, tg, "listUser", "-b", b); !strings.Contains(out, authAlice.AccessKey) || !strings.Contains(out, authSuper.AccessKey) {
		t.Fatalf("listUser:\n%s", out)
	}
	if out := harness.Mqadmin(t, tg, "getAcl", "-b", b, "-s", "User:"+authAlice.AccessKey); !strings.Contains(out, "Topic:IT_auth_deny") ||
		!strings.Contains(out, "Group:IT_auth_cg") {
		t.Fatalf("getAcl:\n%s", out)
	}

	// The AUTH_* bodies on the wire.
	r := c.call(codec.ReqAuthGetUser, &authSuper, map[string]string{"username": authAlice.AccessKey}, nil)
	want("getUser", r, codec.RespSuccess, "*")
	var user map[string]any
	if err := json.Unmarshal(r.Body, &user); err != nil || user["username"] != authAlice.AccessKey || user["userType"] != "Normal" ||
		user["userStatus"] != "enable" || user["password"] != authAlice.SecretKey {
		t.Fatalf("getUser body %s (%v)", r.Body, err)
	}
	r = c.call(codec.ReqAuthGetAcl, &authSuper, map[string]string{"subject": "User:" + authAlice.AccessKey}, nil)
	want("getAcl", r, codec.RespSuccess, "*")
	var acl struct {
		Subject  string `json:"subject"`
		Policies []struct {
			PolicyType string `json:"policyType"`
			Entries    []struct {
				Resource string   `json:"resource"`
				Actions  []string `json:"actions"`
				Decision string   `json:"decision"`
			} `json:"entries"`
		} `json:"policies"`
	}
	if err := json.Unmarshal(r.Body, &acl); err != nil || acl.Subject != "User:"+authAlice.AccessKey || len(acl.Policies) != 1 ||
		acl.Policies[0].PolicyType != "Custom" || len(acl.Policies[0].Entries) != 4 {
		t.Fatalf("getAcl body %s (%v)", r.Body, err)
	}
	want("createUser duplicate", c.call(codec.ReqAuthCreateUser, &authSuper, map[string]string{"username": authAlice.AccessKey},
		[]byte(`{"username":"itAlice01","password":"x"}`)), codec.RespNoPermission, "The user is existed")
	want("listUser by a normal user", c.call(codec.ReqAuthListUser, &authAlice, nil, nil), codec.RespNoPermission,
		"User:itAlice01 has no permission to access Cluster:DefaultCluster from 127.0.0.1, no matched policies.")

	t.Run("go-producer", func(t *testing.T) {
		send := func(cred *primitive.Credentials, topic string) error {
			opts := []producer.Option{producer.WithRetry(0)}
			if cred != nil {
				opts = append(opts, producer.WithCredentials(*cred))
			}
			p := newGoProducer(t, tg, opts...)
			_, err := p.p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("auth body")))
			return err
		}
		if err := send(&authAlice, "IT_auth_pub"); err != nil {
			t.Fatalf("granted Pub refused: %v", err)
		}
		for _, r := range []struct {
			name   string
			cred   *primitive.Credentials
			topic  string
			remark string
		}{
			{"no grant", &authAlice, "IT_auth_sub", "User:itAlice01 has no permission to access Topic:IT_auth_sub from 127.0.0.1, no matched policies."},
			{"deny", &authAlice, "IT_auth_deny", "User:itAlice01 has no permission to access Topic:IT_auth_deny from 127.0.0.1, the decision is deny."},
			{"wrong secret", &primitive.Credentials{AccessKey: authAlice.AccessKey, SecretKey: "not-the-secret"}, "IT_auth_pub", "check signature failed."},
			{"unknown user", &primitive.Credentials{AccessKey: "nobody01", SecretKey: "whatever"}, "IT_auth_pub", "User:nobody01 is not found."},
			{"no credentials", nil, "IT_auth_pub", "username cannot be null."},
		} {
			if err := send(r.cred, r.topic); err == nil || !strings.Contains(err.Error(), r.remark) || !strings.Contains(err.Error(), "16") {
				t.Errorf("%s: got %v, want NO_PERMISSION (16) %q", r.name, err, r.remark)
			}
		}
		if kind == harness.KindRmqd {
			log, _ := os.ReadFile(filepath.Join(tg.LogDir, "rmqd.log"))
			if !strings.Contains(string(log), "auth: request refused") || !strings.Contains(string(log), "user=itAlice01") ||
				!strings.Contains(string(log), "addr=127.0.0.1:") {
				t.Errorf("no refusal log line naming the user and the address in %s", filepath.Join(tg.LogDir, "rmqd.log"))
			}
		}
	})

	t.Run("go-consumer", func(t *testing.T) {
		// A message put by the super user, read by a user granted Sub on the topic and the group only.
		p := newGoProducer(t, tg, producer.WithCredentials(authSuper), producer.WithRetry(0))
		if _, err := p.p.SendSync(context.Background(), primitive.NewMessage("IT_auth_sub", []byte("for the consumer"))); err != nil {
			t.Fatal(err)
		}
		awaitSignedBody(t, tg, "IT_auth_sub", "IT_auth_cg", uniq("it-auth-c"), authAlice, "for the consumer")
	})

	t.Run("raw-sub", func(t *testing.T) {
		pull := func(topic, group string) *codec.RemotingCommand {
			return c.call(codec.ReqPullMessage, &authAlice, map[string]string{"consumerGroup": group, "topic": topic, "queueId": "0",
				"queueOffset": "0", "maxMsgNums": "1", "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0",
				"subVersion": "0", "expressionType": "TAG", "subscription": "*"}, nil)
		}
		if r := pull("IT_auth_sub", "IT_auth_cg"); r.Code == codec.RespNoPermission {
			t.Fatalf("granted Sub refused: %s", r.Remark)
		}
		want("pull of a Pub-only topic", pull("IT_auth_pub", "IT_auth_cg"), codec.RespNoPermission,
			"User:itAlice01 has no permission to access Topic:IT_auth_pub from 127.0.0.1, no matched policies.")
		want("pull with another group", pull("IT_auth_sub", "IT_auth_other"), codec.RespNoPermission,
			"User:itAlice01 has no permission to access Group:IT_auth_other from 127.0.0.1, no matched policies.")
	})

	t.Run("java5", func(t *testing.T) {
		harness.RequireJars(t, "client5")
		if !runnerHasACL(t, "5") {
			t.Skip("the runner jar in integration/java/target predates --ak/--sk: run make integration-deps")
		}
		cred := []string{"--ak", authAlice.AccessKey, "--sk", authAlice.SecretKey}
		sent := harness.RunJava(t, tg, "5", "produce", append([]string{"--topic", "IT_auth_pub", "--count", "2", "--group", "IT_auth_jpg"}, cred...)...)
		if len(sent.Sent) != 2 {
			t.Fatalf("sent %d", len(sent.Sent))
		}
		for _, r := range []struct {
			name   string
			args   []string
			remark string
		}{
			{"deny", append([]string{"--topic", "IT_auth_deny"}, cred...), "the decision is deny."},
			{"wrong secret", []string{"--topic", "IT_auth_pub", "--ak", authAlice.AccessKey, "--sk", "not-the-secret"}, "check signature failed."},
		} {
			res, err := harness.TryJava(t, tg, "5", "produce", append(r.args, "--count", "1", "--retries", "0")...)
			if err != nil {
				t.Fatal(err)
			}
			if res.OK || !strings.Contains(res.Error, r.remark) || !strings.Contains(res.Error, "CODE: 16") {
				t.Errorf("%s: ok=%v error %q, want CODE: 16 %q", r.name, res.OK, res.Error, r.remark)
			}
		}
	})

	authAdminCommands(t, tg)

	// deleteAcl / deleteUser through mqadmin, then the user is gone for the broker too.
	harness.Mqadmin(t, tg, "deleteUser", "-b", b, "-u", authAlice.AccessKey)
	want("deleted user", c.call(codec.ReqAuthGetAcl, &authSuper, map[string]string{"subject": "User:" + authAlice.AccessKey}, nil),
		codec.RespNoPermission, "The subject is not exist.")
}

// authAdminCommands runs mqadmin 5.3.3's user and ACL commands runAuth2 does not need for its clients:
// getUser, updateUser, updateAcl, listAcl, deleteAcl, copyUser and copyAcl (onto the same broker: one
// group here), each checked for what it prints and for its effect.
func authAdminCommands(t *testing.T, tg *harness.Target) {
	b := tg.BrokerAddr
	s := &adminSession{tb: t, tg: tg, out: map[string]string{}}
	must := func(out string, wants ...string) {
		t.Helper()
		s.must("mqadmin", out, wants...)
	}
	const carol = "itCarol01"
	must(harness.Mqadmin(t, tg, "createUser", "-b", b, "-u", carol, "-p", "carolSecret"), "success")
	must(harness.Mqadmin(t, tg, "updateUser", "-b", b, "-u", carol, "-s", "disable"), "update user to "+b+" success.")
	must(harness.Mqadmin(t, tg, "getUser", "-b", b, "-u", carol), "#UserName", carol, "disable")
	must(harness.Mqadmin(t, tg, "copyUser", "-f", b, "-t", b, "-u", carol), "copy user of "+carol+" from "+b+" to "+b+" success.")
	must(harness.Mqadmin(t, tg, "deleteUser", "-b", b, "-u", carol), "success")
	if out, err := harness.TryMqadmin(t, tg, "getUser", "-b", b, "-u", carol); err == nil && strings.Contains(out, carol) {
		t.Fatalf("getUser after deleteUser still shows %s:\n%s", carol, out)
	}

	alice := "User:" + authAlice.AccessKey
	must(harness.Mqadmin(t, tg, "updateAcl", "-b", b, "-s", alice, "-r", "Topic:IT_auth_acl", "-a", "Pub", "-d", "Allow"),
		"update acl to "+b+" success.")
	must(harness.Mqadmin(t, tg, "listAcl", "-b", b, "-s", alice), "#Subject", "Topic:IT_auth_acl", "Topic:IT_auth_deny")
	must(harness.Mqadmin(t, tg, "copyAcl", "-f", b, "-t", b, "-s", alice), "copy acl of "+alice+" from "+b+" to "+b+" success.")
	must(harness.Mqadmin(t, tg, "deleteAcl", "-b", b, "-s", alice, "-r", "Topic:IT_auth_acl"), "delete acl to "+b+" success.")
	if out := harness.Mqadmin(t, tg, "listAcl", "-b", b, "-s", alice); strings.Contains(out, "Topic:IT_auth_acl") ||
		!strings.Contains(out, "Topic:IT_auth_deny") {
		t.Fatalf("listAcl after deleteAcl of Topic:IT_auth_acl:\n%s", out)
	}
}
