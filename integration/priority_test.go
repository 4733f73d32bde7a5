package integration

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"rmqd/codec"
	"rmqd/integration/harness"
)

// TestPriorityMessages: Java 5.4's priority messages over the raw protocol. A topic made with
// message.type=PRIORITY takes a send's _SYS_MSG_PRIORITY_ as its queue number (the last queue at most), a
// FIFO message (__SHARDINGKEY) loses it, and a POP reads the highest queue first. An Apache broker older than
// 5.4, where they came in (the integration build pins 5.3.3), must refuse the topic instead; make
// integration-rocketmq55 runs the whole test against Apache too (docs/compatibility.md, Apache 5.4 and later).
func TestPriorityMessages(t *testing.T) {
	for _, kind := range targetsFromEnv(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			older := false
			if kind == harness.KindApache {
				harness.RequireJars(t, "apache")
				older = !libAtLeast(t, "apache", "rocketmq-broker", 5, 4)
			}
			tg := harness.Start(t, kind, harness.Options{})
			r := newRawClient(t, tg)
			const topic = "IT_prio"
			ext := map[string]string{"topic": topic, "defaultTopic": "TBW102", "readQueueNums": "4", "writeQueueNums": "4",
				"perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
				"attributes": "+message.type=PRIORITY"}
			resp := r.invoke(codec.ReqUpdateAndCreateTopic, ext, nil, 10*time.Second)
			if older {
				if resp.Code == codec.RespSuccess || !strings.Contains(resp.Remark, "value is not in set") {
					t.Fatalf("Apache before 5.4 made a PRIORITY topic: code %d %q", resp.Code, resp.Remark)
				}
				t.Logf("Apache before 5.4 refuses the PRIORITY topic: %q", resp.Remark)
				return
			}
			if resp.Code != codec.RespSuccess {
				t.Fatalf("create priority topic: code %d %q", resp.Code, resp.Remark)
			}
			send := func(props string, body string) {
				t.Helper()
				if resp := r.invoke(codec.ReqSendMessage, sendHeader(topic, 1, props), []byte(body), 10*time.Second); resp.Code != codec.RespSuccess {
					t.Fatalf("send %q: code %d %q", props, resp.Code, resp.Remark)
				}
			}
			// Queue 1 is the header's: a FIFO message and one without a priority stay there.
			for p := range 6 {
				send(fmt.Sprintf("_SYS_MSG_PRIORITY_\x01%d\x02", p), "p"+strconv.Itoa(min(p, 3)))
			}
			send("_SYS_MSG_PRIORITY_\x013\x02__SHARDINGKEY\x01k\x02", "p1")
			send("", "p1")
			want := []int64{1, 3, 1, 3} // priorities 0, 1+FIFO+none, 2, 3-5
			var got []int64
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				got = got[:0]
				for q := range want {
					got = append(got, r.maxOffset(topic, q))
				}
				if fmt.Sprint(got) == fmt.Sprint(want) || time.Now().After(deadline) {
					break
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("queues hold %v messages, want %v", got, want)
			}
			msgs, _, ok := r.pullOnce("IT_prio_probe", topic, 1, 0)
			if !ok || len(msgs) != 3 {
				t.Fatalf("pull queue 1: ok=%v %d messages", ok, len(msgs))
			}
			if _, has := codec.PropertyValue(msgs[1].Properties, "_SYS_MSG_PRIORITY_"); has {
				t.Fatalf("the FIFO message kept its priority: %q", msgs[2].Properties)
			}
			var order []string
			for deadline := time.Now().Add(30 * time.Second); len(order) < 8 && time.Now().Before(deadline); {
				res := r.pop(topic, "IT_prio_cg", -1, 1, time.Minute, 0, false)
				for _, m := range res.msgs {
					order = append(order, m.body)
				}
			}
			t.Logf("%s: POP order %v", kind, order)
			if got := strings.Join(order, " "); got != "p3 p3 p3 p2 p1 p1 p1 p0" {
				t.Fatalf("POP order %q, want the highest priority first", got)
			}
		})
	}
}
