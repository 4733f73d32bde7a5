package delivery

import (
	"strconv"
	"strings"
	"testing"

	"rmqd/codec"
)

// FuzzParkTimer: a producer's TIMER_DELIVER_MS / TIMER_DELAY_SEC /
// TIMER_DELAY_MS and DELAY properties are whatever it sent. Parking never
// panics; a parked message keeps its destination in REAL_TOPIC/REAL_QID with
// a TIMER_OUT_MS that parses, a delay level parks in a schedule queue that
// exists, and the view passed in stays in step with the properties.
func FuzzParkTimer(f *testing.F) {
	f.Add("TIMER_DELIVER_MS\x011893456000000\x02", "T", int32(0), int64(86400000))
	f.Add("TIMER_DELAY_SEC\x0110\x02", "T", int32(0), int64(86400000))
	f.Add("TIMER_DELAY_MS\x015000\x02TIMER_DELAY_SEC\x01x\x02", "T", int32(8), int64(86400000))
	f.Add("TIMER_DELAY_SEC\x019223372036854775807\x02", "T", int32(0), int64(-1))
	f.Add("DELAY\x013\x02TIMER_DELAY_MS\x01100\x02", "T", int32(0), int64(86400000))
	f.Add("DELAY\x0199\x02", "T", int32(4), int64(0))
	f.Add("DELAY\x01-1\x02TIMER_DELIVER_MS\x011\x02TIMER_DEL_UNIQKEY\x01x\x02", TopicTimer, int32(0), int64(1))
	f.Add("TIMER_OUT_MS\x011\x02TIMER_DELIVER_MS\x011\x02", "T", int32(0), int64(1))
	const levels = 18
	f.Fuzz(func(t *testing.T, props, topic string, sysFlag int32, maxDelayMs int64) {
		if strings.ContainsAny(topic, "\x01\x02") {
			t.Skip() // the send path refuses such a topic name before parking
		}
		_ = CheckTimer(ptr(codec.ViewProperties(props)), maxDelayMs)

		msg := codec.Message{Topic: topic, QueueID: 3, SysFlag: sysFlag, Properties: props}
		pv := codec.ViewProperties(props)
		ok := ParkTimer(&msg, &pv, maxDelayMs)
		inStep(t, &pv, msg.Properties)
		if ok && msg.Topic == TopicTimer && topic != TopicTimer {
			if rt, _ := pv.Get(codec.PropRealTopic); rt != topic {
				t.Fatalf("parked with REAL_TOPIC %q, want %q", rt, topic)
			}
			if _, err := strconv.ParseInt(mustGet(t, &pv, codec.PropTimerOutMs), 10, 64); err != nil {
				t.Fatalf("TIMER_OUT_MS: %v", err)
			}
		}

		msg = codec.Message{Topic: topic, QueueID: 3, SysFlag: sysFlag, Properties: props}
		pv = codec.ViewProperties(props)
		ParkDelay(&msg, &pv, levels)
		inStep(t, &pv, msg.Properties)
		if msg.Topic == TopicSchedule && topic != TopicSchedule {
			if msg.QueueID < 0 || msg.QueueID >= levels {
				t.Fatalf("parked in schedule queue %d of %d", msg.QueueID, levels)
			}
			if HasTimerProps(&pv) {
				t.Fatalf("delay-parked message keeps timer properties: %q", msg.Properties)
			}
		}
	})
}

func ptr[T any](v T) *T { return &v }

func mustGet(t *testing.T, pv *codec.PropView, name string) string {
	t.Helper()
	v, ok := pv.Get(name)
	if !ok {
		t.Fatalf("no %s in %q", name, pv.Props())
	}
	return v
}

// inStep fails t when pv does not index props.
func inStep(t *testing.T, pv *codec.PropView, props string) {
	t.Helper()
	if pv.Props() != props {
		t.Fatalf("view of %q, message has %q", pv.Props(), props)
	}
	for _, n := range []string{codec.PropDelay, codec.PropTimerDeliverMs, codec.PropTimerDelaySec, codec.PropTimerDelayMs,
		codec.PropTimerOutMs, codec.PropRealTopic, codec.PropRealQueueID} {
		got, ok := pv.Get(n)
		if want, wantOK := codec.PropertyValue(props, n); got != want || ok != wantOK {
			t.Fatalf("view of %q: %s=%q,%v, want %q,%v", props, n, got, ok, want, wantOK)
		}
	}
}
