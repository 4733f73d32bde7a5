package integration

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/integration/harness"
	"rmqd/integration/loadgen/lg"
)

// TestLiteTopics: RocketMQ 5.5's lite topics, end to end through rocketmq-proxy 5.5 with rocketmq-client-java
// 5.2.0's LitePushConsumer (rmqd.it.LiteMain). A message.type=LITE topic and a FIFO group bound to it
// (lite.bind.topic); the consumer subscribes to three lite topics, five messages go to each, and each lite
// topic's messages arrive once each, in order, the first two of one of them failed once and redelivered before
// the next; after unsubscribing from one lite topic its next message stays away while the others' arrive. In an
// exclusive group (lite.sub.model=Exclusive) a second consumer subscribing to a lite topic takes it from the
// first, which is told (NOTIFY_UNSUBSCRIBE_LITE through the proxy), and gets the next message. A consumer of a
// wildcard group (lite.sub.wildcard) subscribes to nothing and gets the messages of lite topics no one named. It
// needs the 5.5 proxy: make integration-lite (part of make test) runs it with the 5.5 build, where the pinned
// 5.3.3 proxy skips it. Against Apache too (broker 5.5 from the same build).
func TestLiteTopics(t *testing.T) {
	harness.RequireJars(t, "proxy", "grpclite")
	if !libAtLeast(t, "proxy", "rocketmq-proxy", 5, 5) {
		t.Skip("lite topics need rocketmq-proxy 5.5: make integration-lite")
	}
	for _, kind := range targetsFromEnv(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			if kind == harness.KindApache {
				harness.RequireJars(t, "apache")
			}
			// Lite topics are light message queues: Java needs both keys, and so does rmqd.
			tg := harness.Start(t, kind, harness.Options{BrokerConf: map[string]string{
				"enableLmq": "true", "enableMultiDispatch": "true"}})
			const topic, group = "IT_lite", "IT_lite_g"
			harness.CreateTopic(t, tg, topic, 4, "+message.type=LITE")
			harness.CreateGroupConfig(t, tg, group, map[string]any{"consumeMessageOrderly": true, "retryMaxTimes": 3,
				"attributes": map[string]string{"+lite.bind.topic": topic}})
			// An exclusive group: a lite topic has one client of it, the last to subscribe.
			const exclusive = "IT_lite_x"
			harness.CreateGroupConfig(t, tg, exclusive, map[string]any{"consumeMessageOrderly": true, "retryMaxTimes": 3,
				"attributes": map[string]string{"+lite.bind.topic": topic, "+lite.sub.model": "Exclusive"}})
			// A wildcard group: its consumer subscribes to nothing and gets every lite topic.
			const wildcard = "IT_lite_w"
			harness.CreateGroupConfig(t, tg, wildcard, map[string]any{"consumeMessageOrderly": true, "retryMaxTimes": 3,
				"attributes": map[string]string{"+lite.bind.topic": topic, "+lite.sub.wildcard": "true"}})
			p := harness.StartProxy(t, tg, nil)
			lites := []string{"order-1", "order-2", "order-3"}
			const count = 5
			r := harness.RunGrpcLite(t, p, "--topic", topic, "--group", group, "--lites", strings.Join(lites, ","),
				"--count", fmt.Sprint(count), "--fail-first", "2", "--exclusive-group", exclusive,
				"--wildcard-group", wildcard)
			if len(r.Sent) != count*len(lites) {
				t.Fatalf("sent %d messages, want %d", len(r.Sent), count*len(lites))
			}
			// Per lite topic, the deliveries in the order the listener saw them.
			got := map[string][]string{}
			for _, d := range r.Received {
				if !strings.HasPrefix(d.Body, d.Lite+"-") {
					t.Fatalf("message %q delivered as lite topic %q", d.Body, d.Lite)
				}
				got[d.Lite] = append(got[d.Lite], d.Body+"/"+d.Result)
			}
			for i, l := range lites {
				var want []string
				for n := range count {
					if i == 0 && n < 2 {
						want = append(want, fmt.Sprintf("%s-%d/FAILURE", l, n))
					}
					want = append(want, fmt.Sprintf("%s-%d/SUCCESS", l, n))
				}
				if i > 0 {
					want = append(want, fmt.Sprintf("%s-%d/SUCCESS", l, count)) // sent after the first was unsubscribed
				}
				if !slices.Equal(got[l], want) {
					t.Errorf("lite topic %s delivered\n %v\nwant\n %v", l, got[l], want)
				}
			}
			if slices.Contains(r.SubscribedAfter, lites[0]) {
				t.Errorf("still subscribed to %s after unsubscribing: %v", lites[0], r.SubscribedAfter)
			}
			if len(r.ExclusiveA) != 0 || !slices.Equal(r.ExclusiveB, []string{"solo"}) || !slices.Equal(r.ExclusiveGot, []string{"B:solo-0"}) {
				t.Errorf("exclusive group: first consumer holds %v, second %v, the message went to %v; want [], [solo], [B:solo-0]",
					r.ExclusiveA, r.ExclusiveB, r.ExclusiveGot)
			}

			// The wildcard consumer gets what went to lite topics no one named, each once (and perhaps, on rmqd,
			// the earlier lite topics' messages still in memory when it joined: in order, once each).
			seen := map[string]bool{}
			for _, w := range r.WildcardGot {
				if seen[w] {
					t.Errorf("wildcard consumer got %s twice: %v", w, r.WildcardGot)
				}
				seen[w] = true
			}
			if !seen["wild-1:wild-1-0"] || !seen["wild-2:wild-2-0"] {
				t.Errorf("wildcard consumer got %v, want wild-1:wild-1-0 and wild-2:wild-2-0 among them", r.WildcardGot)
			}

			// mqadmin 5.5's lite commands (LiteManagerProcessor): the first lite topic holds one message more
			// than the group consumed, the others none; each holds count+1 messages; six lite topics
			// (with "solo", "wild-1" and "wild-2"), the three groups bound to the topic.
			mq := func(want string, args ...string) {
				t.Helper()
				out, err := harness.TryMqadmin(t, tg, args...)
				if err != nil || strings.Contains(out, "error.") || !regexp.MustCompile(want).MatchString(out) {
					t.Errorf("mqadmin %s: want /%s/, got %v:\n%s", strings.Join(args, " "), want, err, out)
				}
			}
			mq(`Total Lag Count: 1\n`, "getLiteGroupInfo", "-p", topic, "-g", group, "-l", lites[0])
			mq(`Total Lag Count: 0\n`, "getLiteGroupInfo", "-p", topic, "-g", group, "-l", lites[1])
			mq(fmt.Sprintf(`(?m)^broker-a\s+0\s+%d\s`, count+1), "getLiteTopicInfo", "-p", topic, "-l", lites[1])
			mq(`(?m)^broker-a\s+-?\d+\s+6\s+\d+\s+\[IT_lite_[gwx], IT_lite_[gwx], IT_lite_[gwx]\]`, "getParentTopicInfo", "-p", topic)
			mq(`.`, "getBrokerLiteInfo", "-b", tg.BrokerAddr)
			mq(`.`, "triggerLiteDispatch", "-p", topic, "-g", group)
		})
	}
}

// TestLiteSharding: with two broker groups, each broker keeps a subscription only to the lite topics sharded to
// it (Java 5.5's LiteShardingImpl: consistentHash(liteTopic.hashCode(), write queues) over the route's write
// queues sorted by broker and queue, where rocketmq-proxy sends their messages), and the split is the same on
// rmqd's brokers as on Apache's.
func TestLiteSharding(t *testing.T) {
	for _, kind := range targetsFromEnv(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			if kind == harness.KindApache {
				harness.RequireJars(t, "apache")
				if !libAtLeast(t, "apache", "rocketmq-broker", 5, 5) {
					t.Skip("lite topics need broker 5.5: make integration-lite")
				}
			}
			ctx := t.Context()
			ns := harness.StartNamesrv(t, kind, harness.Options{})
			conf := map[string]string{"enableLmq": "true", "enableMultiDispatch": "true"}
			names := []string{"broker-a", "broker-b"}
			var brokers []*harness.Target
			for _, name := range names {
				brokers = append(brokers, harness.StartBroker(t, kind, ns.Addr, harness.Options{BrokerName: name, BrokerConf: conf}))
			}
			const topic, group, lites = "IT_lite_shard", "IT_lite_shard_g", 24
			for _, b := range brokers {
				if err := lg.CreateTopicAttrs(ctx, b.BrokerAddr, topic, 2, "+message.type=LITE"); err != nil {
					t.Fatal(err)
				}
				if err := lg.CreateLiteGroup(ctx, b.BrokerAddr, group, topic); err != nil {
					t.Fatal(err)
				}
			}
			// Both brokers in the route before anyone asks it for the sharding.
			nc, err := lg.Dial(ctx, ns.Addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			for end := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				req := codec.NewRequest(codec.ReqGetRouteinfoByTopic)
				req.Ext.Set("topic", topic)
				code, _, _, body, err := nc.Request(req, 5*time.Second)
				if err == nil && code == codec.RespSuccess {
					if r, err := codec.DecodeTopicRouteData(body); err == nil && len(r.QueueDatas) == len(names) {
						break
					}
				}
				if time.Now().After(end) {
					t.Fatalf("route of %s never had both brokers (%v, code %d)", topic, err, code)
				}
			}
			queues := []string{"broker-a", "broker-a", "broker-b", "broker-b"}
			for i, b := range brokers {
				lc := lg.LiteConfig{Route: lg.Route{BrokerName: names[i], BrokerAddr: b.BrokerAddr, Queues: 2}, Topic: topic,
					Group: group, Lites: lites, Clients: 1}
				if err := lg.LiteSubscribe(ctx, lc); err != nil {
					t.Fatal(err)
				}
				c, err := lg.Dial(ctx, b.BrokerAddr)
				if err != nil {
					t.Fatal(err)
				}
				req := codec.NewRequest(codec.ReqGetLiteClientInfo)
				for _, kv := range [][2]string{{"parentTopic", topic}, {"group", group}, {"clientId", lg.LiteClientID(topic, 0)},
					{"maxCount", "1000"}} {
					req.Ext.Set(kv[0], kv[1])
				}
				code, remark, _, body, err := c.Request(req, 5*time.Second)
				c.Close()
				if err != nil || code != codec.RespSuccess {
					t.Fatalf("%s GET_LITE_CLIENT_INFO: %v code %d %s", names[i], err, code, remark)
				}
				var info struct {
					LiteTopicSet []string `json:"liteTopicSet"`
				}
				if err := json.Unmarshal(body, &info); err != nil {
					t.Fatalf("%s: %v: %s", names[i], err, body)
				}
				var want []string
				for n := range lites {
					l := lg.LiteName(n)
					if queues[compat.ConsistentHash(int64(compat.JavaStringHash(l)), len(queues))] == names[i] {
						want = append(want, compat.LiteLMQ(topic, l))
					}
				}
				slices.Sort(want)
				slices.Sort(info.LiteTopicSet)
				if !slices.Equal(info.LiteTopicSet, want) {
					t.Errorf("%s keeps the subscriptions to %v, want %v", names[i], info.LiteTopicSet, want)
				}
			}
		})
	}
}
