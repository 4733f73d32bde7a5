package integration

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"rmqd/codec"
	"rmqd/integration/harness"
)

// TestActingMasterDelayedMessage is slave acting master (enableSlaveActingMaster, enableRemoteEscape): a
// delayed message is taken by the master of broker-a and replicated to its slave; the master is killed
// before it is due; the slave, now the group's lowest id, runs the schedule service and sends the due
// message to broker-b's master (the escape bridge), where a consumer reads it. The master then comes back
// and does not deliver it again (pre-online). rmqd only: it is the broker side under test.
//
// Under each of moreSecuredVariants as well (in parallel: the runs mostly wait for the delay): the slave's
// escape to broker-b, and the returning master's pre-online requests to the slave, are signed (acl2) or go
// over TLS to brokers and a name server that refuse plain peers (tls).
func TestActingMasterDelayedMessage(t *testing.T) {
	if !containsKind(targetsFromEnv(t), harness.KindRmqd) {
		t.Skip("rmqd only")
	}
	variants := moreSecuredVariants(t)
	variants["plain"] = securedVariant{}
	runVariants(t, variants, runActingDelayed)
}

func runActingDelayed(t *testing.T, v securedVariant) {
	const topic = "IT_acting_delay"
	extra := map[string]string{"totalReplicas": "2"} // the pair: a returning master goes through pre-online
	maps.Copy(extra, v.broker)
	conf := actingConf(extra)
	master, other := startActingGroupsNS(t, conf, v.namesrv)
	client := v.rawClients(t)
	mr, br := client(master), client(other)
	mr.createTopic(topic, 4)
	br.createTopic(topic, 1)
	slave := harness.StartBroker(t, harness.KindRmqd, master.NamesrvAddr, harness.Options{BrokerConf: conf("SLAVE", "1")})
	sr := client(slave)
	waitSlaveTopic(t, sr, topic)

	// Level 4 is 30 s: time enough to see it replicated and to kill the master before it is due.
	body := []byte("acting-delayed")
	resp := mr.invoke(codec.ReqSendMessage, sendHeader(topic, 0, "DELAY\x014\x02UNIQ_KEY\x01IT_ACTING_1\x02"), body,
		10*time.Second)
	if resp.Code != codec.RespSuccess {
		t.Fatalf("send the delayed message: code %d %q", resp.Code, resp.Remark)
	}
	sent := time.Now()
	waitSameCommitLog(t, master, slave)
	master.KillBroker(t)
	if time.Since(sent) > 25*time.Second {
		t.Skipf("the machine is too slow: the master was killed %v after the send", time.Since(sent))
	}

	// Delivered by the slave to broker-b, once: nothing lands in broker-a.
	for deadline := time.Now().Add(90 * time.Second); br.maxOffset(topic, 0) == 0; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the delayed message never reached broker-b (%v after the send)", time.Since(sent))
		}
	}
	pullAll(t, br, topic, []int{0}, func(int) []byte { return body })
	if n := queueTotal(sr, topic, 4); n != 0 {
		t.Fatalf("broker-a's slave holds %d messages in %s, want 0", n, topic)
	}
	if d := time.Since(sent); d < 29*time.Second {
		t.Fatalf("delivered %v after the send, before its 30 s delay", d)
	}

	// The master comes back (RestartBroker waits for its registration): pre-online took the slave's delay
	// offsets first, so its schedule service does not deliver the message again.
	master.RestartBroker(t)
	time.Sleep(5 * time.Second)
	if n := queueTotal(client(master), topic, 4); n != 0 {
		t.Fatalf("the returning master delivered the delayed message again: %d in %s", n, topic)
	}
	if n := br.maxOffset(topic, 0); n != 1 {
		t.Fatalf("broker-b holds %d messages, want 1", n)
	}
}

// TestActingMasterPopEscape is POP through a slave acting master, two groups (broker-a: master and slave;
// broker-b: master), all with enableSlaveActingMaster and enableRemoteEscape. broker-a's master is killed;
// through its slave a raw client pops m0..m3, acks m0, batch-acks m1, makes m2 visible again in a second
// (CHANGE_INVISIBLE_TIME) and leaves m3. The slave writes these checkpoints and acks as Java's EscapeBridge
// does (putMessageToSpecificQueue): to broker-b's revive topic, on one queue. broker-b revives m2 and m3
// into its retry topic (reading them from broker-a's group), each once, where a POP of broker-b gets them;
// the acked m0 and m1 are not revived. rmqd only: it is the broker side under test. With ACL 2.0 on every
// broker (acl2), broker-b takes the revive records only because the slave signs them with its
// innerClientAuthenticationCredentials, and the clients sign as the super user. With every broker and the
// name server in tls.server.mode=enforcing and the brokers on tls.enable (tls), the slave's copies from its
// master and its records to broker-b go over TLS, as plain peers are refused. RMQD_SECURITY_COMBOS=1 adds
// ACL 1.0 (acl1) and mutual TLS (mtls): moreSecuredVariants.
func TestActingMasterPopEscape(t *testing.T) {
	if !containsKind(targetsFromEnv(t), harness.KindRmqd) {
		t.Skip("rmqd only")
	}
	variants := moreSecuredVariants(t)
	variants["plain"] = securedVariant{}
	runVariants(t, variants, runActingPopEscape)
}

func runActingPopEscape(t *testing.T, v securedVariant) {
	const topic, group = "IT_acting_popx", "IT_acting_popx_g"
	const invisible = 8 * time.Second
	reviveTopic := "rmq_sys_REVIVE_LOG_DefaultCluster"
	conf := actingConf(v.broker)
	master, other := startActingGroupsNS(t, conf, v.namesrv)
	client := v.rawClients(t)
	mr, br := client(master), client(other)
	if v.tlsOn() {
		// enforcing: a plain peer is refused, so whatever reaches broker-b below came over TLS
		requirePlainRefused(t, other.BrokerAddr)
	}
	mr.createTopic(topic, 1)
	br.createTopic(topic, 1)
	for i := range 4 {
		mr.sendPop(topic, 0, fmt.Sprintf("m%d", i))
	}
	waitMaxOffset(t, mr, topic, 0, 4)
	slave := harness.StartBroker(t, harness.KindRmqd, master.NamesrvAddr, harness.Options{BrokerConf: conf("SLAVE", "1")})
	sr := client(slave)
	waitSlaveTopic(t, sr, topic)
	waitSameCommitLog(t, master, slave)
	master.KillBroker(t)

	// The slave pops once it acts for its master and knows broker-b's revive queues (group sync, 1 s).
	popped := sr.popUntil(topic, group, 4, invisible, 30*time.Second)
	due := time.Now().Add(invisible)
	slices.SortFunc(popped, func(a, b poppedMsg) int { return strings.Compare(a.body, b.body) })
	requireBodies(t, "popped from the slave", popped, "m0,m1,m2,m3")
	ackAll(t, sr, topic, group, pick(popped, "m0"))
	batchAck(t, sr, topic, group, pick(popped, "m1"))
	changeInvisible(t, sr, topic, group, pick(popped, "m2"))
	if n := queueTotal(sr, reviveTopic, 8); n != 0 {
		t.Fatalf("the slave holds %d revive records, want 0 (they go to broker-b)", n)
	}

	got := collectActingRevived(t, br, topic, group, 2, due)
	slices.SortFunc(got, func(a, b poppedMsg) int { return strings.Compare(a.body, b.body) })
	requireBodies(t, "revived by broker-b", got, "m2,m3")
	requireRetries(t, "revived", got, topic, 1)
	if n := queueTotal(br, reviveTopic, 8); n == 0 {
		t.Fatalf("broker-b's revive topic is empty")
	}
	ackAll(t, br, topic, group, got...)
}

// collectActingRevived pops until want messages came back, then until a few seconds after due (every
// checkpoint's revive time), so an acked message revived would be seen too.
func collectActingRevived(t *testing.T, r *rawClient, topic, group string, want int, due time.Time) []poppedMsg {
	t.Helper()
	got := r.popUntil(topic, group, want, time.Minute, 40*time.Second)
	for end := due.Add(5 * time.Second); time.Now().Before(end); {
		got = append(got, r.popUntil(topic, group, 1, time.Minute, time.Until(end))...)
	}
	return got
}

// actingConf is haConf with slave acting master and remote escape on, and extra on top.
func actingConf(extra map[string]string) func(role, id string) map[string]string {
	return func(role, id string) map[string]string {
		c := haConf(role, id)
		c["enableSlaveActingMaster"] = "true"
		c["enableRemoteEscape"] = "true"
		maps.Copy(c, extra)
		return c
	}
}

// startActingGroupsNS starts a name server supporting acting masters (nsExtra in its conf) with broker-a's
// master (split from it) and broker-b's master; the caller starts broker-a's slave when its test needs it.
func startActingGroupsNS(t *testing.T, conf func(role, id string) map[string]string, nsExtra map[string]string) (master, other *harness.Target) {
	t.Helper()
	nsConf := map[string]string{"supportActingMaster": "true"}
	maps.Copy(nsConf, nsExtra)
	master = harness.Start(t, harness.KindRmqd, harness.Options{Split: true, BrokerConf: conf("ASYNC_MASTER", "0"),
		NamesrvConf: nsConf})
	other = harness.StartBroker(t, harness.KindRmqd, master.NamesrvAddr,
		harness.Options{BrokerName: "broker-b", BrokerConf: conf("ASYNC_MASTER", "0")})
	return master, other
}
