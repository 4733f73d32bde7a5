package integration

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"rmqd/integration/harness"
)

// TestStaticTopicRemappedReset resets a group's offsets on a static topic whose logical queues moved to another
// broker group (`mqadmin remappingStaticTopic`) with `mqadmin resetOffsetByTime` (server-side reset, the 5.x
// default) to a time before the move: the leader of each logical queue finds the time in the old broker's item,
// so a Java 5.3.3 push consumer of the group, which had consumed everything, gets every message again, those
// held by the old broker included. The broker that leads nothing answers an empty table.
//
// With the name server and both groups in tls.server.mode=enforcing (tls), the reads of the old broker's item
// and the offsets committed on it go over TLS between the brokers, and mqadmin and the clients use TLS. With
// RMQD_SECURITY_COMBOS=1, the same with certificates of a CA verified both ways between the brokers (mtls).
//
//	RMQD_TARGET=rmqd go test -count=1 -run TestStaticTopicRemappedReset ./integration/
func TestStaticTopicRemappedReset(t *testing.T) {
	harness.RequireJars(t, "mqadmin", "client5")
	if !containsKind(targetsFromEnv(t), harness.KindRmqd) {
		t.Skip("rmqd only (RMQD_TARGET=rmqd)")
	}
	t.Run("plain", func(t *testing.T) { runStaticRemappedReset(t, securedVariant{}) })
	t.Run("tls", func(t *testing.T) { runStaticRemappedReset(t, securedVariants["tls"]) })
	if os.Getenv("RMQD_SECURITY_COMBOS") == "1" {
		t.Run("mtls", func(t *testing.T) { runStaticRemappedReset(t, mtlsVariant(t)) })
	}
}

func runStaticRemappedReset(t *testing.T, v securedVariant) {
	const topic = "IT_static_reset"
	jf := v.javaFlags()
	a, b, produce, remap := staticTopicTwoGroups(t, topic, v)
	start := time.Now().Add(-time.Second).UnixMilli()
	sent := produce(10, "before")
	remap()
	sent = append(sent, produce(10, "after")...)

	group := uniq("IT_static_reset_cg")
	consume := func() []harness.Msg {
		c := harness.RunJava(t, b, "5", "consume", append(jf, "--topic", topic, "--group", group,
			"--count", strconv.Itoa(len(sent)), "--timeout", "120000")...)
		received := c.Received
		byID := map[string]harness.Msg{}
		for _, s := range sent {
			byID[s.MsgID] = s
		}
		for i := range received {
			received[i].BrokerName = byID[received[i].MsgID].BrokerName
		}
		return received
	}
	expectDelivered(t, sent, consume(), nil)

	// Offline consumer: each leader keeps the reset for the group's next pull and query.
	out := harness.Mqadmin(t, a, append([]string{"resetOffsetByTime", "-g", group, "-t", topic, "-s", fmt.Sprint(start)}, jf...)...)
	if !strings.Contains(out, "start reset consumer offset by specified") || strings.Contains(out, "Exception") {
		t.Fatalf("resetOffsetByTime: %s", out)
	}
	// broker-b leads both logical queues and moves each to its first message, logical offset 0 (broker-a's item).
	for _, q := range []string{"0", "1"} {
		found := false
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[0] == "broker-b" && f[1] == q && f[2] == "0" {
				found = true
			}
		}
		if !found {
			t.Fatalf("resetOffsetByTime: no line broker-b %s 0:\n%s", q, out)
		}
	}
	expectDelivered(t, sent, consume(), nil)

	// consumerProgress reads every broker's physical offsets (GET_CONSUME_STATS) and shows them per logical
	// queue; mqadmin 5.3.3 converts the broker offset to a logical one but not the consumer offset (the moved
	// queue shows 5 for 10005), against a Java broker too.
	out = harness.Mqadmin(t, a, append([]string{"consumerProgress", "-g", group}, jf...)...)
	if strings.Contains(out, "Exception") || !strings.Contains(out, "__syslo__global__") {
		t.Fatalf("consumerProgress: %s", out)
	}
	t.Logf("consumerProgress after the reset:\n%s", out)
}
