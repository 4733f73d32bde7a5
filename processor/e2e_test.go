package processor

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/remoting"
	"rmqd/store"
)

// routeServer is a test-only name server: it keeps what REGISTER_BROKER sent
// and answers GET_ROUTEINFO_BY_TOPIC from it, so the broker's registration is
// exercised too. processor must not import namesrv.
type routeServer struct {
	mu         sync.Mutex
	brokerAddr string
	brokerName string
	cluster    string
	topics     map[string]*TopicConfig
	registers  int
}

func (r *routeServer) handle(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	switch req.Code {
	case codec.ReqRegisterBroker:
		body, err := codec.DecodeRegisterBrokerBody(req.Body, false, 0)
		if err != nil {
			return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
		}
		r.mu.Lock()
		r.brokerAddr, _ = req.Ext.Get("brokerAddr")
		r.brokerName, _ = req.Ext.Get("brokerName")
		r.cluster, _ = req.Ext.Get("clusterName")
		// Merged, as a name server does: a topic change registers only the
		// changed topics.
		if r.topics == nil {
			r.topics = map[string]*TopicConfig{}
		}
		for name, tc := range body.TopicConfigSerializeWrapper.TopicConfigTable {
			r.topics[name] = tc
		}
		r.registers++
		r.mu.Unlock()
		return codec.NewResponse(req, codec.RespSuccess, ""), nil
	case codec.ReqUnregisterBroker:
		return codec.NewResponse(req, codec.RespSuccess, ""), nil
	case codec.ReqGetRouteinfoByTopic:
		topic, _ := req.Ext.Get("topic")
		r.mu.Lock()
		defer r.mu.Unlock()
		tc, ok := r.topics[topic]
		if !ok {
			return codec.NewResponse(req, codec.RespTopicNotExist, "No topic route info in name server for the topic: "+topic), nil
		}
		body := fmt.Sprintf(`{"brokerDatas":[{"brokerAddrs":{"0":%q},"brokerName":%q,"cluster":%q}],"filterServerTable":{},`+
			`"queueDatas":[{"brokerName":%q,"perm":%d,"readQueueNums":%d,"topicSysFlag":%d,"writeQueueNums":%d}]}`,
			r.brokerAddr, r.brokerName, r.cluster, r.brokerName, tc.Perm, tc.ReadQueueNums, tc.TopicSysFlag, tc.WriteQueueNums)
		resp := codec.NewResponse(req, codec.RespSuccess, "")
		resp.Body = []byte(body)
		return resp, nil
	}
	return codec.NewResponse(req, codec.RespRequestCodeNotSupported, "not supported"), nil
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestGoClientEndToEnd drives the broker through remoting with the official Go
// client: 10 sync sends with tags, keys and properties, then a push consumer
// must receive every one byte-equal. The first delivery of one message is
// failed, so it must come back through CONSUMER_SEND_MSG_BACK, the delay
// queue and %RETRY%<group>.
func TestGoClientEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	if raceEnabled {
		// rocketmq-client-go v2.1.2 races with itself (pushConsumer.messageQueueChanged
		// writes the subscription data its route updater reads; the shared client's
		// Shutdown against a rebalance), and the race detector fails the test about one
		// run in five for races in that code. make unit runs this test again without
		// -race; the integration suites drive the same client against rmqd out of process.
		t.Skip("the official Go client has data races of its own; runs in the non-race pass")
	}
	rlog.SetLogLevel("fatal")
	ctx := context.Background()

	rs := &routeServer{}
	ns := remoting.NewServer(remoting.ServerConfig{Addr: "127.0.0.1:0", Logger: quietLog()})
	for _, code := range []int32{codec.ReqRegisterBroker, codec.ReqUnregisterBroker, codec.ReqGetRouteinfoByTopic} {
		ns.Register(code, remoting.ProcessorFunc(rs.handle))
	}
	require.NoError(t, ns.Start(ctx))
	defer ns.Shutdown(context.Background())
	nsAddr := ns.Addr().String()

	cfg := testConfig(t)
	cfg.ListenPort = freePort(t)
	cfg.NamesrvAddr = nsAddr
	cfg.Store.MessageDelayLevel = "1s 1s 1s 1s 1s"
	cfg.TransactionCheckInterval, cfg.TransactionTimeOut = 300, 200
	scfg := store.DefaultConfig()
	scfg.StorePathRootDir = cfg.Store.StorePathRootDir
	scfg.MappedFileSizeCommitLog = 4 << 20
	scfg.MappedFileSizeConsumeQueue = 20 * 10000
	st, err := store.Open(scfg, quietLog())
	require.NoError(t, err)
	require.NoError(t, st.Start())
	defer st.Shutdown()
	b, err := NewBroker(cfg, st, quietLog())
	require.NoError(t, err)
	srv := remoting.NewServer(remoting.ServerConfig{Addr: "127.0.0.1:" + strconv.Itoa(cfg.ListenPort), Logger: quietLog()})
	b.Register(srv)
	require.NoError(t, srv.Start(ctx))
	defer srv.Shutdown(context.Background())
	require.NoError(t, b.Start(ctx))
	defer b.Shutdown()
	rs.mu.Lock()
	require.Equal(t, 1, rs.registers, "registered on start")
	require.Contains(t, rs.topics, TopicAutoCreate)
	rs.mu.Unlock()

	const topic, n = "GoE2E", 10
	p, err := rocketmq.NewProducer(producer.WithNameServer([]string{nsAddr}), producer.WithGroupName("PG_e2e"),
		producer.WithInstanceName("e2e-p"), producer.WithRetry(2), producer.WithSendMsgTimeout(5*time.Second))
	require.NoError(t, err)
	require.NoError(t, p.Start())
	defer p.Shutdown()

	want := map[string]*primitive.Message{}
	for i := 0; i < n; i++ {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("body-%d-\x00\xff-%s", i, string(make([]byte, i*100)))))
		m.WithTag(fmt.Sprintf("tag%d", i%3))
		m.WithKeys([]string{fmt.Sprintf("key%d", i), "common"})
		m.WithProperty("prop", fmt.Sprintf("v%d", i))
		res, err := p.SendSync(ctx, m)
		require.NoError(t, err)
		require.Equal(t, primitive.SendOK, res.Status)
		require.Len(t, res.OffsetMsgID, 32)
		want[res.MsgID] = m
	}
	require.Len(t, want, n)
	tc, ok := b.topics.Select(topic)
	require.True(t, ok)
	require.EqualValues(t, 4, tc.WriteQueueNums, "created from TBW102 with the client's 4 queues")
	require.Eventually(t, func() bool {
		rs.mu.Lock()
		defer rs.mu.Unlock()
		_, ok := rs.topics[topic]
		return ok
	}, 5*time.Second, 10*time.Millisecond, "re-registered after the topic was created")

	// The Go client asks for the %RETRY% route before its first heartbeat makes
	// the broker create that topic, and then only every 30 s (a Java broker
	// behaves the same); create it up front to keep the test short.
	b.topics.CreateInSendMessageBack(RetryGroupTopicPrefix+"CG_e2e", 1, PermRead|PermWrite, 0)
	got := make(chan *primitive.MessageExt, 2*n)
	var failOnce sync.Once
	c, err := rocketmq.NewPushConsumer(consumer.WithNameServer([]string{nsAddr}), consumer.WithGroupName("CG_e2e"),
		consumer.WithInstance("e2e-c"), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	require.NoError(t, err)
	require.NoError(t, c.Subscribe(topic, consumer.MessageSelector{}, func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		failed := false
		for _, m := range msgs {
			if string(m.Body[:7]) == "body-3-" {
				failOnce.Do(func() { failed = true })
				if failed {
					continue
				}
			}
			got <- m
		}
		if failed {
			return consumer.ConsumeRetryLater, nil
		}
		return consumer.ConsumeSuccess, nil
	}))
	require.NoError(t, c.Start())
	defer c.Shutdown()

	deadline := time.After(40 * time.Second)
	seen := map[string]bool{}
	for len(seen) < n {
		select {
		case m := <-got:
			w, ok := want[m.MsgId]
			require.True(t, ok, "unexpected message %s", m.MsgId)
			require.Equal(t, w.Body, m.Body)
			require.Equal(t, w.GetTags(), m.GetTags())
			require.Equal(t, w.GetKeys(), m.GetKeys())
			require.Equal(t, w.GetProperty("prop"), m.GetProperty("prop"))
			require.Equal(t, "DefaultCluster", m.GetProperty("CLUSTER"))
			require.Equal(t, topic, m.Topic)
			if string(m.Body[:7]) == "body-3-" {
				require.EqualValues(t, 1, m.ReconsumeTimes, "redelivered through the retry topic")
			}
			seen[m.MsgId] = true
		case <-deadline:
			t.Fatalf("received %d of %d messages", len(seen), n)
		}
	}
	// The consumer's progress reaches the broker's offset table.
	require.Eventually(t, func() bool {
		var sum int64
		for q := int32(0); q < 4; q++ {
			if off := b.offsets.Query("CG_e2e", topic, q); off > 0 {
				sum += off
			}
		}
		return sum == n
	}, 15*time.Second, 100*time.Millisecond)

	// Transactions: commit, rollback, and an unknown state settled by the
	// broker's CHECK_TRANSACTION_STATE.
	txl := &txListener{states: map[string]primitive.LocalTransactionState{
		"commit": primitive.CommitMessageState, "rollback": primitive.RollbackMessageState,
		"unknown": primitive.UnknowState}}
	// Its own instance name: the Go client shares one client per process and
	// answers checks only for that client's first producer group.
	tp, err := rocketmq.NewTransactionProducer(txl, producer.WithNameServer([]string{nsAddr}),
		producer.WithGroupName("PG_tx"), producer.WithRetry(2), producer.WithInstanceName("tx"))
	require.NoError(t, err)
	require.NoError(t, tp.Start())
	defer tp.Shutdown()
	const txTopic = "GoTx"
	for _, body := range []string{"commit", "rollback", "unknown"} {
		res, err := tp.SendMessageInTransaction(ctx, primitive.NewMessage(txTopic, []byte(body)))
		require.NoError(t, err)
		require.Equal(t, primitive.SendOK, res.Status)
	}
	b.topics.CreateInSendMessageBack(RetryGroupTopicPrefix+"CG_tx", 1, PermRead|PermWrite, 0)
	txGot := make(chan string, 10)
	tc2, err := rocketmq.NewPushConsumer(consumer.WithNameServer([]string{nsAddr}), consumer.WithGroupName("CG_tx"),
		consumer.WithInstance("e2e-tc"), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	require.NoError(t, err)
	require.NoError(t, tc2.Subscribe(txTopic, consumer.MessageSelector{}, func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			txGot <- string(m.Body)
		}
		return consumer.ConsumeSuccess, nil
	}))
	require.NoError(t, tc2.Start())
	defer tc2.Shutdown()
	txSeen := map[string]int{}
	txDeadline := time.After(30 * time.Second)
	for txSeen["commit"] == 0 || txSeen["unknown"] == 0 {
		select {
		case body := <-txGot:
			txSeen[body]++
		case <-txDeadline:
			t.Fatalf("transactional messages received: %v", txSeen)
		}
	}
	require.Zero(t, txSeen["rollback"])
	require.GreaterOrEqual(t, txl.checks.Load(), int32(1), "the unknown one was checked")

	// Request-reply: the reply goes through SEND_REPLY_MESSAGE and comes back to
	// the requester as PUSH_REPLY_MESSAGE_TO_CLIENT.
	const reqTopic = "GoReq"
	rtc := NewTopicConfig(reqTopic)
	rtc.ReadQueueNums, rtc.WriteQueueNums = 2, 2
	b.topics.Update(rtc)
	b.topics.CreateInSendMessageBack(RetryGroupTopicPrefix+"CG_req", 1, PermRead|PermWrite, 0)
	require.Eventually(t, func() bool {
		rs.mu.Lock()
		defer rs.mu.Unlock()
		_, ok := rs.topics[reqTopic]
		return ok
	}, 5*time.Second, 10*time.Millisecond)
	rc, err := rocketmq.NewPushConsumer(consumer.WithNameServer([]string{nsAddr}), consumer.WithGroupName("CG_req"),
		consumer.WithInstance("e2e-rc"), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	require.NoError(t, err)
	require.NoError(t, rc.Subscribe(reqTopic, consumer.MessageSelector{}, func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			reply, err := consumer.CreateReplyMessage(m, nil)
			if err != nil {
				return consumer.ConsumeRetryLater, err
			}
			reply.Body = append([]byte("pong:"), m.Body...)
			if _, err := p.SendSync(ctx, reply); err != nil {
				return consumer.ConsumeRetryLater, err
			}
		}
		return consumer.ConsumeSuccess, nil
	}))
	require.NoError(t, rc.Start())
	defer rc.Shutdown()
	reply, err := p.Request(ctx, 20*time.Second, primitive.NewMessage(reqTopic, []byte("ping")))
	require.NoError(t, err)
	require.Equal(t, "pong:ping", string(reply.Body))
}

// txListener answers local transactions by message body; a check commits.
type txListener struct {
	states map[string]primitive.LocalTransactionState
	checks atomic.Int32
}

func (l *txListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	return l.states[string(m.Body)]
}

func (l *txListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	l.checks.Add(1)
	return primitive.CommitMessageState
}
