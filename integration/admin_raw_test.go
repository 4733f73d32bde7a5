package integration

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"rmqd/codec"
	"rmqd/integration/harness"
)

// TestCorrectionOffsetAndResumeHalf sends the two admin codes no mqadmin command sends (the admin API's
// queryCorrectionOffset and resumeCheckHalfMessage) to each target as raw requests and compares the answers:
// QUERY_CORRECTION_OFFSET's body after three groups commit offsets, and RESUME_CHECK_HALF_MESSAGE putting a half
// message back in the half queue with TRANSACTION_CHECK_TIMES 0, or refusing an id that names nothing.
// Where rmqd is stricter by design it is checked on rmqd alone: a filtered group keeps its offsets (Apache
// deletes them) and a plain message's id is refused (Apache moves the message into the half queue).
func TestCorrectionOffsetAndResumeHalf(t *testing.T) {
	var mu sync.Mutex
	answers := map[string][]string{}
	for _, kind := range targetsFromEnv(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			if kind == harness.KindApache {
				harness.RequireJars(t, "apache")
			}
			// No transaction check while the test looks at the half queue.
			tg := harness.Start(t, kind, harness.Options{BrokerConf: map[string]string{"transactionCheckInterval": "3600000"}})
			const topic = "IT_corr"
			r := newRawClient(t, tg)
			r.createTopic(topic, 2)
			for q, n := range []int{3, 2} {
				for i := range n {
					if resp := r.invoke(codec.ReqSendMessage, sendHeader(topic, q, ""), []byte(fmt.Sprint("m", i)), 30*time.Second); resp.Code != codec.RespSuccess {
						t.Fatalf("send: code %d %q", resp.Code, resp.Remark)
					}
				}
			}
			// Apache commits offsets only of a group it knows.
			for _, g := range []string{"IT_corr_g1", "IT_corr_g2", "IT_corr_cmp"} {
				if resp := r.invoke(codec.ReqUpdateAndCreateSubscriptiongroup, nil, []byte(`{"groupName":"`+g+`","consumeEnable":true}`),
					10*time.Second); resp.Code != codec.RespSuccess {
					t.Fatalf("create group %s: code %d %q", g, resp.Code, resp.Remark)
				}
			}
			for _, o := range []struct {
				group      string
				queue, off int
			}{{"IT_corr_g1", 0, 2}, {"IT_corr_g1", 1, 1}, {"IT_corr_g2", 0, 1}, {"IT_corr_g2", 1, 2}, {"IT_corr_cmp", 0, 3}} {
				resp := r.invoke(codec.ReqUpdateConsumerOffset, map[string]string{"consumerGroup": o.group, "topic": topic,
					"queueId": strconv.Itoa(o.queue), "commitOffset": strconv.Itoa(o.off)}, nil, 10*time.Second)
				if resp.Code != codec.RespSuccess {
					t.Fatalf("commit %v: code %d %q", o, resp.Code, resp.Remark)
				}
			}
			var got []string
			note := func(what string, resp *codec.RemotingCommand) {
				got = append(got, fmt.Sprintf("%s: %d %q %s", what, resp.Code, resp.Remark, resp.Body))
			}
			note("correction", r.invoke(codec.ReqQueryCorrectionOffset, map[string]string{"topic": topic,
				"compareGroup": "IT_corr_cmp", "filterGroups": "IT_corr_g2"}, nil, 10*time.Second))
			if kind == harness.KindRmqd {
				if off := r.committedOffset("IT_corr_g2", topic, 1); off != 2 {
					t.Errorf("the filtered group's offset on queue 1 is %d after the query, want 2 (kept)", off)
				}
			} else {
				t.Logf("apache: the filtered group's offset on queue 1 after the query: %d", r.committedOffset("IT_corr_g2", topic, 1))
			}

			h := sendHeader(topic, 0, "TRAN_MSG\x01true\x02PGROUP\x01IT_corr_pg\x02")
			h["sysFlag"] = "4" // TRANSACTION_PREPARED_TYPE, as the client sets it
			half := r.invoke(codec.ReqSendMessage, h, []byte("half"), 30*time.Second)
			if half.Code != codec.RespSuccess {
				t.Fatalf("half send: code %d %q", half.Code, half.Remark)
			}
			halfID, _ := half.Ext.Get("msgId")
			resume := func(topic, id string) *codec.RemotingCommand {
				return r.invoke(codec.ReqResumeCheckHalfMessage, map[string]string{"topic": topic, "msgId": id}, nil, 10*time.Second)
			}
			note("resume bogus id", resume("RMQ_SYS_TRANS_HALF_TOPIC", "00"))
			note("resume half", resume("RMQ_SYS_TRANS_HALF_TOPIC", halfID))
			waitMaxOffset(t, r, "RMQ_SYS_TRANS_HALF_TOPIC", 0, 2)
			msgs := rawPull(t, r, "RMQ_SYS_TRANS_HALF_TOPIC", 0, 2)
			for i, m := range msgs {
				times, _ := codec.PropertyValue(m.Properties, codec.PropTranCheckTimes)
				real, _ := codec.PropertyValue(m.Properties, codec.PropRealTopic)
				got = append(got, fmt.Sprintf("half %d: body %q real topic %s check times %q", i, m.Body, real, times))
			}
			if kind == harness.KindRmqd {
				plain := r.invoke(codec.ReqSendMessage, sendHeader(topic, 1, ""), []byte("plain"), 30*time.Second)
				id, _ := plain.Ext.Get("msgId")
				if resp := resume(topic, id); resp.Code != codec.RespSystemError {
					t.Errorf("resume of a plain message: code %d %q, want SYSTEM_ERROR", resp.Code, resp.Remark)
				}
			}
			t.Logf("%s answers:\n%s", kind, strings.Join(got, "\n"))
			mu.Lock()
			answers[kind] = got
			mu.Unlock()
		})
	}
	t.Cleanup(func() {
		a, r := answers[harness.KindApache], answers[harness.KindRmqd]
		if a == nil || r == nil {
			return
		}
		if fmt.Sprint(a) != fmt.Sprint(r) {
			t.Errorf("answers differ:\napache: %q\nrmqd:   %q", a, r)
		}
	})
}

// rawPull pulls want messages of queue from its start (at most 10 pulls).
func rawPull(t *testing.T, r *rawClient, topic string, queue, want int) []codec.Message {
	t.Helper()
	var msgs []codec.Message
	for range 10 {
		got, _, _ := r.pullOnce("IT_raw_pull_cg", topic, queue, int64(len(msgs)))
		if msgs = append(msgs, got...); len(msgs) >= want {
			return msgs
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("pulled %d of %d messages of %s/%d", len(msgs), want, topic, queue)
	return nil
}
