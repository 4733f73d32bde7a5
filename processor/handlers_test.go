package processor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/store"
)

type testBroker struct {
	*Broker
	st *store.DefaultStore
}

func newTestBroker(t testing.TB, mod func(*BrokerConfig)) *testBroker {
	t.Helper()
	return newTestBrokerWith(t, mod, nil, nil)
}

// newTestBrokerWith is newTestBroker with the store's configuration changed by
// smod and the store the broker sees made by wrap (both optional).
func newTestBrokerWith(t testing.TB, mod func(*BrokerConfig), smod func(*store.Config),
	wrap func(*store.DefaultStore) MessageStore) *testBroker {
	t.Helper()
	cfg := testConfig(t)
	if mod != nil {
		mod(&cfg)
	}
	scfg := store.DefaultConfig()
	scfg.StorePathRootDir = cfg.Store.StorePathRootDir
	scfg.MappedFileSizeCommitLog = 1 << 20
	scfg.MappedFileSizeConsumeQueue = 20 * 1000
	if smod != nil {
		smod(&scfg)
	}
	st, err := store.Open(scfg, quietLog())
	require.NoError(t, err)
	require.NoError(t, st.Start())
	var ms MessageStore = st
	if wrap != nil {
		ms = wrap(st)
	}
	b, err := NewBroker(cfg, ms, quietLog())
	require.NoError(t, err)
	require.NoError(t, b.Start(context.Background()))
	t.Cleanup(func() {
		require.NoError(t, b.Shutdown())
		require.NoError(t, st.Shutdown())
	})
	return &testBroker{Broker: b, st: st}
}

func sendReq(topic string, queueID int32, body []byte, props string) *codec.RemotingCommand {
	req := codec.NewRequest(codec.ReqSendMessage)
	req.Opaque = 7
	for _, kv := range [][2]string{{"producerGroup", "PG"}, {"topic", topic}, {"defaultTopic", TopicAutoCreate},
		{"defaultTopicQueueNums", "4"}, {"queueId", fmt.Sprint(queueID)}, {"sysFlag", "0"},
		{"bornTimestamp", fmt.Sprint(time.Now().UnixMilli())}, {"flag", "0"}, {"properties", props},
		{"reconsumeTimes", "0"}, {"unitMode", "false"}, {"batch", "false"}} {
		req.Ext.Set(kv[0], kv[1])
	}
	req.Body = body
	return req
}

func pullReq(group, topic string, queueID int32, offset int64, sysFlag int32, suspendMs int64) *codec.RemotingCommand {
	req := codec.NewRequest(codec.ReqPullMessage)
	req.Opaque = 9
	for _, kv := range [][2]string{{"consumerGroup", group}, {"topic", topic}, {"queueId", fmt.Sprint(queueID)},
		{"queueOffset", fmt.Sprint(offset)}, {"maxMsgNums", "32"}, {"sysFlag", fmt.Sprint(sysFlag)},
		{"commitOffset", "0"}, {"suspendTimeoutMillis", fmt.Sprint(suspendMs)}, {"subscription", "*"},
		{"subVersion", "0"}, {"expressionType", "TAG"}} {
		req.Ext.Set(kv[0], kv[1])
	}
	return req
}

// ext reads a response header field as a client would: typed headers are
// encoded and decoded first.
func ext(t *testing.T, c *codec.RemotingCommand, k string) string {
	t.Helper()
	if c.CustomHeader != nil {
		frame := c.Encode(nil)
		var d codec.RemotingCommand
		require.NoError(t, codec.DecodeCommand(frame[4:], &d))
		c = &d
	}
	v, ok := c.Ext.Get(k)
	require.True(t, ok, "ext field %s missing in %+v", k, c.Ext)
	return v
}

// decodeBody splits a pull body into records.
func decodeBody(t *testing.T, body []byte) []codec.Message {
	t.Helper()
	var out []codec.Message
	for len(body) > 0 {
		var m codec.Message
		n, err := codec.DecodeRecord(body, &m)
		require.NoError(t, err)
		out = append(out, *codec.CloneMessage(&m))
		body = body[n:]
	}
	return out
}

// clientSendProps are the properties a Java client's send carries: tags, keys,
// a UNIQ_KEY and WAIT (which the broker drops before storing).
const clientSendProps = "TAGS\x01tagA\x02KEYS\x01k1\x02UNIQ_KEY\x01C0A8000100002A9F0000000000000001\x02WAIT\x01true\x02"

// waitQueued waits (5 s at most) until queue 0 of topic holds n dispatched
// messages; the caller's assertions say what is missing if it never does.
func waitQueued(b *testBroker, topic string, n int64) {
	deadline := time.Now().Add(5 * time.Second)
	for b.st.MaxOffsetInQueue(topic, 0) < n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}

// waitResponse waits for the n-th response written to c.
func waitResponse(t *testing.T, c *testConn, n int) *codec.RemotingCommand {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if rs := c.responses(); len(rs) >= n {
			return rs[n-1]
		}
		select {
		case <-c.wrote:
		case <-deadline:
			t.Fatalf("no response %d", n)
		}
	}
}

func TestSendThenPull(t *testing.T) {
	b := newTestBroker(t, nil)
	c := newTestConn(40000)
	ctx := context.Background()
	props := "TAGS\x01tagA\x02KEYS\x01k1\x02color\x01red\x02"
	resp, err := b.handleSendMessage(ctx, c, sendReq("TopicA", 1, []byte("hello"), props))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.EqualValues(t, 7, resp.Opaque)
	require.Equal(t, "1", ext(t, resp, "queueId"))
	require.Equal(t, "0", ext(t, resp, "queueOffset"))
	require.Equal(t, "DefaultRegion", ext(t, resp, codec.PropMsgRegion))
	require.Equal(t, "true", ext(t, resp, codec.PropTraceSwitch))
	msgID := ext(t, resp, "msgId")
	require.Len(t, msgID, 32)
	tc, ok := b.topics.Select("TopicA")
	require.True(t, ok, "auto-created from TBW102")
	require.EqualValues(t, 4, tc.WriteQueueNums)

	resp2, err := b.handleSendMessage(ctx, c, sendReq("TopicA", 1, []byte("world"), "TAGS\x01tagB\x02"))
	require.NoError(t, err)
	require.Equal(t, "1", ext(t, resp2, "queueOffset"))

	// The dispatch to the consume queue is asynchronous.
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("TopicA", 1) == 2 }, 5*time.Second, 5*time.Millisecond)

	// Pull with an explicit subscription (sysFlag bit 2).
	r, err := b.handlePullMessage(ctx, c, pullReq("G1", "TopicA", 1, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.Nil(t, r, "found messages are written directly")
	pr := waitResponse(t, c, 1)
	require.EqualValues(t, codec.RespSuccess, pr.Code)
	require.EqualValues(t, 9, pr.Opaque)
	require.Equal(t, "2", ext(t, pr, "nextBeginOffset"))
	require.Equal(t, "0", ext(t, pr, "minOffset"))
	require.Equal(t, "2", ext(t, pr, "maxOffset"))
	require.Equal(t, "0", ext(t, pr, "suggestWhichBrokerId"))
	msgs := decodeBody(t, pr.Body)
	require.Len(t, msgs, 2)
	require.Equal(t, "hello", string(msgs[0].Body))
	require.Equal(t, "world", string(msgs[1].Body))
	require.EqualValues(t, 1, msgs[1].QueueOffset)
	require.Equal(t, "127.0.0.1:40000", msgs[0].BornHost.String())
	require.Equal(t, "127.0.0.1:10911", msgs[0].StoreHost.String())
	for _, k := range []string{codec.PropTags, codec.PropKeys, "color", codec.PropUniqKey, codec.PropCluster} {
		_, ok := codec.PropertyValue(msgs[0].Properties, k)
		require.True(t, ok, k)
	}

	// A tag subscription filters by tag hash.
	req := pullReq("G1", "TopicA", 1, 0, codec.PullFlagSubscription, 0)
	req.Ext.Set("subscription", "tagB")
	_, err = b.handlePullMessage(ctx, c, req)
	require.NoError(t, err)
	pr = waitResponse(t, c, 2)
	require.EqualValues(t, codec.RespSuccess, pr.Code)
	msgs = decodeBody(t, pr.Body)
	require.Len(t, msgs, 1)
	require.Equal(t, "world", string(msgs[0].Body))

	// Offset statuses (remoting.md §4.4).
	for _, tc := range []struct {
		offset int64
		code   int32
		next   string
	}{{2, codec.RespPullNotFound, "2"}, {5, codec.RespPullOffsetMoved, "2"}} {
		r, err := b.handlePullMessage(ctx, c, pullReq("G1", "TopicA", 1, tc.offset, codec.PullFlagSubscription, 0))
		require.NoError(t, err)
		require.EqualValues(t, tc.code, r.Code, "offset %d", tc.offset)
		require.Equal(t, tc.next, ext(t, r, "nextBeginOffset"))
		ext(t, r, "minOffset")
		ext(t, r, "maxOffset")
		ext(t, r, "suggestWhichBrokerId")
	}
	// Empty queue of an existing topic, offset 0 → 19; unknown topic → 17.
	r, err = b.handlePullMessage(ctx, c, pullReq("G1", "TopicA", 0, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespPullNotFound, r.Code)
	r, err = b.handlePullMessage(ctx, c, pullReq("G1", "NoSuchTopic", 0, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespTopicNotExist, r.Code)
	// Without a subscription flag and without heartbeat → 24.
	r, err = b.handlePullMessage(ctx, c, pullReq("G1", "TopicA", 1, 0, 0, 0))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSubscriptionNotExist, r.Code)
}

func TestSendChecks(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.Store.MaxMessageSize = 1024 })
	c := newTestConn(1)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		req  *codec.RemotingCommand
		code int32
	}{
		{"too large", sendReq("T", 0, make([]byte, 2048), ""), codec.RespMessageIllegal},
		{"bad topic name", sendReq("bad topic", 0, []byte("x"), ""), codec.RespInvalidParameter},
		{"system topic", sendReq(TopicSchedule, 0, []byte("x"), ""), codec.RespNoPermission},
		{"queue out of range", sendReq("T", 99, []byte("x"), ""), codec.RespInvalidParameter},
	} {
		resp, err := b.handleSendMessage(ctx, c, tc.req)
		require.NoError(t, err)
		require.EqualValues(t, tc.code, resp.Code, tc.name)
		ext(t, resp, codec.PropMsgRegion)
	}
	// Missing required header field.
	req := sendReq("T", 0, []byte("x"), "")
	req.Ext.Del("bornTimestamp")
	resp, err := b.handleSendMessage(ctx, c, req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSystemError, resp.Code)

	// queueId -1 picks a writable queue.
	resp, err = b.handleSendMessage(ctx, c, sendReq("T", -1, []byte("x"), ""))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	q := ext(t, resp, "queueId")
	require.Contains(t, []string{"0", "1", "2", "3"}, q)

	// Without autoCreateTopicEnable an unknown topic is refused.
	b2 := newTestBroker(t, func(c *BrokerConfig) { c.AutoCreateTopicEnable = false })
	resp, err = b2.handleSendMessage(ctx, c, sendReq("T", 0, []byte("x"), ""))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespTopicNotExist, resp.Code)
}

func TestSendBatch(t *testing.T) {
	b := newTestBroker(t, nil)
	c := newTestConn(2)
	ctx := context.Background()
	var body []byte
	for i := 0; i < 3; i++ {
		body = codec.AppendBatchEntry(body, 0, []byte(fmt.Sprintf("m%d", i)), "TAGS\x01t\x02")
	}
	req := codec.NewRequest(codec.ReqSendBatchMessage)
	for _, kv := range [][2]string{{"a", "PG"}, {"b", "BatchT"}, {"c", TopicAutoCreate}, {"d", "4"}, {"e", "2"},
		{"f", "0"}, {"g", "1"}, {"h", "0"}, {"i", ""}, {"j", "0"}, {"k", "false"}, {"l", "16"}, {"m", "true"}} {
		req.Ext.Set(kv[0], kv[1])
	}
	req.Body = body
	resp, err := b.handleSendMessage(ctx, c, req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	ids := ext(t, resp, "msgId")
	require.Len(t, ids, 3*32+2)
	require.Equal(t, "2", ext(t, resp, "queueId"))
	require.Equal(t, "0", ext(t, resp, "queueOffset"))

	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("BatchT", 2) == 3 }, 5*time.Second, 5*time.Millisecond)
	_, err = b.handlePullMessage(ctx, c, pullReq("G", "BatchT", 2, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	msgs := decodeBody(t, waitResponse(t, c, 1).Body)
	require.Len(t, msgs, 3)
	for i, m := range msgs {
		require.Equal(t, fmt.Sprintf("m%d", i), string(m.Body))
		_, ok := codec.PropertyValue(m.Properties, codec.PropUniqKey)
		require.False(t, ok, "like Apache 5.3.3, no UNIQ_KEY is invented for inner messages")
		cl, _ := codec.PropertyValue(m.Properties, codec.PropCluster)
		require.Equal(t, "DefaultCluster", cl)
		tag, _ := codec.PropertyValue(m.Properties, codec.PropTags)
		require.Equal(t, "t", tag)
	}
}

// TestSendBatchByHeaderFlag: the header's batch flag makes a batch, as in Java's SendMessageProcessor, not
// the request code: a SEND_MESSAGE with batch=true stores its three entries, a SEND_BATCH_MESSAGE without
// it one message whose body is the encoded batch.
func TestSendBatchByHeaderFlag(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	var body []byte
	for i := range 3 {
		body = codec.AppendBatchEntry(body, 0, []byte(fmt.Sprintf("m%d", i)), "")
	}
	v1 := sendReq("FlagT", 0, body, "")
	v1.Ext.Set("batch", "true")
	resp, err := b.handleSendMessage(ctx, newTestConn(2), v1)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("FlagT", 0) == 3 }, 5*time.Second, 5*time.Millisecond)

	v2 := batchSendReq("FlagT", 1, 0, 3, "")
	v2.Ext.Set("m", "false")
	resp, err = b.handleSendMessage(ctx, newTestConn(3), v2)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("FlagT", 1) == 1 }, 5*time.Second, 5*time.Millisecond)
	c := newTestConn(4)
	_, err = b.handlePullMessage(ctx, c, pullReq("G", "FlagT", 1, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	msgs := decodeBody(t, waitResponse(t, c, 1).Body)
	require.Len(t, msgs, 1)
	require.Equal(t, v2.Body, msgs[0].Body)
}

func TestPullLongPolling(t *testing.T) {
	b := newTestBroker(t, nil)
	c := newTestConn(3)
	ctx := context.Background()
	b.topics.Update(func() TopicConfig { tc := NewTopicConfig("LP"); tc.ReadQueueNums, tc.WriteQueueNums = 1, 1; return tc }())

	// Held, then answered when a message arrives.
	r, err := b.handlePullMessage(ctx, c, pullReq("G", "LP", 0, 0, codec.PullFlagSubscription|codec.PullFlagSuspend, 20000))
	require.NoError(t, err)
	require.Nil(t, r)
	time.Sleep(50 * time.Millisecond)
	require.Empty(t, c.responses())
	resp, err := b.handleSendMessage(ctx, newTestConn(4), sendReq("LP", 0, []byte("wake"), ""))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	pr := waitResponse(t, c, 1)
	require.EqualValues(t, codec.RespSuccess, pr.Code)
	require.EqualValues(t, 9, pr.Opaque)
	require.Equal(t, "wake", string(decodeBody(t, pr.Body)[0].Body))

	// Held and answered PULL_NOT_FOUND when the hold expires.
	r, err = b.handlePullMessage(ctx, c, pullReq("G", "LP", 0, 1, codec.PullFlagSubscription|codec.PullFlagSuspend, 300))
	require.NoError(t, err)
	require.Nil(t, r)
	pr = waitResponse(t, c, 2)
	require.EqualValues(t, codec.RespPullNotFound, pr.Code)
	require.Equal(t, "1", ext(t, pr, "nextBeginOffset"))

	// A message with a tag the subscription does not want does not wake the pull.
	req := pullReq("G", "LP", 0, 1, codec.PullFlagSubscription|codec.PullFlagSuspend, 1500)
	req.Ext.Set("subscription", "wanted")
	_, err = b.handlePullMessage(ctx, c, req)
	require.NoError(t, err)
	_, err = b.handleSendMessage(ctx, newTestConn(4), sendReq("LP", 0, []byte("other"), "TAGS\x01other\x02"))
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond)
	require.Len(t, c.responses(), 2)
	_, err = b.handleSendMessage(ctx, newTestConn(4), sendReq("LP", 0, []byte("yes"), "TAGS\x01wanted\x02"))
	require.NoError(t, err)
	pr = waitResponse(t, c, 3)
	require.EqualValues(t, codec.RespSuccess, pr.Code)
	msgs := decodeBody(t, pr.Body)
	require.Len(t, msgs, 1)
	require.Equal(t, "yes", string(msgs[0].Body))
}

func heartbeatReq(t *testing.T, clientID, group string, topics ...string) *codec.RemotingCommand {
	hb := codec.HeartbeatData{ClientID: clientID, ProducerDataSet: []codec.ProducerData{{GroupName: "PG"}}}
	cd := codec.ConsumerData{GroupName: group, ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING",
		ConsumeFromWhere: "CONSUME_FROM_FIRST_OFFSET"}
	for _, tp := range topics {
		cd.SubscriptionDataSet = append(cd.SubscriptionDataSet, codec.SubscriptionData{Topic: tp, SubString: "*",
			ExpressionType: "TAG", SubVersion: 1, CodeSet: codec.CodeSet{}, TagsSet: []string{}})
	}
	hb.ConsumerDataSet = []codec.ConsumerData{cd}
	body, err := json.Marshal(hb)
	require.NoError(t, err)
	req := codec.NewRequest(codec.ReqHeartBeat)
	req.Body = body
	return req
}

// TestHeartbeatOnClosedConnRegistersNothing: a heartbeat a worker handles after its connection's close
// event leaves no channel in the group (it would be listed for 2 min and be given queues nobody pulls).
func TestHeartbeatOnClosedConnRegistersNothing(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	live, dead := newTestConn(10), newTestConn(11)
	_, err := b.handleHeartBeat(ctx, live, heartbeatReq(t, "10.0.0.1@1", "CG", "TopicH"))
	require.NoError(t, err)
	_ = dead.Close()
	b.OnClose(dead) // the close event first, then the heartbeat read before it
	_, err = b.handleHeartBeat(ctx, dead, heartbeatReq(t, "10.0.0.1@2", "CG", "TopicH"))
	require.NoError(t, err)
	require.Equal(t, []string{"10.0.0.1@1"}, b.consumers.ClientIDs("CG"))
	_, ok := b.producers.FindByClientID("10.0.0.1@2")
	require.False(t, ok, "producer registration of the closed connection")
}

// TestHeartbeatOfManyNewGroupsWritesEachFileOnce: a heartbeat naming hundreds of
// unknown groups creates them and their retry topics with one write of
// subscriptionGroup.json and one of topics.json (the .bak each write leaves
// holds none of them). Written once per group, as Java does, 2,000 groups kept
// a broker busy for 45 s.
func TestHeartbeatOfManyNewGroupsWritesEachFileOnce(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	const n = 300
	resp, err := b.handleHeartBeat(ctx, newTestConn(12), groupsHeartbeat(t, [2]int{}, [2]int{0, n}))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	for _, i := range []int{0, 150, n - 1} {
		g := fmt.Sprintf("C%d", i)
		require.Equal(t, []string{"10.0.0.7@1"}, b.consumers.ClientIDs(g))
		_, ok := b.topics.Select("%RETRY%" + g)
		require.True(t, ok, "retry topic of %s", g)
	}
	requireWrittenOnce(t, b, "subscriptionGroup.json", "\"C0\"", fmt.Sprintf("C%d\"", n-1))
	requireWrittenOnce(t, b, "topics.json", "%RETRY%C0\"", fmt.Sprintf("C%d\"", n-1))
}

// requireWrittenOnce: the config file holds last, and the .bak its last write
// left (the file before that write) holds nothing with the marker, so every
// name with the marker arrived in one write.
func requireWrittenOnce(t *testing.T, b *testBroker, file, marker, last string) {
	t.Helper()
	cfg := b.Config()
	dir := cfg.ConfigDir()
	cur, err := os.ReadFile(filepath.Join(dir, file))
	require.NoError(t, err)
	require.True(t, strings.Contains(string(cur), last), "%s lacks %s", file, last)
	if bak, err := os.ReadFile(filepath.Join(dir, file+".bak")); err == nil {
		require.False(t, strings.Contains(string(bak), marker), "%s was written more than once", file)
	}
}

func TestHeartbeatConsumerListAndOffsets(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	c1, c2 := newTestConn(10), newTestConn(11)
	resp, err := b.handleHeartBeat(ctx, c1, heartbeatReq(t, "10.0.0.1@1", "CG", "TopicH"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	require.GreaterOrEqual(t, resp.Version, int32(401))
	_, ok := b.topics.Select("%RETRY%CG")
	require.True(t, ok, "retry topic created")
	_, err = b.handleHeartBeat(ctx, c2, heartbeatReq(t, "10.0.0.1@2", "CG", "TopicH"))
	require.NoError(t, err)
	require.Equal(t, 2, c1.onewayCount(), "told of its own arrival and of the new member")

	req := codec.NewRequest(codec.ReqGetConsumerListByGroup)
	req.Ext.Set("consumerGroup", "CG")
	resp, err = b.handleGetConsumerListByGroup(ctx, c1, req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	require.JSONEq(t, `{"consumerIdList":["10.0.0.1@1","10.0.0.1@2"]}`, string(resp.Body))

	b.OnClose(c2)
	resp, _ = b.handleGetConsumerListByGroup(ctx, c1, req)
	require.JSONEq(t, `{"consumerIdList":["10.0.0.1@1"]}`, string(resp.Body))
	req2 := codec.NewRequest(codec.ReqGetConsumerListByGroup)
	req2.Ext.Set("consumerGroup", "nobody")
	resp, _ = b.handleGetConsumerListByGroup(ctx, c1, req2)
	require.EqualValues(t, codec.RespSystemError, resp.Code)

	// Pull without subscription flag uses the heartbeat's subscription.
	b.topics.Update(func() TopicConfig {
		tc := NewTopicConfig("TopicH")
		tc.ReadQueueNums, tc.WriteQueueNums = 2, 2
		return tc
	}())
	r, err := b.handlePullMessage(ctx, c1, pullReq("CG", "TopicH", 0, 0, 0, 0))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespPullNotFound, r.Code)

	// Offsets: none stored on an empty queue → 0 (Java's min-offset rule);
	// stored → that; committed through pull sysFlag bit 0.
	q := codec.NewRequest(codec.ReqQueryConsumerOffset)
	q.Ext.Set("consumerGroup", "CG")
	q.Ext.Set("topic", "TopicH")
	q.Ext.Set("queueId", "1")
	resp, _ = b.handleQueryConsumerOffset(ctx, c1, q)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	require.Equal(t, "0", ext(t, resp, "offset"))
	q.Ext.Set("setZeroIfNotFound", "false")
	resp, _ = b.handleQueryConsumerOffset(ctx, c1, q)
	require.EqualValues(t, codec.RespQueryNotFound, resp.Code)

	u := codec.NewRequest(codec.ReqUpdateConsumerOffset)
	for _, kv := range [][2]string{{"consumerGroup", "CG"}, {"topic", "TopicH"}, {"queueId", "1"}, {"commitOffset", "42"}} {
		u.Ext.Set(kv[0], kv[1])
	}
	resp, _ = b.handleUpdateConsumerOffset(ctx, c1, u)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	resp, _ = b.handleQueryConsumerOffset(ctx, c1, q)
	require.Equal(t, "42", ext(t, resp, "offset"))

	p := pullReq("CG", "TopicH", 0, 0, codec.PullFlagCommitOffset, 0)
	p.Ext.Set("commitOffset", "5")
	_, err = b.handlePullMessage(ctx, c1, p)
	require.NoError(t, err)
	require.EqualValues(t, 5, b.offsets.Query("CG", "TopicH", 0))

	// Lock / unlock.
	lb, _ := json.Marshal(codec.LockBatchRequestBody{ClientID: "10.0.0.1@1", ConsumerGroup: "CG",
		MQSet: []codec.MessageQueue{{BrokerName: "broker-a", QueueID: 0, Topic: "TopicH"}}})
	lr := codec.NewRequest(codec.ReqLockBatchMq)
	lr.Body = lb
	resp, _ = b.handleLockBatchMQ(ctx, c1, lr)
	require.JSONEq(t, `{"lockOKMQSet":[{"brokerName":"broker-a","queueId":0,"topic":"TopicH"}]}`, string(resp.Body))
	lb2, _ := json.Marshal(codec.LockBatchRequestBody{ClientID: "other", ConsumerGroup: "CG",
		MQSet: []codec.MessageQueue{{BrokerName: "broker-a", QueueID: 0, Topic: "TopicH"}}})
	lr.Body = lb2
	resp, _ = b.handleLockBatchMQ(ctx, c1, lr)
	require.JSONEq(t, `{"lockOKMQSet":[]}`, string(resp.Body))
}

func TestOffsetsPersistAcrossRestart(t *testing.T) {
	cfg := testConfig(t)
	scfg := store.DefaultConfig()
	scfg.StorePathRootDir = cfg.Store.StorePathRootDir
	scfg.MappedFileSizeCommitLog = 1 << 20
	scfg.MappedFileSizeConsumeQueue = 20 * 1000
	for round := 0; round < 2; round++ {
		st, err := store.Open(scfg, quietLog())
		require.NoError(t, err)
		require.NoError(t, st.Start())
		b, err := NewBroker(cfg, st, quietLog())
		require.NoError(t, err)
		require.NoError(t, b.Start(context.Background()))
		if round == 0 {
			b.offsets.Commit("g", "t", 3, 99)
			b.topics.Update(NewTopicConfig("Kept"))
		} else {
			require.EqualValues(t, 99, b.offsets.Query("g", "t", 3))
			_, ok := b.topics.Select("Kept")
			require.True(t, ok)
		}
		require.NoError(t, b.Shutdown())
		require.NoError(t, st.Shutdown())
	}
}

func TestAdminHandlers(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	c := newTestConn(5)
	req := codec.NewRequest(codec.ReqUpdateAndCreateTopic)
	for _, kv := range [][2]string{{"topic", "AdminT"}, {"defaultTopic", TopicAutoCreate}, {"readQueueNums", "3"},
		{"writeQueueNums", "3"}, {"perm", "6"}, {"topicFilterType", "SINGLE_TAG"}, {"topicSysFlag", "0"}, {"order", "false"},
		{"attributes", "+queue.type=SimpleCQ"}} {
		req.Ext.Set(kv[0], kv[1])
	}
	resp, _ := b.handleUpdateAndCreateTopic(ctx, c, req)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	tc, ok := b.topics.Select("AdminT")
	require.True(t, ok)
	require.EqualValues(t, 3, tc.ReadQueueNums)
	require.Equal(t, "SimpleCQ", tc.Attributes["queue.type"])

	g := codec.NewRequest(codec.ReqGetTopicConfig)
	g.Ext.Set("topic", "AdminT")
	resp, _ = b.handleGetTopicConfig(ctx, c, g)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	require.Contains(t, string(resp.Body), `"readQueueNums":3`)

	resp, _ = b.handleGetAllTopicConfig(ctx, c, codec.NewRequest(codec.ReqGetAllTopicConfig))
	var all TopicConfigTable
	require.NoError(t, json.Unmarshal(resp.Body, &all))
	require.Contains(t, all.TopicConfigTable, "AdminT")
	require.Contains(t, all.TopicConfigTable, TopicAutoCreate)

	d := codec.NewRequest(codec.ReqDeleteTopicInBroker)
	d.Ext.Set("topic", "AdminT")
	resp, _ = b.handleDeleteTopicInBroker(ctx, c, d)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	_, ok = b.topics.Select("AdminT")
	require.False(t, ok)
	resp, _ = b.handleGetTopicConfig(ctx, c, g)
	require.EqualValues(t, codec.RespTopicNotExist, resp.Code)

	// Queue counts outside 0..65535 are refused (Java takes any int), in both forms.
	for _, n := range []string{"65536", "2147483647", "-1"} {
		big := codec.NewRequest(codec.ReqUpdateAndCreateTopic)
		for _, kv := range [][2]string{{"topic", "HugeT"}, {"readQueueNums", "8"}, {"writeQueueNums", n}, {"perm", "6"}} {
			big.Ext.Set(kv[0], kv[1])
		}
		resp, _ = b.handleUpdateAndCreateTopic(ctx, c, big)
		require.EqualValues(t, codec.RespInvalidParameter, resp.Code, n)
		require.Contains(t, resp.Remark, "queue nums "+n+" is illegal")
		list := codec.NewRequest(codec.ReqUpdateAndCreateTopicList)
		list.Body = []byte(`{"topicConfigList":[{"topicName":"HugeT","readQueueNums":` + n + `,"writeQueueNums":8,"perm":6}]}`)
		resp, _ = b.handleUpdateAndCreateTopicList(ctx, c, list)
		require.EqualValues(t, codec.RespInvalidParameter, resp.Code, n)
		_, ok = b.topics.Select("HugeT")
		require.False(t, ok)
	}
}

// TestNewTopicPreparesAtMost64Queues: a topic of many queues gets files for its
// first 64 ahead of need; the others get theirs with their first message.
func TestNewTopicPreparesAtMost64Queues(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	req := codec.NewRequest(codec.ReqUpdateAndCreateTopic)
	for _, kv := range [][2]string{{"topic", "WideT"}, {"readQueueNums", "1000"}, {"writeQueueNums", "1000"}, {"perm", "6"}} {
		req.Ext.Set(kv[0], kv[1])
	}
	resp, _ := b.handleUpdateAndCreateTopic(ctx, newTestConn(5), req)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	dir := filepath.Join(b.Config().Store.StorePathRootDir, "consumequeue", "WideT")
	count := func() int {
		ents, _ := os.ReadDir(dir)
		return len(ents)
	}
	require.Eventually(t, func() bool { return count() == prepareQueuesMax }, 10*time.Second, 10*time.Millisecond)
	_, err := b.handleSendMessage(ctx, newTestConn(6), sendReq("WideT", 999, []byte("x"), ""))
	require.NoError(t, err)
	waitQueued(b, "WideT", 1)
	require.Equal(t, prepareQueuesMax+1, count(), "the last queue's file came with its message")
}
