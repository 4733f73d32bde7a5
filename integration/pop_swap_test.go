package integration

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"rmqd/codec"
	"rmqd/integration/harness"
)

// popSwapInvisible is the invisible time of every pop before a swap: short, so the test waits little for
// revives, yet longer than the gap between a pop and its acks, and than an Apache broker's start (5-8 s
// here): a checkpoint already due when Apache's timer first reads it goes out at once, its ack a second
// later at its own time, and Apache's reviver may revive it in between.
const popSwapInvisible = 15 * time.Second

// popSwapRetryInvisible is the invisible time of the redeliveries popped after a swap: long enough for them all
// to be collected and acked, short enough that the next broker waits it out.
const popSwapRetryInvisible = 20 * time.Second

// popSwapOrderedHold is the invisible time of the ordered batches in flight across a swap.
const popSwapOrderedHold = 5 * time.Minute

// TestPopStoreSwap hands one POP store from broker to broker: rmqd writes it (messages, the checkpoints and
// acks in rmq_sys_REVIVE_LOG_<cluster> through the timer wheel, consumer offsets, consumerOrderInfo.json),
// the Apache 5.3.3 broker takes the same store directory, writes its own, and rmqd takes it back. After each
// swap the broker that takes over redelivers what the other popped and nobody acked, after its invisible
// time, and not what was acked; an ordered queue keeps its lock and its acked position. One chain
// (rmqd -> Apache -> rmqd) covers both directions with one JVM start.
func TestPopStoreSwap(t *testing.T) {
	if os.Getenv("RMQD_PROXY") != "all" {
		t.Skip("about 45 s: runs with the full POP and proxy suite (RMQD_PROXY=all, make integration-proxy)")
	}
	ns, opts := swapStore(t, "apache")
	const topic, group = "IT_swap", "IT_swap_g"
	const otopic, ogroup = "IT_swap_ord", "IT_swap_ord_g"

	// 1. rmqd: s0..s5 popped, s0 and s1 acked (one by ACK_MESSAGE, one by BATCH_ACK_MESSAGE); the ordered
	// queue popped two at a time, o0 acked, o1 in flight.
	b1 := harness.StartBroker(t, harness.KindRmqd, ns.Addr, opts)
	r1 := newRawClient(t, b1)
	r1.createTopic(topic, 2)
	r1.createTopic(otopic, 1)
	for i := 0; i < 6; i++ {
		r1.sendPop(topic, i%2, fmt.Sprintf("s%d", i))
	}
	for i := 0; i < 3; i++ {
		r1.sendPop(otopic, 0, fmt.Sprintf("o%d", i))
	}
	waitMaxOffset(t, r1, otopic, 0, 3)
	first := r1.popUntil(topic, group, 6, popSwapInvisible, 20*time.Second)
	requireBodies(t, "rmqd first pop", first, "s0,s1,s2,s3,s4,s5")
	ackAll(t, r1, topic, group, pick(first, "s0"))
	batchAck(t, r1, topic, group, pick(first, "s1"))
	// Far longer than any swap takes, so the lock is seen held across it; the next broker then shortens it with
	// CHANGE_MESSAGE_INVISIBLETIME on this broker's receipt handle.
	ord := popOrdered(t, r1, otopic, ogroup, 2, popSwapOrderedHold)
	requireBodies(t, "rmqd ordered pop", ord.msgs, "o0,o1")
	ackAll(t, r1, otopic, ogroup, pick(ord.msgs, "o0"))
	firstDeadline := time.Now().Add(popSwapInvisible)
	stopBroker(t, b1)

	// 2. Apache on rmqd's store.
	b2 := harness.StartBroker(t, harness.KindApache, ns.Addr, opts)
	r2 := newRawClient(t, b2)
	checkOrderedHeld(t, r2, otopic, ogroup, "Apache after the swap")
	changeInvisible(t, r2, otopic, ogroup, pick(ord.msgs, "o1"))
	again := collectRedelivered(t, r2, topic, group, 4, firstDeadline)
	// The redeliveries' own checkpoints: acked here, so rmqd must not revive them either.
	retryDeadline := time.Now().Add(popSwapRetryInvisible)
	requireBodies(t, "Apache redelivery of rmqd's pops", again, "s2,s3,s4,s5")
	requireRetries(t, "Apache redelivery", again, topic, 1)
	// Apache's own checkpoints for rmqd to read: the redelivered ones acked, t0..t3 popped and t0 acked, o1
	// acked and o2 in flight.
	ackAll(t, r2, topic, group, again...)
	for i := 0; i < 4; i++ {
		r2.sendPop(topic, i%2, fmt.Sprintf("t%d", i))
	}
	second := r2.popUntil(topic, group, 4, popSwapInvisible, 20*time.Second)
	requireBodies(t, "Apache pop", second, "t0,t1,t2,t3")
	ackAll(t, r2, topic, group, pick(second, "t0"))
	o1 := popOrdered(t, r2, otopic, ogroup, 1, popSwapInvisible)
	requireBodies(t, "Apache ordered pop", o1.msgs, "o1")
	ackAll(t, r2, otopic, ogroup, o1.msgs...)
	o2 := popOrdered(t, r2, otopic, ogroup, 1, popSwapOrderedHold)
	requireBodies(t, "Apache ordered pop after the ack", o2.msgs, "o2")
	secondDeadline := time.Now().Add(popSwapInvisible)
	// Java persists offsets, consumerOrderInfo.json and the timer wheel in its shutdown hook.
	stopBroker(t, b2)

	// 3. rmqd on Apache's store.
	b3 := harness.StartBroker(t, harness.KindRmqd, ns.Addr, opts)
	r3 := newRawClient(t, b3)
	checkOrderedHeld(t, r3, otopic, ogroup, "rmqd after the swap back")
	changeInvisible(t, r3, otopic, ogroup, o2.msgs[0])
	third := collectRedelivered(t, r3, topic, group, 3, later(secondDeadline, retryDeadline))
	requireBodies(t, "rmqd redelivery of Apache's pops", third, "t1,t2,t3")
	requireRetries(t, "rmqd redelivery", third, topic, 1)
	ackAll(t, r3, topic, group, third...)
	held := popOrdered(t, r3, otopic, ogroup, 1, popSwapInvisible)
	requireBodies(t, "rmqd ordered pop after the swap back", held.msgs, "o2")
	ackAll(t, r3, otopic, ogroup, held.msgs...)
}

// waitMaxOffset waits until queue holds n messages (a pop sees only dispatched ones).
func waitMaxOffset(t *testing.T, r *rawClient, topic string, queue int, n int64) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); r.maxOffset(topic, queue) < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%s/%d: %d of %d messages dispatched after 30 s", topic, queue, r.maxOffset(topic, queue), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// swapStore skips the test unless both targets run, then gives a store directory for brokers of both kinds
// to hand over, the broker options naming it (callers may add keys) and a name server.
func swapStore(t *testing.T, jars ...string) (ns *harness.Namesrv, opts harness.Options) {
	t.Helper()
	kinds := targetsFromEnv(t)
	if !containsKind(kinds, harness.KindRmqd) || !containsKind(kinds, harness.KindApache) {
		t.Skip("needs both targets (RMQD_TARGET=all)")
	}
	harness.RequireJars(t, jars...)
	store := filepath.Join(t.TempDir(), "store")
	ns = harness.StartNamesrv(t, harness.KindRmqd, harness.Options{})
	opts = harness.Options{BrokerConf: map[string]string{"storePathRootDir": store,
		"storePathCommitLog": filepath.Join(store, "commitlog")}}
	return ns, opts
}

// stopBroker stops a broker gracefully (SIGTERM, then a bounded wait) so it persists what it keeps in memory.
func stopBroker(t *testing.T, b *harness.Target) {
	t.Helper()
	for _, p := range b.Procs {
		p.TermGrace = 60 * time.Second
		p.Stop(t)
	}
}

func requireBodies(t *testing.T, what string, ms []poppedMsg, want string) {
	t.Helper()
	if got := strings.Join(bodiesOf(ms), ","); got != want {
		t.Fatalf("%s: %v, want %s", what, bodiesOf(ms), want)
	}
}

// requireRetries checks that every message came back as a redelivery: the original topic, a retry POP_CK,
// reconsumeTimes n.
func requireRetries(t *testing.T, what string, ms []poppedMsg, topic string, n int32) {
	t.Helper()
	for _, m := range ms {
		if m.topic != topic || !m.retry || m.reconsume != n {
			t.Errorf("%s %s: topic %s retry %v reconsumeTimes %d, want %s, a retry handle, %d", what, m.body, m.topic, m.retry,
				m.reconsume, topic, n)
		}
	}
}

func pick(ms []poppedMsg, body string) poppedMsg {
	for _, m := range ms {
		if m.body == body {
			return m
		}
	}
	return poppedMsg{}
}

func ackAll(t *testing.T, r *rawClient, topic, group string, ms ...poppedMsg) {
	t.Helper()
	for _, m := range ms {
		if resp := r.ack(topic, group, m); resp.Code != codec.RespSuccess {
			t.Fatalf("ack %s on %s: code %d %s", m.body, r.tg.Kind, resp.Code, resp.Remark)
		}
	}
}

// batchAck acks one message by BATCH_ACK_MESSAGE (a one-bit batch, as the proxy sends).
func batchAck(t *testing.T, r *rawClient, topic, group string, m poppedMsg) {
	t.Helper()
	f := strings.Split(m.handle, " ")
	var startOff int64
	fmt.Sscan(f[0], &startOff)
	bits := make([]byte, (m.offset-startOff)/8+1)
	bits[(m.offset-startOff)/8] |= 1 << ((m.offset - startOff) % 8)
	body := fmt.Sprintf(`{"acks":[{"b":"%s","c":"%s","it":%s,"pt":%s,"q":%d,"r":"0","rq":%s,"so":%d,"t":"%s"}],"brokerName":"%s"}`,
		base64.StdEncoding.EncodeToString(bits), group, f[2], f[1], m.queue, f[3], startOff, topic, r.tg.BrokerName)
	if resp := r.invoke(codec.ReqBatchAckMessage, nil, []byte(body), 10*time.Second); resp.Code != codec.RespSuccess {
		t.Fatalf("batch ack %s: code %d %s", m.body, resp.Code, resp.Remark)
	}
}

// popOrdered pops the ordered queue until it hands out messages (bounded).
func popOrdered(t *testing.T, r *rawClient, topic, group string, n int, invisible time.Duration) popResult {
	t.Helper()
	var res popResult
	for i := 0; i < 60 && len(res.msgs) == 0; i++ {
		res = r.pop(topic, group, -1, n, invisible, time.Second, true)
	}
	return res
}

// checkOrderedHeld pops the ordered queue right after a swap: the batch the other broker handed out is
// invisible for minutes yet, so the queue must still be locked.
func checkOrderedHeld(t *testing.T, r *rawClient, topic, group string, what string) {
	t.Helper()
	if res := r.pop(topic, group, -1, 1, popSwapInvisible, 0, true); res.code == codec.RespSuccess {
		t.Fatalf("%s: ordered pop got %v while the other broker's batch is in flight: lock lost", what, bodiesOf(res.msgs))
	}
}

// changeInvisible makes an ordered message handed out by the other broker visible again in a second, with
// the receipt handle that broker gave (its pop time must match the consumer order info it left).
func changeInvisible(t *testing.T, r *rawClient, topic, group string, m poppedMsg) {
	t.Helper()
	resp := r.invoke(codec.ReqChangeMessageInvisibletime, map[string]string{"consumerGroup": group, "topic": topic,
		"queueId": fmt.Sprint(m.queue), "offset": fmt.Sprint(m.offset), "extraInfo": m.handle, "invisibleTime": "1000"}, nil, 10*time.Second)
	if resp.Code != codec.RespSuccess {
		t.Fatalf("%s: change invisible time of %s with the other broker's handle: code %d %s", r.tg.Kind, m.body, resp.Code, resp.Remark)
	}
}

// collectRedelivered pops until want messages came back, then keeps popping until a few seconds after every
// checkpoint written before the swap was due, so a message revived although acked would be seen too.
func collectRedelivered(t *testing.T, r *rawClient, topic, group string, want int, due time.Time) []poppedMsg {
	t.Helper()
	got := r.popUntil(topic, group, want, popSwapRetryInvisible, 90*time.Second)
	for end := due.Add(3 * time.Second); time.Now().Before(end); {
		got = append(got, r.popUntil(topic, group, 1, popSwapRetryInvisible, time.Until(end))...)
	}
	slices.SortFunc(got, func(a, b poppedMsg) int { return strings.Compare(a.body, b.body) })
	return got
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
