package integration

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"rmqd/codec"
	"rmqd/integration/harness"
)

// TestStaticTopic drives 5.x static topics (logical queues) the way an operator does: `mqadmin
// updateStaticTopic` creates one of 4 logical queues and grows it to 6 (which reads the broker's mapping
// back through GET_TOPIC_CONFIG lo=true), and a createStaticTopic request makes one whose logical queues
// are permuted over the physical ones. A Java 5.3.3 producer sends to the logical queues and a push consumer
// gets every message; each logical queue's messages sit in the physical queue its mapping names (GET_MAX_OFFSET
// with lo=false, which both brokers serve physically).
//
//	RMQD_TARGET=rmqd go test -count=1 -run TestStaticTopic ./integration/
func TestStaticTopic(t *testing.T) {
	harness.RequireJars(t, "mqadmin", "client5")
	for _, kind := range targetsFromEnv(t) {
		t.Run(kind, func(t *testing.T) {
			tg := harness.Start(t, kind, harness.Options{})
			const grown, permuted = "IT_static_grown", "IT_static_perm"
			out := harness.Mqadmin(t, tg, "updateStaticTopic", "-t", grown, "-c", tg.ClusterName, "-qn", "4")
			if !strings.Contains(out, "The new mapping data is written to file") {
				t.Fatalf("updateStaticTopic: %s", out)
			}
			harness.Mqadmin(t, tg, "updateStaticTopic", "-t", grown, "-c", tg.ClusterName, "-qn", "6")
			r := newRawClient(t, tg)
			resp := r.invoke(codec.ReqGetTopicConfig, map[string]string{"topic": grown, "lo": "true"}, nil, 10*time.Second)
			if resp.Code != codec.RespSuccess || !strings.Contains(string(resp.Body), `"totalQueues":6`) {
				t.Fatalf("GET_TOPIC_CONFIG %s: code %d %s body %s", grown, resp.Code, resp.Remark, resp.Body)
			}

			// Logical queue L on physical perm[L].
			perm := []int{2, 3, 0, 1}
			var hosted []string
			for l, p := range perm {
				hosted = append(hosted, fmt.Sprintf(`%d:[{"bname":%q,"endOffset":-1,"gen":0,"logicOffset":0,"queueId":%d,"startOffset":0,"timeOfEnd":-1,"timeOfStart":-1}]`, l, tg.BrokerName, p))
			}
			// mqadmin 5.3.3's `updateStaticTopic -mf <file>` cannot run (the command reads an option "f" it never
			// defines), so the permuted mapping goes as its createStaticTopic sends one: code 513, the topic
			// config in the header, the TopicQueueMappingDetail (fastjson, bare keys) in the body.
			detail := fmt.Sprintf(`{"bname":%q,"currIdMap":{},"dirty":false,"epoch":%d,"hostedQueues":{%s},"scope":"__global__","topic":%q,"totalQueues":4}`,
				tg.BrokerName, time.Now().UnixMilli(), strings.Join(hosted, ","), permuted)
			resp = r.invoke(codec.ReqUpdateAndCreateStaticTopic, map[string]string{"topic": permuted, "defaultTopic": "TBW102",
				"readQueueNums": "4", "writeQueueNums": "4", "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0",
				"order": "false", "force": "false"}, []byte(detail), 10*time.Second)
			if resp.Code != codec.RespSuccess {
				t.Fatalf("UPDATE_AND_CREATE_STATIC_TOPIC %s: code %d %s", permuted, resp.Code, resp.Remark)
			}

			const n = 12
			p := harness.RunJava(t, tg, "5", "produce", "--topic", permuted, "--mode", "sync", "--count", strconv.Itoa(n),
				"--size", "100", "--tags", "S", "--keys", "k-static")
			onlyOK(t, p.Sent)
			perLogical := map[int]int64{}
			for _, s := range p.Sent {
				if s.QueueID < 0 || s.QueueID >= len(perm) {
					t.Fatalf("send #%d answered queue %d, not a logical queue of 0..%d", s.Index, s.QueueID, len(perm)-1)
				}
				perLogical[s.QueueID]++
			}
			for l, phys := range perm {
				resp := r.invoke(codec.ReqGetMaxOffset, map[string]string{"topic": permuted, "queueId": strconv.Itoa(phys), "lo": "false"}, nil, 10*time.Second)
				got, _ := resp.Ext.Get("offset")
				if resp.Code != codec.RespSuccess || got != strconv.FormatInt(perLogical[l], 10) {
					t.Fatalf("physical queue %d (logical %d): code %d %s, max offset %q, want %d sent to logical %d",
						phys, l, resp.Code, resp.Remark, got, perLogical[l], l)
				}
			}

			c := harness.RunJava(t, tg, "5", "consume", "--topic", permuted, "--group", uniq("IT_static_cg"),
				"--count", strconv.Itoa(n), "--timeout", "90000")
			// The client names a static topic's logical queues after the scope's mock broker
			// (MixAll.LOGICAL_QUEUE_MOCK_BROKER_PREFIX + "global__") and labels what it pulls so.
			received := slices.Clone(c.Received)
			for i := range received {
				if received[i].BrokerName != "__syslo__global__" {
					t.Fatalf("delivery %s from broker %q, want the logical queues' __syslo__global__", received[i].MsgID, received[i].BrokerName)
				}
				received[i].BrokerName = tg.BrokerName
			}
			expectDelivered(t, p.Sent, received, nil)
		})
	}
}
