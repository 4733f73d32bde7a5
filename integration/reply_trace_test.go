package integration

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"rmqd/codec"
	"rmqd/integration/harness"
)

// goReplyFor builds the reply MessageUtil.createReplyMessage makes: the CLUSTER the broker stamped on the
// request names the reply topic, and the request's correlation id, requester and TTL are carried back.
func goReplyFor(req *primitive.MessageExt, body string) *primitive.Message {
	reply := primitive.NewMessage(req.GetProperty(primitive.PropertyCluster)+"_REPLY_TOPIC", []byte(body))
	reply.WithProperty(primitive.PropertyMsgType, "reply")
	for _, k := range []string{primitive.PropertyCorrelationID, primitive.PropertyMessageReplyToClient, primitive.PropertyMessageTTL} {
		reply.WithProperty(k, req.GetProperty(k))
	}
	return reply
}

// TestRequestReplyGo: a Go requester's Request is answered by a Go replier through rmqd: the reply topic
// is routed by the name server, the reply is pushed to the requester (PUSH_REPLY_MESSAGE_TO_CLIENT), and a
// reply to a requester that is gone is refused with Java's SYSTEM_ERROR remark.
func TestRequestReplyGo(t *testing.T) {
	for _, kind := range targetsFromEnv(t) {
		t.Run(kind, func(t *testing.T) { requestReplyGo(t, harness.Start(t, kind, harness.Options{})) })
	}
}

func requestReplyGo(t *testing.T, tg *harness.Target) {
	topic := uniq("IT_reply_req")
	newRawClient(t, tg).createTopic(topic, 2)

	replier := newGoProducer(t, tg, producer.WithGroupName(uniq("IT_reply_pg")), producer.WithRetry(0))
	replies := make(chan error, 4)
	c, err := consumer.NewPushConsumer(consumer.WithNameServer([]string{tg.NamesrvAddr}),
		consumer.WithGroupName(uniq("IT_reply_cg")), consumer.WithInstance(uniq("it-reply-c")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic, consumer.MessageSelector{}, func(ctx context.Context, ms ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range ms {
			_, err := replier.p.SendSync(ctx, goReplyFor(m, "pong:"+string(m.Body)))
			replies <- err
		}
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Shutdown() })

	// Go client v2.1.2 heartbeats a requester only 1 s after start and then every 30 s (its Request skips the
	// heartbeat Java's prepareSendRequest sends): a send right after start teaches it the broker in time for
	// the first one, and the broker must list the requester before a reply can find it.
	raw := newRawClient(t, tg)
	warm := uniq("IT_reply_warm")
	raw.createTopic(warm, 1)
	rg := uniq("IT_reply_rg")
	requester, err := producer.NewDefaultProducer(producer.WithNameServer([]string{tg.NamesrvAddr}),
		producer.WithGroupName(rg), producer.WithInstanceName(uniq("it-reply-r")))
	if err != nil {
		t.Fatal(err)
	}
	if err := requester.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := requester.SendSync(t.Context(), primitive.NewMessage(warm, []byte("warm"))); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(45 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		resp := raw.invoke(codec.ReqGetProducerConnectionList, map[string]string{"producerGroup": rg}, nil, 5*time.Second)
		if resp.Code == codec.RespSuccess {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker never listed requester group %s: %d %s", rg, resp.Code, resp.Remark)
		}
	}
	reply, err := requester.Request(t.Context(), 30*time.Second, primitive.NewMessage(topic, []byte("ping")))
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	if got := string(reply.Body); got != "pong:ping" {
		t.Fatalf("reply body %q", got)
	}
	if got := reply.GetProperty(primitive.PropertyMsgType); got != "reply" {
		t.Fatalf("reply MSG_TYPE %q", got)
	}
	if err := <-replies; err != nil {
		t.Fatalf("replier's send: %v", err)
	}

	// The requester is gone: the replier is told the channel was not found.
	_ = requester.Shutdown()
	gone := primitive.NewMessage(tg.ClusterName+"_REPLY_TOPIC", []byte("late"))
	gone.WithProperty(primitive.PropertyMsgType, "reply")
	gone.WithProperty(primitive.PropertyCorrelationID, "c-gone")
	gone.WithProperty(primitive.PropertyMessageReplyToClient, "127.0.0.1@gone")
	_, err = replier.p.SendSync(t.Context(), gone)
	if err == nil || !strings.Contains(err.Error(), "channel of <127.0.0.1@gone> not found") {
		t.Fatalf("reply to a gone requester: %v", err)
	}
}

// TestTraceTopicGo: with traceTopicEnable the broker serves RMQ_SYS_TRACE_TOPIC from the start (one queue,
// read+write, routed), a Go producer with trace on writes its traces there, and QUERY_MESSAGE by the
// traced message's id on the trace topic (mqadmin queryMsgTraceById) finds them.
//
// Go client v2.1.2 makes one trace client per process (instance INNER_TRACE_CLIENT_DEFAULT) and refuses a
// second one for another name server, so only the first selected target runs; pick one with RMQD_TARGET.
func TestTraceTopicGo(t *testing.T) {
	for i, kind := range targetsFromEnv(t) {
		t.Run(kind, func(t *testing.T) {
			if i > 0 {
				t.Skip("one Go trace client per process: run this target alone (RMQD_TARGET=" + kind + ")")
			}
			traceTopicGo(t, harness.Start(t, kind, harness.Options{BrokerConf: map[string]string{"traceTopicEnable": "true"}}))
		})
	}
}

func traceTopicGo(t *testing.T, tg *harness.Target) {
	raw := newRawClient(t, tg)
	topic := uniq("IT_trace")
	raw.createTopic(topic, 2)

	p := newGoProducer(t, tg, producer.WithGroupName(uniq("IT_trace_pg")), producer.WithTrace(&primitive.TraceConfig{
		GroupName: uniq("IT_trace_tg"), Access: primitive.Local, NamesrvAddrs: []string{tg.NamesrvAddr}}))
	res, err := p.p.SendSync(t.Context(), primitive.NewMessage(topic, []byte("traced")).WithKeys([]string{"k1"}))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp := raw.invoke(codec.ReqQueryMessage, map[string]string{"topic": "RMQ_SYS_TRACE_TOPIC", "key": res.MsgID,
			"maxNum": "32", "beginTimestamp": "0", "endTimestamp": strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)},
			nil, 10*time.Second)
		if resp.Code == codec.RespSuccess {
			for _, m := range primitive.DecodeMessage(resp.Body) {
				if m.Topic == "RMQ_SYS_TRACE_TOPIC" && strings.Contains(string(m.Body), res.MsgID) {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no trace of %s on RMQ_SYS_TRACE_TOPIC: code %d %s", res.MsgID, resp.Code, resp.Remark)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// topicConfigOf is the broker's config of topic (GET_ALL_TOPIC_CONFIG), nil when it has none.
func topicConfigOf(t *testing.T, raw *rawClient, topic string) *codec.TopicConfig {
	t.Helper()
	resp := raw.invoke(codec.ReqGetAllTopicConfig, nil, nil, 10*time.Second)
	if resp.Code != codec.RespSuccess {
		t.Fatalf("GET_ALL_TOPIC_CONFIG: %d %s", resp.Code, resp.Remark)
	}
	w, err := codec.DecodeTopicConfigSerializeWrapper(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return w.TopicConfigTable[topic]
}

// TestTraceTopicDisabled: without traceTopicEnable the broker has no trace topic (the reply topic is there,
// one queue, read+write), and a traced Java client's first trace send, which falls back to TBW102's route,
// creates RMQ_SYS_TRACE_TOPIC as any auto-created topic: min(client's 4, TBW102's 8) queues, read+write.
func TestTraceTopicDisabled(t *testing.T) {
	for _, kind := range targetsFromEnv(t) {
		t.Run(kind, func(t *testing.T) {
			tg := harness.Start(t, kind, harness.Options{})
			raw := newRawClient(t, tg)
			if tc := topicConfigOf(t, raw, "RMQ_SYS_TRACE_TOPIC"); tc != nil {
				t.Fatalf("trace topic present with traceTopicEnable=false: %+v", *tc)
			}
			reply := topicConfigOf(t, raw, tg.ClusterName+"_REPLY_TOPIC")
			if reply == nil || reply.ReadQueueNums != 1 || reply.WriteQueueNums != 1 || reply.Perm != 6 {
				t.Fatalf("reply topic: %+v", reply)
			}
			h := sendHeader("RMQ_SYS_TRACE_TOPIC", 0, "KEYS\x01k1\x02")
			resp := raw.invoke(codec.ReqSendMessage, h, []byte("trace"), 10*time.Second)
			if resp.Code != codec.RespSuccess {
				t.Fatalf("trace send: %d %s", resp.Code, resp.Remark)
			}
			tc := topicConfigOf(t, raw, "RMQ_SYS_TRACE_TOPIC")
			if tc == nil || tc.ReadQueueNums != 4 || tc.WriteQueueNums != 4 || tc.Perm != 6 {
				t.Fatalf("auto-created trace topic: %+v", tc)
			}
		})
	}
}
