package processor

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/remoting"
)

// staticRouter is a name server and two brokers in one NameServerInvoker: the
// route of a topic lists the brokers by name, and a request to a broker's
// address runs there as it would off the wire (encoded and decoded, its
// answer too).
type staticRouter struct {
	t       *testing.T
	brokers map[string]*testBroker // address → broker
	mu      sync.Mutex
	calls   map[int32]int // forwarded requests by code
}

func (r *staticRouter) InvokeSync(ctx context.Context, addr string, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	if addr == "ns:9876" {
		if req.Code != codec.ReqGetRouteinfoByTopic {
			return codec.NewResponse(req, codec.RespSuccess, ""), nil
		}
		body := `{"brokerDatas":[`
		i := 0
		for a, b := range r.brokers {
			if i > 0 {
				body += ","
			}
			i++
			body += fmt.Sprintf(`{"brokerAddrs":{0:%q},"brokerName":%q,"cluster":"DefaultCluster"}`, a, b.conf().BrokerName)
		}
		// With each broker's registered mapping of the topic, as a 5.x name server answers.
		topic, _ := req.Ext.Get("topic")
		byBroker := map[string]*codec.TopicQueueMappingInfo{}
		for _, b := range r.brokers {
			if d := b.mappings.Get(topic); d != nil {
				byBroker[d.Bname] = d.MappingInfo()
			}
		}
		route := &codec.TopicRouteData{TopicQueueMappingByBroker: byBroker}
		mappings := strings.TrimPrefix(string(route.AppendJSON(nil)), `{"brokerDatas":[],"filterServerTable":{},"queueDatas":[]`)
		resp := codec.NewResponse(req, codec.RespSuccess, "")
		resp.Body = []byte(body + `],"queueDatas":[]` + mappings)
		return resp, nil
	}
	p := r.brokers[addr]
	if p == nil {
		return nil, errors.New("connection refused")
	}
	r.mu.Lock()
	r.calls[req.Code]++
	r.mu.Unlock()
	wire := func(c *codec.RemotingCommand) *codec.RemotingCommand {
		var d codec.RemotingCommand
		require.NoError(r.t, codec.DecodeCommand(c.Encode(nil)[4:], &d))
		d.Own()
		return &d
	}
	in := wire(req)
	c := newTestConn(41000)
	resp, err := p.Handlers()[in.Code].ProcessRequest(ctx, c, in)
	if errors.Is(err, remoting.ErrAnsweredLater) || resp == nil && err == nil {
		resp, err = waitResponse(r.t, c, 1), nil
	}
	if err != nil {
		return nil, err
	}
	return wire(resp), nil
}

func (r *staticRouter) forwarded(code int32) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[code]
}

// A logical queue moved from broker-a to broker-b as `mqadmin
// remappingStaticTopic` moves it (the new leader first with an undecided logic
// offset, then the old one, then the new one with the offset decided): broker-b
// serves it, reading the offsets broker-a holds from broker-a, with every
// offset logical.
func TestStaticTopicRemappedAcrossBrokers(t *testing.T) {
	ctx := context.Background()
	brs, r := staticBrokers(t, "", "broker-a", "broker-b")
	a, b := brs[0], brs[1]
	c := newTestConn(41001)
	mapping := func(bname string, epoch int, items string) *codec.RemotingCommand {
		return staticTopicReq("MoveT", 1, fmt.Sprintf(`{"bname":%q,"epoch":%d,"hostedQueues":{0:[%s]},"scope":"__global__","topic":"MoveT","totalQueues":1}`,
			bname, epoch, items))
	}
	ok := func(resp *codec.RemotingCommand, err error) *codec.RemotingCommand {
		t.Helper()
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
		return resp
	}
	ok(a.handleUpdateAndCreateStaticTopic(ctx, c, mapping("broker-a", 1, item(0, 0, "broker-a", 0))))
	for i := range 3 {
		resp := ok(a.handleSendMessage(ctx, c, sendReq("MoveT", 0, []byte(fmt.Sprint("a", i)), "")))
		require.Equal(t, strconv.Itoa(i), ext(t, resp, "queueOffset"))
	}
	require.Eventually(t, func() bool { return a.st.MaxOffsetInQueue("MoveT", 0) == 3 }, 5*time.Second, time.Millisecond)
	commit := func(br *testBroker, off int64) {
		t.Helper()
		up := codec.NewRequest(codec.ReqUpdateConsumerOffset)
		for k, v := range map[string]string{"consumerGroup": "SG", "topic": "MoveT", "queueId": "0", "commitOffset": fmt.Sprint(off)} {
			up.Ext.Set(k, v)
		}
		ok(br.handleUpdateConsumerOffset(ctx, c, up))
	}
	ok(b.handleUpdateAndCreateSubscriptionGroup(ctx, c, groupReq("SG")))
	ok(a.handleUpdateAndCreateSubscriptionGroup(ctx, c, groupReq("SG")))
	commit(a, 2)
	time.Sleep(5 * time.Millisecond) // broker-b's messages stored strictly later
	mid := time.Now().UnixMilli()
	time.Sleep(5 * time.Millisecond)

	// The remapping's three writes; broker-b's physical queue is its 0 too.
	moved := item(0, 0, "broker-a", 0) + "," + item(1, 0, "broker-b", -1)
	ok(b.handleUpdateAndCreateStaticTopic(ctx, c, mapping("broker-b", 2, moved)))
	ok(a.handleUpdateAndCreateStaticTopic(ctx, c, mapping("broker-a", 2, moved)))
	resp := ok(b.handleSendMessage(ctx, c, sendReq("MoveT", 0, []byte("b0"), "")))
	require.Equal(t, "-1", ext(t, resp, "queueOffset"), "the leader's logic offset is undecided yet")
	decided := item(0, 0, "broker-a", 0) + "," + item(1, 0, "broker-b", 10)
	ok(b.handleUpdateAndCreateStaticTopic(ctx, c, mapping("broker-b", 2, decided)))
	for i := 1; i < 3; i++ {
		resp := ok(b.handleSendMessage(ctx, c, sendReq("MoveT", 0, []byte(fmt.Sprint("b", i)), "")))
		require.Equal(t, "0", ext(t, resp, "queueId"))
		require.Equal(t, strconv.Itoa(10+i), ext(t, resp, "queueOffset"))
	}
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("MoveT", 0) == 3 }, 5*time.Second, time.Millisecond)

	// broker-a no longer leads the queue.
	resp, _ = a.handleSendMessage(ctx, c, sendReq("MoveT", 0, []byte("x"), ""))
	require.EqualValues(t, codec.RespNotLeaderForQueue, resp.Code)

	pull := func(off int64) *codec.RemotingCommand {
		t.Helper()
		pc := newTestConn(41002)
		resp, err := b.handlePullMessage(ctx, pc, pullReq("SG", "MoveT", 0, off, codec.PullFlagSubscription, 0))
		require.NoError(t, err)
		if resp == nil {
			resp = waitResponse(t, pc, 1)
		}
		return resp
	}
	bodies := func(resp *codec.RemotingCommand) []string {
		var out []string
		for _, m := range decodeBody(t, resp.Body) {
			out = append(out, string(m.Body))
		}
		return out
	}
	// From broker-a's item, forwarded.
	resp = pull(0)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Equal(t, []string{"a0", "a1", "a2"}, bodies(resp))
	for k, want := range map[string]string{"nextBeginOffset": "3", "minOffset": "0", "maxOffset": "10", "offsetDelta": "0"} {
		require.Equal(t, want, ext(t, resp, k), k)
	}
	require.Equal(t, 1, r.forwarded(codec.ReqPullMessage))
	// At its end: on to broker-b's item.
	resp = pull(3)
	require.EqualValues(t, codec.RespPullRetryImmediately, resp.Code, resp.Remark)
	require.Equal(t, "10", ext(t, resp, "nextBeginOffset"))
	// broker-b's own item: physical queue offsets shifted by offsetDelta.
	resp = pull(10)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Equal(t, []string{"b0", "b1", "b2"}, bodies(resp))
	for k, want := range map[string]string{"nextBeginOffset": "13", "minOffset": "10", "maxOffset": "13", "offsetDelta": "10"} {
		require.Equal(t, want, ext(t, resp, k), k)
	}
	require.Equal(t, 2, r.forwarded(codec.ReqPullMessage))
	// The end of the leader's item waits as an ordinary queue's does.
	resp = pull(13)
	require.EqualValues(t, codec.RespPullNotFound, resp.Code, resp.Remark)
	require.Equal(t, "13", ext(t, resp, "nextBeginOffset"))

	// Consumer offsets: broker-b finds broker-a's, commits each in its item.
	query := func() string {
		t.Helper()
		return ext(t, ok(b.handleQueryConsumerOffset(ctx, c, queryOffsetReq("SG", "MoveT", "0"))), "offset")
	}
	require.Equal(t, "2", query(), "broker-a's offset, read through the forward")
	commit(b, 12)
	require.EqualValues(t, 2, b.offsets.Query("SG", "MoveT", 0), "physical, under broker-b's queue")
	require.Equal(t, "12", query())
	commit(b, 1)
	require.EqualValues(t, 1, a.offsets.Query("SG", "MoveT", 0), "forwarded to broker-a")
	require.EqualValues(t, 2, b.offsets.Query("SG", "MoveT", 0))

	// Admin offsets.
	queueReq := func(code int32, kv ...string) *codec.RemotingCommand {
		q := codec.NewRequest(code)
		q.Ext.Set("topic", "MoveT")
		q.Ext.Set("queueId", "0")
		for i := 0; i+1 < len(kv); i += 2 {
			q.Ext.Set(kv[i], kv[i+1])
		}
		return q
	}
	require.Equal(t, "13", ext(t, ok(b.handleGetMaxOffset(ctx, c, queueReq(codec.ReqGetMaxOffset))), "offset"))
	require.Equal(t, "0", ext(t, ok(b.handleGetMinOffset(ctx, c, queueReq(codec.ReqGetMinOffset))), "offset"))
	earliest := ext(t, ok(b.handleGetEarliestMsgStoretime(ctx, c, queueReq(codec.ReqGetEarliestMsgStoretime))), "timestamp")
	et, err := strconv.ParseInt(earliest, 10, 64)
	require.NoError(t, err)
	require.Positive(t, et)
	require.Less(t, et, mid, "broker-a's first message")
	future := fmt.Sprint(time.Now().Add(time.Hour).UnixMilli())
	for _, tc := range []struct {
		ts, boundary, want string
	}{
		{"0", "", "0"}, {fmt.Sprint(mid), "", "10"}, {future, "", "13"},
		{"0", "upper", "0"}, {fmt.Sprint(mid), "upper", "2"}, {future, "upper", "12"},
	} {
		kv := []string{"timestamp", tc.ts}
		if tc.boundary != "" {
			kv = append(kv, "boundaryType", tc.boundary)
		}
		resp := ok(b.handleSearchOffsetByTimestamp(ctx, c, queueReq(codec.ReqSearchOffsetByTimestamp, kv...)))
		require.Equal(t, tc.want, ext(t, resp, "offset"), "%+v", tc)
	}

	// The leader's own checks come first, as in Java: a group it forbids to
	// consume is refused there, not forwarded.
	off := codec.NewRequest(codec.ReqUpdateAndCreateSubscriptiongroup)
	off.Body = []byte(`{"groupName":"SG","consumeEnable":false}`)
	ok(b.handleUpdateAndCreateSubscriptionGroup(ctx, c, off))
	before := r.forwarded(codec.ReqPullMessage)
	resp = pull(0)
	require.EqualValues(t, codec.RespNoPermission, resp.Code, resp.Remark)
	require.Equal(t, before, r.forwarded(codec.ReqPullMessage))
}

func groupReq(group string) *codec.RemotingCommand {
	req := codec.NewRequest(codec.ReqUpdateAndCreateSubscriptiongroup)
	req.Body = []byte(fmt.Sprintf(`{"groupName":%q}`, group))
	return req
}

// The pull answer's rewrite at item boundaries (PullMessageProcessor
// rewriteResponseForStaticTopic): offsets in, physical; out, logical.
func TestStaticPullRewrite(t *testing.T) {
	a0 := codec.LogicQueueMappingItem{Gen: 0, Bname: "a", LogicOffset: 0, EndOffset: -1}
	b1 := codec.LogicQueueMappingItem{Gen: 1, Bname: "b", LogicOffset: 100, EndOffset: -1}
	c2 := codec.LogicQueueMappingItem{Gen: 2, Bname: "c", LogicOffset: 200, EndOffset: -1}
	undecided := codec.LogicQueueMappingItem{Gen: 1, Bname: "b", LogicOffset: -1, EndOffset: -1}
	for _, tc := range []struct {
		name           string
		items          []codec.LogicQueueMappingItem
		cur            int
		code           int32
		req            int64
		next, lo, hi   int64 // the physical answer
		wantCode       int32
		wantNext       int64
		wantLo, wantHi int64
		wantDelta      int64
	}{
		{"earliest's end: on to the next", []codec.LogicQueueMappingItem{a0, b1}, 0, codec.RespPullNotFound, 7, 7, 0, 7,
			codec.RespPullRetryImmediately, 100, 100, 100, 100},
		{"earliest's end, next undecided: wait", []codec.LogicQueueMappingItem{a0, undecided}, 0, codec.RespPullNotFound, 7, 7, 0, 7,
			codec.RespPullNotFound, 7, 0, 7, 0},
		{"earliest below its min: moved", []codec.LogicQueueMappingItem{a0, b1}, 0, codec.RespPullOffsetMoved, 1, 1, 3, 7,
			codec.RespPullOffsetMoved, 3, 3, 100, 0},
		{"middle's end: on to the next", []codec.LogicQueueMappingItem{a0, b1, c2}, 1, codec.RespPullOffsetMoved, 9, 5, 0, 5,
			codec.RespPullRetryImmediately, 200, 200, 200, 200},
		{"middle below its min: retry there", []codec.LogicQueueMappingItem{a0, b1, c2}, 1, codec.RespPullOffsetMoved, 0, 0, 2, 5,
			codec.RespPullRetryImmediately, 102, 102, 200, 100},
		{"leader below its min: retry there", []codec.LogicQueueMappingItem{a0, b1}, 1, codec.RespPullOffsetMoved, 0, 0, 2, 5,
			codec.RespPullRetryImmediately, 102, 102, 105, 100},
		{"leader past its max: moved", []codec.LogicQueueMappingItem{a0, b1}, 1, codec.RespPullOffsetMoved, 9, 5, 0, 5,
			codec.RespPullOffsetMoved, 105, 100, 105, 100},
		{"single item past its max: still moved", []codec.LogicQueueMappingItem{a0}, 0, codec.RespPullOffsetMoved, 9, 5, 0, 5,
			codec.RespPullOffsetMoved, 5, 0, 5, 0},
		{"found: offsets only", []codec.LogicQueueMappingItem{a0, b1}, 1, codec.RespSuccess, 2, 4, 0, 5,
			codec.RespSuccess, 104, 100, 105, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &staticPull{items: tc.items, cur: tc.cur}
			hdr := codec.PullMessageResponseHeader{NextBeginOffset: tc.next, MinOffset: tc.lo, MaxOffset: tc.hi}
			require.Equal(t, tc.wantCode, p.rewrite(tc.code, tc.req, &hdr))
			require.Equal(t, [3]int64{tc.wantNext, tc.wantLo, tc.wantHi}, [3]int64{hdr.NextBeginOffset, hdr.MinOffset, hdr.MaxOffset})
			require.True(t, hdr.HasOffsetDelta)
			require.Equal(t, tc.wantDelta, hdr.OffsetDelta)
		})
	}
}

// stallRouter answers the route of a topic and never the broker it names.
type stallRouter struct{}

func (stallRouter) InvokeSync(ctx context.Context, addr string, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	if addr == "ns:9876" {
		resp := codec.NewResponse(req, codec.RespSuccess, "")
		resp.Body = []byte(`{"brokerDatas":[{"brokerAddrs":{0:"x:10911"},"brokerName":"broker-x","cluster":"c"}],"queueDatas":[]}`)
		return resp, nil
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// A forward waits forwardTimeout (Java's key), updatable at runtime, and
// answers SYSTEM_ERROR with the cause when the other broker does not answer.
func TestStaticForwardTimeout(t *testing.T) {
	ctx := context.Background()
	b := newTestBroker(t, func(c *BrokerConfig) { c.NamesrvAddr = "ns:9876"; c.ForwardTimeout = 60000 })
	b.SetNameServerInvoker(stallRouter{})
	c := newTestConn(41003)
	bn := b.conf().BrokerName
	items := item(0, 0, "broker-x", 0) + "," + item(1, 0, bn, 10)
	resp, _ := b.handleUpdateAndCreateStaticTopic(ctx, c, staticTopicReq("SlowT", 1,
		fmt.Sprintf(`{"bname":%q,"epoch":1,"hostedQueues":{0:[%s]},"topic":"SlowT","totalQueues":1}`, bn, items)))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	up := codec.NewRequest(codec.ReqUpdateBrokerConfig)
	up.Body = []byte("forwardTimeout=50\n")
	resp, _ = b.handleUpdateBrokerConfig(ctx, c, up)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	mq := codec.NewRequest(codec.ReqGetMinOffset)
	mq.Ext.Set("topic", "SlowT")
	mq.Ext.Set("queueId", "0")
	start := time.Now()
	resp, _ = b.handleGetMinOffset(ctx, c, mq)
	require.EqualValues(t, codec.RespSystemError, resp.Code)
	require.Contains(t, resp.Remark, "broker-x")
	require.Less(t, time.Since(start), 30*time.Second, "forwardTimeout=50 ms, not the minute set at start")
}

// TopicQueueMappingCleanService.cleanItemExpired: at a deleteWhen hour, the
// leader of a remapped queue drops the earliest item once its physical queue
// (on its own broker, read through a forward) holds nothing; one with messages
// stays, as does everything at another hour or on a broker that leads nothing.
func TestStaticTopicCleanExpiredItems(t *testing.T) {
	ctx := context.Background()
	brs, r := staticBrokers(t, "04;16", "broker-a", "broker-b")
	a, b := brs[0], brs[1]
	c := newTestConn(41004)
	// Logical 0 moved from broker-a's empty queue 0, logical 1 from its queue 1 with a message.
	hosted := fmt.Sprintf(`0:[%s,%s],1:[%s,%s]`, item(0, 0, "broker-a", 0), item(1, 0, "broker-b", 10),
		item(0, 1, "broker-a", 0), item(1, 1, "broker-b", 10))
	for _, br := range []*testBroker{a, b} {
		resp, _ := br.handleUpdateAndCreateStaticTopic(ctx, c, staticTopicReq("CleanT", 2,
			fmt.Sprintf(`{"bname":%q,"epoch":5,"hostedQueues":{%s},"topic":"CleanT","totalQueues":2}`, br.conf().BrokerName, hosted)))
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
	resp, _ := a.handleSendMessage(ctx, c, sendReq("CleanT", 1, []byte("old"), "")) // not its leader any more
	require.EqualValues(t, codec.RespNotLeaderForQueue, resp.Code)
	req := sendReq("CleanT", 1, []byte("old"), "")
	req.Ext.Set("lo", "false") // as a forward stores it: physical queue 1
	resp, _ = a.handleSendMessage(ctx, c, req)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Eventually(t, func() bool { return a.st.MaxOffsetInQueue("CleanT", 1) == 1 }, 5*time.Second, time.Millisecond)

	day := time.Date(2026, 1, 2, 0, 0, 0, 0, time.Local)
	require.Zero(t, b.cleanStaticItems(ctx, day.Add(3*time.Hour)), "not a deleteWhen hour")
	require.Zero(t, a.cleanStaticItems(ctx, day.Add(16*time.Hour)), "broker-a leads nothing")
	require.Equal(t, 1, b.cleanStaticItems(ctx, day.Add(16*time.Hour)))
	d := b.mappings.Get("CleanT")
	require.Len(t, d.HostedQueues[0], 1)
	require.Equal(t, "broker-b", d.HostedQueues[0][0].Bname)
	require.Len(t, d.HostedQueues[1], 2, "broker-a's queue 1 still holds a message")
	require.EqualValues(t, 5, d.Epoch)
	require.Zero(t, b.cleanStaticItems(ctx, day.Add(4*time.Hour)))
	// The queue is now served by broker-b alone.
	q := codec.NewRequest(codec.ReqGetMinOffset)
	q.Ext.Set("topic", "CleanT")
	q.Ext.Set("queueId", "0")
	before := r.forwarded(codec.ReqGetMinOffset)
	resp, _ = b.handleGetMinOffset(ctx, c, q)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Equal(t, before, r.forwarded(codec.ReqGetMinOffset))
}

// staticBrokers makes a test broker per name (broker-x answers at x:10911),
// each reaching the others through one staticRouter as its name server and
// broker client; deleteWhen, when set, is their store's deleteWhen.
func staticBrokers(t *testing.T, deleteWhen string, names ...string) ([]*testBroker, *staticRouter) {
	t.Helper()
	r := &staticRouter{t: t, brokers: map[string]*testBroker{}, calls: map[int32]int{}}
	brs := make([]*testBroker, len(names))
	for i, name := range names {
		brs[i] = newTestBroker(t, func(c *BrokerConfig) {
			c.BrokerName, c.NamesrvAddr = name, "ns:9876"
			if deleteWhen != "" {
				c.Store.DeleteWhen = deleteWhen
			}
		})
		r.brokers[strings.TrimPrefix(name, "broker-")+":10911"] = brs[i]
	}
	for _, b := range brs {
		b.SetNameServerInvoker(r)
	}
	return brs, r
}
