package integration

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"rmqd/codec"
	"rmqd/integration/harness"
)

// TestStaticTopicRemapped moves a static topic's logical queue to another broker group with `mqadmin
// remappingStaticTopic` (which reads the old leader's max offsets and writes the new mappings in three
// steps) and checks that a Java 5.3.3 push consumer of a new group gets every message, those sent before the
// move (read by the new leader from the old one, forwarded) and after it (from logical offset 10000 on).
// With ACL 2.0 on both groups (acl2) the clients and mqadmin sign as the super user, and the forwards
// between the brokers sign with their innerClientAuthenticationCredentials.
//
//	RMQD_TARGET=rmqd go test -count=1 -run TestStaticTopicRemapped ./integration/
func TestStaticTopicRemapped(t *testing.T) {
	harness.RequireJars(t, "mqadmin", "client5")
	if !containsKind(targetsFromEnv(t), harness.KindRmqd) {
		t.Skip("rmqd only (RMQD_TARGET=rmqd)")
	}
	t.Run("plain", func(t *testing.T) { runStaticRemapped(t, nil) })
	t.Run("acl2", func(t *testing.T) { runStaticRemapped(t, &authSuper) })
}

func runStaticRemapped(t *testing.T, cred *primitive.Credentials) {
	const topic = "IT_static_remap"
	_, b, produce, remap := staticTopicTwoGroups(t, topic, cred, false)
	sent := produce(10, "before")
	remap()
	// broker-b now leads both logical queues; the one moved starts at logical offset 10000 (blockSeqSize).
	r := newRawClient(t, b)
	r.cred = cred
	resp := r.invoke(codec.ReqGetTopicConfig, map[string]string{"topic": topic, "lo": "true"}, nil, 10*time.Second)
	if resp.Code != codec.RespSuccess || !strings.Contains(string(resp.Body), `"logicOffset":10000`) {
		t.Fatalf("GET_TOPIC_CONFIG %s on broker-b: code %d %s body %s", topic, resp.Code, resp.Remark, resp.Body)
	}
	after := produce(10, "after")
	moved := 0
	for _, s := range after {
		if s.QueueOffset >= 10000 {
			moved++
		}
	}
	if moved == 0 {
		t.Fatalf("no send after the move answered a logical offset from 10000: %+v", after)
	}
	sent = append(sent, after...)

	c := harness.RunJava(t, b, "5", "consume", append(javaCred(cred), "--topic", topic, "--group", uniq("IT_static_remap_cg"),
		"--count", strconv.Itoa(len(sent)), "--timeout", "90000")...)
	byID := map[string]harness.Msg{}
	for _, s := range sent {
		byID[s.MsgID] = s
	}
	received := c.Received
	for i := range received {
		if received[i].BrokerName != "__syslo__global__" {
			t.Fatalf("delivery %s from broker %q, want the logical queues' __syslo__global__", received[i].MsgID, received[i].BrokerName)
		}
		received[i].BrokerName = byID[received[i].MsgID].BrokerName
	}
	expectDelivered(t, sent, received, nil)
}

// staticTopicTwoGroups starts a name server and two rmqd broker groups, broker-a and broker-b, and makes topic
// a static topic of two logical queues on broker-a (`mqadmin updateStaticTopic`). produce sends n messages
// through a Java 5.3.3 producer; remap moves the topic to broker-b (`mqadmin remappingStaticTopic`). With
// cred, both groups run ACL 2.0 (authBrokerConf) and mqadmin and the producer sign with cred. With tlsOn,
// the name server and both groups run tls.server.mode=enforcing, the brokers' own requests (forwards
// between them) on tls.enable, and mqadmin and the producer with -Dtls.enable=true (javaFlags).
func staticTopicTwoGroups(t *testing.T, topic string, cred *primitive.Credentials, tlsOn bool) (a, b *harness.Target,
	produce func(n int, prefix string) []harness.Msg, remap func()) {
	t.Helper()
	conf, nsConf := map[string]string{}, map[string]string{}
	if cred != nil {
		conf = authBrokerConf()
		harness.WriteMqadmin4Home(t, filepath.Join(harness.LogDir(t), "java-home"), cred.AccessKey, cred.SecretKey)
	}
	if tlsOn {
		conf["tls.server.mode"], conf["tls.enable"], nsConf["tls.server.mode"] = "enforcing", "true", "enforcing"
	}
	jf := javaFlags(nil, tlsOn) // mqadmin signs with the tools.yml of its home
	ns := harness.StartNamesrv(t, harness.KindRmqd, harness.Options{NamesrvConf: nsConf})
	a = harness.StartBroker(t, harness.KindRmqd, ns.Addr, harness.Options{BrokerName: "broker-a", BrokerConf: conf})
	b = harness.StartBroker(t, harness.KindRmqd, ns.Addr, harness.Options{BrokerName: "broker-b", BrokerConf: conf})
	out := harness.Mqadmin(t, a, append([]string{"updateStaticTopic", "-t", topic, "-c", a.ClusterName, "-qn", "2"}, jf...)...)
	if !strings.Contains(out, "The new mapping data is written to file") {
		t.Fatalf("updateStaticTopic: %s", out)
	}
	produce = func(n int, prefix string) []harness.Msg {
		p := harness.RunJava(t, a, "5", "produce", append(javaFlags(cred, tlsOn), "--topic", topic, "--mode", "sync", "--count", strconv.Itoa(n),
			"--size", "100", "--body-prefix", prefix, "--keys", prefix)...)
		if len(p.Sent) != n {
			t.Fatalf("produced %d of %d: %v", len(p.Sent), n, p.Errors)
		}
		onlyOK(t, p.Sent)
		return p.Sent
	}
	remap = func() {
		out := harness.Mqadmin(t, a, append([]string{"remappingStaticTopic", "-t", topic, "-b", "broker-b"}, jf...)...)
		if !strings.Contains(out, "The old mapping data is written to file") || strings.Contains(out, "Exception") {
			t.Fatalf("remappingStaticTopic: %s", out)
		}
	}
	return a, b, produce, remap
}

// javaCred is the runner's flags that make a Java client sign with cred (none for nil).
func javaCred(cred *primitive.Credentials) []string {
	if cred == nil {
		return nil
	}
	return []string{"--ak", cred.AccessKey, "--sk", cred.SecretKey}
}

// javaFlags is javaCred plus -Dtls.enable=true when tlsOn: a Java client or mqadmin for a name server and
// brokers in tls.server.mode=enforcing.
func javaFlags(cred *primitive.Credentials, tlsOn bool) []string {
	f := javaCred(cred)
	if tlsOn {
		f = append(f, "-Dtls.enable=true")
	}
	return f
}
