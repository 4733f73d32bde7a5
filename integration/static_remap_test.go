package integration

import (
	"os"
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
	t.Run("plain", func(t *testing.T) { runStaticRemapped(t, securedVariant{}) })
	t.Run("acl2", func(t *testing.T) { runStaticRemapped(t, securedVariants["acl2"]) })
	if os.Getenv("RMQD_SECURITY_COMBOS") == "1" {
		t.Run("acl1", func(t *testing.T) { runStaticRemapped(t, acl1Variant(t)) })
	}
}

func runStaticRemapped(t *testing.T, v securedVariant) {
	const topic = "IT_static_remap"
	_, b, produce, remap := staticTopicTwoGroups(t, topic, v)
	sent := produce(10, "before")
	remap()
	// broker-b now leads both logical queues; the one moved starts at logical offset 10000 (blockSeqSize).
	r := newRawClient(t, b)
	r.cred = v.cred
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

	c := harness.RunJava(t, b, "5", "consume", append(v.javaFlags(), "--topic", topic, "--group", uniq("IT_static_remap_cg"),
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
// through a Java 5.3.3 producer; remap moves the topic to broker-b (`mqadmin remappingStaticTopic`). The
// name server and both groups run under v (securedVariants: ACL with the brokers' forwards to each other
// signed, or tls.server.mode=enforcing with the forwards on tls.enable), mqadmin and the producer signing
// with v.cred and on TLS under TLS (v.javaFlags).
func staticTopicTwoGroups(t *testing.T, topic string, v securedVariant) (a, b *harness.Target,
	produce func(n int, prefix string) []harness.Msg, remap func()) {
	t.Helper()
	if v.cred != nil {
		harness.WriteMqadmin4Home(t, filepath.Join(harness.LogDir(t), "java-home"), v.cred.AccessKey, v.cred.SecretKey)
	}
	jf := v.javaTLSFlags() // mqadmin signs with the tools.yml of its home
	ns := harness.StartNamesrv(t, harness.KindRmqd, harness.Options{NamesrvConf: v.namesrv})
	a = harness.StartBroker(t, harness.KindRmqd, ns.Addr, harness.Options{BrokerName: "broker-a", BrokerConf: v.broker})
	b = harness.StartBroker(t, harness.KindRmqd, ns.Addr, harness.Options{BrokerName: "broker-b", BrokerConf: v.broker})
	out := harness.Mqadmin(t, a, append([]string{"updateStaticTopic", "-t", topic, "-c", a.ClusterName, "-qn", "2"}, jf...)...)
	if !strings.Contains(out, "The new mapping data is written to file") {
		t.Fatalf("updateStaticTopic: %s", out)
	}
	produce = func(n int, prefix string) []harness.Msg {
		p := harness.RunJava(t, a, "5", "produce", append(v.javaFlags(), "--topic", topic, "--mode", "sync", "--count", strconv.Itoa(n),
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
