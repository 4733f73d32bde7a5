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
	for range 100 {
		resp := r.invoke(codec.ReqPullMessage, map[string]string{"consumerGroup": "IT_compaction_raw_cg", "topic": topic,
			"queueId": "0", "queueOffset": strconv.FormatInt(offset, 10), "maxMsgNums": "32",
			"sysFlag": strconv.Itoa(pullFlagSubscription), "commitOffset": "0", "suspendTimeoutMillis": "0",
			"subscription": "*", "subVersion": "0", "expressionType": "TAG"}, nil, 30*time.Second)
		if resp.Code != codec.RespSuccess {
			return offs
		}
		for b := resp.Body; len(b) > 0; {
			var m codec.Message
			n, err := codec.DecodeRecord(b, &m)
			if err != nil {
				t.Fatalf("pulled record at offset %d: %v", offset, err)
			}
			offs = append(offs, m.QueueOffset)
			b = b[n:]
		}
		v, _ := resp.Ext.Get("nextBeginOffset")
		next, _ := strconv.ParseInt(v, 10, 64)
		if next <= offset {
			return offs
		}
		offset = next
	}
	return offs
}
