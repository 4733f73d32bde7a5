package integration

import (
	"strconv"
	"strings"
	"testing"
	"time"

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

	b1 := harness.StartBroker(t, harness.KindRmqd, ns.Addr, opts)
	r1 := newRawClient(t, b1)
	for _, topic := range []string{timerTopic, delayTopic} {
		r1.createTopic(topic, 1)
	}
	for _, b := range []string{"d0", "d1", "d2"} {
		r1.sendOK(timerTopic, 0, timer(1), b)
		r1.sendOK(delayTopic, 0, level(1), b) // 1 s
	}
	waitMaxOffset(t, r1, timerTopic, 0, 3)
	waitMaxOffset(t, r1, delayTopic, 0, 3)
	r1.sendOK(timerTopic, 0, timer(pendingSec), "pending")
	r1.sendOK(delayTopic, 0, level(3), "pending") // 10 s: overdue or not when Apache starts, it goes out once
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
		for _, m := range r2.pullToEnd("IT_timer_swap_g", topic, 0, 0) {
			bodies = append(bodies, string(m.Body))
		}
		if got := strings.Join(bodies, ","); got != "d0,d1,d2,pending" {
			t.Errorf("after the swap %s holds %s, want d0,d1,d2,pending (each once)", topic, got)
		}
	}
}
