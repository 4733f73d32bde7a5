package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"rmqd/codec"
	"rmqd/integration/harness"
	"rmqd/remoting"
)

// rawClient is a remoting.Client pointed at one target's broker: the protocol without any official client
// logic (no retries, no client-side checks, no polling loop of its own).
type rawClient struct {
	tb   harness.TB
	c    *remoting.Client
	tg   *harness.Target
	now  func() time.Time
	cred *primitive.Credentials // signs every request when set (signRequest)
}

func newRawClient(tb harness.TB, tg *harness.Target) *rawClient {
	return newRawClientTLS(tb, tg, nil)
}

// newRawClientTLS is newRawClient over TLS when tc is set (for a broker in tls.server.mode=enforcing).
func newRawClientTLS(tb harness.TB, tg *harness.Target, tc *tls.Config) *rawClient {
	c := remoting.NewClient(remoting.ClientConfig{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), TLS: tc})
	tb.Cleanup(func() { _ = c.Close() })
	return &rawClient{tb: tb, c: c, tg: tg, now: time.Now}
}

func rawRequest(code int32, ext map[string]string) *codec.RemotingCommand {
	req := codec.NewRequest(code)
	keys := make([]string, 0, len(ext))
	for k := range ext {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		req.Ext.Set(k, ext[k])
	}
	return req
}

// invoke sends one request to the broker and returns the response; transport errors fail the test.
func (r *rawClient) invoke(code int32, ext map[string]string, body []byte, timeout time.Duration) *codec.RemotingCommand {
	r.tb.Helper()
	req := rawRequest(code, ext)
	req.Body = body
	signRequest(req, r.cred)
	ctx, cancel := context.WithTimeout(r.tb.Context(), timeout)
	defer cancel()
	resp, err := r.c.InvokeSync(ctx, r.tg.BrokerAddr, req)
	if err != nil {
		r.tb.Fatalf("raw request %d to %s: %v", code, r.tg.BrokerAddr, err)
	}
	return resp
}

// createTopic is UPDATE_AND_CREATE_TOPIC (17): queues queues, read+write.
func (r *rawClient) createTopic(topic string, queues int) {
	r.tb.Helper()
	resp := r.invoke(17, map[string]string{"topic": topic, "defaultTopic": "TBW102", "readQueueNums": strconv.Itoa(queues),
		"writeQueueNums": strconv.Itoa(queues), "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}, nil, 10*time.Second)
	if resp.Code != codec.RespSuccess {
		r.tb.Fatalf("create topic %s: code %d %s", topic, resp.Code, resp.Remark)
	}
}

// sendHeader is a SEND_MESSAGE (10) header for one message to queue (no UNIQ_KEY: the broker's offset
// message id is the only id).
func sendHeader(topic string, queue int, props string) map[string]string {
	return map[string]string{"producerGroup": "IT_b_raw_pg", "topic": topic, "defaultTopic": "TBW102",
		"defaultTopicQueueNums": "4", "queueId": strconv.Itoa(queue), "sysFlag": "0",
		"bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10), "flag": "0", "properties": props,
		"reconsumeTimes": "0", "unitMode": "false", "batch": "false"}
}

// sendOK sends body with props (Java's encoding) to the queue and fails the test unless it is stored.
func (r *rawClient) sendOK(topic string, queue int, props, body string) {
	r.tb.Helper()
	resp := r.invoke(codec.ReqSendMessage, sendHeader(topic, queue, props), []byte(body), 10*time.Second)
	if resp.Code != codec.RespSuccess {
		r.tb.Fatalf("send %q to %s/%d: code %d %s", body, topic, queue, resp.Code, resp.Remark)
	}
}

// queueOffset is GET_MAX_OFFSET (30).
func (r *rawClient) maxOffset(topic string, queue int) int64 {
	r.tb.Helper()
	resp := r.invoke(30, map[string]string{"topic": topic, "queueId": strconv.Itoa(queue)}, nil, 10*time.Second)
	v, _ := resp.Ext.Get("offset")
	n, err := strconv.ParseInt(v, 10, 64)
	if resp.Code != codec.RespSuccess || err != nil {
		r.tb.Fatalf("max offset %s/%d: code %d %s offset %q", topic, queue, resp.Code, resp.Remark, v)
	}
	return n
}

// pullOnce is one PULL_MESSAGE (11) of queue from offset for group, every tag, not held: the records it got
// and the next offset to pull, or ok false when the broker found none.
func (r *rawClient) pullOnce(group, topic string, queue int, offset int64) (msgs []codec.Message, next int64, ok bool) {
	r.tb.Helper()
	resp := r.invoke(codec.ReqPullMessage, map[string]string{"consumerGroup": group, "topic": topic,
		"queueId": strconv.Itoa(queue), "queueOffset": strconv.FormatInt(offset, 10), "maxMsgNums": "32",
		"sysFlag": strconv.Itoa(pullFlagSubscription), "commitOffset": "0", "suspendTimeoutMillis": "0",
		"subscription": "*", "subVersion": "0", "expressionType": "TAG"}, nil, 30*time.Second)
	if resp.Code != codec.RespSuccess {
		return nil, offset, false
	}
	for b := resp.Body; len(b) > 0; {
		var m codec.Message
		n, err := codec.DecodeRecord(b, &m)
		if err != nil {
			r.tb.Fatalf("pulled record after offset %d of %s/%d: %v", offset, topic, queue, err)
		}
		msgs = append(msgs, m)
		b = b[n:]
	}
	v, _ := resp.Ext.Get("nextBeginOffset")
	next, _ = strconv.ParseInt(v, 10, 64)
	return msgs, next, true
}

// pullToEnd pulls the queue from offset to its end (at most 100 pulls).
func (r *rawClient) pullToEnd(group, topic string, queue int, offset int64) []codec.Message {
	r.tb.Helper()
	var all []codec.Message
	for range 100 {
		msgs, next, ok := r.pullOnce(group, topic, queue, offset)
		all = append(all, msgs...)
		if !ok || next <= offset {
			break
		}
		offset = next
	}
	return all
}

// committedOffset is QUERY_CONSUMER_OFFSET (14) with setZeroIfNotFound=false: the offset the broker keeps
// for group on the queue, -1 when it keeps none.
func (r *rawClient) committedOffset(group, topic string, queue int) int64 {
	r.tb.Helper()
	resp := r.invoke(14, map[string]string{"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(queue),
		"setZeroIfNotFound": "false"}, nil, 10*time.Second)
	if resp.Code != codec.RespSuccess {
		return -1
	}
	v, _ := resp.Ext.Get("offset")
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// waitCommitted waits until the offsets the broker keeps for group on topic's queues add up to want.
func (r *rawClient) waitCommitted(group, topic string, queues int, want int64, timeout time.Duration) {
	r.tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var sum int64
		for q := 0; q < queues; q++ {
			sum += max(r.committedOffset(group, topic, q), 0)
		}
		if sum == want {
			return
		}
		if time.Now().After(deadline) {
			r.tb.Fatalf("group %s: broker keeps offsets adding up to %d on %s after %v, want %d", group, sum, topic, timeout, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// consumerCount is GET_CONSUMER_LIST_BY_GROUP (38): how many clients the broker knows in group.
func (r *rawClient) consumerCount(group string) int {
	r.tb.Helper()
	resp := r.invoke(38, map[string]string{"consumerGroup": group}, nil, 10*time.Second)
	if resp.Code != codec.RespSuccess {
		return 0
	}
	return bytes.Count(resp.Body, []byte("@"))
}

// waitConsumers waits until the broker lists n clients in group.
func (r *rawClient) waitConsumers(group string, n int, timeout time.Duration) {
	r.tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := r.consumerCount(group)
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			r.tb.Fatalf("group %s: broker lists %d consumers after %v, want %d", group, got, timeout, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

const (
	pullFlagSuspend      = 0x2
	pullFlagSubscription = 0x4
)

var rawCases = []scenario{
	{
		// A 1 MiB body (incompressible, sent uncompressed) is stored; a 5 MiB one is refused with
		// MESSAGE_ILLEGAL (13), the code Apache's store answers above maxMessageSize (4 MiB), and the
		// connection stays usable.
		Name: "raw-body-limits",
		Run: func(tb harness.TB, tg *harness.Target) {
			const topic = "IT_b_raw_limits"
			r := newRawClient(tb, tg)
			big := make([]byte, 1<<20)
			_, _ = rand.Read(big)
			resp := r.invoke(codec.ReqSendMessage, sendHeader(topic, 0, ""), big, 30*time.Second)
			if resp.Code != codec.RespSuccess {
				tb.Fatalf("1 MiB send: code %d %q, want 0", resp.Code, resp.Remark)
			}
			huge := make([]byte, 5<<20)
			_, _ = rand.Read(huge)
			resp = r.invoke(codec.ReqSendMessage, sendHeader(topic, 0, ""), huge, 30*time.Second)
			tb.Logf("%s: 5 MiB SEND_MESSAGE answered code %d remark %q", tg.Kind, resp.Code, resp.Remark)
			if resp.Code != codec.RespMessageIllegal {
				tb.Fatalf("5 MiB send: code %d %q, want MESSAGE_ILLEGAL (13)", resp.Code, resp.Remark)
			}
			if n := r.maxOffset(topic, 0); n != 1 {
				tb.Fatalf("queue 0 max offset %d after one good and one refused send, want 1", n)
			}
		},
	},
	{
		// What the broker stores of a producer's properties string: Java's SendMessageProcessor decodes it
		// into a HashMap (a pair without a value or separator dropped, a repeated name's last value kept),
		// sets CLUSTER, MSG_REGION and TRACE_ON and encodes the map again. The set of pairs must be the same on both brokers; the
		// order is not (Java's is the HashMap's, rmqd keeps the producer's: docs/compatibility.md).
		Name: "raw-stored-properties",
		Run: func(tb harness.TB, tg *harness.Target) {
			const topic = "IT_b_raw_props"
			r := newRawClient(tb, tg)
			r.createTopic(topic, 1)
			props := "KEYS\x01k1 k2\x02TAGS\x01tg\x02WAIT\x01true\x02UNIQ_KEY\x017F0000011234\x02alpha\x01a\x02" +
				"dup\x01first\x02junk\x02CLUSTER\x01other\x02dup\x01second\x02\x01nameless\x02DELAY\x01\x02nu\x01n\x02psi\x01v\x02"
			if resp := r.invoke(codec.ReqSendMessage, sendHeader(topic, 0, props), []byte("p"), 30*time.Second); resp.Code != codec.RespSuccess {
				tb.Fatalf("send: code %d %q", resp.Code, resp.Remark)
			}
			msgs, _, ok := r.pullOnce("IT_b_raw_props_cg", topic, 0, 0)
			if !ok || len(msgs) != 1 {
				tb.Fatalf("pull: ok=%v, %d messages, want 1", ok, len(msgs))
			}
			// Split raw, not through the decoder: a dropped pair must not be stored either.
			got := strings.Split(strings.TrimSuffix(msgs[0].Properties, "\x02"), "\x02")
			for i, p := range got {
				got[i] = strings.Replace(p, "\x01", "=", 1)
			}
			tb.Logf("%s stored %q", tg.Kind, got)
			slices.Sort(got)
			want := []string{"CLUSTER=" + tg.ClusterName, "KEYS=k1 k2", "MSG_REGION=DefaultRegion", "TAGS=tg", "TRACE_ON=true",
				"UNIQ_KEY=7F0000011234", "WAIT=true", "alpha=a", "dup=second", "nu=n", "psi=v"}
			if !slices.Equal(got, want) {
				tb.Fatalf("stored properties %q, want %q", got, want)
			}
		},
	},
	{
		// Long polling: a PULL_MESSAGE with the suspend flag at the end of a queue is parked; a message
		// sent on another connection must answer it (one request, no polling) within 50 ms (median of 5;
		// rmqd only, Apache's figure is logged).
		Name: "raw-long-polling",
		Run: func(tb harness.TB, tg *harness.Target) {
			topic := "IT_b_raw_lp"
			const group = "IT_b_raw_lp_cg"
			puller := newRawClient(tb, tg)
			sender := newRawClient(tb, tg)
			sender.createTopic(topic, 1)
			// Warm both connections and the queue.
			resp := sender.invoke(codec.ReqSendMessage, sendHeader(topic, 0, ""), []byte("warm-up"), 30*time.Second)
			if resp.Code != 0 {
				tb.Fatalf("warm-up send: code %d %s", resp.Code, resp.Remark)
			}
			// The next pull starts after the last message sent; the consume queue is written after the
			// send is answered (both brokers dispatch asynchronously), so wait until it shows.
			nextOffset := func(resp *codec.RemotingCommand) int64 {
				v, _ := resp.Ext.Get("queueOffset")
				off, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					tb.Fatalf("send response without queueOffset: %q", v)
				}
				for deadline := time.Now().Add(10 * time.Second); puller.maxOffset(topic, 0) <= off; {
					if time.Now().After(deadline) {
						tb.Fatalf("queue max offset never passed %d", off)
					}
					time.Sleep(5 * time.Millisecond)
				}
				return off + 1
			}
			off := nextOffset(resp)
			const tries = 5
			var lat []time.Duration
			pulls := 0
			for i := range tries {
				req := rawRequest(codec.ReqPullMessage, map[string]string{"consumerGroup": group, "topic": topic, "queueId": "0",
					"queueOffset": strconv.FormatInt(off, 10), "maxMsgNums": "32", "sysFlag": strconv.Itoa(pullFlagSuspend | pullFlagSubscription),
					"commitOffset": "0", "suspendTimeoutMillis": "20000", "subscription": "*", "subVersion": strconv.FormatInt(time.Now().UnixMilli(), 10),
					"expressionType": "TAG"})
				type answer struct {
					resp *codec.RemotingCommand
					err  error
					at   time.Time
				}
				got := make(chan answer, 1)
				ctx, cancel := context.WithTimeout(tb.Context(), 30*time.Second)
				pulls++
				err := puller.c.InvokeAsync(ctx, tg.BrokerAddr, req, func(resp *codec.RemotingCommand, err error) {
					got <- answer{resp, err, time.Now()}
				})
				if err != nil {
					cancel()
					tb.Fatalf("pull %d: %v", i, err)
				}
				// The pull must be parked, not answered.
				select {
				case a := <-got:
					cancel()
					code := int32(-1)
					if a.resp != nil {
						code = a.resp.Code
					}
					tb.Fatalf("pull %d at offset %d answered before any message was sent: code %d err %v", i, off, code, a.err)
				case <-time.After(400 * time.Millisecond):
				}
				body := fmt.Appendf(nil, "long-poll-%s-%d-%d", tg.Kind, i, time.Now().UnixNano())
				sentAt := time.Now()
				resp := sender.invoke(codec.ReqSendMessage, sendHeader(topic, 0, ""), body, 30*time.Second)
				if resp.Code != codec.RespSuccess {
					cancel()
					tb.Fatalf("send %d: code %d %s", i, resp.Code, resp.Remark)
				}
				sentOffset := resp
				var a answer
				select {
				case a = <-got:
				case <-time.After(25 * time.Second):
					cancel()
					tb.Fatalf("pull %d: no answer 25 s after the message was sent", i)
				}
				cancel()
				if a.err != nil || a.resp.Code != codec.RespSuccess || !bytes.Contains(a.resp.Body, body) {
					code := int32(-1)
					if a.resp != nil {
						code = a.resp.Code
					}
					tb.Fatalf("pull %d: want the new message in the answer to the parked pull, got code %d err %v", i, code, a.err)
				}
				lat = append(lat, a.at.Sub(sentAt))
				off = nextOffset(sentOffset)
			}
			sorted := slices.Clone(lat)
			slices.Sort(sorted)
			median := sorted[len(sorted)/2]
			tb.Logf("%s long polling: send->pull answer %v (median %v), %d PULL_MESSAGE requests for %d messages",
				tg.Kind, lat, median, pulls, tries)
			if pulls != tries {
				tb.Fatalf("%d pulls for %d wake-ups", pulls, tries)
			}
			if tg.Kind == harness.KindRmqd && median > 50*time.Millisecond {
				tb.Fatalf("rmqd long polling: median send->pull answer %v > 50 ms (all: %v)", median, lat)
			}
		},
	},
}
