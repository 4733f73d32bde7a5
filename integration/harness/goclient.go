package harness

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// GoProduce describes a send with the official Go client (github.com/apache/rocketmq-client-go/v2 v2.1.2).
type GoProduce struct {
	Topic      string
	Group      string            // default "rmqd-it-go-producer"
	Count      int               // default 1
	Size       int               // body size, default 64; bodies are MakeBody(BodyPrefix, i, Size)
	BodyPrefix string            // default "rmqd-it-go"
	Tags       []string          // cycled; none when empty
	KeyPrefix  string            // key of message i = KeyPrefix-i; none when empty
	Props      map[string]string // user properties on every message
	Batch      bool              // send all Count messages in one SendSync call (SEND_BATCH_MESSAGE)
	Timeout    time.Duration     // whole call, default 60s
}

// GoConsume describes a push-consumer run with the Go client.
type GoConsume struct {
	Topic        string
	Group        string // default "rmqd-it-go-consumer"
	Expr         string // TAG expression, default "*"
	SQL          bool   // Expr is SQL92
	Broadcasting bool
	Orderly      bool
	Count        int           // stop after this many distinct msgIds
	Timeout      time.Duration // default 60s
}

var goSeq atomic.Int64

// goLogOnce points the Go client's global logger at a file once per test binary (it is process-wide).
var goLogOnce sync.Once

func goClientSetup(tb TB) string {
	tb.Helper()
	path := filepath.Join(LogDir(tb), "go-client.log")
	goLogOnce.Do(func() {
		rlog.SetLogLevel("warn")
	})
	// Each call re-points the process-wide log at the calling test's folder.
	_ = rlog.SetOutputPath(path)
	// The client caches its connections per instance name: a unique name keeps targets apart.
	return fmt.Sprintf("rmqd-it-go-%d", goSeq.Add(1))
}

// RunGoProduce sends with the Go client and reports each message like the Java runner does (Msg.Status,
// MsgID, QueueID, QueueOffset...). Send errors fail the test.
func RunGoProduce(tb TB, target *Target, p GoProduce) []Msg {
	tb.Helper()
	if p.Group == "" {
		p.Group = "rmqd-it-go-producer"
	}
	if p.Count == 0 {
		p.Count = 1
	}
	if p.Size == 0 {
		p.Size = 64
	}
	if p.BodyPrefix == "" {
		p.BodyPrefix = "rmqd-it-go"
	}
	if p.Timeout == 0 {
		p.Timeout = 60 * time.Second
	}
	instance := goClientSetup(tb)
	pr, err := producer.NewDefaultProducer(
		producer.WithNameServer([]string{target.NamesrvAddr}),
		producer.WithGroupName(p.Group),
		producer.WithInstanceName(instance),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(5*time.Second),
	)
	if err != nil {
		tb.Fatalf("go producer: %v", err)
	}
	if err := pr.Start(); err != nil {
		tb.Fatalf("go producer start: %v", err)
	}
	defer shutdownBounded(tb, "go producer", pr.Shutdown)

	msgs := make([]*primitive.Message, p.Count)
	out := make([]Msg, p.Count)
	for i := range msgs {
		body := MakeBody(p.BodyPrefix, i, p.Size)
		m := primitive.NewMessage(p.Topic, body)
		if len(p.Tags) > 0 {
			m.WithTag(p.Tags[i%len(p.Tags)])
		}
		if p.KeyPrefix != "" {
			m.WithKeys([]string{fmt.Sprintf("%s-%d", p.KeyPrefix, i)})
		}
		for k, v := range p.Props {
			m.WithProperty(k, v)
		}
		msgs[i] = m
		out[i] = Msg{Index: i, Topic: p.Topic, Tags: m.GetTags(), Keys: m.GetKeys(), BodySize: len(body),
			BodySha256: Sha256Hex(body), BodyHead: bodyHead(body)}
	}
	ctx, cancel := context.WithTimeout(tb.Context(), p.Timeout)
	defer cancel()
	fill := func(i int, r *primitive.SendResult) {
		out[i].Status = sendStatus(r.Status)
		out[i].MsgID = r.MsgID
		out[i].OffsetMsgID = r.OffsetMsgID
		if r.MessageQueue != nil {
			out[i].BrokerName = r.MessageQueue.BrokerName
			out[i].QueueID = r.MessageQueue.QueueId
		}
		out[i].QueueOffset = r.QueueOffset
	}
	if p.Batch {
		r, err := pr.SendSync(ctx, msgs...)
		if err != nil {
			tb.Fatalf("go producer batch send of %d: %v", p.Count, err)
		}
		ids := strings.Split(r.MsgID, ",")
		offIDs := strings.Split(r.OffsetMsgID, ",")
		for i := range msgs {
			fill(i, r)
			out[i].BatchMsgID = r.MsgID
			out[i].QueueOffset = r.QueueOffset + int64(i)
			out[i].MsgID, out[i].OffsetMsgID = "", ""
			if len(ids) == len(msgs) {
				out[i].MsgID = ids[i]
			}
			if len(offIDs) == len(msgs) {
				out[i].OffsetMsgID = offIDs[i]
			}
		}
	} else {
		for i, m := range msgs {
			r, err := pr.SendSync(ctx, m)
			if err != nil {
				tb.Fatalf("go producer send %d of %d: %v", i, p.Count, err)
			}
			fill(i, r)
		}
	}
	for i, m := range msgs {
		out[i].Properties = m.GetProperties()
	}
	return out
}

// RunGoConsume runs a Go push consumer until c.Count distinct msgIds arrived; the test fails on timeout.
// Deliveries are returned in arrival order, duplicates included.
func RunGoConsume(tb TB, target *Target, c GoConsume) []Msg {
	tb.Helper()
	if c.Group == "" {
		c.Group = "rmqd-it-go-consumer"
	}
	if c.Expr == "" {
		c.Expr = "*"
	}
	if c.Timeout == 0 {
		c.Timeout = 60 * time.Second
	}
	instance := goClientSetup(tb)
	model := consumer.Clustering
	if c.Broadcasting {
		model = consumer.BroadCasting
	}
	pc, err := consumer.NewPushConsumer(
		consumer.WithNameServer([]string{target.NamesrvAddr}),
		consumer.WithGroupName(c.Group),
		consumer.WithInstance(instance),
		consumer.WithConsumerModel(model),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumerOrder(c.Orderly),
	)
	if err != nil {
		tb.Fatalf("go consumer: %v", err)
	}
	var (
		mu       sync.Mutex
		got      []Msg
		distinct = map[string]bool{}
		enough   = make(chan struct{})
		closed   bool
	)
	sel := consumer.MessageSelector{Type: consumer.TAG, Expression: c.Expr}
	if c.SQL {
		sel.Type = consumer.SQL92
	}
	err = pc.Subscribe(c.Topic, sel, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			got = append(got, fromGoExt(m))
			distinct[m.MsgId] = true
		}
		if len(distinct) >= c.Count && !closed {
			closed = true
			close(enough)
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		tb.Fatalf("go consumer subscribe: %v", err)
	}
	if err := pc.Start(); err != nil {
		tb.Fatalf("go consumer start: %v", err)
	}
	defer shutdownBounded(tb, "go consumer", pc.Shutdown)
	select {
	case <-enough:
	case <-time.After(c.Timeout):
		mu.Lock()
		n := len(distinct)
		mu.Unlock()
		tb.Fatalf("go consumer: %d of %d messages after %v", n, c.Count, c.Timeout)
	case <-tb.Context().Done():
		tb.Fatalf("go consumer: test ended while waiting")
	}
	mu.Lock()
	defer mu.Unlock()
	return append([]Msg(nil), got...)
}

func fromGoExt(m *primitive.MessageExt) Msg {
	v := Msg{
		MsgID: m.MsgId, OffsetMsgID: m.OffsetMsgId, Topic: m.Topic, Tags: m.GetTags(), Keys: m.GetKeys(),
		BodySize: len(m.Body), BodySha256: Sha256Hex(m.Body), BodyHead: bodyHead(m.Body),
		QueueOffset: m.QueueOffset, CommitLogOffset: m.CommitLogOffset, BodyCRC: int64(m.BodyCRC),
		SysFlag: int(m.SysFlag), ReconsumeTimes: int(m.ReconsumeTimes), BornHost: m.BornHost, StoreHost: m.StoreHost,
		BornTimestamp: m.BornTimestamp, StoreTimestamp: m.StoreTimestamp, Properties: m.GetProperties(),
	}
	if m.Queue != nil {
		v.BrokerName = m.Queue.BrokerName
		v.QueueID = m.Queue.QueueId
	}
	return v
}

func sendStatus(s primitive.SendStatus) string {
	switch s {
	case primitive.SendOK:
		return "SEND_OK"
	case primitive.SendFlushDiskTimeout:
		return "FLUSH_DISK_TIMEOUT"
	case primitive.SendFlushSlaveTimeout:
		return "FLUSH_SLAVE_TIMEOUT"
	case primitive.SendSlaveNotAvailable:
		return "SLAVE_NOT_AVAILABLE"
	}
	return fmt.Sprintf("UNKNOWN(%d)", s)
}

// shutdownBounded calls stop but gives up (with a log line) after 15 s: a client stuck on a broken target
// must not hang the test.
func shutdownBounded(tb TB, what string, stop func() error) {
	done := make(chan error, 1)
	go func() { done <- stop() }()
	select {
	case err := <-done:
		if err != nil {
			tb.Logf("%s shutdown: %v", what, err)
		}
	case <-time.After(15 * time.Second):
		tb.Logf("%s shutdown still running after 15s; leaving it", what)
	}
}
