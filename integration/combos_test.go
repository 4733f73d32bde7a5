package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"rmqd/codec"
	"rmqd/integration/harness"
)

// securedVariants are the security set-ups the inter-broker tests run under: ACL 2.0 on every broker, the
// clients signing as the super user and the brokers with innerClientAuthenticationCredentials (acl2); every
// broker and the name server in tls.server.mode=enforcing, the brokers' own requests on tls.enable (tls).
var securedVariants = map[string]securedVariant{
	"acl2": {broker: authBrokerConf(), cred: &authSuper},
	"tls": {broker: map[string]string{"tls.server.mode": "enforcing", "tls.enable": "true"},
		namesrv: map[string]string{"tls.server.mode": "enforcing"}},
}

type securedVariant struct {
	broker, namesrv       map[string]string
	cred                  *primitive.Credentials
	clientCert, clientKey string // the test's clients present this certificate when set
}

// TestSecuredMasterSlave is a classic master and slave (broker-a) under each of allSecuredVariants: the
// brokers register with the name server (over TLS in tls), the slave copies the master's topics,
// subscription groups, consumer offsets and delay offsets (SlaveSynchronize's requests, signed in acl2), and
// with lockInStrictMode a client's LOCK_BATCH_MQ on the master is granted only because the slave also locked
// the queue for it (the master's GET_BROKER_MEMBER_GROUP to the name server, then LOCK_BATCH_MQ to the
// slave). rmqd only: it is the broker side under test.
func TestSecuredMasterSlave(t *testing.T) {
	if !containsKind(targetsFromEnv(t), harness.KindRmqd) {
		t.Skip("rmqd only")
	}
	runVariants(t, allSecuredVariants(t), runSecuredMasterSlave)
}

// runVariants runs run under each variant, in parallel subtests named after them (the runs mostly wait).
func runVariants(t *testing.T, variants map[string]securedVariant, run func(*testing.T, securedVariant)) {
	for name, v := range variants {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			run(t, v)
		})
	}
}

// mtlsVariant is certificates of a CA, verified both ways, the servers' naming a host and no IP address as
// deployments often do: Java's clients check the chain only, not the name (Netty's default). The name
// server asks no client certificate; the brokers require one, and present theirs on their own requests.
func mtlsVariant(t *testing.T) securedVariant {
	pki := newITPKIFor(t, "broker.rmqd.test", nil)
	server := map[string]string{"tls.server.mode": "enforcing", "tls.test.mode.enable": "false",
		"tls.server.certPath": pki.serverCert, "tls.server.keyPath": pki.serverKey}
	broker := maps.Clone(server)
	maps.Copy(broker, map[string]string{"tls.server.trustCertPath": pki.ca, "tls.server.authClient": "true",
		"tls.server.need.client.auth": "require", "tls.enable": "true", "tls.client.certPath": pki.clientCert,
		"tls.client.keyPath": pki.clientKey, "tls.client.authServer": "true", "tls.client.trustCertPath": pki.ca})
	return securedVariant{broker: broker, namesrv: server, clientCert: pki.clientCert, clientKey: pki.clientKey}
}

// allSecuredVariants is securedVariants plus acl1 (acl1Variant) and mtls (mtlsVariant).
func allSecuredVariants(t *testing.T) map[string]securedVariant {
	variants := maps.Clone(securedVariants)
	variants["acl1"], variants["mtls"] = acl1Variant(t), mtlsVariant(t)
	return variants
}

// tlsOn says whether v's brokers take TLS only (tls.enable is set where tls.server.mode is enforcing).
func (v securedVariant) tlsOn() bool { return v.broker["tls.enable"] == "true" }

// javaFlags is the runner's flags for a Java client under v: its credentials and javaTLSFlags.
func (v securedVariant) javaFlags() []string { return append(javaCred(v.cred), v.javaTLSFlags()...) }

// javaTLSFlags is the JVM properties of a Java client or mqadmin under v: none without TLS, else
// tls.enable, and v's client certificate when it has one (out of Java's test mode, which presents none;
// the server's certificate is still not checked, tls.client.authServer=false).
func (v securedVariant) javaTLSFlags() []string {
	if !v.tlsOn() {
		return nil
	}
	f := []string{"-Dtls.enable=true"}
	if v.clientCert != "" {
		f = append(f, "-Dtls.test.mode.enable=false", "-Dtls.client.certPath="+v.clientCert, "-Dtls.client.keyPath="+v.clientKey)
	}
	return f
}

// rawClients makes the test's raw clients of targets under v: signing with v.cred, over clientTLS.
func (v securedVariant) rawClients(t *testing.T) func(tg *harness.Target) *rawClient {
	tc := v.clientTLS(t)
	return func(tg *harness.Target) *rawClient {
		r := newRawClientTLS(t, tg, tc)
		r.cred = v.cred
		return r
	}
}

// clientTLS is the TLS set-up of the test's own clients under v: nil when the brokers take plain requests,
// else any server certificate (tls.test.mode.enable: self-signed) and v's client certificate when it has one.
func (v securedVariant) clientTLS(t *testing.T) *tls.Config {
	if !v.tlsOn() {
		return nil
	}
	tc := &tls.Config{InsecureSkipVerify: true}
	if v.clientCert != "" {
		cert, err := tls.LoadX509KeyPair(v.clientCert, v.clientKey)
		if err != nil {
			t.Fatal(err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc
}

// acl1Variant is ACL 1.0 (aclV1BrokerConf), the clients signing as its admin account.
func acl1Variant(t *testing.T) securedVariant {
	return securedVariant{broker: aclV1BrokerConf(t), cred: &aclAdmin}
}

// moreSecuredVariants is securedVariants, or allSecuredVariants with RMQD_SECURITY_COMBOS=1: the long
// acting-master tests leave ACL 1.0 and mutual TLS out of make test's run (TestSecuredMasterSlave covers
// the signing and the certificates).
func moreSecuredVariants(t *testing.T) map[string]securedVariant {
	if os.Getenv("RMQD_SECURITY_COMBOS") == "1" {
		return allSecuredVariants(t)
	}
	return maps.Clone(securedVariants)
}

// aclV1BrokerConf is ACL 1.0 (aclEnable, TestACL's plain_acl.yml) with the brokers' own requests signed as
// its admin account, as a 5.x broker's BrokerOuterAPI signs with innerClientAuthenticationCredentials.
func aclV1BrokerConf(t *testing.T) map[string]string {
	conf := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(conf, []byte(aclYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"aclEnable": "true", "aclPlainFile": conf,
		"innerClientAuthenticationCredentials": `{"accessKey":"` + aclAdmin.AccessKey + `","secretKey":"` + aclAdmin.SecretKey + `"}`}
}

func runSecuredMasterSlave(t *testing.T, v securedVariant) {
	const topic, group = "IT_sec_ms", "IT_sec_ms_g"
	brokerExtra, nsExtra := v.broker, v.namesrv
	conf := func(role, id string) map[string]string {
		c := haConf(role, id)
		c["lockInStrictMode"], c["totalReplicas"] = "true", "2"
		maps.Copy(c, brokerExtra)
		return c
	}
	master := harness.Start(t, harness.KindRmqd, harness.Options{Split: true, BrokerConf: conf("ASYNC_MASTER", "0"),
		NamesrvConf: nsExtra})
	if v.tlsOn() {
		requirePlainRefused(t, master.NamesrvAddr)
		requirePlainRefused(t, master.BrokerAddr)
	}
	client := v.rawClients(t)
	mr := client(master)
	mr.createTopic(topic, 2)
	for i := range 3 {
		if resp := mr.invoke(codec.ReqSendMessage, sendHeader(topic, 0, ""), []byte{byte('a' + i)}, 10*time.Second); resp.Code != codec.RespSuccess {
			t.Fatalf("send: code %d %q", resp.Code, resp.Remark)
		}
	}
	// Level 1 (1 s): the master's schedule service delivers it and moves its delay offset.
	if resp := mr.invoke(codec.ReqSendMessage, sendHeader(topic, 1, "DELAY\x011\x02"), []byte("d"), 10*time.Second); resp.Code != codec.RespSuccess {
		t.Fatalf("send delayed: code %d %q", resp.Code, resp.Remark)
	}
	if resp := mr.invoke(codec.ReqUpdateAndCreateSubscriptiongroup, nil, []byte(`{"groupName":"`+group+`","consumeEnable":true}`),
		10*time.Second); resp.Code != codec.RespSuccess {
		t.Fatalf("create subscription group: code %d %q", resp.Code, resp.Remark)
	}
	if resp := mr.invoke(codec.ReqUpdateConsumerOffset, map[string]string{"consumerGroup": group, "topic": topic,
		"queueId": "0", "commitOffset": "2"}, nil, 10*time.Second); resp.Code != codec.RespSuccess {
		t.Fatalf("commit offset: code %d %q", resp.Code, resp.Remark)
	}
	waitMaxOffset(t, mr, topic, 1, 1)
	masterDelay := waitBody(t, "the master's delay offsets", func() []byte { return mr.invoke(codec.ReqGetAllDelayOffset, nil, nil, 10*time.Second).Body },
		func(b []byte) bool { return bytes.Contains(b, []byte(`1:1`)) })

	slave := harness.StartBroker(t, harness.KindRmqd, master.NamesrvAddr, harness.Options{BrokerConf: conf("SLAVE", "1")})
	sr := client(slave)
	waitSlaveTopic(t, sr, topic)
	waitBody(t, "the slave's subscription groups", func() []byte {
		return sr.invoke(codec.ReqGetAllSubscriptiongroupConfig, nil, nil, 10*time.Second).Body
	}, func(b []byte) bool { return bytes.Contains(b, []byte(`"`+group+`"`)) })
	waitBody(t, "the slave's delay offsets", func() []byte { return sr.invoke(codec.ReqGetAllDelayOffset, nil, nil, 10*time.Second).Body },
		func(b []byte) bool { return bytes.Equal(b, masterDelay) })
	if n := sr.committedOffset(group, topic, 0); n != 2 {
		t.Fatalf("the slave's offset of %s on queue 0: %d, want 2", group, n)
	}

	// Strict lock: granted by the master only with the slave's grant (quorum 2 of totalReplicas 2).
	lock := []byte(`{"consumerGroup":"` + group + `","clientId":"IT_sec_ms_client","onlyThisBroker":false,` +
		`"mqSet":[{"topic":"` + topic + `","brokerName":"broker-a","queueId":0}]}`)
	waitBody(t, "a strict LOCK_BATCH_MQ on the master", func() []byte {
		resp := mr.invoke(codec.ReqLockBatchMq, nil, lock, 10*time.Second)
		if resp.Code != codec.RespSuccess {
			t.Fatalf("LOCK_BATCH_MQ: code %d %q", resp.Code, resp.Remark)
		}
		return resp.Body
	}, func(b []byte) bool { return bytes.Contains(b, []byte(`"queueId":0`)) })
	lock = bytes.Replace(lock, []byte(`"onlyThisBroker":false`), []byte(`"onlyThisBroker":true`), 1)
	if resp := sr.invoke(codec.ReqLockBatchMq, nil, bytes.Replace(lock, []byte("IT_sec_ms_client"), []byte("other"), 1),
		10*time.Second); resp.Code != codec.RespSuccess || bytes.Contains(resp.Body, []byte(`"queueId":0`)) {
		t.Fatalf("the slave granted another client the queue the master locked through it: code %d %q %s",
			resp.Code, resp.Remark, resp.Body)
	}
}

// requirePlainRefused fails the test when the server at addr answers a plain request (it should be in
// tls.server.mode=enforcing).
func requirePlainRefused(t *testing.T, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req := codec.NewRequest(codec.ReqGetRouteinfoByTopic)
	req.Ext.Set("topic", "TBW102")
	if _, err := newRawClient(t, &harness.Target{}).c.InvokeSync(ctx, addr, req); err == nil {
		t.Fatalf("%s answered a plain request in tls.server.mode=enforcing", addr)
	}
}

// waitBody polls get until ok accepts its answer (30 s at most) and returns that answer.
func waitBody(t *testing.T, what string, get func() []byte, ok func([]byte) bool) []byte {
	t.Helper()
	var b []byte
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		if b = get(); ok(b) {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: never as wanted; last %s", what, strings.TrimSpace(string(b)))
		}
	}
}

// TestControllerSecured is controller mode under each of allSecuredVariants: a one-node Apache 5.3.3
// controller, an rmqd name server and a group of two rmqd brokers. The controller elects a master that
// takes a send; its slave copies the topic (metadata sync); the master SIGKILLed, the slave is elected and
// takes a send. Under ACL (acl1, acl2) the controller authenticates nothing, but the brokers' signed
// requests must still be taken, and the peers take only signed ones. Under TLS (tls, mtls) the controller
// runs Java's tls.server.mode=enforcing: the brokers' heartbeats, elections and sync-state reports reach it
// over TLS, and its own role notices to the brokers go over TLS too (with a client certificate the brokers
// require, in mtls, whose broker clients also verify the controller's chain). Long (a JVM per variant): it
// runs with RMQD_CONTROLLER=1 (make integration-controller).
func TestControllerSecured(t *testing.T) {
	if os.Getenv("RMQD_CONTROLLER") != "1" {
		t.Skip("controller mode runs with RMQD_CONTROLLER=1 (make integration-controller)")
	}
	if !containsKind(targetsFromEnv(t), harness.KindRmqd) {
		t.Skip("rmqd only")
	}
	runVariants(t, allSecuredVariants(t), runControllerSecured)
}

func runControllerSecured(t *testing.T, v securedVariant) {
	const brokerName, topic = "broker-ctl-sec", "IT_ctl_sec"
	// The controller serves as a name server does (v.namesrv) and calls the brokers as they call each other
	// (tls.enable, tls.client.*): Java reads both from system properties.
	var jvm []string
	for k, val := range v.namesrv {
		jvm = append(jvm, "-D"+k+"="+val)
	}
	for k, val := range v.broker {
		if k == "tls.enable" || strings.HasPrefix(k, "tls.client.") {
			jvm = append(jvm, "-D"+k+"="+val)
		}
	}
	ctrl := harness.StartController(t, 1, harness.Options{StartTimeout: 180 * time.Second, JVMArgs: jvm})
	ns := harness.StartNamesrv(t, harness.KindRmqd, harness.Options{StartTimeout: 180 * time.Second, NamesrvConf: v.namesrv})
	conf := maps.Clone(v.broker)
	conf["flushDiskType"], conf["allAckInSyncStateSet"] = "ASYNC_FLUSH", "true"
	bopts := harness.Options{BrokerName: brokerName, StartTimeout: 180 * time.Second, BrokerConf: conf}
	brokers := map[string]*harness.GroupBroker{}
	var addrs []string
	for range 2 {
		g := harness.StartGroupBroker(t, harness.KindRmqd, ns.Addr, ctrl, bopts)
		brokers[g.BrokerAddr] = g
		addrs = append(addrs, g.BrokerAddr)
	}
	if v.tlsOn() {
		requirePlainRefused(t, ctrl.Nodes[0].Addr)
		requirePlainRefused(t, addrs[0])
	}
	clientOf := v.rawClients(t)
	client := func(addr string) *rawClient { return clientOf(brokers[addr].Target) }
	send := func(addr, what string) {
		t.Helper()
		r := client(addr)
		for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			resp := r.invoke(codec.ReqSendMessage, sendHeader(topic, 0, ""), []byte(what), 10*time.Second)
			if resp.Code == codec.RespSuccess {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: send to %s: code %d %q", what, addr, resp.Code, resp.Remark)
			}
		}
	}
	master, took := harness.WaitGroupMaster(t, ns.Addr, brokerName, addrs, "", 180*time.Second)
	t.Logf("master %s elected after %v", master, took)
	client(master).createTopic(topic, 1)
	send(master, "before")
	slave := addrs[0]
	if slave == master {
		slave = addrs[1]
	}
	waitSlaveTopic(t, client(slave), topic)
	brokers[master].Kill(t)
	next, took := harness.WaitGroupMaster(t, ns.Addr, brokerName, addrs, master, 120*time.Second)
	t.Logf("slave %s elected %v after the kill", next, took)
	send(next, "after")
	if n := client(next).maxOffset(topic, 0); n != 2 {
		t.Fatalf("the new master holds %d messages, want 2", n)
	}
}

// TestSecuredSlaveOfJava is an rmqd slave of a Java 5.3.3 master, both with ACL 2.0 (authBrokerConf): the
// master takes the slave's signed metadata sync requests (GET_ALL_TOPIC_CONFIG, GET_ALL_CONSUMER_OFFSET,
// GET_ALL_SUBSCRIPTIONGROUP_CONFIG...), so its topic, subscription group and consumer offset reach the
// slave. Java's verification of rmqd's signatures is the question. A Java broker's start takes up to a
// minute on a busy machine: it runs with RMQD_SECURITY_COMBOS=1.
func TestSecuredSlaveOfJava(t *testing.T) {
	if os.Getenv("RMQD_SECURITY_COMBOS") != "1" {
		t.Skip("runs with RMQD_SECURITY_COMBOS=1")
	}
	kinds := targetsFromEnv(t)
	if !containsKind(kinds, harness.KindApache) || !containsKind(kinds, harness.KindRmqd) {
		t.Skip("needs both targets (RMQD_TARGET=all)")
	}
	harness.RequireJars(t, "apache")
	const topic, group = "IT_sec_java_ms", "IT_sec_java_ms_g"
	conf := func(role, id string) map[string]string {
		c := haConf(role, id)
		maps.Copy(c, authBrokerConf())
		return c
	}
	master := harness.Start(t, harness.KindApache, harness.Options{BrokerConf: conf("ASYNC_MASTER", "0")})
	mr := newRawClient(t, master)
	mr.cred = &authSuper
	mr.createTopic(topic, 1)
	if resp := mr.invoke(codec.ReqUpdateAndCreateSubscriptiongroup, nil, []byte(`{"groupName":"`+group+`","consumeEnable":true}`),
		10*time.Second); resp.Code != codec.RespSuccess {
		t.Fatalf("create subscription group: code %d %q", resp.Code, resp.Remark)
	}
	for i := range 3 {
		if resp := mr.invoke(codec.ReqSendMessage, sendHeader(topic, 0, ""), []byte{byte('a' + i)}, 10*time.Second); resp.Code != codec.RespSuccess {
			t.Fatalf("send: code %d %q", resp.Code, resp.Remark)
		}
	}
	if resp := mr.invoke(codec.ReqUpdateConsumerOffset, map[string]string{"consumerGroup": group, "topic": topic,
		"queueId": "0", "commitOffset": "2"}, nil, 10*time.Second); resp.Code != codec.RespSuccess {
		t.Fatalf("commit offset: code %d %q", resp.Code, resp.Remark)
	}
	slave := harness.StartBroker(t, harness.KindRmqd, master.NamesrvAddr, harness.Options{BrokerConf: conf("SLAVE", "1")})
	sr := newRawClient(t, slave)
	sr.cred = &authSuper
	waitSlaveTopic(t, sr, topic)
	waitBody(t, "the slave's subscription groups", func() []byte {
		return sr.invoke(codec.ReqGetAllSubscriptiongroupConfig, nil, nil, 10*time.Second).Body
	}, func(b []byte) bool { return bytes.Contains(b, []byte(`"`+group+`"`)) })
	for deadline := time.Now().Add(30 * time.Second); sr.committedOffset(group, topic, 0) != 2; time.Sleep(300 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the slave's offset of %s on queue 0: %d, want 2", group, sr.committedOffset(group, topic, 0))
		}
	}
	if log, err := os.ReadFile(filepath.Join(slave.LogDir, "broker.log")); err == nil && bytes.Contains(log, []byte("slave sync")) {
		t.Fatalf("the slave logged a failed sync:\n%s", harness.Tail(filepath.Join(slave.LogDir, "broker.log"), 20))
	}
}
