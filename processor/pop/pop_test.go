package pop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/store"
)

// testHost is Host over a real store; topics, groups and offsets are maps,
// and revive records wait for their TIMER_DELIVER_MS in a goroutine (the
// broker's timer wheel is not part of this package).
type testHost struct {
	st      *store.DefaultStore
	cfg     Config
	confDir string
	mu      sync.Mutex
	topics  map[string]Topic
	offsets map[string]int64
	resets  map[string]int64
	timers  sync.WaitGroup
	pending []*time.Timer
	stopped atomic.Bool
	// compensated records Compensate calls: "group topic retryTopic expType exp".
	compensated []string
	// horizon, when set, is what ReviveHorizon reports (a timer still holding records).
	horizon atomic.Int64
	// retryStatus, when not PutOK, is the status of a written put to a retry topic
	// (a SYNC_MASTER without its slave); ckPuts counts checkpoint puts.
	retryStatus atomic.Int32
	ckPuts      atomic.Int32
	// refuse makes every put fail (an acting slave without a place for it).
	refuse atomic.Bool
	// remote holds other groups' records by "broker/topic/queue/offset"
	// (GetRemoteMessage, under mu); remoteDown makes asking fail; remoteAsks
	// lists what was asked.
	remote     map[string][]byte
	remoteDown bool
	remoteAsks []string
}

func remoteKey(broker, topic string, q int32, off int64) string {
	return fmt.Sprintf("%s/%s/%d/%d", broker, topic, q, off)
}

func (h *testHost) GetRemoteMessage(ctx context.Context, broker, topic string, q int32, off int64) ([]byte, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := remoteKey(broker, topic, q, off)
	h.remoteAsks = append(h.remoteAsks, k)
	if h.remoteDown {
		return nil, true
	}
	return h.remote[k], false
}

func newTestHost(t *testing.T) *testHost { return newTestHostTB(t) }

func newTestHostTB(t testing.TB) *testHost {
	t.Helper()
	root := t.TempDir()
	scfg := store.DefaultConfig()
	scfg.StorePathRootDir = root
	scfg.MappedFileSizeCommitLog = 1 << 20
	scfg.MappedFileSizeConsumeQueue = 20 * 1000
	st, err := store.Open(scfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	require.NoError(t, st.Start())
	h := &testHost{st: st, topics: map[string]Topic{}, offsets: map[string]int64{}, resets: map[string]int64{},
		cfg: Config{BrokerName: "broker-a", ClusterName: "C", BrokerIP1: "127.0.0.1",
			StoreHost: netip.MustParseAddrPort("127.0.0.1:10911"), Readable: true, TimerWheelEnable: true,
			ReviveQueueNum: 2, RetrieveFromRetryV1: true, PopFromRetryProbability: 20, ReviveInterval: 100 * time.Millisecond,
			MaxPopPollingSize: 1000, PopPollingSize: 100}, confDir: root + "/config"}
	h.topics[reviveTopic("C")] = Topic{ReadQueueNums: 2, Perm: 6}
	t.Cleanup(func() {
		h.stopped.Store(true)
		h.mu.Lock()
		for _, tm := range h.pending {
			if tm.Stop() {
				h.timers.Done()
			}
		}
		h.mu.Unlock()
		h.timers.Wait()
		require.NoError(t, st.Shutdown())
	})
	return h
}

func (h *testHost) Conf() Config      { return h.cfg }
func (h *testHost) ConfigDir() string { return h.confDir }

func (h *testHost) PutMessage(ctx context.Context, msg *codec.Message) store.PutResult {
	if tags, _ := codec.PropertyValue(msg.Properties, codec.PropTags); tags == ckTag {
		h.ckPuts.Add(1)
	}
	if h.refuse.Load() {
		return store.PutResult{Status: store.PutServiceNotAvailable}
	}
	if st := store.PutStatus(h.retryStatus.Load()); st != store.PutOK && strings.HasPrefix(msg.Topic, retryGroupPrefix) {
		res := h.st.PutMessage(ctx, msg)
		if res.Status == store.PutOK {
			res.Status = st
		}
		return res
	}
	if v, ok := codec.PropertyValue(msg.Properties, codec.PropTimerDeliverMs); ok {
		d, _ := strconv.ParseInt(v, 10, 64)
		if wait := time.Until(time.UnixMilli(d)); wait > 0 {
			cp := codec.CloneMessage(msg)
			h.timers.Add(1)
			tm := time.AfterFunc(wait, func() {
				defer h.timers.Done()
				if !h.stopped.Load() {
					h.st.PutMessage(context.Background(), cp)
				}
			})
			h.mu.Lock()
			h.pending = append(h.pending, tm)
			h.mu.Unlock()
			return store.PutResult{Status: store.PutOK}
		}
	}
	return h.st.PutMessage(ctx, msg)
}

func (h *testHost) GetMessage(group, topic string, q int32, off int64, n int32, f store.MessageFilter) *store.GetResult {
	return h.st.GetMessage(group, topic, q, off, n, 256<<10, f)
}
func (h *testHost) MaxOffset(topic string, q int32) int64 { return h.st.MaxOffsetInQueue(topic, q) }
func (h *testHost) MinOffset(topic string, q int32) int64 { return h.st.MinOffsetInQueue(topic, q) }
func offKey(g, t string, q int32) string                  { return fmt.Sprintf("%s@%s@%d", t, g, q) }
func (h *testHost) QueryOffset(g, t string, q int32) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if v, ok := h.offsets[offKey(g, t, q)]; ok {
		return v
	}
	return -1
}
func (h *testHost) CommitOffset(g, t string, q int32, off int64) {
	h.mu.Lock()
	h.offsets[offKey(g, t, q)] = off
	h.mu.Unlock()
}
func (h *testHost) TakeReset(g, t string, q int32) (int64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.resets[offKey(g, t, q)]
	delete(h.resets, offKey(g, t, q))
	return v, ok
}
func (h *testHost) MessageAt(off int64) *codec.Message {
	m, err := h.st.LookMessageByOffset(off)
	if err != nil {
		return nil
	}
	return m
}

func (h *testHost) AssignReset(g, t string, q int32, off int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.resets[offKey(g, t, q)] = off
}

func (h *testHost) HasReset(g, t string, q int32) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.resets[offKey(g, t, q)]
	return ok
}
func (h *testHost) Topic(t string) (Topic, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	tc, ok := h.topics[t]
	return tc, ok
}
func (h *testHost) Group(string) (Group, bool) {
	return Group{ConsumeEnable: true, RetryMaxTimes: 16}, true
}
func (h *testHost) CreateTopic(t string, n, perm int32) {
	h.mu.Lock()
	if _, ok := h.topics[t]; !ok {
		h.topics[t] = Topic{ReadQueueNums: n, Perm: perm}
	}
	h.mu.Unlock()
}

type tagFilter struct{ code int64 }

func (f tagFilter) MatchTagsCode(c int64) bool { return c == f.code }
func (f tagFilter) MatchRecord([]byte) bool    { return true }

func javaHash(s string) int64 {
	var h int32
	for _, r := range s {
		h = 31*h + int32(r)
	}
	return int64(h)
}

func (h *testHost) NewFilter(_, typ, exp string) (store.MessageFilter, error) {
	if typ != "" && typ != "TAG" {
		return nil, errors.New("no sql here")
	}
	if exp == "*" || exp == "" {
		return nil, nil
	}
	return tagFilter{javaHash(exp)}, nil
}
func (h *testHost) MatchArrival(f store.MessageFilter, tc int64, _ string) bool {
	return f.MatchTagsCode(tc)
}
func (h *testHost) Compensate(group, topic, retry, expType, exp string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.compensated = append(h.compensated, strings.Join([]string{group, topic, retry, expType, exp}, " "))
}
func (h *testHost) LiteQueuesOf(string) []string   { return nil }
func (h *testHost) LiteActive(string, string) bool { return true }
func (h *testHost) ReviveHorizon() int64 {
	if v := h.horizon.Load(); v != 0 {
		return v
	}
	return time.Now().UnixMilli()
}
func (h *testHost) Recovered(what string, r any) bool {
	if r != nil {
		panic(fmt.Sprint(what, ": ", r))
	}
	return false
}

func (h *testHost) send(t *testing.T, topic string, q int32, body, tags string) {
	t.Helper()
	props := codec.EditProperties("")
	props.Set(codec.PropTags, tags)
	props.Set(codec.PropUniqKey, fmt.Sprintf("U%d", time.Now().UnixNano()))
	m := &codec.Message{Topic: topic, QueueID: q, Body: []byte(body), BornTimestamp: time.Now().UnixMilli(),
		BornHost: h.cfg.StoreHost, StoreHost: h.cfg.StoreHost, Properties: props.String()}
	res := h.st.PutMessage(context.Background(), m)
	require.Equal(t, store.PutOK, res.Status)
	// Consume queues are built asynchronously: wait until the message is poppable.
	require.Eventually(t, func() bool { return h.st.MaxOffsetInQueue(topic, q) > res.QueueOffset },
		5*time.Second, time.Millisecond)
}

// testConn records responses.
type testConn struct {
	mu     sync.Mutex
	resps  []*codec.RemotingCommand
	wrote  chan struct{}
	closed atomic.Bool
}

func newConn() *testConn { return &testConn{wrote: make(chan struct{}, 16)} }

// first waits (bounded) for the first response written later (a held request).
func (c *testConn) first(t *testing.T, within time.Duration) *codec.RemotingCommand {
	t.Helper()
	select {
	case <-c.wrote:
	case <-time.After(within):
		t.Fatal("held request not answered")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.resps[0]
}

func (c *testConn) ID() uint64 { return 1 }
func (c *testConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (c *testConn) LocalAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 10911} }
func (c *testConn) WriteResponse(cmd *codec.RemotingCommand) error {
	c.mu.Lock()
	c.resps = append(c.resps, cmd)
	c.mu.Unlock()
	c.wrote <- struct{}{}
	return nil
}
func (c *testConn) Invoke(context.Context, *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	return nil, errors.New("no")
}
func (c *testConn) InvokeOneway(*codec.RemotingCommand) error { return nil }
func (c *testConn) Close() error                              { c.closed.Store(true); return nil }
func (c *testConn) Closed() bool                              { return c.closed.Load() }

func startService(t *testing.T, h *testHost) *Service {
	t.Helper()
	s := New(h, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, s.Load())
	h.st.SetArrivingListener(func(topic string, q int32, _ int64, tags int64, _ int64, props string) {
		s.Arriving(topic, q, tags, props)
	})
	s.Start()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.RunRevive(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		require.NoError(t, s.Stop())
	})
	return s
}

type popReq struct {
	topic, group string
	queue        int32
	max          int32
	invisible    int64
	poll         int64
	order        bool
	exp          string
}

func (p popReq) cmd() *codec.RemotingCommand {
	req := codec.NewRequest(codec.ReqPopMessage)
	for k, v := range map[string]string{"consumerGroup": p.group, "topic": p.topic, "queueId": fmt.Sprint(p.queue),
		"maxMsgNums": fmt.Sprint(p.max), "invisibleTime": fmt.Sprint(p.invisible), "pollTime": fmt.Sprint(p.poll),
		"bornTime": fmt.Sprint(time.Now().UnixMilli()), "initMode": "0", "order": fmt.Sprint(p.order)} {
		req.Ext.Set(k, v)
	}
	if p.exp != "" {
		req.Ext.Set("expType", "TAG")
		req.Ext.Set("exp", p.exp)
	}
	return req
}

// popped is a message as a client sees it: record plus receipt handle.
type popped struct {
	m  codec.Message
	ck string
}

func decodeBody(t *testing.T, body []byte) []popped {
	t.Helper()
	var out []popped
	for len(body) > 0 {
		var m codec.Message
		n, err := codec.DecodeRecord(body, &m)
		require.NoError(t, err)
		ck, _ := codec.PropertyValue(m.Properties, propPopCK)
		out = append(out, popped{m: m, ck: ck})
		body = body[n:]
	}
	return out
}

func (s *Service) doPop(t *testing.T, c *testConn, p popReq) (*codec.RemotingCommand, *PopResponseHeader, []popped) {
	t.Helper()
	resp, err := s.handlePop(context.Background(), c, p.cmd())
	require.NoError(t, err)
	if resp == nil {
		return nil, nil, nil
	}
	hdr, _ := resp.CustomHeader.(*PopResponseHeader)
	return resp, hdr, decodeBody(t, resp.Body)
}

// handle builds the receipt handle the client builds from the response header.
func handle(hdr *PopResponseHeader, p popped, startOffset int64) string {
	return BuildExtraInfo(startOffset, hdr.PopTime, hdr.InvisibleTime, hdr.ReviveQid, p.m.Topic, "broker-a", p.m.QueueID, p.m.QueueOffset)
}

func ackCmd(topic, group string, q int32, off int64, extra string) *codec.RemotingCommand {
	req := codec.NewRequest(codec.ReqAckMessage)
	req.Ext.Set("consumerGroup", group)
	req.Ext.Set("topic", topic)
	req.Ext.Set("queueId", fmt.Sprint(q))
	req.Ext.Set("offset", fmt.Sprint(off))
	req.Ext.Set("extraInfo", extra)
	return req
}

// waitPop pops until n messages came back or the bound is reached.
func (s *Service) waitPop(t *testing.T, c *testConn, p popReq, n int, within time.Duration) []popped {
	t.Helper()
	var got []popped
	deadline := time.Now().Add(within)
	for len(got) < n && time.Now().Before(deadline) {
		_, _, ms := s.doPop(t, c, p)
		got = append(got, ms...)
		if len(got) < n {
			time.Sleep(100 * time.Millisecond)
		}
	}
	return got
}

func TestPopAckRevive(t *testing.T) {
	h := newTestHost(t)
	h.topics["T"] = Topic{ReadQueueNums: 1, Perm: 6}
	s := startService(t, h)
	for i := 0; i < 3; i++ {
		h.send(t, "T", 0, fmt.Sprintf("m%d", i), "a")
	}
	c := newConn()
	p := popReq{topic: "T", group: "G", queue: -1, max: 32, invisible: 1000}
	resp, hdr, ms := s.doPop(t, c, p)
	require.Equal(t, codec.RespSuccess, resp.Code)
	require.Len(t, ms, 3)
	require.Equal(t, "0 0 0", hdr.StartOffsetInfo)
	require.Equal(t, "0 0 0,1,2", hdr.MsgOffsetInfo)
	require.Equal(t, int64(1000), hdr.InvisibleTime)
	require.Equal(t, int64(3), h.QueryOffset("G", "T", 0), "offset advances once the checkpoint is stored")
	// A POP consumer never heartbeats: every pop records its group and subscription (and its retry
	// topic's), as Java's compensateBasicConsumerInfo / compensateSubscribeData.
	require.Equal(t, []string{"G T %RETRY%G_T  "}, h.compensated)

	// The checkpoint is in the revive topic in Java's JSON.
	var ck *CheckPoint
	require.Eventually(t, func() bool {
		res := h.GetMessage(reviveGroup, reviveTopic("C"), hdr.ReviveQid, 0, 1, nil)
		defer res.Release()
		if len(res.Records) == 0 {
			return false
		}
		var m codec.Message
		_, err := codec.DecodeRecord(res.Records[0], &m)
		require.NoError(t, err)
		tags, _ := codec.PropertyValue(m.Properties, codec.PropTags)
		require.Equal(t, "ck", tags)
		ck = &CheckPoint{}
		require.NoError(t, jsonUnmarshal(m.Body, ck))
		require.Contains(t, string(m.Body), `"d":[0,1,2]`)
		require.Contains(t, string(m.Body), `"c":"G"`)
		return true
	}, 5*time.Second, 20*time.Millisecond)
	require.Equal(t, int8(3), ck.Num)
	require.Equal(t, "T", ck.Topic)

	// Ack the middle one; the other two come back through the retry topic.
	ackResp, err := s.handleAck(context.Background(), c, ackCmd("T", "G", 0, 1, handle(hdr, ms[1], 0)))
	require.NoError(t, err)
	require.Equal(t, codec.RespSuccess, ackResp.Code)

	got := s.waitPop(t, c, p, 2, 15*time.Second)
	require.Len(t, got, 2)
	bodies := []string{string(got[0].m.Body), string(got[1].m.Body)}
	require.ElementsMatch(t, []string{"m0", "m2"}, bodies)
	for _, g := range got {
		require.Equal(t, "T", g.m.Topic, "a retry message goes out under its original topic")
		require.Equal(t, int32(1), g.m.ReconsumeTimes)
		require.NotEmpty(t, g.ck, "the broker adds POP_CK to retry messages")
		ei, err := ParseExtraInfo(g.ck)
		require.NoError(t, err)
		require.Equal(t, "1", ei.Retry)
		_, ok := codec.PropertyValue(g.m.Properties, propFirstPopTime)
		require.True(t, ok)
	}
	require.Greater(t, h.QueryOffset(reviveGroup, reviveTopic("C"), hdr.ReviveQid), int64(-1), "revive progress is committed")
}

func TestChangeInvisibleTime(t *testing.T) {
	h := newTestHost(t)
	h.topics["T"] = Topic{ReadQueueNums: 1, Perm: 6}
	s := startService(t, h)
	h.send(t, "T", 0, "x", "a")
	c := newConn()
	p := popReq{topic: "T", group: "G", queue: 0, max: 1, invisible: 600000}
	_, hdr, ms := s.doPop(t, c, p)
	require.Len(t, ms, 1)
	req := ackCmd("T", "G", 0, 0, handle(hdr, ms[0], 0))
	req.Code = codec.ReqChangeMessageInvisibletime
	req.Ext.Set("invisibleTime", "500")
	resp, err := s.handleChangeInvisible(context.Background(), c, req)
	require.NoError(t, err)
	require.Equal(t, codec.RespSuccess, resp.Code)
	ch := resp.CustomHeader.(*ChangeInvisibleResponseHeader)
	require.Equal(t, int64(500), ch.InvisibleTime)
	require.Equal(t, hdr.ReviveQid, ch.ReviveQid)
	// Visible again well before the first pop's ten minutes.
	got := s.waitPop(t, c, p, 1, 15*time.Second)
	require.Len(t, got, 1)
	require.Equal(t, "x", string(got[0].m.Body))
}

// TestChangeInvisibleAndPollingInfoRefuseMissingFields: both read their
// header through codec.DecodeHeader, so a missing @CFNotNull field is Java's
// "the custom field <x> is null" and a malformed number names its field.
func TestChangeInvisibleAndPollingInfoRefuseMissingFields(t *testing.T) {
	h := newTestHost(t)
	h.topics["T"] = Topic{ReadQueueNums: 1, Perm: 6}
	s := startService(t, h)
	c := newConn()
	for _, missing := range []string{"consumerGroup", "topic", "queueId", "extraInfo", "offset", "invisibleTime"} {
		req := ackCmd("T", "G", 0, 0, "0 1 600000 0 0 broker-a 0 0")
		req.Code = codec.ReqChangeMessageInvisibletime
		req.Ext.Set("invisibleTime", "500")
		req.Ext.Del(missing)
		resp, err := s.handleChangeInvisible(context.Background(), c, req)
		require.NoError(t, err)
		require.Equal(t, codec.RespSystemError, resp.Code, missing)
		require.Equal(t, "the custom field <"+missing+"> is null", resp.Remark)
	}
	for _, missing := range []string{"consumerGroup", "topic", "queueId"} {
		req := codec.NewRequest(codec.ReqPollingInfo)
		req.Ext = codec.ExtFields{{Key: "consumerGroup", Value: "G"}, {Key: "topic", Value: "T"}, {Key: "queueId", Value: "0"}}
		req.Ext.Del(missing)
		resp, err := s.handlePollingInfo(context.Background(), c, req)
		require.NoError(t, err)
		require.Equal(t, codec.RespSystemError, resp.Code, missing)
		require.Equal(t, "the custom field <"+missing+"> is null", resp.Remark)
	}
	req := codec.NewRequest(codec.ReqPollingInfo)
	req.Ext = codec.ExtFields{{Key: "consumerGroup", Value: "G"}, {Key: "topic", Value: "T"}, {Key: "queueId", Value: "zero"}}
	resp, err := s.handlePollingInfo(context.Background(), c, req)
	require.NoError(t, err)
	require.Equal(t, codec.RespSystemError, resp.Code)
	require.Contains(t, resp.Remark, "<queueId> is not a valid int32")
}

func TestLongPollingWokenByArrival(t *testing.T) {
	h := newTestHost(t)
	h.topics["T"] = Topic{ReadQueueNums: 2, Perm: 6}
	s := startService(t, h)
	c := newConn()
	resp, _, _ := s.doPop(t, c, popReq{topic: "T", group: "G", queue: -1, max: 4, invisible: 60000, poll: 10000})
	require.Nil(t, resp, "held")
	h.send(t, "T", 1, "late", "a")
	r := c.first(t, 5*time.Second)
	require.Equal(t, codec.RespSuccess, r.Code)
	require.Equal(t, "late", string(decodeBody(t, r.Body)[0].m.Body))
}

func TestPollingTimeoutAndFilter(t *testing.T) {
	h := newTestHost(t)
	h.topics["T"] = Topic{ReadQueueNums: 1, Perm: 6}
	s := startService(t, h)
	h.send(t, "T", 0, "b", "b")
	c := newConn()
	resp, _, _ := s.doPop(t, c, popReq{topic: "T", group: "G", queue: 0, max: 4, invisible: 60000, poll: 0, exp: "a"})
	require.Equal(t, codec.RespPollingTimeout, resp.Code, "tag b does not match a")
	h.send(t, "T", 0, "a", "a")
	_, _, ms := s.doPop(t, c, popReq{topic: "T", group: "G", queue: 0, max: 4, invisible: 60000, exp: "a"})
	require.Len(t, ms, 1)
	require.Equal(t, "a", string(ms[0].m.Body))
}

func TestOrderedPop(t *testing.T) {
	h := newTestHost(t)
	h.topics["T"] = Topic{ReadQueueNums: 1, Perm: 6}
	s := startService(t, h)
	for i := 0; i < 4; i++ {
		h.send(t, "T", 0, fmt.Sprintf("o%d", i), "a")
	}
	c := newConn()
	p := popReq{topic: "T", group: "G", queue: -1, max: 2, invisible: 60000, order: true}
	_, hdr, ms := s.doPop(t, c, p)
	require.Len(t, ms, 2)
	require.Equal(t, int32(orderReviveQueue), hdr.ReviveQid)
	require.Equal(t, "0 0 0", hdr.OrderCountInfo)
	// The queue is locked while the batch is in flight.
	resp, _, ms2 := s.doPop(t, c, p)
	require.Equal(t, codec.RespPollingTimeout, resp.Code)
	require.Empty(t, ms2)
	for _, m := range ms {
		r, err := s.handleAck(context.Background(), c, ackCmd("T", "G", 0, m.m.QueueOffset, handle(hdr, m, 0)))
		require.NoError(t, err)
		require.Equal(t, codec.RespSuccess, r.Code)
	}
	require.Equal(t, int64(2), h.QueryOffset("G", "T", 0))
	_, _, ms3 := s.doPop(t, c, p)
	require.Len(t, ms3, 2)
	require.Equal(t, "o2", string(ms3[0].m.Body))

	// Persisted in Java's layout.
	require.NoError(t, s.order.Persist())
	data, err := s.order.Encode()
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(data), `{"table":{"T@G":{"0":{`), string(data))
	o2 := NewOrderInfo(h.confDir, s.log)
	require.NoError(t, o2.Load())
	require.True(t, o2.CheckBlock("", "T", "G", 0, 60000))
}

func TestBatchAck(t *testing.T) {
	h := newTestHost(t)
	h.topics["T"] = Topic{ReadQueueNums: 1, Perm: 6}
	s := startService(t, h)
	for i := 0; i < 3; i++ {
		h.send(t, "T", 0, fmt.Sprintf("m%d", i), "a")
	}
	c := newConn()
	p := popReq{topic: "T", group: "G", queue: 0, max: 32, invisible: 1000}
	_, hdr, ms := s.doPop(t, c, p)
	require.Len(t, ms, 3)
	// Ack offsets 0 and 2: bits 0 and 2 = 0x05, base64 "BQ==".
	body := fmt.Sprintf(`{"acks":[{"b":"BQ==","c":"G","it":1000,"pt":%d,"q":0,"r":"0","rq":%d,"so":0,"t":"T"}],"brokerName":"broker-a"}`,
		hdr.PopTime, hdr.ReviveQid)
	req := codec.NewRequest(codec.ReqBatchAckMessage)
	req.Body = []byte(body)
	resp, err := s.handleBatchAck(context.Background(), c, req)
	require.NoError(t, err)
	require.Equal(t, codec.RespSuccess, resp.Code)
	got := s.waitPop(t, c, p, 1, 15*time.Second)
	require.Len(t, got, 1)
	require.Equal(t, "m1", string(got[0].m.Body))
}

func TestExtraInfoRoundTrip(t *testing.T) {
	s := BuildExtraInfo(5, 1700000000000, 30000, 3, "%RETRY%G+T", "broker-a", 2, 9)
	require.Equal(t, "5 1700000000000 30000 3 2 broker-a 2 9", s)
	e, err := ParseExtraInfo(s)
	require.NoError(t, err)
	require.Equal(t, ExtraInfo{CkQueueOffset: 5, PopTime: 1700000000000, InvisibleTime: 30000, ReviveQid: 3, Retry: "2",
		BrokerName: "broker-a", QueueID: 2, QueueOffset: 9, Fields: 8}, e)
	_, err = ParseExtraInfo("1 2")
	require.Error(t, err)
}

func TestRecordsJSON(t *testing.T) {
	ck := &CheckPoint{StartOffset: 7, PopTime: 100, InvisibleTime: 50, Num: 2, QueueID: 1, Topic: "T", CID: "G", BrokerName: "b"}
	ck.addDiff(0)
	ck.addDiff(3)
	ck.ReviveTimeOut = ck.ReviveTime()
	b, err := jsonMarshal(ck)
	require.NoError(t, err)
	require.Equal(t, `{"bm":0,"bn":"b","c":"G","d":[0,3],"it":50,"n":2,"pt":100,"q":1,"reviveTime":150,"ro":0,"so":7,"t":"T"}`, string(b))
	require.Equal(t, 1, ck.indexOfAck(10))
	require.Equal(t, int64(10), ck.ackOffsetByIndex(1))
	// A Java ack, long names included.
	var a AckMsg
	require.NoError(t, jsonUnmarshal([]byte(`{"ackOffset":3,"so":1,"c":"G","t":"T","q":0,"pt":5,"bn":"b"}`), &a))
	require.Equal(t, AckMsg{AckOffset: 3, StartOffset: 1, ConsumerGroup: "G", Topic: "T", PopTime: 5, BrokerName: "b"}, a)
}

func TestOrderedPopHeldUntilInvisibleTimePasses(t *testing.T) {
	h := newTestHost(t)
	h.topics["T"] = Topic{ReadQueueNums: 1, Perm: 6}
	s := startService(t, h)
	for i := 0; i < 2; i++ {
		h.send(t, "T", 0, fmt.Sprintf("o%d", i), "a")
	}
	c := newConn()
	p := popReq{topic: "T", group: "G", queue: 0, max: 4, invisible: 500, order: true}
	_, _, ms := s.doPop(t, c, p)
	require.Len(t, ms, 2)
	// Not acked: a POP waiting on the locked queue gets the same batch again
	// once its invisible time has passed, counted as a second delivery.
	p.poll = 10000
	resp, _, _ := s.doPop(t, c, p)
	require.Nil(t, resp, "held while the batch is invisible")
	r := c.first(t, 8*time.Second)
	require.Equal(t, codec.RespSuccess, r.Code)
	got := decodeBody(t, r.Body)
	require.Len(t, got, 2)
	require.Equal(t, "o0", string(got[0].m.Body))
	hdr := r.CustomHeader.(*PopResponseHeader)
	require.Equal(t, "0 qo0%0 1;0 qo0%1 1;0 0 1", hdr.OrderCountInfo)
}

func TestReviveSkipsLeadingOrphanAcks(t *testing.T) {
	h := newTestHost(t)
	h.topics["T"] = Topic{ReadQueueNums: 1, Perm: 6}
	s := New(h, slog.New(slog.NewTextHandler(io.Discard, nil)))
	past := time.Now().UnixMilli() - 10000
	for i := int64(0); i < 3; i++ {
		require.True(t, s.putAck(&AckMsg{AckOffset: i, ConsumerGroup: "G", Topic: "T", PopTime: past, BrokerName: "broker-a"}, 1, past, false))
	}
	require.Eventually(t, func() bool { return h.MaxOffset(reviveTopic("C"), 1) == 3 }, 5*time.Second, time.Millisecond)
	newReviver(s, 1).round(context.Background())
	require.Equal(t, int64(2), h.QueryOffset(reviveGroup, reviveTopic("C"), 1), "acks without a checkpoint do not hold the revive queue")
}

// BenchmarkPopAck pops 32 messages and acks each, over a real store.
func BenchmarkPopAck(b *testing.B) {
	h := newTestHostTB(b)
	h.topics["T"] = Topic{ReadQueueNums: 1, Perm: 6}
	s := New(h, slog.New(slog.NewTextHandler(io.Discard, nil)))
	c := newConn()
	body := []byte("0123456789012345678901234567890123456789012345678901234567890123")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for j := 0; j < 32; j++ {
			m := &codec.Message{Topic: "T", Body: body, BornTimestamp: 1, BornHost: h.cfg.StoreHost, StoreHost: h.cfg.StoreHost,
				Properties: "TAGS\x01a\x02"}
			h.st.PutMessage(context.Background(), m)
		}
		for h.st.MaxOffsetInQueue("T", 0) < int64(32*(i+1)) {
			time.Sleep(100 * time.Microsecond)
		}
		b.StartTimer()
		resp, err := s.handlePop(context.Background(), c, popReq{topic: "T", group: "G", queue: 0, max: 32, invisible: 60000}.cmd())
		if err != nil || resp.Code != codec.RespSuccess {
			b.Fatalf("pop: %v %v", err, resp)
		}
		hdr := resp.CustomHeader.(*PopResponseHeader)
		start := int64(32 * i)
		for j := int64(0); j < 32; j++ {
			extra := BuildExtraInfo(start, hdr.PopTime, hdr.InvisibleTime, hdr.ReviveQid, "T", "broker-a", 0, start+j)
			if r, _ := s.handleAck(context.Background(), c, ackCmd("T", "G", 0, start+j, extra)); r.Code != codec.RespSuccess {
				b.Fatalf("ack: %d %s", r.Code, r.Remark)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*32), "ns/msg")
}

// A checkpoint read from the revive topic is data: one that claims more
// messages than it has offsets, more than a POP's 32, or a negative re-put
// count is skipped (each made the reviver index out of range, or copy a
// message a hundred times), and the checkpoints behind it are still revived.
func TestReviveSkipsMalformedCheckpoints(t *testing.T) {
	h := newTestHost(t)
	h.topics["T"] = Topic{ReadQueueNums: 1, Perm: 6}
	s := New(h, slog.New(slog.NewTextHandler(io.Discard, nil)))
	h.send(t, "T", 0, "victim", "a")
	past := time.Now().UnixMilli() - 60_000
	ck := func(num int8, diff []int32, rePut string) *CheckPoint {
		return &CheckPoint{Num: num, Diff: diff, RePutTimes: rePut, PopTime: past, InvisibleTime: 1000, CID: "G", Topic: "T",
			BrokerName: "broker-a"}
	}
	for _, bad := range []*CheckPoint{ck(2, []int32{0}, ""), ck(1, []int32{0}, "-5"), ck(100, make([]int32, 100), ""), ck(0, nil, "")} {
		require.False(t, bad.valid())
		require.True(t, s.putCheckPoint(bad, 0))
	}
	good := ck(1, []int32{0}, "")
	require.True(t, good.valid())
	require.True(t, s.putCheckPoint(good, 0))
	require.Eventually(t, func() bool { return h.MaxOffset(reviveTopic("C"), 0) == 5 }, 5*time.Second, time.Millisecond)
	newReviver(s, 0).round(context.Background())
	retry := retryTopic("T", "G", false)
	require.Eventually(t, func() bool { return h.MaxOffset(retry, 0) == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, int64(4), h.QueryOffset(reviveGroup, reviveTopic("C"), 0), "progress passes them all")
}

// A revive queue id comes from the client's extraInfo: one the broker does not
// have is not written (each would be a new queue of the revive topic).
func TestAckToAnUnknownReviveQueueWritesNothing(t *testing.T) {
	h := newTestHost(t)
	h.topics["T"] = Topic{ReadQueueNums: 1, Perm: 6}
	s := New(h, slog.New(slog.NewTextHandler(io.Discard, nil)))
	h.send(t, "T", 0, "x", "a")
	past := time.Now().UnixMilli() - 120_000 // due: the ack is written at once
	for _, q := range []int32{2, 5000, -1} {
		extra := BuildExtraInfo(0, past, 1000, q, "T", "broker-a", 0, 0)
		resp, err := s.handleAck(context.Background(), newConn(), ackCmd("T", "G", 0, 0, extra))
		require.NoError(t, err)
		require.Equal(t, codec.RespSuccess, resp.Code, "Java answers an ack whose put failed SUCCESS")
		require.Equal(t, int64(0), h.MaxOffset(reviveTopic("C"), q))
	}
	require.False(t, s.putCheckPoint(&CheckPoint{Num: 1, Diff: []int32{0}, CID: "G", Topic: "T"}, 2))
	extra := BuildExtraInfo(0, past, 1000, 1, "T", "broker-a", 0, 0)
	resp, _ := s.handleAck(context.Background(), newConn(), ackCmd("T", "G", 0, 0, extra))
	require.Equal(t, codec.RespSuccess, resp.Code)
	require.Eventually(t, func() bool { return h.MaxOffset(reviveTopic("C"), 1) == 1 }, 5*time.Second, time.Millisecond)
}

// A CHANGE_INVISIBLE_TIME on a POP's first message in the POP's millisecond
// writes a checkpoint whose merge key is the POP's own. Both are revived:
// the POP's for its other messages (its first acked by the change), the
// change's for the first, unless the client acked the new handle. Java's
// reviver keeps one checkpoint per key and lost the POP's other messages.
func TestReviveKeepsCheckpointsOfOneKey(t *testing.T) {
	for _, ackNew := range []bool{false, true} {
		t.Run(fmt.Sprint("ackNew=", ackNew), func(t *testing.T) {
			h := newTestHost(t)
			h.topics["T"] = Topic{ReadQueueNums: 1, Perm: 6}
			s := New(h, slog.New(slog.NewTextHandler(io.Discard, nil)))
			for i := range 3 {
				h.send(t, "T", 0, fmt.Sprint("m", i), "a")
			}
			past := time.Now().UnixMilli() - 60_000
			pop := &CheckPoint{Num: 3, PopTime: past, InvisibleTime: 1000, CID: "G", Topic: "T", BrokerName: "broker-a"}
			for i := range 3 {
				pop.addDiff(int32(i))
			}
			changed := &CheckPoint{Num: 1, PopTime: past, InvisibleTime: 2000, CID: "G", Topic: "T", BrokerName: "broker-a"}
			changed.addDiff(0)
			require.Equal(t, pop.mergeKey(), changed.mergeKey())
			require.True(t, s.putCheckPoint(pop, 0))
			require.True(t, s.putCheckPoint(changed, 0))
			// The change acks the POP's handle; the client may then ack the new one.
			ack := func(inv int64) {
				require.True(t, s.putAck(&AckMsg{AckOffset: 0, ConsumerGroup: "G", Topic: "T", PopTime: past, BrokerName: "broker-a"},
					0, past+inv, false))
			}
			ack(1000)
			want, records := int64(3), int64(3)
			if ackNew {
				ack(2000)
				want, records = 2, 4
			}
			require.Eventually(t, func() bool { return h.MaxOffset(reviveTopic("C"), 0) == records }, 5*time.Second, time.Millisecond)
			newReviver(s, 0).round(context.Background())
			retry := retryTopic("T", "G", false)
			require.Eventually(t, func() bool { return h.MaxOffset(retry, 0) == want }, 5*time.Second, time.Millisecond)
			time.Sleep(100 * time.Millisecond)
			require.Equal(t, want, h.MaxOffset(retry, 0), "each unacked message revived once")
		})
	}
}
