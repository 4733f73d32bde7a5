package integration

import (
	"encoding/json"
	"time"

	"rmqd/codec"
	"rmqd/integration/harness"
)

// proxyAdminScenario asks the broker what mqadmin consumerConnection / consumerStatus /
// consumeMessageDirectly / querySubscription ask while a gRPC PushConsumer receives through the proxy.
//
// rocketmq-proxy 5.3.3 in cluster mode never heartbeats its gRPC consumers to the brokers (only the
// transaction producers, as "rmq-proxy-producer-client"): the broker has no channel to call back on, so
// GET_CONSUMER_RUNNING_INFO and CONSUME_MESSAGE_DIRECTLY cannot reach the client, and Apache 5.3.3 answers
// "not online". What the broker does know is the compensated POP consumer (compensateBasicConsumerInfo /
// compensateSubscribeData), which QUERY_SUBSCRIPTION_BY_CONSUMER shows. Both targets must answer alike.
var proxyAdminScenario = proxyScenario{Name: "grpc-admin-callbacks", Run: func(tb harness.TB, tg *harness.Target, px *harness.Proxy) {
	const topic, group = "PX_admin", "PX_admin_cg"
	harness.CreateTopic(tb, tg, topic, 2, "+message.type=NORMAL")
	done := make(chan *harness.GrpcResult, 1)
	go func() {
		r, _ := harness.TryGrpc(tb, px, "--topic", topic, "--producer", "normal", "--count", "2",
			"--consumer", "push", "--group", group, "--linger", "15000")
		done <- r
	}()
	r := newRawClient(tb, tg)
	// Consuming: the proxy has popped and acked (the broker keeps offsets past the first message).
	for deadline := time.Now().Add(90 * time.Second); r.committedOffset(group, topic, 0)+r.committedOffset(group, topic, 1) < 1; {
		if time.Now().After(deadline) {
			tb.Fatalf("no offset committed for %s on %s within 90 s", group, topic)
		}
		time.Sleep(200 * time.Millisecond)
	}
	sent := r.invoke(codec.ReqSendMessage, sendHeader(topic, 0, "TAGS\x01a\x02"), []byte("direct"), 10*time.Second)
	if sent.Code != codec.RespSuccess {
		tb.Fatalf("send to %s: code %d %s", topic, sent.Code, sent.Remark)
	}
	msgID, _ := sent.Ext.Get("msgId")
	const clientID = "127.0.0.1@grpc-client"
	for _, c := range []struct {
		name   string
		code   int32
		ext    map[string]string
		remark string
	}{
		{"consumerConnection", codec.ReqGetConsumerConnectionList, map[string]string{"consumerGroup": group},
			"the consumer group[" + group + "] not online"},
		{"consumer list", codec.ReqGetConsumerListByGroup, map[string]string{"consumerGroup": group},
			"no consumer for this group, " + group},
		{"consumerStatus", codec.ReqGetConsumerRunningInfo, map[string]string{"consumerGroup": group, "clientId": clientID,
			"jstackEnable": "false"}, "The Consumer <" + group + "> <" + clientID + "> not online"},
		{"consumeMessageDirectly", codec.ReqConsumeMessageDirectly, map[string]string{"consumerGroup": group, "clientId": clientID,
			"msgId": msgID, "brokerName": tg.BrokerName, "topic": topic}, "The Consumer <" + group + "> <" + clientID + "> not online"},
	} {
		resp := r.invoke(c.code, c.ext, nil, 20*time.Second)
		if resp.Code == codec.RespSuccess || resp.Remark != c.remark {
			tb.Errorf("%s (%d) for a consumer behind the proxy: code %d %q, want %q", c.name, c.code, resp.Code, resp.Remark, c.remark)
		}
	}
	// The compensated subscriptions: the topic as the proxy pops it, and the v1 retry topic.
	for _, t := range []string{topic, "%RETRY%" + group + "_" + topic} {
		resp := r.invoke(codec.ReqQuerySubscriptionByConsumer, map[string]string{"group": group, "topic": t}, nil, 10*time.Second)
		var body struct {
			Group, Topic     string
			SubscriptionData map[string]any
		}
		if resp.Code != codec.RespSuccess || json.Unmarshal(resp.Body, &body) != nil {
			tb.Errorf("querySubscription %s: code %d %s body %s", t, resp.Code, resp.Remark, resp.Body)
			continue
		}
		sd := body.SubscriptionData
		if body.Group != group || body.Topic != t || sd["topic"] != t || sd["subString"] != "*" || sd["expressionType"] != "TAG" ||
			sd["subVersion"] == nil || sd["tagsSet"] == nil || sd["codeSet"] == nil {
			tb.Errorf("querySubscription %s: body %s, want the compensated subscription of %s to * (TAG)", t, resp.Body, t)
		}
	}
	if res := <-done; res == nil || !res.OK {
		tb.Errorf("gRPC push consumer: %+v", res)
	}
}}

func init() { proxyScenarios = append(proxyScenarios, proxyAdminScenario) }
