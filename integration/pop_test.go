package integration

import (
	"context"
	"encoding/base64"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"rmqd/codec"
	"rmqd/integration/harness"
)

// TestPop drives the broker side of POP over the raw wire, as rocketmq-proxy and the 5.x client's
// MQClientAPIImpl do it (POP_MESSAGE, ACK_MESSAGE, BATCH_ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME,
// NOTIFICATION, POLLING_INFO), against each target: pop, ack, batch ack, change invisible time,
// redelivery of what was not acked through the retry topic, long polling woken by a send, and ordered POP
// with its queue lock. Receipt handles are built from the response headers exactly as the Java client
// builds them (ExtraInfoUtil).
func TestPop(t *testing.T) {
	harness.RequireJars(t, "apache")
	kinds := targetsFromEnv(t)
	var started sync.WaitGroup
	started.Add(len(kinds))
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var once sync.Once
			ready := func() { once.Do(started.Done) }
			defer ready()
			tg := harness.Start(t, kind, harness.Options{})
			ready()
			started.Wait()
			// Each scenario has its own topic and group: they run side by side.
			for name, run := range map[string]func(*testing.T){
				"ack-and-redeliver": func(t *testing.T) { runPopRedeliver(t, newRawClient(t, tg)) },
				"long-polling":      func(t *testing.T) { runPopLongPolling(t, newRawClient(t, tg)) },
				"ordered":           func(t *testing.T) { runPopOrdered(t, newRawClient(t, tg)) },
				"java5-client":      func(t *testing.T) { runPopJava5(t, tg) },
			} {
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					run(t)
				})
			}
		})
	}
}

// poppedMsg is a popped message with the receipt handle the client would give it.
type poppedMsg struct {
	body, topic     string
	queue           int32
	offset          int64
	physOffset      int64
	msgID           string
	reconsume       int32
	handle          string
	retry, hadPopCK bool
}

type popResult struct {
	code               int32
	remark             string
	popTime, invisible int64
	reviveQid          int
	startInfo, msgInfo string
	orderInfo          string
	msgs               []poppedMsg
	restNum            int64
}

func (r *rawClient) pop(topic, group string, queue int, maxNums int, invisible, poll time.Duration, order bool) popResult {
	r.tb.Helper()
	ext := map[string]string{"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(queue),
		"maxMsgNums": strconv.Itoa(maxNums), "invisibleTime": strconv.FormatInt(invisible.Milliseconds(), 10),
		"pollTime": strconv.FormatInt(poll.Milliseconds(), 10), "bornTime": strconv.FormatInt(time.Now().UnixMilli(), 10),
		"initMode": "0", "expType": "TAG", "exp": "*", "order": strconv.FormatBool(order)}
	resp := r.invoke(codec.ReqPopMessage, ext, nil, poll+10*time.Second)
	res := popResult{code: resp.Code, remark: resp.Remark}
	get := func(k string) string { v, _ := resp.Ext.Get(k); return v }
	res.popTime, _ = strconv.ParseInt(get("popTime"), 10, 64)
	res.invisible, _ = strconv.ParseInt(get("invisibleTime"), 10, 64)
	res.reviveQid, _ = strconv.Atoi(get("reviveQid"))
	res.restNum, _ = strconv.ParseInt(get("restNum"), 10, 64)
	res.startInfo, res.msgInfo, res.orderInfo = get("startOffsetInfo"), get("msgOffsetInfo"), get("orderCountInfo")
	if resp.Code != codec.RespSuccess {
		return res
	}
	starts := map[string]int64{}
	for _, e := range strings.Split(res.startInfo, ";") {
		f := strings.Split(e, " ")
		if len(f) == 3 {
			starts[f[0]+"@"+f[1]], _ = strconv.ParseInt(f[2], 10, 64)
		}
	}
	body := resp.Body
	for len(body) > 0 {
		var m codec.Message
		n, err := codec.DecodeRecord(body, &m)
		if err != nil {
			r.tb.Fatalf("pop %s: body does not decode: %v", topic, err)
		}
		body = body[n:]
		pm := poppedMsg{body: string(m.Body), topic: m.Topic, queue: m.QueueID, offset: m.QueueOffset, reconsume: m.ReconsumeTimes,
			physOffset: m.CommitLogOffset}
		pm.msgID, _ = codec.PropertyValue(m.Properties, codec.PropUniqKey)
		if ck, ok := codec.PropertyValue(m.Properties, "POP_CK"); ok {
			// The broker hands retry messages out under the original topic with their handle (MQClientAPIImpl
			// keeps it).
			pm.handle, pm.hadPopCK = ck, true
			f := strings.Split(ck, " ")
			pm.retry = len(f) > 4 && f[4] != "0"
		} else {
			mark := "0"
			if strings.HasPrefix(m.Topic, "%RETRY%") {
				mark = "1"
				if strings.Contains(m.Topic, "+") {
					mark = "2"
				}
			}
			pm.handle = fmt.Sprintf("%d %d %d %d %s %s %d %d", starts[mark+"@"+strconv.Itoa(int(m.QueueID))], res.popTime,
				res.invisible, res.reviveQid, mark, r.tg.BrokerName, m.QueueID, m.QueueOffset)
		}
		res.msgs = append(res.msgs, pm)
	}
	return res
}

// ackTopic is the topic an ack names: the original one, or its retry topic for a retry message (the handle's
// retry mark), as ExtraInfoUtil.getRealTopic.
func ackTopic(topic, group string, m poppedMsg) string {
	f := strings.Split(m.handle, " ")
	switch f[4] {
	case "1":
		return "%RETRY%" + group + "_" + topic
	case "2":
		return "%RETRY%" + group + "+" + topic
	}
	return topic
}

func (r *rawClient) ack(topic, group string, m poppedMsg) *codec.RemotingCommand {
	return r.invoke(codec.ReqAckMessage, map[string]string{"consumerGroup": group, "topic": ackTopic(topic, group, m),
		"queueId": strconv.Itoa(int(m.queue)), "offset": strconv.FormatInt(m.offset, 10), "extraInfo": m.handle}, nil, 10*time.Second)
}

func (r *rawClient) sendPop(topic string, queue int, body string) {
	r.tb.Helper()
	r.sendOK(topic, queue, "TAGS\x01a\x02", body)
}

// popUntil pops until want messages came back (bounded by count and time).
func (r *rawClient) popUntil(topic, group string, want int, invisible time.Duration, within time.Duration) []poppedMsg {
	r.tb.Helper()
	var got []poppedMsg
	deadline := time.Now().Add(within)
	for i := 0; len(got) < want && time.Now().Before(deadline) && i < 200; i++ {
		res := r.pop(topic, group, -1, 32, invisible, time.Second, false)
		switch res.code {
		case codec.RespSuccess, codec.RespPollingTimeout, codec.RespPollingFull:
		default:
			r.tb.Fatalf("pop %s: code %d %s", topic, res.code, res.remark)
		}
		got = append(got, res.msgs...)
	}
	return got
}

func bodiesOf(ms []poppedMsg) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.body)
	}
	sort.Strings(out)
	return out
}

func runPopRedeliver(t *testing.T, r *rawClient) {
	const topic, group = "IT_pop", "IT_pop_g"
	r.createTopic(topic, 2)
	for i := 0; i < 5; i++ {
		r.sendPop(topic, i%2, fmt.Sprintf("m%d", i))
	}
	first := r.popUntil(topic, group, 5, 3*time.Second, 20*time.Second)
	if got := bodiesOf(first); strings.Join(got, ",") != "m0,m1,m2,m3,m4" {
		t.Fatalf("first pop: %v, want m0..m4", got)
	}
	byBody := map[string]poppedMsg{}
	for _, m := range first {
		if m.topic != topic || m.reconsume != 0 || m.hadPopCK {
			t.Fatalf("first delivery %+v: want topic %s, reconsumeTimes 0, no POP_CK", m, topic)
		}
		byBody[m.body] = m
	}
	// m0: ACK_MESSAGE; m1 and m3 together... each BATCH_ACK_MESSAGE entry is one checkpoint, so m1 alone.
	if resp := r.ack(topic, group, byBody["m0"]); resp.Code != codec.RespSuccess {
		t.Fatalf("ack m0: code %d %s", resp.Code, resp.Remark)
	}
	m1 := byBody["m1"]
	f := strings.Split(m1.handle, " ")
	startOff, _ := strconv.ParseInt(f[0], 10, 64)
	bits := make([]byte, (m1.offset-startOff)/8+1)
	bits[(m1.offset-startOff)/8] |= 1 << ((m1.offset - startOff) % 8)
	batch := fmt.Sprintf(`{"acks":[{"b":"%s","c":"%s","it":%s,"pt":%s,"q":%d,"r":"0","rq":%s,"so":%d,"t":"%s"}],"brokerName":"%s"}`,
		base64.StdEncoding.EncodeToString(bits), group, f[2], f[1], m1.queue, f[3], startOff, topic, r.tg.BrokerName)
	if resp := r.invoke(codec.ReqBatchAckMessage, nil, []byte(batch), 10*time.Second); resp.Code != codec.RespSuccess {
		t.Fatalf("batch ack m1: code %d %s", resp.Code, resp.Remark)
	}
	// m2: visible again sooner (1 s); m3 and m4 come back after the 3 s of the pop.
	m2 := byBody["m2"]
	resp := r.invoke(codec.ReqChangeMessageInvisibletime, map[string]string{"consumerGroup": group, "topic": topic,
		"queueId": strconv.Itoa(int(m2.queue)), "offset": strconv.FormatInt(m2.offset, 10), "extraInfo": m2.handle,
		"invisibleTime": "1000"}, nil, 10*time.Second)
	if resp.Code != codec.RespSuccess {
		t.Fatalf("change invisible time m2: code %d %s", resp.Code, resp.Remark)
	}
	if v, _ := resp.Ext.Get("invisibleTime"); v != "1000" {
		t.Fatalf("change invisible time answered invisibleTime %q, want 1000", v)
	}
	// A handle for a message the queue never held is refused.
	bad := r.invoke(codec.ReqAckMessage, map[string]string{"consumerGroup": group, "topic": topic, "queueId": "0",
		"offset": "999999", "extraInfo": m2.handle}, nil, 10*time.Second)
	if bad.Code != codec.RespNoMessage {
		t.Fatalf("ack of offset 999999: code %d %s, want NO_MESSAGE (208)", bad.Code, bad.Remark)
	}

	again := r.popUntil(topic, group, 3, 60*time.Second, 40*time.Second)
	if got := strings.Join(bodiesOf(again), ","); got != "m2,m3,m4" {
		t.Fatalf("redelivered %v, want m2,m3,m4 (m0 and m1 were acked)", bodiesOf(again))
	}
	for _, m := range again {
		if m.topic != topic || m.reconsume != 1 || !m.hadPopCK || !m.retry {
			t.Fatalf("redelivery %+v: want topic %s, reconsumeTimes 1, a retry POP_CK", m, topic)
		}
		if m.body == "m4" {
			// Max attempts reached: the proxy and the 5.x pop push consumer send the message back to the
			// DLQ (CONSUMER_SEND_MSG_BACK, delayLevel -1), then ack it; the broker's revive never does.
			resp := r.invoke(codec.ReqConsumerSendMsgBack, map[string]string{"group": group, "offset": strconv.FormatInt(m.physOffset, 10),
				"delayLevel": "-1", "originMsgId": m.msgID, "originTopic": topic, "unitMode": "false", "maxReconsumeTimes": "16"}, nil, 10*time.Second)
			if resp.Code != codec.RespSuccess {
				t.Fatalf("send m4 back to the DLQ: code %d %s", resp.Code, resp.Remark)
			}
		}
		if resp := r.ack(topic, group, m); resp.Code != codec.RespSuccess {
			t.Fatalf("ack redelivered %s: code %d %s", m.body, resp.Code, resp.Remark)
		}
	}
	// The broker keeps the group's offsets past every message (the checkpoints are stored).
	r.waitCommitted(group, topic, 2, 5, 10*time.Second)
	if n := r.maxOffset("%DLQ%"+group, 0); n != 1 {
		t.Fatalf("DLQ %%DLQ%%%s holds %d messages, want 1 (m4)", group, n)
	}
}

func runPopLongPolling(t *testing.T, r *rawClient) {
	const topic, group = "IT_pop_lp", "IT_pop_lp_g"
	r.createTopic(topic, 1)
	// Initialise the group's offset first: initMode MIN on an empty queue.
	if res := r.pop(topic, group, 0, 1, 10*time.Second, 0, false); res.code != codec.RespPollingTimeout {
		t.Fatalf("pop of an empty queue without polling: code %d %s, want POLLING_TIMEOUT (210)", res.code, res.remark)
	}
	notify := func(poll time.Duration) string {
		resp := r.invoke(codec.ReqNotification, map[string]string{"consumerGroup": group, "topic": topic, "queueId": "-1",
			"pollTime": strconv.FormatInt(poll.Milliseconds(), 10), "bornTime": strconv.FormatInt(time.Now().UnixMilli(), 10)},
			nil, poll+10*time.Second)
		if resp.Code != codec.RespSuccess {
			t.Fatalf("NOTIFICATION: code %d %s", resp.Code, resp.Remark)
		}
		v, _ := resp.Ext.Get("hasMsg")
		return v
	}
	if v := notify(0); v != "false" {
		t.Fatalf("NOTIFICATION on an empty queue: hasMsg %q, want false", v)
	}
	done := make(chan popResult, 1)
	go func() { done <- r.pop(topic, group, 0, 1, 10*time.Second, 8*time.Second, false) }()
	// POLLING_INFO sees the held request once it is parked.
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp := r.invoke(codec.ReqPollingInfo, map[string]string{"consumerGroup": group, "topic": topic, "queueId": "0"}, nil, 5*time.Second)
		if v, _ := resp.Ext.Get("pollingNum"); v == "1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("POLLING_INFO never counted the held pop (code %d)", resp.Code)
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.sendPop(topic, 0, "late")
	select {
	case res := <-done:
		if res.code != codec.RespSuccess || len(res.msgs) != 1 || res.msgs[0].body != "late" {
			t.Fatalf("held pop answered code %d with %v, want the message sent while it waited", res.code, bodiesOf(res.msgs))
		}
	case <-time.After(15 * time.Second):
		t.Fatal("held pop not answered")
	}
	// The next one waits in NOTIFICATION and is told when it arrives; PEEK_MESSAGE shows it without taking it.
	notified := make(chan string, 1)
	go func() { notified <- notify(8 * time.Second) }()
	time.Sleep(200 * time.Millisecond) // the notification parks; if not yet, it finds the message itself
	r.sendPop(topic, 0, "later")
	select {
	case v := <-notified:
		if v != "true" {
			t.Fatalf("NOTIFICATION after a send: hasMsg %q, want true", v)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("held notification not answered")
	}
	peek := r.invoke(codec.ReqPeekMessage, map[string]string{"consumerGroup": group, "topic": topic, "queueId": "0", "maxMsgNums": "4"},
		nil, 10*time.Second)
	if peek.Code != codec.RespSuccess || !strings.Contains(string(peek.Body), "later") {
		t.Fatalf("PEEK_MESSAGE: code %d %s, body holds %q", peek.Code, peek.Remark, "later")
	}
	if res := r.pop(topic, group, 0, 4, 10*time.Second, 2*time.Second, false); len(res.msgs) != 1 || res.msgs[0].body != "later" {
		t.Fatalf("pop after peek: %v, want the peeked message", bodiesOf(res.msgs))
	}
}

func runPopOrdered(t *testing.T, r *rawClient) {
	const topic, group = "IT_pop_ord", "IT_pop_ord_g"
	r.createTopic(topic, 1)
	for i := 0; i < 3; i++ {
		r.sendPop(topic, 0, fmt.Sprintf("o%d", i))
	}
	// All three in the consume queue first: an ordered pop that took only o0 would lock the queue for the
	// whole invisible time, and the batch of two this test wants would never come.
	for deadline := time.Now().Add(10 * time.Second); r.maxOffset(topic, 0) < 3; {
		if time.Now().After(deadline) {
			t.Fatalf("ordered topic: %d of 3 messages dispatched after 10 s", r.maxOffset(topic, 0))
		}
		time.Sleep(10 * time.Millisecond)
	}
	var first popResult
	for i := 0; i < 50 && len(first.msgs) < 2; i++ {
		first = r.pop(topic, group, -1, 2, 60*time.Second, time.Second, true)
	}
	if got := strings.Join(bodiesOf(first.msgs), ","); got != "o0,o1" {
		t.Fatalf("ordered pop: %v, want o0,o1", bodiesOf(first.msgs))
	}
	if first.reviveQid != 999 || first.orderInfo == "" {
		t.Fatalf("ordered pop: reviveQid %d orderCountInfo %q, want 999 and a count", first.reviveQid, first.orderInfo)
	}
	// The queue stays locked while the batch is in flight.
	if res := r.pop(topic, group, -1, 2, 60*time.Second, 0, true); res.code == codec.RespSuccess {
		t.Fatalf("second ordered pop got %v while the first batch is in flight", bodiesOf(res.msgs))
	}
	for _, m := range first.msgs {
		if resp := r.ack(topic, group, m); resp.Code != codec.RespSuccess {
			t.Fatalf("ack %s: code %d %s", m.body, resp.Code, resp.Remark)
		}
	}
	var next popResult
	for i := 0; i < 50 && len(next.msgs) == 0; i++ {
		next = r.pop(topic, group, -1, 2, 60*time.Second, time.Second, true)
	}
	if got := strings.Join(bodiesOf(next.msgs), ","); got != "o2" {
		t.Fatalf("ordered pop after the acks: %v, want o2", bodiesOf(next.msgs))
	}
}

// runPopJava5 runs testdata/PopClient5.java on rocketmq-client 5.3.3's classpath: POP, ACK and
// CHANGE_MESSAGE_INVISIBLETIME through MQClientAPIImpl, whose response parsing (PopResult, receipt handles
// from startOffsetInfo/msgOffsetInfo, POP_CK of retry messages) is what rocketmq-proxy relies on.
func runPopJava5(t *testing.T, tg *harness.Target) {
	harness.RequireJars(t, "client5")
	newRawClient(t, tg).createTopic("IT_pop_j5", 2)
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	src := filepath.Join(harness.RepoRoot(t), "integration", "testdata", "PopClient5.java")
	cmd := exec.CommandContext(ctx, "java", append(javaHome(t), "-cp", filepath.Join(harness.LibDir(t, "client5"), "*"),
		src, tg.NamesrvAddr, tg.BrokerAddr, tg.BrokerName, "IT_pop_j5", "IT_pop_j5_g")...)
	out, err := cmd.CombinedOutput()
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "pop:") || strings.HasPrefix(l, "ack:") || strings.HasPrefix(l, "change:") ||
			strings.HasPrefix(l, "again:") || strings.HasPrefix(l, "FAIL") || l == "OK" || strings.Contains(l, "Exception") {
			lines = append(lines, l)
		}
	}
	t.Logf("PopClient5:\n%s", strings.Join(lines, "\n"))
	if err != nil || !strings.Contains(string(out), "\nOK\n") {
		t.Fatalf("PopClient5 failed (%v):\n%s", err, lastLines(string(out), 40))
	}
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(len(l)-n, 0):], "\n")
}
