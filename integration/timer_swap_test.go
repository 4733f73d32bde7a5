package integration

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"rmqd/codec"
	"rmqd/integration/harness"
)

// TestTimerStoreSwap hands a store with delivered and pending timer messages from rmqd to the Apache 5.3.3
// broker: Apache delivers the pending one at its time and none of those rmqd delivered again. rmqd writes
// Java's config/timercheck for it; before, Apache read rmq_sys_wheel_timer from its start and delivered
// every timer the commitlog held a second time. (The other way, rmqd starting from Apache's timercheck, is
// TestTimerStartsFromJavaCheckpoint's and, with revive checkpoints, TestPopStoreSwap's.)
func TestTimerStoreSwap(t *testing.T) {
	ns, opts := swapStore(t, "apache")
	const topic = "IT_timer_swap"
	// Long enough for rmqd's stop and Apache's start (5-8 s here), so Apache's wheel delivers it.
	const pendingSec = 15
	sendTimer := func(r *rawClient, body string, delaySec int) {
		t.Helper()
		props := "TIMER_DELAY_SEC\x01" + strconv.Itoa(delaySec) + "\x02"
		resp := r.invoke(codec.ReqSendMessage, sendHeader(topic, 0, props), []byte(body), 10*time.Second)
		if resp.Code != codec.RespSuccess {
			t.Fatalf("send %s: code %d %s", body, resp.Code, resp.Remark)
		}
	}

	b1 := harness.StartBroker(t, harness.KindRmqd, ns.Addr, opts)
	r1 := newRawClient(t, b1)
	r1.createTopic(topic, 1)
	for _, b := range []string{"d0", "d1", "d2"} {
		sendTimer(r1, b, 1)
	}
	waitMaxOffset(t, r1, topic, 0, 3)
	sendTimer(r1, "pending", pendingSec)
	due := time.Now().Add(pendingSec * time.Second)
	stopBroker(t, b1)

	b2 := harness.StartBroker(t, harness.KindApache, ns.Addr, opts)
	r2 := newRawClient(t, b2)
	// A timer delivered again would come at once, when Apache's wheel reads it, well before pending is due.
	for deadline := due.Add(30 * time.Second); r2.maxOffset(topic, 0) < 4; {
		if time.Now().After(deadline) {
			t.Fatalf("Apache did not deliver the pending timer within 30 s of its time: %d messages", r2.maxOffset(topic, 0))
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // one more delivered in the same pass would show now
	var bodies []string
	for off := int64(0); ; {
		msgs, next, ok := r2.pullOnce("IT_timer_swap_g", topic, 0, off)
		if !ok || len(msgs) == 0 {
			break
		}
		for _, m := range msgs {
			bodies = append(bodies, string(m.Body))
		}
		off = next
	}
	if got := strings.Join(bodies, ","); got != "d0,d1,d2,pending" {
		t.Fatalf("after the swap the topic holds %s, want d0,d1,d2,pending (each once)", got)
	}
}
