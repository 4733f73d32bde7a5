package integration

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"rmqd/codec"
	"rmqd/integration/harness"
)

// TestTimerStoreSwap hands a store with delivered and pending timer and delay-level messages from rmqd to the
// Apache 5.3.3 broker: Apache delivers the pending ones and none of those rmqd delivered again. rmqd writes
// Java's config/timercheck for it; before, Apache read rmq_sys_wheel_timer from its start and delivered
// every timer the commitlog held a second time. delayOffset.json has always been Java's. (The other way, rmqd
// starting from Apache's timercheck, is TestTimerStartsFromJavaCheckpoint's and, with revive checkpoints,
// TestPopStoreSwap's.)
func TestTimerStoreSwap(t *testing.T) {
	ns, opts := swapStore(t, "apache")
	const timerTopic, delayTopic = "IT_timer_swap", "IT_delay_swap"
	// Long enough for rmqd's stop and Apache's start (5-8 s here), so Apache's wheel delivers it.
	const pendingSec = 15
	timer := func(sec int) string { return "TIMER_DELAY_SEC\x01" + strconv.Itoa(sec) + "\x02" }
	level := func(l int) string { return "DELAY\x01" + strconv.Itoa(l) + "\x02" }
	send := func(r *rawClient, topic, body, props string) {
		t.Helper()
		resp := r.invoke(codec.ReqSendMessage, sendHeader(topic, 0, props), []byte(body), 10*time.Second)
		if resp.Code != codec.RespSuccess {
			t.Fatalf("send %s to %s: code %d %s", body, topic, resp.Code, resp.Remark)
		}
	}

	b1 := harness.StartBroker(t, harness.KindRmqd, ns.Addr, opts)
	r1 := newRawClient(t, b1)
	for _, topic := range []string{timerTopic, delayTopic} {
		r1.createTopic(topic, 1)
	}
	for _, b := range []string{"d0", "d1", "d2"} {
		send(r1, timerTopic, b, timer(1))
		send(r1, delayTopic, b, level(1)) // 1 s
	}
	waitMaxOffset(t, r1, timerTopic, 0, 3)
	waitMaxOffset(t, r1, delayTopic, 0, 3)
	send(r1, timerTopic, "pending", timer(pendingSec))
	send(r1, delayTopic, "pending", level(3)) // 10 s: overdue or not when Apache starts, it goes out once
	due := time.Now().Add(pendingSec * time.Second)
	stopBroker(t, b1)

	b2 := harness.StartBroker(t, harness.KindApache, ns.Addr, opts)
	r2 := newRawClient(t, b2)
	// One delivered again would come at once, when Apache reads it, well before pending is due.
	for deadline := due.Add(30 * time.Second); r2.maxOffset(timerTopic, 0) < 4 || r2.maxOffset(delayTopic, 0) < 4; {
		if time.Now().After(deadline) {
			t.Fatalf("Apache did not deliver the pending messages within 30 s of their time: %d timer and %d delay messages",
				r2.maxOffset(timerTopic, 0), r2.maxOffset(delayTopic, 0))
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // one more delivered in the same pass would show now
	for _, topic := range []string{timerTopic, delayTopic} {
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
			t.Errorf("after the swap %s holds %s, want d0,d1,d2,pending (each once)", topic, got)
		}
	}
}
