package integration

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"rmqd/integration/harness"
)

// batchCQCases join TestBroker's shared targets. java5-batchcq sends batches
// with the 5.3.3 Java client to a queue.type=BatchCQ topic (the client puts a
// UNIQ_KEY on the batch, so the broker stores each batch as one inner-batch
// record) and consumes them with a 5.3.3 lite pull consumer, which unwraps
// each record (PullAPIWrapper, MessageDecoder.decodeMessage): every message
// once, with its own UNIQ_KEY, body and tags, at queue offsets 0..n-1 as the
// send results said.
var batchCQCases = []scenario{{
	Name:  "java5-batchcq",
	Needs: []string{"client5"},
	Run: func(tb harness.TB, tg *harness.Target) {
		const topic, n = "IT_b_bcq", 12
		harness.CreateTopic(tb, tg, topic, 1, "+queue.type=BatchCQ")
		sent := harness.RunJava(tb, tg, "5", "produce", "--topic", topic, "--mode", "batch",
			"--count", "12", "--batch", "5", "--tags", "a,b", "--keys", "bk")
		if len(sent.Sent) != n {
			tb.Fatalf("produced %d of %d messages: %v", len(sent.Sent), n, sent.Errors)
		}
		onlyOK(tb, sent.Sent)
		got := harness.RunJava(tb, tg, "5", "consume", "--topic", topic, "--group", uniq("IT_b_bcq_cg"),
			"--mode", "litepull", "--count", "12", "--from", "first", "--timeout", "60000")
		expectDelivered(tb, sent.Sent, got.Received, nil)
		offs := make([]int, 0, len(got.Received))
		for _, m := range got.Received {
			offs = append(offs, int(m.QueueOffset))
			// Unwrapped from an inner batch: the record's INNER_BATCH (0x80) and NEED_UNWRAP (0x40).
			if m.SysFlag&0xC0 != 0xC0 {
				tb.Fatalf("message %s at offset %d: sysFlag %#x, want the inner-batch flags", m.MsgID, m.QueueOffset, m.SysFlag)
			}
		}
		sort.Ints(offs)
		for i, o := range offs {
			if o != i {
				tb.Fatalf("queue offsets received %v, want 0..%d once each", offs, n-1)
			}
		}
	},
}, {
	// rocketmq-client-go v2.1.2 puts no UNIQ_KEY on a batch, so its batches to a BatchCQ topic are stored
	// message by message, each a unit of one; its push consumer reads them as from any topic. (It cannot
	// unwrap an inner batch a Java client wrote: that record reaches it whole, against Apache too.)
	Name: "go-batchcq",
	Run: func(tb harness.TB, tg *harness.Target) {
		const topic = "IT_b_go_bcq"
		harness.CreateTopic(tb, tg, topic, 2, "+queue.type=BatchCQ")
		p := newGoProducer(tb, tg)
		s := msgSpec{topic: topic, prefix: "gbcq", size: 120, tags: []string{"T"}, keyPrefix: "k", props: goProps}
		sent := p.send("sync", s, 3)
		s.prefix, s.keyPrefix = "gbcq-b", "kb"
		sent = append(sent, p.send("batch", s, 5)...)
		onlyOK(tb, sent)
		c := startGoConsumer(tb, tg, consumeSpec{topic: topic, group: uniq("IT_b_go_bcq_cg")})
		waitGot(tb, len(sent), 60*time.Second, c)
		c.stop()
		expectDelivered(tb, sent, c.deliveries(), goPropKeys)
	},
}}

// TestBatchCQStoreSwap hands a BatchCQ topic's store from rmqd to the Apache
// 5.3.3 broker and back: each reads the other's batchconsumequeue/ files and
// inner-batch records, goes on numbering where the other stopped, and a 5.3.3
// consumer reads every message of both once, at the offsets the sends said.
func TestBatchCQStoreSwap(t *testing.T) {
	ns, opts := swapStore(t, "apache", "client5")
	const topic = "IT_bcq_swap"
	produce := func(b *harness.Target, prefix string, count int) []harness.Msg {
		r := harness.RunJava(t, b, "5", "produce", "--topic", topic, "--mode", "batch", "--count", fmt.Sprint(count),
			"--batch", "3", "--body-prefix", prefix, "--keys", prefix)
		if len(r.Sent) != count {
			t.Fatalf("produced %d of %d messages: %v", len(r.Sent), count, r.Errors)
		}
		onlyOK(t, r.Sent)
		return r.Sent
	}
	consumeAll := func(b *harness.Target, sent []harness.Msg) {
		got := harness.RunJava(t, b, "5", "consume", "--topic", topic, "--group", uniq("IT_bcq_swap_cg"),
			"--mode", "litepull", "--count", fmt.Sprint(len(sent)), "--from", "first", "--timeout", "60000")
		expectDelivered(t, sent, got.Received, nil)
	}

	b1 := harness.StartBroker(t, harness.KindRmqd, ns.Addr, opts)
	harness.CreateTopic(t, b1, topic, 1, "+queue.type=BatchCQ")
	sent := produce(b1, "r", 6) // whole batches of 3: a batch of one reports its offsetMsgId, an unwrapped message none
	stopBroker(t, b1)

	b2 := harness.StartBroker(t, harness.KindApache, ns.Addr, opts)
	sent = append(sent, produce(b2, "a", 6)...)
	if off := sent[len(sent)-1].QueueOffset; off != 11 {
		t.Fatalf("Apache numbered on rmqd's queue up to %d, want 11", off)
	}
	consumeAll(b2, sent)
	stopBroker(t, b2)

	b3 := harness.StartBroker(t, harness.KindRmqd, ns.Addr, opts)
	sent = append(sent, produce(b3, "s", 3)...)
	if off := sent[len(sent)-1].QueueOffset; off != 14 {
		t.Fatalf("rmqd numbered on Apache's queue up to %d, want 14", off)
	}
	consumeAll(b3, sent)
}

// TestPopBatchCQ pops a BatchCQ topic's inner batches with the 5.3.3 client's MQClientAPIImpl (POP_MESSAGE,
// ACK_MESSAGE, ordered POP), as integration/testdata/PopBatchCQ5.java describes: each target hands every
// batch out whole, numbered by its first offset; rmqd then revives the unacked batch through the retry
// topic and lets an ordered POP go on past its acked batches, where Apache 5.3.3 (asserted as it behaves)
// does neither (docs/compatibility.md).
func TestPopBatchCQ(t *testing.T) {
	harness.RequireJars(t, "client5")
	for _, kind := range targetsFromEnv(t) {
		t.Run(kind, func(t *testing.T) {
			if kind == harness.KindApache {
				harness.RequireJars(t, "apache")
			}
			t.Parallel()
			tg := harness.Start(t, kind, harness.Options{})
			const topic = "IT_pop_bcq"
			harness.CreateTopic(t, tg, topic, 1, "+queue.type=BatchCQ")
			ctx, cancel := context.WithTimeout(t.Context(), 150*time.Second)
			defer cancel()
			src := filepath.Join(harness.RepoRoot(t), "integration", "testdata", "PopBatchCQ5.java")
			cmd := exec.CommandContext(ctx, "java", append(javaHome(t), "-cp", filepath.Join(harness.LibDir(t, "client5"), "*"),
				src, tg.NamesrvAddr, tg.BrokerAddr, tg.BrokerName, topic, uniq("IT_pop_bcq_g"), kind)...)
			out, err := cmd.CombinedOutput()
			var lines []string
			for _, l := range strings.Split(string(out), "\n") {
				for _, p := range []string{"send:", "pop:", "popped:", "ack:", "again:", "ordered", "FAIL", "OK"} {
					if strings.HasPrefix(l, p) || strings.Contains(l, "Exception") {
						lines = append(lines, l)
						break
					}
				}
			}
			t.Logf("PopBatchCQ5:\n%s", strings.Join(lines, "\n"))
			if err != nil || !strings.Contains(string(out), "\nOK\n") {
				t.Fatalf("PopBatchCQ5 failed (%v):\n%s", err, lastLines(string(out), 40))
			}
		})
	}
}
