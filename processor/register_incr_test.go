package processor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/namesrv"
	"rmqd/remoting"
)

// realNameServer is an in-process rmqd name server behind NameServerInvoker:
// the requests the broker sends are handed to its processor as they would
// arrive off the wire, and kept. A body above the frame limit fails, as the
// connection would.
type realNameServer struct {
	t    testing.TB
	mu   sync.Mutex
	ns   *namesrv.NameServer
	reqs []*codec.RemotingCommand
}

func newRealNameServer(t testing.TB) *realNameServer {
	r := &realNameServer{t: t}
	r.restart()
	return r
}

// restart replaces the name server by a new one, which knows no broker.
func (r *realNameServer) restart() {
	cfg := namesrv.DefaultConfig()
	cfg.KvConfigPath = r.t.TempDir() + "/kvConfig.json"
	ns, err := namesrv.New(cfg, quietLog())
	require.NoError(r.t, err)
	r.mu.Lock()
	r.ns = ns
	r.mu.Unlock()
}

func (r *realNameServer) InvokeSync(ctx context.Context, addr string, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	ns := r.ns
	r.mu.Unlock()
	if len(req.Body) > remoting.DefaultMaxFrameLength {
		return nil, errors.New("frame too large: connection closed")
	}
	return ns.ProcessRequest(ctx, nil, req)
}

// registrations are the REGISTER_BROKER requests received since from, decoded.
func (r *realNameServer) registrations(from int) []*codec.RegisterBrokerBody {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*codec.RegisterBrokerBody
	for _, req := range r.reqs[from:] {
		if req.Code != codec.ReqRegisterBroker {
			continue
		}
		compressed, _ := req.Ext.Get("compressed")
		body, err := codec.DecodeRegisterBrokerBody(req.Body, compressed == "true", req.Version)
		require.NoError(r.t, err)
		out = append(out, body)
	}
	return out
}

func (r *realNameServer) sent() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reqs)
}

func (r *realNameServer) route(topic string) (*codec.TopicRouteData, bool) {
	r.mu.Lock()
	ns := r.ns
	r.mu.Unlock()
	return ns.Routes().TopicRouteData(topic)
}

// newRegisteringBroker is a started broker registered with an in-process name server.
func newRegisteringBroker(t *testing.T, mod func(*BrokerConfig)) (*testBroker, *realNameServer) {
	t.Helper()
	ns := newRealNameServer(t)
	tb := newTestBroker(t, nil) // for its store
	cfg := testConfig(t)
	cfg.NamesrvAddr = "127.0.0.1:9876"
	if mod != nil {
		mod(&cfg)
	}
	b, err := NewBroker(cfg, tb.st, quietLog())
	require.NoError(t, err)
	b.SetNameServerInvoker(ns)
	require.NoError(t, b.Start(context.Background()))
	t.Cleanup(func() { _ = b.Shutdown() })
	return &testBroker{Broker: b, st: tb.st}, ns
}

func createTopicReq(topic string, queues int) *codec.RemotingCommand {
	req := codec.NewRequest(codec.ReqUpdateAndCreateTopic)
	for _, kv := range [][2]string{{"topic", topic}, {"defaultTopic", TopicAutoCreate}, {"readQueueNums", fmt.Sprint(queues)},
		{"writeQueueNums", fmt.Sprint(queues)}, {"perm", "6"}, {"topicFilterType", "SINGLE_TAG"}, {"topicSysFlag", "0"}, {"order", "false"}} {
		req.Ext.Set(kv[0], kv[1])
	}
	return req
}

func topicNames(body *codec.RegisterBrokerBody) []string {
	return codec.SortedKeys(body.TopicConfigSerializeWrapper.TopicConfigTable)
}

// TestCreateTopicRegistersOnlyIt: UPDATE_AND_CREATE_TOPIC and _LIST send the
// name server the topics they changed, with the table's data version, and
// the name server keeps the broker's other topics.
func TestCreateTopicRegistersOnlyIt(t *testing.T) {
	b, ns := newRegisteringBroker(t, nil)
	ctx := context.Background()
	c := newTestConn(1)
	regs := ns.registrations(0)
	require.Len(t, regs, 1, "the whole table at start")
	require.Greater(t, len(regs[0].TopicConfigSerializeWrapper.TopicConfigTable), 5)

	for i := range 3 {
		from := ns.sent()
		topic := fmt.Sprintf("IncT%d", i)
		resp, _ := b.handleUpdateAndCreateTopic(ctx, c, createTopicReq(topic, 4))
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
		// The handler waits for the registration (its own or the register
		// loop's): the route is there when it answers.
		regs := ns.registrations(from)
		require.NotEmpty(t, regs)
		last := regs[len(regs)-1]
		require.Equal(t, []string{topic}, topicNames(last))
		require.Equal(t, b.topics.DataVersion(), last.TopicConfigSerializeWrapper.DataVersion)
		route, ok := ns.route(topic)
		require.True(t, ok, topic)
		require.EqualValues(t, 4, route.QueueDatas[0].WriteQueueNums)
	}
	for _, kept := range []string{"IncT0", "IncT1", TopicAutoCreate, "broker-a"} {
		_, ok := ns.route(kept)
		require.True(t, ok, "%s still routed", kept)
	}

	// An update is taken too: same topic, new queue count.
	from := ns.sent()
	resp, _ := b.handleUpdateAndCreateTopic(ctx, c, createTopicReq("IncT0", 2))
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	regs = ns.registrations(from)
	require.Equal(t, []string{"IncT0"}, topicNames(regs[len(regs)-1]))
	route, _ := ns.route("IncT0")
	require.EqualValues(t, 2, route.QueueDatas[0].WriteQueueNums)

	// UPDATE_AND_CREATE_TOPIC_LIST: those topics, registered before the answer.
	from = ns.sent()
	list := codec.NewRequest(codec.ReqUpdateAndCreateTopicList)
	list.Body = []byte(`{"topicConfigList":[{"topicName":"ListA","readQueueNums":2,"writeQueueNums":2,"perm":6},` +
		`{"topicName":"ListB","readQueueNums":3,"writeQueueNums":3,"perm":6}]}`)
	resp, _ = b.handleUpdateAndCreateTopicList(ctx, c, list)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	regs = ns.registrations(from)
	require.NotEmpty(t, regs)
	require.Equal(t, []string{"ListA", "ListB"}, topicNames(regs[len(regs)-1]))
	for _, topic := range []string{"ListA", "ListB", "IncT2"} {
		_, ok := ns.route(topic)
		require.True(t, ok, topic)
	}
}

// TestIncrementalRegistrationAfterNameServerRestart: a name server that
// restarted refuses a single topic from a broker it does not know; the broker
// then sends it the whole table, so the new topic and the old ones are routed
// before the create is answered.
func TestIncrementalRegistrationAfterNameServerRestart(t *testing.T) {
	b, ns := newRegisteringBroker(t, nil)
	ctx := context.Background()
	resp, _ := b.handleUpdateAndCreateTopic(ctx, newTestConn(1), createTopicReq("BeforeT", 4))
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	ns.restart()
	from := ns.sent()
	resp, _ = b.handleUpdateAndCreateTopic(ctx, newTestConn(1), createTopicReq("AfterT", 4))
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	regs := ns.registrations(from)
	require.Greater(t, len(regs[len(regs)-1].TopicConfigSerializeWrapper.TopicConfigTable), 5, "the whole table last")
	for _, topic := range []string{"BeforeT", "AfterT", TopicAutoCreate} {
		_, ok := ns.route(topic)
		require.True(t, ok, topic)
	}
}

// TestCompressedRegister: compressedRegister=true sends the compressed form,
// with the body's CRC, and the rmqd name server reads it.
func TestCompressedRegister(t *testing.T) {
	b, ns := newRegisteringBroker(t, func(c *BrokerConfig) { c.CompressedRegister = true })
	resp, _ := b.handleUpdateAndCreateTopic(context.Background(), newTestConn(1), createTopicReq("ZipT", 4))
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	ns.mu.Lock()
	reqs := append([]*codec.RemotingCommand(nil), ns.reqs...)
	ns.mu.Unlock()
	require.NotEmpty(t, reqs)
	for _, req := range reqs {
		v, _ := req.Ext.Get("compressed")
		require.Equal(t, "true", v)
		crc, _ := req.Ext.Get("bodyCrc32")
		require.Equal(t, fmt.Sprint(codec.BodyCRC(req.Body)), crc)
	}
	for _, topic := range []string{"ZipT", TopicAutoCreate} {
		route, ok := ns.route(topic)
		require.True(t, ok, topic)
		require.NotEmpty(t, route.QueueDatas)
	}
}

// TestOversizedTableSentCompressed: a table whose plain body is above the
// frame limit (60,000 topics of 107-character names: about 20 MiB) is sent
// compressed, and the name server routes all of it; a small change still goes
// plain.
func TestOversizedTableSentCompressed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 20 MiB registration")
	}
	b, ns := newRegisteringBroker(t, nil)
	const n = 60000
	tcs := make([]TopicConfig, n)
	pad := strings.Repeat("x", 100)
	for i := range tcs {
		tcs[i] = NewTopicConfig(fmt.Sprintf("%s%07d", pad, i))
	}
	b.topics.Update(tcs...)
	b.topics.TakeChanged() // leave the loop nothing to send
	from := ns.sent()
	require.NoError(t, b.RegisterAll(context.Background()))
	ns.mu.Lock()
	last := ns.reqs[len(ns.reqs)-1]
	ns.mu.Unlock()
	v, _ := last.Ext.Get("compressed")
	require.Equal(t, "true", v)
	require.Less(t, len(last.Body), registerBodyMax)
	t.Logf("%d topics: compressed body %d bytes", n, len(last.Body))
	regs := ns.registrations(from)
	require.Len(t, regs[len(regs)-1].TopicConfigSerializeWrapper.TopicConfigTable, len(b.topics.TopicNames()))
	for _, i := range []int{0, n / 2, n - 1} {
		_, ok := ns.route(tcs[i].TopicName)
		require.True(t, ok, i)
	}

	from = ns.sent()
	resp, _ := b.handleUpdateAndCreateTopic(context.Background(), newTestConn(1), createTopicReq("SmallT", 4))
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	ns.mu.Lock()
	last = ns.reqs[len(ns.reqs)-1]
	ns.mu.Unlock()
	require.Greater(t, ns.sent(), from)
	v, _ = last.Ext.Get("compressed")
	require.Equal(t, "false", v, "a small body goes plain")
	_, ok := ns.route("SmallT")
	require.True(t, ok)
}

// TestSplitRegistration: enableSplitRegistration sends the table in parts of
// splitRegistrationSize topics, and a name server takes a change in any part
// (with Java's one data version for all parts it would take only the first's).
func TestSplitRegistration(t *testing.T) {
	b, ns := newRegisteringBroker(t, func(c *BrokerConfig) {
		c.EnableSplitRegistration, c.SplitRegistrationSize = true, 3
	})
	names := b.topics.TopicNames()
	total := len(names)
	regs := ns.registrations(0)
	require.Len(t, regs, (total+2)/3)
	seen := 0
	for i, r := range regs {
		seen += len(r.TopicConfigSerializeWrapper.TopicConfigTable)
		require.LessOrEqual(t, len(r.TopicConfigSerializeWrapper.TopicConfigTable), 3)
		if i == len(regs)-1 {
			require.Equal(t, b.topics.DataVersion(), r.TopicConfigSerializeWrapper.DataVersion, "the last part carries the table's version")
		}
	}
	require.Equal(t, total, seen)

	// Change a topic of the last part, then one of a middle part, without an
	// incremental registration: the next whole-table registration carries both.
	for _, name := range []string{names[total-1], names[total/2]} {
		tc, _ := b.topics.Select(name)
		tc.Perm = PermRead
		b.topics.Update(tc)
		b.topics.TakeChanged()
		require.NoError(t, b.RegisterAll(context.Background()))
		route, ok := ns.route(name)
		require.True(t, ok, name)
		require.EqualValues(t, PermRead, route.QueueDatas[0].Perm, name)
	}
}

// TestOrderTopicsFromNameServer: the name server answers a registration with
// its ORDER_TOPIC_CONFIG namespace (mqadmin updateOrderConf), and the broker
// marks those of its topics order, in memory, in topics.json and in its next
// registration, as Java's updateOrderTopicConfig; a topic it does not hold is
// not made, and the name server's delete does not clear the flag (Java's
// neither). A body that does not decode changes nothing.
func TestOrderTopicsFromNameServer(t *testing.T) {
	b, ns := newRegisteringBroker(t, nil)
	ctx := context.Background()
	resp, _ := b.handleUpdateAndCreateTopic(ctx, newTestConn(1), createTopicReq("OrdT", 4))
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	require.False(t, b.topics.IsOrderTopic("OrdT"))
	kv := func(code int32, key, value string) {
		req := codec.NewRequest(code)
		req.Ext.Set("namespace", "ORDER_TOPIC_CONFIG")
		req.Ext.Set("key", key)
		if value != "" {
			req.Ext.Set("value", value)
		}
		resp, err := ns.InvokeSync(ctx, "127.0.0.1:9876", req)
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
	kv(codec.ReqPutKvConfig, "OrdT", "broker-a:4")
	kv(codec.ReqPutKvConfig, "NotHeldT", "broker-a:4")

	require.NoError(t, b.RegisterAll(ctx))
	require.True(t, b.topics.IsOrderTopic("OrdT"))
	require.False(t, b.topics.Exists("NotHeldT"))
	file, err := os.ReadFile(filepath.Join(b.conf().Store.StorePathRootDir, "config", "topics.json"))
	require.NoError(t, err)
	var onDisk struct {
		TopicConfigTable map[string]struct{ Order bool } `json:"topicConfigTable"`
	}
	require.NoError(t, json.Unmarshal(file, &onDisk))
	require.True(t, onDisk.TopicConfigTable["OrdT"].Order, "topics.json")
	from := ns.sent()
	require.NoError(t, b.RegisterAll(ctx))
	regs := ns.registrations(from)
	require.NotEmpty(t, regs)
	require.True(t, regs[len(regs)-1].TopicConfigSerializeWrapper.TopicConfigTable["OrdT"].Order, "registered as order")

	kv(codec.ReqDeleteKvConfig, "OrdT", "")
	require.NoError(t, b.RegisterAll(ctx))
	require.True(t, b.topics.IsOrderTopic("OrdT"), "kept after the name server's delete")

	resp, _ = b.handleUpdateAndCreateTopic(ctx, newTestConn(1), createTopicReq("OrdU", 4))
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	b.registered(&codec.RemotingCommand{Body: []byte(`{"table":`)})
	b.registered(&codec.RemotingCommand{Body: []byte(`{"table":{"OrdU":1}}`)})
	require.False(t, b.topics.IsOrderTopic("OrdU"))
}
