package processor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/remoting"
	"rmqd/store"
)

// newLiteBroker is an LMQ broker with the lite parent topic LiteT (4
// queues) and the group LiteG bound to it.
func newLiteBroker(t *testing.T, mod func(*BrokerConfig)) *testBroker {
	t.Helper()
	b := newTestBrokerWith(t, func(c *BrokerConfig) {
		c.Store.EnableLmq, c.Store.EnableMultiDispatch = true, true
		c.AutoCreateSubscriptionGroup = false
		if mod != nil {
			mod(c)
		}
	}, func(s *store.Config) { s.EnableLmq, s.EnableMultiDispatch = true, true }, nil)
	req := createTopicReq("LiteT", 4)
	req.Ext.Set("attributes", "+message.type=LITE")
	resp, err := b.handleUpdateAndCreateTopic(context.Background(), newTestConn(2), req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	g := NewSubscriptionGroupConfig("LiteG")
	g.Attributes = map[string]string{attrLiteBindTopic: "LiteT"}
	require.NoError(t, b.groups.Update(g, NewSubscriptionGroupConfig("PlainG")))
	return b
}

func liteProps(lite string) string { return "TAGS\x01t\x02__LITE_TOPIC\x01" + lite + "\x02" }

func (b *testBroker) call(t *testing.T, c remoting.Conn, req *codec.RemotingCommand) *codec.RemotingCommand {
	t.Helper()
	resp, err := b.Handlers()[req.Code].ProcessRequest(context.Background(), c, req)
	if err != nil && !errors.Is(err, remoting.ErrAnsweredLater) {
		t.Fatal(err)
	}
	return resp
}

func liteCtl(action, client, group, topic string, lites []string, offsetOption string) *codec.RemotingCommand {
	req := codec.NewRequest(codec.ReqLiteSubscriptionCtl)
	q := make([]string, len(lites))
	for i, l := range lites {
		q[i] = strconv.Quote(l)
	}
	oo := ""
	if offsetOption != "" {
		oo = `,"offsetOption":` + offsetOption
	}
	req.Body = fmt.Appendf(nil, `{"subscriptionSet":[{"action":%q,"clientId":%q,"group":%q,"liteTopicSet":[%s]%s,"topic":%q,"version":1}]}`,
		action, client, group, strings.Join(q, ","), oo, topic)
	return req
}

func popLiteReq(client, group, topic string, max int, pollMs int64) *codec.RemotingCommand {
	req := codec.NewRequest(codec.ReqPopLiteMessage)
	for _, kv := range [][2]string{{"clientId", client}, {"consumerGroup", group}, {"topic", topic},
		{"maxMsgNum", fmt.Sprint(max)}, {"invisibleTime", "60000"}, {"pollTime", fmt.Sprint(pollMs)},
		{"bornTime", fmt.Sprint(time.Now().UnixMilli())}} {
		req.Ext.Set(kv[0], kv[1])
	}
	return req
}

// liteMsg is what a consumer sees of a popped lite message: body, lite topic
// and the offset in its lite topic's queue (INNER_MULTI_QUEUE_OFFSET).
type liteMsg struct {
	body, lite string
	off        int64
}

func decodeLite(t *testing.T, body []byte) []liteMsg {
	t.Helper()
	var out []liteMsg
	for len(body) > 0 {
		var m codec.Message
		n, err := codec.DecodeRecord(body, &m)
		require.NoError(t, err)
		lite, _ := codec.PropertyValue(m.Properties, codec.PropLiteTopic)
		q, _ := codec.PropertyValue(m.Properties, codec.PropInnerMultiDispatch)
		require.Equal(t, "%LMQ%$LiteT$"+lite, q)
		off, _ := codec.PropertyValue(m.Properties, codec.PropInnerMultiQueueOffset)
		o, err := strconv.ParseInt(off, 10, 64)
		require.NoError(t, err)
		require.Equal(t, "LiteT", m.Topic, "records go out under the parent topic")
		out = append(out, liteMsg{string(m.Body), lite, o})
		body = body[n:]
	}
	return out
}

func ackLiteReq(group, lite string, off, popTime int64, queueID int32) *codec.RemotingCommand {
	req := codec.NewRequest(codec.ReqAckMessage)
	for _, kv := range [][2]string{{"consumerGroup", group}, {"topic", "LiteT"}, {"queueId", fmt.Sprint(queueID)},
		{"extraInfo", fmt.Sprintf("0 %d 60000 999 0 broker-a 0 %d", popTime, off)}, {"offset", fmt.Sprint(off)}, {"liteTopic", lite}} {
		req.Ext.Set(kv[0], kv[1])
	}
	return req
}

// Java 5.5's lite topics end to end at the broker: a send naming a lite topic
// lands in its queue, a subscription (from the queue's start) pops each lite
// topic's messages in order, one batch in flight per lite topic until acked,
// and a held POP wakes when a subscribed lite topic gets a message.
func TestLiteTopics(t *testing.T) {
	b := newLiteBroker(t, nil)
	c := newTestConn(7)
	for i, lite := range []string{"a", "a", "b"} {
		sendOK(t, b, sendReq("LiteT", int32(i%4), []byte(fmt.Sprintf("%s%d", lite, i)), liteProps(lite)))
	}
	require.EqualValues(t, 2, b.st.MaxOffsetInQueue("%LMQ%$LiteT$a", 0))
	require.EqualValues(t, 1, b.st.MaxOffsetInQueue("%LMQ%$LiteT$b", 0))

	resp := b.call(t, c, liteCtl("PARTIAL_ADD", "c1", "LiteG", "LiteT", []string{"a", "b", "none"}, `{"type":"POLICY","value":1}`))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)

	resp = b.call(t, c, popLiteReq("c1", "LiteG", "LiteT", 32, 0))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	got := decodeLite(t, resp.Body)
	require.ElementsMatch(t, []liteMsg{{"a0", "a", 0}, {"a1", "a", 1}, {"b2", "b", 0}}, got)
	require.Equal(t, "0;0;0", ext(t, resp, "orderCountInfo"))
	require.Equal(t, "999", ext(t, resp, "reviveQid"))
	popTime, err := strconv.ParseInt(ext(t, resp, "popTime"), 10, 64)
	require.NoError(t, err)

	// In flight: nothing more, and the answer still carries the header the client reads.
	resp = b.call(t, c, popLiteReq("c1", "LiteG", "LiteT", 32, 0))
	require.EqualValues(t, codec.RespPollingTimeout, resp.Code)
	require.Equal(t, "999", ext(t, resp, "reviveQid"))

	// A held POP waits; acking all of "a" and a new "a" message answer it with that message.
	held := newTestConn(8)
	require.Nil(t, b.call(t, held, popLiteReq("c1", "LiteG", "LiteT", 32, 10000)))
	for _, off := range []int64{0, 1} {
		resp = b.call(t, c, ackLiteReq("LiteG", "a", off, popTime, 0))
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
	require.EqualValues(t, 2, b.offsets.Query("LiteG", "%LMQ%$LiteT$a", 0))
	sendOK(t, b, sendReq("LiteT", 0, []byte("a3"), liteProps("a")))
	pr := waitResponse(t, held, 1)
	require.EqualValues(t, codec.RespSuccess, pr.Code, pr.Remark)
	require.Equal(t, []liteMsg{{"a3", "a", 2}}, decodeLite(t, pr.Body))
	require.Equal(t, "0", ext(t, pr, "orderCountInfo"))

	// After the invisible time (here: changed to 0 ms) "b" comes again, counted once more.
	cr := codec.NewRequest(codec.ReqChangeMessageInvisibletime)
	for _, kv := range [][2]string{{"consumerGroup", "LiteG"}, {"topic", "LiteT"}, {"queueId", "0"},
		{"extraInfo", fmt.Sprintf("0 %d 60000 999 0 broker-a 0 0", popTime)}, {"offset", "0"}, {"invisibleTime", "0"},
		{"liteTopic", "b"}} {
		cr.Ext.Set(kv[0], kv[1])
	}
	resp = b.call(t, c, cr)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	resp = b.call(t, c, popLiteReq("c1", "LiteG", "LiteT", 32, 0))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Equal(t, []liteMsg{{"b2", "b", 0}}, decodeLite(t, resp.Body))
	// Java's per-offset form, which the 5.5 client reads as 1 (ExtraInfoUtil.parseLiteOrderCountInfo).
	require.Equal(t, "0 qo0%0 1", ext(t, resp, "orderCountInfo"))

	// Unsubscribed, the client gets nothing of "b" any more.
	resp = b.call(t, c, liteCtl("COMPLETE_REMOVE", "c1", "LiteG", "LiteT", nil, ""))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	sendOK(t, b, sendReq("LiteT", 0, []byte("b4"), liteProps("b")))
	resp = b.call(t, c, popLiteReq("c1", "LiteG", "LiteT", 32, 0))
	require.EqualValues(t, codec.RespPollingTimeout, resp.Code)
}

// A new subscription starts at the lite topic's end unless its offset option
// says otherwise (Java's ConsumeInitMode.MAX), and a COMPLETE_ADD replaces a
// client's set.
func TestLiteSubscriptionStart(t *testing.T) {
	b := newLiteBroker(t, nil)
	c := newTestConn(9)
	for range 3 {
		sendOK(t, b, sendReq("LiteT", 0, []byte("old"), liteProps("x")))
	}
	// The store's first message is still there, so MAX starts at 0 as Java's
	// initPopOffsetByCheckMsgInMem does; a POLICY max option moves it to the end.
	resp := b.call(t, c, liteCtl("PARTIAL_ADD", "c2", "LiteG", "LiteT", []string{"x"}, `{"type":"POLICY","value":2}`))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	resp = b.call(t, c, popLiteReq("c2", "LiteG", "LiteT", 32, 0))
	require.EqualValues(t, codec.RespPollingTimeout, resp.Code)
	sendOK(t, b, sendReq("LiteT", 0, []byte("new"), liteProps("x")))
	resp = b.call(t, c, popLiteReq("c2", "LiteG", "LiteT", 32, 0))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Equal(t, []liteMsg{{"new", "x", 3}}, decodeLite(t, resp.Body))

	resp = b.call(t, c, liteCtl("COMPLETE_ADD", "c2", "LiteG", "LiteT", []string{"y"}, ""))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Equal(t, []string{"%LMQ%$LiteT$y"}, b.pop.LiteQueues("c2", "LiteG", "LiteT"))
}

// What the broker refuses, in Java's codes and words.
func TestLiteRefusals(t *testing.T) {
	b := newLiteBroker(t, nil)
	c := newTestConn(10)
	plain := createTopicReq("PlainT", 4)
	resp := b.call(t, c, popLiteReq("c", "LiteG", "NoSuchT", 1, 0))
	require.EqualValues(t, codec.RespTopicNotExist, resp.Code)
	require.Equal(t, "0", ext(t, resp, "popTime"))
	r, err := b.handleUpdateAndCreateTopic(context.Background(), c, plain)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code)
	resp = b.call(t, c, popLiteReq("c", "LiteG", "PlainT", 1, 0))
	require.EqualValues(t, codec.RespInvalidParameter, resp.Code)
	require.Equal(t, "the topic [PlainT] message type not match", resp.Remark)
	resp = b.call(t, c, popLiteReq("c", "PlainG", "LiteT", 1, 0))
	require.EqualValues(t, codec.RespInvalidParameter, resp.Code)
	require.Equal(t, "subscription bind topic not match, PlainG", resp.Remark)
	resp = b.call(t, c, popLiteReq("c", "LiteG", "LiteT", 33, 0))
	require.EqualValues(t, codec.RespInvalidParameter, resp.Code)

	sendOK(t, b, sendReq("LiteT", 0, []byte("m"), liteProps("q")))
	resp = b.call(t, c, ackLiteReq("PlainG", "q", 0, 1, 0))
	require.EqualValues(t, codec.RespInvalidParameter, resp.Code)
	require.Equal(t, "group type or bind topic not match.", resp.Remark)
	resp = b.call(t, c, ackLiteReq("LiteG", "q", 0, 1, 1))
	require.EqualValues(t, codec.RespInvalidParameter, resp.Code)
	require.Equal(t, "ack queue illegal.", resp.Remark)
	resp = b.call(t, c, ackLiteReq("LiteG", "q", 5, 1, 0))
	require.EqualValues(t, codec.RespNoMessage, resp.Code)

	resp = b.call(t, c, codec.NewRequest(codec.ReqLiteSubscriptionCtl))
	require.EqualValues(t, codec.RespIllegalOperation, resp.Code)
	require.Equal(t, "Request body is null.", resp.Remark)
	resp = b.call(t, c, liteCtl("PARTIAL_ADD", "c", "../G", "LiteT", []string{"a"}, ""))
	require.EqualValues(t, codec.RespInvalidParameter, resp.Code)

	// A lite topic that would not be one safe directory is refused at send.
	resp, err = b.handleSendMessage(context.Background(), c, sendReq("LiteT", 0, []byte("x"), liteProps("../../etc")))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespMessageIllegal, resp.Code)
}

// The broker holds at most maxLiteSubscriptionCount subscriptions, whatever
// the action adding them.
func TestLiteSubscriptionQuota(t *testing.T) {
	b := newLiteBroker(t, func(c *BrokerConfig) { c.Pop.MaxLiteSubscriptionCount = 3 })
	c := newTestConn(11)
	resp := b.call(t, c, liteCtl("PARTIAL_ADD", "c1", "LiteG", "LiteT", []string{"a", "b"}, ""))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	resp = b.call(t, c, liteCtl("COMPLETE_ADD", "c2", "LiteG", "LiteT", []string{"a", "b"}, ""))
	require.EqualValues(t, codec.RespLiteSubscriptionQuotaExceeded, resp.Code)
	require.Equal(t, "org.apache.rocketmq.broker.lite.LiteQuotaException: lite subscription quota exceeded 3", resp.Remark)
	resp = b.call(t, c, liteCtl("PARTIAL_ADD", "c3", "LiteG", "LiteT", []string{"z"}, ""))
	require.EqualValues(t, codec.RespLiteSubscriptionQuotaExceeded, resp.Code)
	resp = b.call(t, c, liteCtl("PARTIAL_REMOVE", "c1", "LiteG", "LiteT", []string{"a"}, ""))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	resp = b.call(t, c, liteCtl("PARTIAL_ADD", "c3", "LiteG", "LiteT", []string{"z"}, ""))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	// Clients count too, with no lite topic: a fourth is refused, and a removal makes none.
	resp = b.call(t, c, liteCtl("PARTIAL_REMOVE", "c4", "LiteG", "LiteT", []string{"z"}, ""))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	resp = b.call(t, c, liteCtl("COMPLETE_ADD", "c4", "LiteG", "LiteT", nil, ""))
	require.EqualValues(t, codec.RespLiteSubscriptionQuotaExceeded, resp.Code)
	resp = b.call(t, c, liteCtl("COMPLETE_REMOVE", "c2", "LiteG", "LiteT", nil, ""))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	resp = b.call(t, c, liteCtl("COMPLETE_ADD", "c4", "LiteG", "LiteT", nil, ""))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
}

// A change of invisible time that names no lite topic, as client-java 5.2's
// nack and the 5.5 proxy's renewal send it, still reaches the lite topic's
// batch through the message its handle names (Java changes nothing then); a
// handle naming another message changes nothing.
func TestLiteChangeInvisibleWithoutLiteTopic(t *testing.T) {
	b := newLiteBroker(t, nil)
	c := newTestConn(12)
	var clOffs []int64
	for i := range 2 {
		resp := sendOK(t, b, sendReq("LiteT", 0, []byte(fmt.Sprint("m", i)), liteProps(fmt.Sprint("k", i))))
		_, off, err := compat.DecodeOffsetMsgID(ext(t, resp, "msgId"))
		require.NoError(t, err)
		clOffs = append(clOffs, off)
	}
	resp := b.call(t, c, liteCtl("PARTIAL_ADD", "c1", "LiteG", "LiteT", []string{"k0", "k1"}, `{"type":"POLICY","value":1}`))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	resp = b.call(t, c, popLiteReq("c1", "LiteG", "LiteT", 32, 0))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Len(t, decodeLite(t, resp.Body), 2)
	popTime := ext(t, resp, "popTime")
	change := func(clOff int64) {
		t.Helper()
		cr := codec.NewRequest(codec.ReqChangeMessageInvisibletime)
		for _, kv := range [][2]string{{"consumerGroup", "LiteG"}, {"topic", "LiteT"}, {"queueId", "0"},
			{"extraInfo", fmt.Sprintf("0 %s 60000 999 0 broker-a 0 0 %d", popTime, clOff)}, {"offset", "0"}, {"invisibleTime", "0"}} {
			cr.Ext.Set(kv[0], kv[1])
		}
		resp := b.call(t, c, cr)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
	change(clOffs[0] + 1) // no message starts there
	resp = b.call(t, c, popLiteReq("c1", "LiteG", "LiteT", 32, 0))
	require.EqualValues(t, codec.RespPollingTimeout, resp.Code)
	change(clOffs[0])
	resp = b.call(t, c, popLiteReq("c1", "LiteG", "LiteT", 32, 0))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Equal(t, []liteMsg{{"m0", "k0", 0}}, decodeLite(t, resp.Body))
}

// The lite admin codes (LiteManagerProcessor) in Java's body names: the
// figures mqadmin 5.5's getBrokerLiteInfo ... getLiteGroupInfo print.
func TestLiteAdmin(t *testing.T) {
	b := newLiteBroker(t, nil)
	c := newTestConn(13)
	for i := range 3 {
		sendOK(t, b, sendReq("LiteT", 0, []byte(fmt.Sprint("m", i)), liteProps("u1")))
	}
	resp := b.call(t, c, liteCtl("PARTIAL_ADD", "c1", "LiteG", "LiteT", []string{"u1", "u2"}, `{"type":"POLICY","value":1}`))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	resp = b.call(t, c, popLiteReq("c1", "LiteG", "LiteT", 1, 0))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	popTime, err := strconv.ParseInt(ext(t, resp, "popTime"), 10, 64)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, b.call(t, c, ackLiteReq("LiteG", "u1", 0, popTime, 0)).Code)

	admin := func(code int32, kv ...string) map[string]any {
		t.Helper()
		req := codec.NewRequest(code)
		for i := 0; i+1 < len(kv); i += 2 {
			req.Ext.Set(kv[i], kv[i+1])
		}
		resp := b.call(t, c, req)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
		var m map[string]any
		if len(resp.Body) > 0 {
			require.NoError(t, codec.UnmarshalBody(resp.Body, &m))
		}
		return m
	}
	m := admin(codec.ReqGetBrokerLiteInfo)
	require.EqualValues(t, 1, m["currentLmqNum"])
	require.EqualValues(t, 2, m["liteSubscriptionCount"])
	require.Equal(t, map[string]any{"LiteT": float64(-1)}, m["topicMeta"])
	require.Equal(t, map[string]any{"LiteT": []any{"LiteG"}}, m["groupMeta"])
	m = admin(codec.ReqGetParentTopicInfo, "topic", "LiteT")
	require.EqualValues(t, 1, m["liteTopicCount"])
	m = admin(codec.ReqGetLiteTopicInfo, "parentTopic", "LiteT", "liteTopic", "u1")
	require.Equal(t, map[string]any{"minOffset": float64(0), "maxOffset": float64(3), "lastUpdateTimestamp": m["topicOffset"].(map[string]any)["lastUpdateTimestamp"]}, m["topicOffset"])
	require.Equal(t, []any{map[string]any{"clientId": "c1", "group": "LiteG"}}, m["subscriber"])
	m = admin(codec.ReqGetLiteClientInfo, "parentTopic", "LiteT", "group", "LiteG", "clientId", "c1")
	require.EqualValues(t, 2, m["liteTopicCount"])
	require.Equal(t, []any{"%LMQ%$LiteT$u1", "%LMQ%$LiteT$u2"}, m["liteTopicSet"])
	require.NotZero(t, m["lastAccessTime"])
	m = admin(codec.ReqGetLiteClientInfo, "parentTopic", "LiteT", "group", "LiteG", "clientId", "gone")
	require.EqualValues(t, -1, m["liteTopicCount"])
	m = admin(codec.ReqGetLiteGroupInfo, "group", "LiteG", "liteTopic", "u1")
	require.EqualValues(t, 2, m["totalLagCount"])
	m = admin(codec.ReqGetLiteGroupInfo, "group", "LiteG", "topK", "5")
	require.EqualValues(t, 2, m["totalLagCount"])
	require.Equal(t, "u1", m["lagCountTopK"].([]any)[0].(map[string]any)["liteTopic"])
	admin(codec.ReqTriggerLiteDispatch, "group", "LiteG")

	// The exporter's consumer lag counts the group's lite topics under their parent.
	stored := b.st.MessageStoreTimestamp("%LMQ%$LiteT$u1", 0, 1)
	var lag *LagMetrics
	for _, l := range b.MetricsSnapshot(time.UnixMilli(stored + 5000)).Lags {
		if l.Group == "LiteG" {
			require.Nil(t, lag, "one series per parent")
			lag = &l
		}
	}
	require.NotNil(t, lag)
	require.Equal(t, LagMetrics{Topic: "LiteT", Group: "LiteG", Lag: 2, LagLatencyMs: 5000}, *lag)

	req := codec.NewRequest(codec.ReqGetLiteGroupInfo)
	req.Ext.Set("group", "PlainG")
	resp = b.call(t, c, req)
	require.EqualValues(t, codec.RespInvalidParameter, resp.Code)
	require.Equal(t, "Group [PlainG] is not a LITE group.", resp.Remark)
	req = codec.NewRequest(codec.ReqGetParentTopicInfo)
	req.Ext.Set("topic", "NoT")
	resp = b.call(t, c, req)
	require.EqualValues(t, codec.RespTopicNotExist, resp.Code)
	require.Equal(t, "Topic [NoT] not exist.", resp.Remark)
}

// lite.sub.model=Exclusive: a lite topic has one client of the group, the
// last to subscribe; the one it was taken from is told on its proxy
// connection (NOTIFY_UNSUBSCRIBE_LITE, oneway) and with
// lite.sub.reset.offset.exclusive the group starts it again from 0.
func TestLiteExclusive(t *testing.T) {
	b := newLiteBroker(t, nil)
	g := NewSubscriptionGroupConfig("LiteX")
	g.Attributes = map[string]string{attrLiteBindTopic: "LiteT", "lite.sub.model": "Exclusive",
		"lite.sub.reset.offset.exclusive": "true", "lite.sub.reset.offset.unsubscribe": "true"}
	require.NoError(t, b.groups.Update(g))
	c1, c2 := newTestConn(14), newTestConn(15)
	for i := range 2 {
		sendOK(t, b, sendReq("LiteT", 0, []byte(fmt.Sprint("e", i)), liteProps("e")))
	}
	resp := b.call(t, c1, liteCtl("PARTIAL_ADD", "x1", "LiteX", "LiteT", []string{"e", "f"}, `{"type":"POLICY","value":2}`))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.True(t, b.offsets.HasReset("LiteX", "%LMQ%$LiteT$e", 0), "x1 starts e at its end")
	resp = b.call(t, c2, liteCtl("PARTIAL_ADD", "x2", "LiteX", "LiteT", []string{"e"}, ""))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Equal(t, []string{"%LMQ%$LiteT$f"}, b.pop.LiteQueues("x1", "LiteX", "LiteT"))
	require.Equal(t, []string{"%LMQ%$LiteT$e"}, b.pop.LiteQueues("x2", "LiteX", "LiteT"))
	c1.mu.Lock()
	require.Len(t, c1.oneway, 1)
	n := c1.oneway[0]
	c1.mu.Unlock()
	require.EqualValues(t, codec.ReqNotifyUnsubscribeLite, n.Code)
	for k, v := range map[string]string{"liteTopic": "e", "consumerGroup": "LiteX", "clientId": "x1"} {
		require.Equal(t, v, ext(t, n, k))
	}
	// The group starts "e" again from its first message for x2.
	resp = b.call(t, c2, popLiteReq("x2", "LiteX", "LiteT", 32, 0))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Equal(t, []liteMsg{{"e0", "e", 0}, {"e1", "e", 1}}, decodeLite(t, resp.Body))
	popTime, err := strconv.ParseInt(ext(t, resp, "popTime"), 10, 64)
	require.NoError(t, err)
	for off := range int64(2) {
		r := codec.NewRequest(codec.ReqAckMessage)
		for _, kv := range [][2]string{{"consumerGroup", "LiteX"}, {"topic", "LiteT"}, {"queueId", "0"},
			{"extraInfo", fmt.Sprintf("0 %d 60000 999 0 broker-a 0 %d", popTime, off)}, {"offset", fmt.Sprint(off)}, {"liteTopic", "e"}} {
			r.Ext.Set(kv[0], kv[1])
		}
		require.EqualValues(t, codec.RespSuccess, b.call(t, c2, r).Code)
	}
	require.EqualValues(t, 2, b.offsets.Query("LiteX", "%LMQ%$LiteT$e", 0))
	// lite.sub.reset.offset.unsubscribe: unsubscribing starts the group over.
	resp = b.call(t, c2, liteCtl("PARTIAL_REMOVE", "x2", "LiteX", "LiteT", []string{"e"}, ""))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	reset, ok := b.offsets.TakeReset("LiteX", "%LMQ%$LiteT$e", 0)
	require.True(t, ok)
	require.Zero(t, reset)
}

// A lite topic idle for its parent's lite.topic.expiration goes with its
// offsets, batch state and subscriptions (Java's LiteLifecycleManager), never
// before minLiteTTl; one that got a message since stays, and a deleted parent
// takes the rest along.
func TestLiteExpiry(t *testing.T) {
	b := newLiteBroker(t, nil)
	c := newTestConn(17)
	sendOK(t, b, sendReq("LiteT", 0, []byte("o"), liteProps("old")))
	time.Sleep(20 * time.Millisecond)
	sendOK(t, b, sendReq("LiteT", 0, []byte("n"), liteProps("new")))
	oldQ, newQ := "%LMQ%$LiteT$old", "%LMQ%$LiteT$new"
	resp := b.call(t, c, liteCtl("PARTIAL_ADD", "c1", "LiteG", "LiteT", []string{"old", "new"}, `{"type":"POLICY","value":1}`))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	resp = b.call(t, c, popLiteReq("c1", "LiteG", "LiteT", 32, 0))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	popTime, err := strconv.ParseInt(ext(t, resp, "popTime"), 10, 64)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, b.call(t, c, ackLiteReq("LiteG", "old", 0, popTime, 0)).Code)
	require.EqualValues(t, 1, b.offsets.Query("LiteG", oldQ, 0))
	stored := time.UnixMilli(b.st.MessageStoreTimestamp(oldQ, 0, 0))

	setTTL := func(minutes string) {
		t.Helper()
		req := createTopicReq("LiteT", 4)
		req.Ext.Set("attributes", "+message.type=LITE,+lite.topic.expiration="+minutes)
		resp, err := b.handleUpdateAndCreateTopic(context.Background(), newTestConn(2), req)
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
	require.Empty(t, b.cleanExpiredLite(stored.Add(24*time.Hour)), "no expiration set")
	setTTL("1")
	require.Empty(t, b.cleanExpiredLite(stored.Add(10*time.Minute)), "minLiteTTl (15 min) is the floor")
	setTTL("30")
	require.Empty(t, b.cleanExpiredLite(stored.Add(29*time.Minute)))
	require.Equal(t, []string{oldQ}, b.cleanExpiredLite(stored.Add(30*time.Minute+5*time.Millisecond)))

	require.Zero(t, b.st.MaxOffsetInQueue(oldQ, 0))
	require.EqualValues(t, -1, b.offsets.Query("LiteG", oldQ, 0))
	require.Empty(t, b.pop.LiteSubscribers(oldQ))
	require.Equal(t, []string{newQ}, b.pop.LiteQueues("c1", "LiteG", "LiteT"))
	require.Equal(t, 1, b.pop.LiteOrderCount(), "only new's batch state is left")
	require.EqualValues(t, 1, b.st.MaxOffsetInQueue(newQ, 0))
	// Sent to again, the lite topic starts over at 0.
	sendOK(t, b, sendReq("LiteT", 0, []byte("o2"), liteProps("old")))
	require.EqualValues(t, 1, b.st.MaxOffsetInQueue(oldQ, 0))

	del := codec.NewRequest(codec.ReqDeleteTopicInBroker)
	del.Ext.Set("topic", "LiteT")
	require.EqualValues(t, codec.RespSuccess, b.call(t, c, del).Code)
	_, lmqs := b.lmqTopics()
	require.Empty(t, lmqs)
	require.Empty(t, b.pop.LiteSubscribers(newQ))
	require.Zero(t, b.pop.LiteOrderCount())
}

// A wildcard group (lite.sub.wildcard) consumes every lite topic of its
// parent without subscribing to any: PARTIAL_ADD is refused, COMPLETE_ADD
// (any set) joins, each lite topic is in flight to one client at a time, and
// a held POP wakes for a lite topic no one named.
func TestLiteWildcard(t *testing.T) {
	b := newLiteBroker(t, nil)
	g := NewSubscriptionGroupConfig("WildG")
	g.Attributes = map[string]string{attrLiteBindTopic: "LiteT", attrLiteWildcard: "true"}
	require.NoError(t, b.groups.Update(g))
	c := newTestConn(19)
	sendOK(t, b, sendReq("LiteT", 0, []byte("x0"), liteProps("x")))
	sendOK(t, b, sendReq("LiteT", 1, []byte("x1"), liteProps("x")))
	sendOK(t, b, sendReq("LiteT", 2, []byte("y2"), liteProps("y")))

	resp := b.call(t, c, liteCtl("PARTIAL_ADD", "c1", "WildG", "LiteT", []string{"x"}, ""))
	require.EqualValues(t, codec.RespIllegalOperation, resp.Code)
	require.Equal(t, "java.lang.IllegalStateException: subscribe lite operation is not supported for this group", resp.Remark)
	for _, id := range []string{"c1", "c2"} {
		resp = b.call(t, c, liteCtl("COMPLETE_ADD", id, "WildG", "LiteT", nil, ""))
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
	require.ElementsMatch(t, [][2]string{{"c1", "WildG"}, {"c2", "WildG"}}, b.pop.LiteSubscribers("%LMQ%$LiteT$x"))

	resp = b.call(t, c, popLiteReq("c1", "WildG", "LiteT", 32, 0))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.ElementsMatch(t, []liteMsg{{"x0", "x", 0}, {"x1", "x", 1}, {"y2", "y", 0}}, decodeLite(t, resp.Body))
	popTime, err := strconv.ParseInt(ext(t, resp, "popTime"), 10, 64)
	require.NoError(t, err)
	// Both lite topics are in flight to c1: c2 gets nothing of them.
	resp = b.call(t, c, popLiteReq("c2", "WildG", "LiteT", 32, 0))
	require.EqualValues(t, codec.RespPollingTimeout, resp.Code)

	// c2 waits; a lite topic no one ever named wakes it.
	held := newTestConn(20)
	require.Nil(t, b.call(t, held, popLiteReq("c2", "WildG", "LiteT", 32, 10000)))
	sendOK(t, b, sendReq("LiteT", 3, []byte("z3"), liteProps("z")))
	pr := waitResponse(t, held, 1)
	require.EqualValues(t, codec.RespSuccess, pr.Code, pr.Remark)
	require.Equal(t, []liteMsg{{"z3", "z", 0}}, decodeLite(t, pr.Body))

	// Acked, x is free again: its next message goes to whichever client pops.
	for _, off := range []int64{0, 1} {
		require.EqualValues(t, codec.RespSuccess, b.call(t, c, ackLiteReq("WildG", "x", off, popTime, 0)).Code)
	}
	sendOK(t, b, sendReq("LiteT", 0, []byte("x4"), liteProps("x")))
	resp = b.call(t, c, popLiteReq("c2", "WildG", "LiteT", 32, 0))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Equal(t, []liteMsg{{"x4", "x", 2}}, decodeLite(t, resp.Body))

	for _, id := range []string{"c1", "c2"} {
		resp = b.call(t, c, liteCtl("COMPLETE_REMOVE", id, "WildG", "LiteT", nil, ""))
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
	require.Empty(t, b.pop.LiteSubscribers("%LMQ%$LiteT$x"))
	require.Zero(t, b.pop.LiteSubscriptions())
}

// Java 5.5's sharding: of the parent's write queues (sorted by broker and
// queue, brokers without a master or write permission left out), a lite
// topic belongs to the broker of queue consistentHash(lite.hashCode(), n),
// and a broker keeps a subscription only to its own lite topics or to ones
// with messages here.
func TestLiteSharding(t *testing.T) {
	route := &codec.TopicRouteData{
		QueueDatas: []codec.QueueData{{BrokerName: "broker-b", WriteQueueNums: 2, Perm: 6}, {BrokerName: "broker-a", WriteQueueNums: 2, Perm: 6},
			{BrokerName: "broker-c", WriteQueueNums: 2, Perm: 4}, {BrokerName: "broker-d", WriteQueueNums: 2, Perm: 6}},
		BrokerDatas: []*codec.BrokerData{{BrokerName: "broker-a", BrokerAddrs: map[int64]string{0: "a:1"}},
			{BrokerName: "broker-b", BrokerAddrs: map[int64]string{0: "b:1"}}, {BrokerName: "broker-c", BrokerAddrs: map[int64]string{0: "c:1"}},
			{BrokerName: "broker-d", BrokerAddrs: map[int64]string{1: "d:2"}}}}
	queues := liteWriteQueues(route)
	require.Equal(t, []string{"broker-a", "broker-a", "broker-b", "broker-b"}, queues)

	b := newLiteBroker(t, func(c *BrokerConfig) { c.BrokerName = "broker-a" })
	b.liteRoutes.routes["LiteT"] = queues
	var mine, theirs string
	for i := 0; mine == "" || theirs == ""; i++ {
		l := fmt.Sprint("u", i)
		if queues[compat.ConsistentHash(int64(compat.JavaStringHash(l)), len(queues))] == "broker-a" {
			mine = cmp.Or(mine, l)
		} else {
			theirs = cmp.Or(theirs, l)
		}
	}
	c := newTestConn(21)
	resp := b.call(t, c, liteCtl("PARTIAL_ADD", "c1", "LiteG", "LiteT", []string{mine, theirs}, ""))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Equal(t, []string{compat.LiteLMQ("LiteT", mine)}, b.pop.LiteQueues("c1", "LiteG", "LiteT"))
	for lite, want := range map[string]bool{mine: true, theirs: false} {
		req := codec.NewRequest(codec.ReqGetLiteTopicInfo)
		req.Ext.Set("parentTopic", "LiteT")
		req.Ext.Set("liteTopic", lite)
		resp := b.call(t, c, req)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
		var m map[string]any
		require.NoError(t, codec.UnmarshalBody(resp.Body, &m))
		require.Equal(t, want, m["shardingToBroker"], lite)
	}
	// A lite topic of another broker that has messages here is kept (isLmqExist).
	sendOK(t, b, sendReq("LiteT", 0, []byte("x"), liteProps(theirs)))
	resp = b.call(t, c, liteCtl("COMPLETE_ADD", "c1", "LiteG", "LiteT", []string{mine, theirs}, ""))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.ElementsMatch(t, []string{compat.LiteLMQ("LiteT", mine), compat.LiteLMQ("LiteT", theirs)}, b.pop.LiteQueues("c1", "LiteG", "LiteT"))
}
