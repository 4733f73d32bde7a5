package integration

import (
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"rmqd/integration/harness"
)

var brokerSeq atomic.Int64

// uniq makes a group or instance name no earlier run used (broadcasting consumers keep offsets in local
// files keyed by client id and group).
func uniq(prefix string) string {
	return fmt.Sprintf("%s_%d_%d", prefix, time.Now().UnixNano()%1e9, brokerSeq.Add(1))
}

// javaHome is the system properties of a JVM a test starts itself: its home and temp files in a
// folder of the test's own (harness.JVMHome).
func javaHome(t *testing.T) []string {
	args, err := harness.JVMHome(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return args
}

// goProducer wraps a started Go producer; the test's cleanup shuts it down.
type goProducer struct {
	tb harness.TB
	p  interface {
		SendSync(context.Context, ...*primitive.Message) (*primitive.SendResult, error)
		SendAsync(context.Context, func(context.Context, *primitive.SendResult, error), ...*primitive.Message) error
		SendOneWay(context.Context, ...*primitive.Message) error
	}
}

// goLog points the Go client's process-wide log at the calling test's folder.
func goLog(tb harness.TB) {
	rlog.SetLogLevel("warn")
	_ = rlog.SetOutputPath(filepath.Join(harness.LogDir(tb), "go-client.log"))
}

func newGoProducer(tb harness.TB, tg *harness.Target, opts ...producer.Option) *goProducer {
	tb.Helper()
	goLog(tb)
	base := []producer.Option{producer.WithNameServer([]string{tg.NamesrvAddr}), producer.WithGroupName("IT_b_go_pg"),
		producer.WithInstanceName(uniq("it-b-go-p")), producer.WithRetry(2), producer.WithSendMsgTimeout(10 * time.Second)}
	p, err := producer.NewDefaultProducer(append(base, opts...)...)
	if err != nil {
		tb.Fatalf("go producer: %v", err)
	}
	if err := p.Start(); err != nil {
		tb.Fatalf("go producer start: %v", err)
	}
	tb.Cleanup(func() { _ = p.Shutdown() })
	return &goProducer{tb: tb, p: p}
}

// msgSpec shapes message i of a send.
type msgSpec struct {
	topic, prefix string
	size          int
	random        bool // incompressible body
	tags          []string
	keyPrefix     string
	props         map[string]string
	shardingKeys  int // > 0: sharding key "sk-(i mod n)"
}

var goProps = map[string]string{"color": "red", "spaced": "a b=c:d", "utf8": "h\u00e9llo \u2713"}

var goPropKeys = []string{"color", "spaced", "utf8"}

func (s msgSpec) build(i int) (*primitive.Message, harness.Msg) {
	body := harness.MakeBody(s.prefix, i, s.size)
	if s.random {
		_, _ = rand.Read(body[min(len(body), 32):])
	}
	m := primitive.NewMessage(s.topic, body)
	if len(s.tags) > 0 {
		m.WithTag(s.tags[i%len(s.tags)])
	}
	if s.keyPrefix != "" {
		m.WithKeys([]string{fmt.Sprintf("%s-%d", s.keyPrefix, i)})
	}
	for k, v := range s.props {
		m.WithProperty(k, v)
	}
	if s.shardingKeys > 0 {
		m.WithShardingKey(fmt.Sprintf("sk-%d", i%s.shardingKeys))
	}
	return m, harness.Msg{Index: i, Topic: s.topic, Tags: m.GetTags(), Keys: m.GetKeys(), BodySize: len(body),
		BodySha256: harness.Sha256Hex(body)}
}

func fillResult(v *harness.Msg, r *primitive.SendResult) {
	v.Status = "SEND_OK"
	if r.Status != primitive.SendOK {
		v.Status = fmt.Sprintf("STATUS(%d)", r.Status)
	}
	v.MsgID, v.OffsetMsgID, v.QueueOffset = r.MsgID, r.OffsetMsgID, r.QueueOffset
	if r.MessageQueue != nil {
		v.BrokerName, v.QueueID = r.MessageQueue.BrokerName, r.MessageQueue.QueueId
	}
}

// send sends n messages in mode sync, async, oneway or batch (one SendSync of all n).
func (g *goProducer) send(mode string, s msgSpec, n int) []harness.Msg {
	tb := g.tb
	tb.Helper()
	msgs := make([]*primitive.Message, n)
	out := make([]harness.Msg, n)
	for i := range n {
		msgs[i], out[i] = s.build(i)
	}
	ctx, cancel := context.WithTimeout(tb.Context(), 60*time.Second)
	defer cancel()
	switch mode {
	case "sync":
		for i, m := range msgs {
			r, err := g.p.SendSync(ctx, m)
			if err != nil {
				tb.Fatalf("go sync send %d: %v", i, err)
			}
			fillResult(&out[i], r)
		}
	case "async":
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i, m := range msgs {
			wg.Add(1)
			err := g.p.SendAsync(ctx, func(_ context.Context, r *primitive.SendResult, err error) {
				defer wg.Done()
				if err != nil {
					errs[i] = err
					return
				}
				fillResult(&out[i], r)
			}, m)
			if err != nil {
				tb.Fatalf("go async send %d: %v", i, err)
			}
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				tb.Fatalf("go async send %d: %v", i, err)
			}
		}
	case "oneway":
		for i, m := range msgs {
			if err := g.p.SendOneWay(ctx, m); err != nil {
				tb.Fatalf("go oneway send %d: %v", i, err)
			}
			out[i].Status = "ONEWAY"
			out[i].MsgID = m.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex)
		}
	case "batch":
		r, err := g.p.SendSync(ctx, msgs...)
		if err != nil {
			tb.Fatalf("go batch send of %d: %v", n, err)
		}
		offIDs := strings.Split(r.OffsetMsgID, ",")
		for i := range msgs {
			fillResult(&out[i], r)
			out[i].MsgID, out[i].OffsetMsgID = "", ""
			if len(offIDs) == n {
				out[i].OffsetMsgID = offIDs[i]
			}
			out[i].QueueOffset = r.QueueOffset + int64(i)
		}
	default:
		tb.Fatalf("send mode %q", mode)
	}
	for i, m := range msgs {
		out[i].Properties = m.GetProperties()
	}
	return out
}

// goConsumer is a running Go push consumer recording every delivery.
type goConsumer struct {
	tb       harness.TB
	pc       interface{ Shutdown() error }
	mu       sync.Mutex
	got      []harness.Msg
	distinct map[string]bool
	stopped  bool
}

type consumeSpec struct {
	topic, group string
	expr         string
	sql          bool
	broadcasting bool
	orderly      bool
}

func startGoConsumer(tb harness.TB, tg *harness.Target, s consumeSpec) *goConsumer {
	tb.Helper()
	goLog(tb)
	model := consumer.Clustering
	if s.broadcasting {
		model = consumer.BroadCasting
	}
	pc, err := consumer.NewPushConsumer(consumer.WithNameServer([]string{tg.NamesrvAddr}), consumer.WithGroupName(s.group),
		consumer.WithInstance(uniq("it-b-go-c")), consumer.WithConsumerModel(model),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset), consumer.WithConsumerOrder(s.orderly))
	if err != nil {
		tb.Fatalf("go consumer: %v", err)
	}
	c := &goConsumer{tb: tb, pc: pc, distinct: map[string]bool{}}
	sel := consumer.MessageSelector{Type: consumer.TAG, Expression: s.expr}
	if s.expr == "" {
		sel.Expression = "*"
	}
	if s.sql {
		sel.Type = consumer.SQL92
	}
	err = pc.Subscribe(s.topic, sel, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, m := range msgs {
			c.got = append(c.got, harness.FromGoMessage(m))
			c.distinct[m.MsgId] = true
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		tb.Fatalf("go consumer subscribe: %v", err)
	}
	if err := pc.Start(); err != nil {
		tb.Fatalf("go consumer start: %v", err)
	}
	tb.Cleanup(c.stop)
	return c
}

func (c *goConsumer) deliveries() []harness.Msg {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]harness.Msg(nil), c.got...)
}

// waitGot waits until the consumers together saw n distinct messages.
func waitGot(tb harness.TB, n int, timeout time.Duration, cs ...*goConsumer) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ids := map[string]bool{}
		for _, c := range cs {
			for _, m := range c.deliveries() {
				ids[m.MsgID] = true
			}
		}
		if len(ids) >= n {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("consumers saw %d of %d messages after %v", len(ids), n, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop lets running listeners return (so their offsets are in the client's table), then shuts down, which
// persists the offsets.
func (c *goConsumer) stop() {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return
	}
	c.stopped = true
	c.mu.Unlock()
	time.Sleep(300 * time.Millisecond)
	done := make(chan struct{})
	go func() { _ = c.pc.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		c.tb.Logf("go consumer shutdown still running after 15 s; leaving it")
	}
}

func filterMsgs(ms []harness.Msg, keep func(harness.Msg) bool) []harness.Msg {
	var out []harness.Msg
	for _, m := range ms {
		if keep(m) {
			out = append(out, m)
		}
	}
	return out
}

var goCases = []scenario{
	{
		// Sync, async, oneway and batch sends; plain, compressed (>= 4 KiB) and 1 MiB incompressible bodies;
		// keys, tags and user properties must arrive byte-equal.
		Name: "go-send-modes",
		Run: func(tb harness.TB, tg *harness.Target) {
			const topic = "IT_b_go_modes"
			p := newGoProducer(tb, tg)
			base := msgSpec{topic: topic, tags: []string{"TA", "TB"}, keyPrefix: "k", props: goProps}
			var sent []harness.Msg
			for _, step := range []struct {
				mode, prefix string
				size, n      int
				random       bool
			}{
				{"sync", "sync", 200, 6, false}, {"sync", "sync-z", 6000, 4, false}, {"sync", "sync-1m", 1 << 20, 1, true},
				{"async", "async", 300, 4, false}, {"async", "async-z", 9000, 2, true},
				{"oneway", "oneway", 100, 4, false}, {"batch", "batch", 150, 5, false},
			} {
				s := base
				s.prefix, s.size, s.random = step.prefix, step.size, step.random
				s.keyPrefix = "k-" + step.prefix
				sent = append(sent, p.send(step.mode, s, step.n)...)
			}
			c := startGoConsumer(tb, tg, consumeSpec{topic: topic, group: "IT_b_go_modes_cg"})
			waitGot(tb, len(sent), 90*time.Second, c)
			c.stop()
			expectDelivered(tb, sent, c.deliveries(), goPropKeys)
		},
	},
	{
		// The Go client does not check the size: a 5 MiB incompressible body reaches the broker, which must
		// refuse it with MESSAGE_ILLEGAL (13) like Apache does.
		Name: "go-body-5mib-refused",
		Run: func(tb harness.TB, tg *harness.Target) {
			p := newGoProducer(tb, tg, producer.WithRetry(0))
			m, _ := msgSpec{topic: "IT_b_go_limits", prefix: "huge", size: 5 << 20, random: true}.build(0)
			ctx, cancel := context.WithTimeout(tb.Context(), 60*time.Second)
			defer cancel()
			_, err := p.p.SendSync(ctx, m)
			tb.Logf("%s: 5 MiB Go send: %v", tg.Kind, err)
			if err == nil || !strings.Contains(err.Error(), "CODE: 13") {
				tb.Fatalf("5 MiB Go send: want broker error CODE: 13 (MESSAGE_ILLEGAL), got %v", err)
			}
		},
	},
	{
		// Two clustering consumers of one group, once the rebalance settled, share the messages: every one
		// delivered, none to both.
		Name: "go-clustering-share",
		Run: func(tb harness.TB, tg *harness.Target) {
			const topic = "IT_b_go_share"
			group := uniq("IT_b_go_share_cg")
			r := newRawClient(tb, tg)
			r.createTopic(topic, 4)
			c1 := startGoConsumer(tb, tg, consumeSpec{topic: topic, group: group})
			c2 := startGoConsumer(tb, tg, consumeSpec{topic: topic, group: group})
			r.waitConsumers(group, 2, 60*time.Second)
			time.Sleep(3 * time.Second) // both rebalanced after NOTIFY_CONSUMER_IDS_CHANGED
			sent := newGoProducer(tb, tg).send("sync", msgSpec{topic: topic, prefix: "share", size: 100, tags: []string{"S"}, keyPrefix: "k", props: goProps}, 40)
			onlyOK(tb, sent)
			waitGot(tb, len(sent), 60*time.Second, c1, c2)
			time.Sleep(time.Second)
			// Read both before either stops: the one left takes over the other's queues and may deliver again
			// what was consumed but whose offset it had not yet heard of (at least once, as RocketMQ promises).
			d1, d2 := c1.deliveries(), c2.deliveries()
			c1.stop()
			c2.stop()
			expectDelivered(tb, sent, append(d1, d2...), goPropKeys)
			in1 := map[string]bool{}
			for _, m := range d1 {
				in1[m.MsgID] = true
			}
			var both []string
			for _, m := range d2 {
				if in1[m.MsgID] {
					both = append(both, m.MsgID)
				}
			}
			if len(both) > 0 || len(d1) == 0 || len(d2) == 0 || len(d1)+len(d2) != len(sent) {
				tb.Fatalf("clustering share: consumer 1 got %d, consumer 2 got %d deliveries of %d messages; delivered to both: %v",
					len(d1), len(d2), len(sent), both)
			}
			tb.Logf("clustering share: %d + %d of %d, none twice", len(d1), len(d2), len(sent))
		},
	},
	{
		// Broadcasting: two consumers of one group each get every message; a third group filters by tag, a
		// fourth by SQL92 on a user property.
		Name: "go-broadcast-filters",
		Run: func(tb harness.TB, tg *harness.Target) {
			const topic = "IT_b_go_bcast"
			p := newGoProducer(tb, tg)
			red := p.send("sync", msgSpec{topic: topic, prefix: "red", size: 80, tags: []string{"A", "B", "C"}, keyPrefix: "k-red",
				props: map[string]string{"color": "red", "n": "1"}}, 6)
			blue := p.send("sync", msgSpec{topic: topic, prefix: "blue", size: 80, tags: []string{"A", "B", "C"}, keyPrefix: "k-blue",
				props: map[string]string{"color": "blue", "n": "2"}}, 6)
			all := append(red, blue...)
			group := uniq("IT_b_go_bcast_cg")
			b1 := startGoConsumer(tb, tg, consumeSpec{topic: topic, group: group, broadcasting: true})
			b2 := startGoConsumer(tb, tg, consumeSpec{topic: topic, group: group, broadcasting: true})
			tag := startGoConsumer(tb, tg, consumeSpec{topic: topic, group: uniq("IT_b_go_tag_cg"), expr: "A || C"})
			sql := startGoConsumer(tb, tg, consumeSpec{topic: topic, group: uniq("IT_b_go_sql_cg"), sql: true,
				expr: "color = 'red' AND TAGS IN ('A', 'B')"})
			wantTag := filterMsgs(all, func(m harness.Msg) bool { return m.Tags == "A" || m.Tags == "C" })
			wantSQL := filterMsgs(red, func(m harness.Msg) bool { return m.Tags == "A" || m.Tags == "B" })
			waitGot(tb, len(all), 90*time.Second, b1)
			waitGot(tb, len(all), 90*time.Second, b2)
			waitGot(tb, len(wantTag), 90*time.Second, tag)
			waitGot(tb, len(wantSQL), 90*time.Second, sql)
			time.Sleep(2 * time.Second) // anything that should not arrive has had its chance
			for _, c := range []*goConsumer{b1, b2, tag, sql} {
				c.stop()
			}
			expectDelivered(tb, all, b1.deliveries(), []string{"color", "n"})
			expectDelivered(tb, all, b2.deliveries(), []string{"color", "n"})
			expectDelivered(tb, wantTag, tag.deliveries(), []string{"color", "n"})
			expectDelivered(tb, wantSQL, sql.deliveries(), []string{"color", "n"})
		},
	},
	{
		// Orderly: messages with the same sharding key go to one queue (hash selector) and an orderly
		// consumer sees each key's messages in send order and each queue in offset order.
		Name: "go-orderly",
		Run: func(tb harness.TB, tg *harness.Target) {
			const topic = "IT_b_go_order"
			newRawClient(tb, tg).createTopic(topic, 4)
			p := newGoProducer(tb, tg, producer.WithQueueSelector(producer.NewHashQueueSelector()))
			sent := p.send("sync", msgSpec{topic: topic, prefix: "ord", size: 60, tags: []string{"O"}, shardingKeys: 5}, 40)
			onlyOK(tb, sent)
			c := startGoConsumer(tb, tg, consumeSpec{topic: topic, group: uniq("IT_b_go_order_cg"), orderly: true})
			waitGot(tb, len(sent), 90*time.Second, c)
			c.stop()
			got := c.deliveries()
			expectDelivered(tb, sent, got, nil)
			checkOrder(tb, sent, got)
		},
	},
	{
		// A consumer restarted in the same group resumes at the committed offsets: the new messages arrive,
		// the acknowledged old ones do not come again (beyond one in-flight batch per queue).
		Name: "go-consumer-restart",
		Run: func(tb harness.TB, tg *harness.Target) {
			const topic = "IT_b_go_resume"
			group := uniq("IT_b_go_resume_cg")
			raw := newRawClient(tb, tg)
			raw.createTopic(topic, 4)
			p := newGoProducer(tb, tg)
			first := p.send("sync", msgSpec{topic: topic, prefix: "first", size: 90, keyPrefix: "k1", props: goProps}, 20)
			c1 := startGoConsumer(tb, tg, consumeSpec{topic: topic, group: group})
			waitGot(tb, len(first), 90*time.Second, c1)
			// Stop only once the broker holds what the consumer acknowledged: the Go
			// client commits every 5 s, and stopped before that (or, once on Apache,
			// 6 s after) it got a queue's 5 acknowledged messages again.
			raw.waitCommitted(group, topic, 4, int64(len(first)), 30*time.Second)
			c1.stop()
			expectDelivered(tb, first, c1.deliveries(), goPropKeys)
			second := p.send("sync", msgSpec{topic: topic, prefix: "second", size: 90, keyPrefix: "k2", props: goProps}, 10)
			c2 := startGoConsumer(tb, tg, consumeSpec{topic: topic, group: group})
			waitGot(tb, len(second), 90*time.Second, c2)
			time.Sleep(2 * time.Second)
			c2.stop()
			checkResume(tb, first, second, c2.deliveries(), 4)
		},
	},
}

// checkResume: after a restart the consumer got every message of second and at most slack of first.
func checkResume(tb harness.TB, first, second, got []harness.Msg, slack int) {
	tb.Helper()
	old := map[string]bool{}
	for _, m := range first {
		old[m.MsgID] = true
	}
	again := filterMsgs(got, func(m harness.Msg) bool { return old[m.MsgID] })
	expectDelivered(tb, second, filterMsgs(got, func(m harness.Msg) bool { return !old[m.MsgID] }), nil)
	tb.Logf("restart: %d new messages delivered, %d acknowledged ones again", len(second), len(again))
	if len(again) > slack {
		tb.Fatalf("restarted consumer got %d already acknowledged messages again (slack %d)", len(again), slack)
	}
}

// checkOrder checks that deliveries keep each sharding key in send order and each queue in offset order.
func checkOrder(tb harness.TB, sent, got []harness.Msg) {
	tb.Helper()
	idx := map[string]int{}
	for _, s := range sent {
		idx[s.MsgID] = s.Index
	}
	lastByKey := map[int]int{}
	lastByQueue := map[int]int64{}
	for _, r := range got {
		i := idx[r.MsgID]
		key := i % 5 // go-orderly's shardingKeys
		if prev, ok := lastByKey[key]; ok && i <= prev {
			tb.Fatalf("sharding key sk-%d: message #%d delivered after #%d", key, i, prev)
		}
		lastByKey[key] = i
		if prev, ok := lastByQueue[r.QueueID]; ok && r.QueueOffset <= prev {
			tb.Fatalf("queue %d: offset %d delivered after %d", r.QueueID, r.QueueOffset, prev)
		}
		lastByQueue[r.QueueID] = r.QueueOffset
	}
}

// awaitSignedBody subscribes a push consumer signing with cred to topic (from the first offset) and waits
// up to 60 s for a message whose body is want.
func awaitSignedBody(t *testing.T, tg *harness.Target, topic, group, instance string, cred primitive.Credentials, want string) {
	t.Helper()
	goLog(t)
	got := make(chan string, 16)
	pc, err := consumer.NewPushConsumer(consumer.WithNameServer([]string{tg.NamesrvAddr}), consumer.WithGroupName(group),
		consumer.WithInstance(instance), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithCredentials(cred))
	if err != nil {
		t.Fatal(err)
	}
	err = pc.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			select {
			case got <- string(m.Body):
			default:
			}
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pc.Shutdown() }()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case b := <-got:
			if b == want {
				return
			}
		case <-deadline:
			t.Fatalf("signed consumer got nothing from %s in 60 s", topic)
		}
	}
}
