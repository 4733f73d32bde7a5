package integration

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"rmqd/codec"
	"rmqd/integration/harness"
)

// deliveryConf is what both brokers get for the delivery tests: the default delay levels (1 s, 5 s, ...),
// the timer wheel on with Java's 1 s precision, and quick transaction checks (set by the harness).
var deliveryConf = map[string]string{
	"timerWheelEnable": "true",
	"timerPrecisionMs": "1000",
}

// TestDelivery checks delivery guarantees against each selected target: delay levels 1 and 2 and a 3 s
// timer message arrive in their window (not before), a consumer's failures come back through %RETRY% with
// Java's properties, and past maxReconsumeTimes the message lands in %DLQ%<group>, readable there.
// Transactions (commit, rollback, unknown then checked) are the matrix scenario java5-transaction.
func TestDelivery(t *testing.T) {
	harness.RequireJars(t, "apache", "client5", "client4")
	for _, kind := range targetsFromEnv(t) {
		t.Run(kind, func(t *testing.T) {
			tg := harness.Start(t, kind, harness.Options{BrokerConf: deliveryConf})
			// The cases wait on the clock more than on the CPU: run them side by side.
			t.Run("go-delay-levels", func(t *testing.T) { t.Parallel(); deliveryDelayLevels(t, tg) })
			t.Run("go-timer-3s", func(t *testing.T) { t.Parallel(); deliveryTimer(t, tg) })
			t.Run("java5-retry-then-dlq", func(t *testing.T) { t.Parallel(); deliveryRetryDLQ(t, tg) })
		})
	}
}

// lateness is when the delivered copy was stored, relative to the original's birth.
func lateness(m harness.Msg) time.Duration {
	return time.Duration(m.StoreTimestamp-m.BornTimestamp) * time.Millisecond
}

func deliveryDelayLevels(t *testing.T, tg *harness.Target) {
	for _, c := range []struct {
		level    string
		min, max time.Duration
	}{{"1", time.Second, 3 * time.Second}, {"2", 5 * time.Second, 7500 * time.Millisecond}} {
		topic := "IT_delay_level_" + c.level
		sent := harness.RunGoProduce(t, tg, harness.GoProduce{Topic: topic, Count: 3, Props: map[string]string{"DELAY": c.level}})
		onlyOK(t, sent)
		waitRoute(t, tg, topic)
		got := harness.RunGoConsume(t, tg, harness.GoConsume{Topic: topic, Group: topic + "_cg", Count: len(sent)})
		sameMessages(t, sent, got)
		for _, m := range got {
			if d := lateness(m); d < c.min || d > c.max {
				t.Errorf("delay level %s: message %s stored %v after birth, want %v..%v", c.level, m.MsgID, d, c.min, c.max)
			}
			// Apache keeps DELAY: ScheduleMessageService builds the stored properties string before it clears it.
			if m.Properties["REAL_TOPIC"] != topic || m.Properties["DELAY"] != c.level {
				t.Errorf("delay level %s: properties %v, want REAL_TOPIC=%s and DELAY=%s", c.level, m.Properties, topic, c.level)
			}
		}
	}
}

func deliveryTimer(t *testing.T, tg *harness.Target) {
	const topic = "IT_timer_3s"
	sent := harness.RunGoProduce(t, tg, harness.GoProduce{Topic: topic, Count: 3, Props: map[string]string{"TIMER_DELAY_SEC": "3"}})
	onlyOK(t, sent)
	waitRoute(t, tg, topic)
	got := harness.RunGoConsume(t, tg, harness.GoConsume{Topic: topic, Group: topic + "_cg", Count: len(sent)})
	sameMessages(t, sent, got)
	for _, m := range got {
		// 1 s precision: the deliver time rounds down to a second, the wheel slot is read once the clock
		// has passed it by 1 s, so 3 s becomes 3..4 s (slack for a loaded machine).
		if d := lateness(m); d < 3*time.Second || d > 5500*time.Millisecond {
			t.Errorf("timer: message %s stored %v after birth, want 3s..4s", m.MsgID, d)
		}
		if m.Properties["TIMER_OUT_MS"] == "" || m.Properties["REAL_TOPIC"] != topic {
			t.Errorf("timer: properties %v, want TIMER_OUT_MS and REAL_TOPIC=%s", m.Properties, topic)
		}
	}
}

// deliveryRetryDLQ: a 5.x push consumer with maxReconsumeTimes 2 fails every delivery (send-back delay
// level 1). Deliveries 0..2 come through %RETRY%<group>; the third send-back goes to %DLQ%<group>, which a
// Go consumer then reads.
func deliveryRetryDLQ(t *testing.T, tg *harness.Target) {
	const topic, group = "IT_dlq", "IT_dlq_cg"
	sent := harness.RunGoProduce(t, tg, harness.GoProduce{Topic: topic, Count: 1, KeyPrefix: "k-dlq", Props: map[string]string{"color": "red"}})
	onlyOK(t, sent)
	// Never succeeds (--reconsume 99): it runs until the message is in the DLQ (the stop file) or out of its
	// --timeout. The retries come through %RETRY%group, whose route it polls every 0.3 s (java5-sendback-retry says why).
	stop := filepath.Join(t.TempDir(), "in-dlq")
	done := goJava(t, tg, "5", "consume", "--topic", topic, "--group", group,
		"--reconsume", "99", "--max-reconsume", "2", "--retry-delay-level", "1", "--count", "1", "--timeout", "25000",
		"--poll-namesrv", "300", "--until", stop)
	r := newRawClient(t, tg)
	var out javaOutcome
	for waiting := true; waiting; {
		select {
		case out = <-done:
			waiting = false
		case <-time.After(500 * time.Millisecond):
			resp := r.invoke(codec.ReqGetMaxOffset, map[string]string{"topic": "%DLQ%" + group, "queueId": "0"}, nil, 5*time.Second)
			if v, _ := resp.Ext.Get("offset"); resp.Code == codec.RespSuccess && v != "0" {
				if err := os.WriteFile(stop, nil, 0o644); err != nil {
					t.Fatalf("stop the consumer: %v", err)
				}
				out, waiting = <-done, false
			}
		}
	}
	res, rerr := out.res, out.err
	if res == nil {
		t.Fatalf("java consumer: %v", rerr)
	}
	byTimes := map[int]harness.Msg{}
	for _, r := range res.Received {
		if r.Outcome != "RECONSUME_LATER" {
			t.Errorf("delivery %d: outcome %q", r.ReconsumeTimes, r.Outcome)
		}
		byTimes[r.ReconsumeTimes] = r
		t.Logf("delivery reconsumeTimes=%d topic=%s outcome=%s", r.ReconsumeTimes, r.Topic, r.Outcome)
	}
	if len(byTimes) != 3 || len(res.Received) != 3 {
		t.Fatalf("deliveries by reconsumeTimes %v (%d in all), want exactly 0, 1, 2", keys(byTimes), len(res.Received))
	}
	first := byTimes[0]
	for n := 1; n <= 2; n++ {
		r := byTimes[n]
		if r.Topic != topic || r.MsgID != sent[0].MsgID || r.BodySha256 != sent[0].BodySha256 || r.Properties["color"] != "red" {
			t.Errorf("retry %d: topic %q msgId %q (want %q), body or user property changed: %v", n, r.Topic, r.MsgID, sent[0].MsgID, r.Properties)
		}
		if r.Properties["RETRY_TOPIC"] != topic {
			t.Errorf("retry %d: RETRY_TOPIC %q, want %q", n, r.Properties["RETRY_TOPIC"], topic)
		}
		if r.Properties["ORIGIN_MESSAGE_ID"] != first.OffsetMsgID {
			t.Errorf("retry %d: ORIGIN_MESSAGE_ID %q, want the first delivery's offset id %q", n, r.Properties["ORIGIN_MESSAGE_ID"], first.OffsetMsgID)
		}
		t.Logf("retry %d properties: %v", n, r.Properties)
	}
	waitRoute(t, tg, "%DLQ%"+group)
	dlq := harness.RunGoConsume(t, tg, harness.GoConsume{Topic: "%DLQ%" + group, Group: "IT_dlq_reader", Count: 1, Timeout: 60 * time.Second})
	d := dlq[0]
	if d.MsgID != sent[0].MsgID || d.BodySha256 != sent[0].BodySha256 || d.ReconsumeTimes != 3 || d.Topic != "%DLQ%"+group {
		t.Errorf("DLQ message: topic %q msgId %q reconsumeTimes %d, want %%DLQ%%%s, %q, 3", d.Topic, d.MsgID, d.ReconsumeTimes, group, sent[0].MsgID)
	}
	if d.Properties["RETRY_TOPIC"] != topic || d.Properties["ORIGIN_MESSAGE_ID"] != first.OffsetMsgID || d.Properties["color"] != "red" {
		t.Errorf("DLQ message properties %v: want RETRY_TOPIC=%s ORIGIN_MESSAGE_ID=%s color=red", d.Properties, topic, first.OffsetMsgID)
	}
	t.Logf("DLQ properties: %v", d.Properties)
}

func keys[V any](m map[int]V) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	return out
}

// waitRoute waits for a topic a send just created. Apache registers it with the name server before it
// answers the send; a lag here means a client that subscribes right after sending fails to start.
func waitRoute(t *testing.T, tg *harness.Target, topic string) {
	t.Helper()
	if d := tg.WaitRoute(t, topic, 30*time.Second); d > 50*time.Millisecond {
		t.Logf("route of %s served %v after the send returned", topic, d.Round(time.Millisecond))
	}
}

// sameMessages: every sent message delivered, matched by msgId, with its body; extra copies are logged
// (at least once).
func sameMessages(t *testing.T, sent, got []harness.Msg) {
	t.Helper()
	byID := map[string]harness.Msg{}
	for _, g := range got {
		if _, dup := byID[g.MsgID]; dup {
			t.Logf("duplicate delivery of %s", g.MsgID)
		}
		byID[g.MsgID] = g
	}
	for _, s := range sent {
		g, ok := byID[s.MsgID]
		switch {
		case !ok:
			t.Errorf("message #%d %s not delivered", s.Index, s.MsgID)
		case g.BodySha256 != s.BodySha256 || g.Topic != s.Topic || g.Keys != s.Keys:
			t.Errorf("message #%d %s: topic %q keys %q body %s, sent %q %q %s", s.Index, s.MsgID, g.Topic, g.Keys, g.BodySha256, s.Topic, s.Keys, s.BodySha256)
		}
	}
	if len(byID) != len(sent) {
		t.Errorf("%d distinct messages delivered, %d sent", len(byID), len(sent))
	}
}
