package integration

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"rmqd/codec"
	"rmqd/integration/harness"
)

// TestCompactionTopic follows docs/en/Example_Compaction_Topic.md against rmqd: a topic made with
// +cleanup.policy=COMPACTION refuses a message without keys, keeps the newest message per key once
// compacted (offsets unchanged), and a Java 5 lite pull consumer reading from the first offset gets exactly
// the kept messages. rmqd only: small compaction files and a 1 s schedule make it compact within the test.
func TestCompactionTopic(t *testing.T) {
	if !containsKind(targetsFromEnv(t), harness.KindRmqd) {
		t.Skip("RMQD_TARGET excludes rmqd")
	}
	harness.RequireJars(t, "client5")
	tg := harness.StartRmqd(t, harness.Options{BrokerConf: map[string]string{
		"compactionCqMappedFileSize": strconv.Itoa(10 * 46), // nine messages per compaction file
		"compactionMappedFileSize":   "1",
		"compactionScheduleInternal": "1000",
	}})
	const topic = "IT_compaction"
	r := newRawClient(t, tg)
	resp := r.invoke(codec.ReqUpdateAndCreateTopic, map[string]string{"topic": topic, "readQueueNums": "1",
		"writeQueueNums": "1", "perm": "6", "attributes": "+cleanup.policy=COMPACTION"}, nil, 10*time.Second)
	if resp.Code != codec.RespSuccess {
		t.Fatalf("create compaction topic: code %d %s", resp.Code, resp.Remark)
	}
	resp = r.invoke(codec.ReqSendMessage, sendHeader(topic, 0, "TAGS\x01a\x02"), []byte("no key"), 10*time.Second)
	if resp.Code != codec.RespMessageIllegal || resp.Remark != "Required message key is missing" {
		t.Fatalf("keyless send: code %d %q, want MESSAGE_ILLEGAL", resp.Code, resp.Remark)
	}
	// Offsets 0..29, keys k0..k2 in turn: files of 9, 9, 9 and 3 compact to 24, 25, 26 and the tail 27..29.
	for i := range 30 {
		props := fmt.Sprintf("KEYS\x01k%d\x02TAGS\x01a\x02", i%3)
		resp := r.invoke(codec.ReqSendMessage, sendHeader(topic, 0, props), fmt.Appendf(nil, "v%d", i), 10*time.Second)
		if resp.Code != codec.RespSuccess {
			t.Fatalf("send %d: code %d %s", i, resp.Code, resp.Remark)
		}
	}
	want := []int64{24, 25, 26, 27, 28, 29}
	var got []int64
	for deadline := time.Now().Add(30 * time.Second); !slices.Equal(got, want); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("pull from 0 got offsets %v, want %v once compacted", got, want)
		}
		got = rawPullOffsets(t, r, topic, 0)
	}

	c := harness.RunJava(t, tg, "5", "consume", "--topic", topic, "--group", "IT_compaction_cg",
		"--mode", "litepull", "--from", "first", "--count", "6", "--linger", "2000", "--timeout", "45000")
	recv := slices.Clone(c.Received)
	slices.SortFunc(recv, func(a, b harness.Msg) int { return int(a.QueueOffset - b.QueueOffset) })
	var offs []int64
	bodies := map[string]string{} // the last body per key
	for _, m := range recv {
		offs = append(offs, m.QueueOffset)
		bodies[m.Keys] = m.BodyHead
	}
	if !slices.Equal(offs, want) {
		t.Fatalf("Java lite pull from the first offset got offsets %v, want %v", offs, want)
	}
	for k, v := range map[string]string{"k0": "v27", "k1": "v28", "k2": "v29"} {
		if bodies[k] != v {
			t.Errorf("key %s: last body %q, want %q", k, bodies[k], v)
		}
	}
}

// rawPullOffsets pulls queue 0 of topic from offset to its end and returns the queue offsets it got.
func rawPullOffsets(t *testing.T, r *rawClient, topic string, offset int64) []int64 {
	t.Helper()
	var offs []int64
	for _, m := range r.pullToEnd("IT_compaction_raw_cg", topic, 0, offset) {
		offs = append(offs, m.QueueOffset)
	}
	return offs
}

// TestCompactionStoreSwap hands a compaction store from rmqd to the Apache 5.3.3 broker and back: each reads
// the other's compaction files (compactionLog, compactionCq, position-checkpoint) and serves the kept
// messages, and Apache's own compaction of rmqd's files is read by rmqd.
func TestCompactionStoreSwap(t *testing.T) {
	ns, opts := swapStore(t, "apache")
	const topic = "IT_compaction_swap"
	opts.BrokerConf["compactionCqMappedFileSize"] = strconv.Itoa(10 * 46)
	opts.BrokerConf["compactionMappedFileSize"] = "1"
	opts.BrokerConf["compactionScheduleInternal"] = "1000"
	send := func(r *rawClient, key, body string) {
		t.Helper()
		resp := r.invoke(codec.ReqSendMessage, sendHeader(topic, 0, "KEYS\x01"+key+"\x02TAGS\x01a\x02"), []byte(body),
			10*time.Second)
		if resp.Code != codec.RespSuccess {
			t.Fatalf("send %s: code %d %s", key, resp.Code, resp.Remark)
		}
	}
	waitKept := func(what string, r *rawClient, want []int64) {
		t.Helper()
		var got []int64
		for deadline := time.Now().Add(40 * time.Second); !slices.Equal(got, want); time.Sleep(250 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: pull from 0 got offsets %v, want %v", what, got, want)
			}
			got = rawPullOffsets(t, r, topic, 0)
		}
	}

	// 1. rmqd: offsets 0..29 with keys k0..k2 in turn compact to 24..26 and the tail 27..29.
	b1 := harness.StartBroker(t, harness.KindRmqd, ns.Addr, opts)
	r1 := newRawClient(t, b1)
	resp := r1.invoke(codec.ReqUpdateAndCreateTopic, map[string]string{"topic": topic, "readQueueNums": "1",
		"writeQueueNums": "1", "perm": "6", "attributes": "+cleanup.policy=COMPACTION"}, nil, 10*time.Second)
	if resp.Code != codec.RespSuccess {
		t.Fatalf("create compaction topic: code %d %s", resp.Code, resp.Remark)
	}
	for i := range 30 {
		send(r1, fmt.Sprintf("k%d", i%3), fmt.Sprintf("v%d", i))
	}
	waitKept("rmqd", r1, []int64{24, 25, 26, 27, 28, 29})
	stopBroker(t, b1)

	// 2. Apache reads rmqd's files, takes 30..39 and compacts: the tail file fills at 35, so 27..35 compact
	// against their own keys (k0 30, k1 31, k2 35) and 36..39 stay.
	b2 := harness.StartBroker(t, harness.KindApache, ns.Addr, opts)
	r2 := newRawClient(t, b2)
	waitKept("Apache on rmqd's store", r2, []int64{24, 25, 26, 27, 28, 29})
	send(r2, "k0", "new0")
	send(r2, "k1", "new1")
	for i := range 8 {
		send(r2, "k2", fmt.Sprintf("n%d", i))
	}
	want := []int64{30, 31, 35, 36, 37, 38, 39}
	waitKept("Apache's compaction", r2, want)
	stopBroker(t, b2)

	// 3. rmqd reads Apache's files.
	b3 := harness.StartBroker(t, harness.KindRmqd, ns.Addr, opts)
	waitKept("rmqd on Apache's store", newRawClient(t, b3), want)
}
