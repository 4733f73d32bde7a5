package processor

import (
	"context"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/store"
)

func TestQueryViewAndStats(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	c := newTestConn(7)
	resp, err := b.handleSendMessage(ctx, c, sendReq("StatT", 0, []byte("find-me"), "KEYS\x01order-1\x02UNIQ_KEY\x01U1\x02TAGS\x01TagQ\x02"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("StatT", 0) == 1 }, 5*time.Second, 10*time.Millisecond)

	_, off, err := compat.DecodeOffsetMsgID(ext(t, resp, "msgId"))
	require.NoError(t, err)
	v := codec.NewRequest(codec.ReqViewMessageById)
	v.Ext.Set("offset", i64s(off))
	r, _ := b.handleViewMessageByID(ctx, c, v)
	require.EqualValues(t, codec.RespSuccess, r.Code)
	require.Equal(t, "find-me", string(decodeBody(t, r.Body)[0].Body))

	q := codec.NewRequest(codec.ReqQueryMessage)
	for _, kv := range [][2]string{{"topic", "StatT"}, {"key", "order-1"}, {"maxNum", "10"}, {"beginTimestamp", "0"},
		{"endTimestamp", i64s(time.Now().Add(time.Hour).UnixMilli())}} {
		q.Ext.Set(kv[0], kv[1])
	}
	require.Eventually(t, func() bool {
		r, _ = b.handleQueryMessage(ctx, c, q)
		return r.Code == codec.RespSuccess
	}, 5*time.Second, 20*time.Millisecond)
	require.Equal(t, "find-me", string(decodeBody(t, r.Body)[0].Body))
	ext(t, r, "indexLastUpdateTimestamp")
	// 5.5's tag index: indexType T looks the key up among tags, not keys.
	q.Ext.Set("indexType", "T")
	r, _ = b.handleQueryMessage(ctx, c, q)
	require.EqualValues(t, codec.RespQueryNotFound, r.Code)
	q.Ext.Set("key", "TagQ")
	r, _ = b.handleQueryMessage(ctx, c, q)
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	require.Equal(t, "find-me", string(decodeBody(t, r.Body)[0].Body))
	q.Ext.Set("indexType", "K")
	r, _ = b.handleQueryMessage(ctx, c, q)
	require.EqualValues(t, codec.RespQueryNotFound, r.Code, "a tag is no key")
	q.Ext.Set("key", "order-1")
	r, _ = b.handleQueryMessage(ctx, c, q)
	require.EqualValues(t, codec.RespSuccess, r.Code)
	q.Ext.Set("key", "nope")
	r, _ = b.handleQueryMessage(ctx, c, q)
	require.EqualValues(t, codec.RespQueryNotFound, r.Code)

	s := codec.NewRequest(codec.ReqGetTopicStatsInfo)
	s.Ext.Set("topic", "StatT")
	r, _ = b.handleGetTopicStatsInfo(ctx, c, s)
	require.EqualValues(t, codec.RespSuccess, r.Code)
	require.Contains(t, string(r.Body), `{"brokerName":"broker-a","queueId":0,"topic":"StatT"}:{"lastUpdateTimestamp":`)
	require.Contains(t, string(r.Body), `"maxOffset":1,"minOffset":0}`)

	b.offsets.Commit("SG", "StatT", 0, 1)
	cs := codec.NewRequest(codec.ReqGetConsumeStats)
	cs.Ext.Set("consumerGroup", "SG")
	r, _ = b.handleGetConsumeStats(ctx, c, cs)
	require.Contains(t, string(r.Body), `{"brokerName":"broker-a","queueId":0,"topic":"StatT"}:{"brokerOffset":1,"consumerOffset":1,`)

	cc := codec.NewRequest(codec.ReqGetConsumerConnectionList)
	cc.Ext.Set("consumerGroup", "CG")
	r, _ = b.handleGetConsumerConnectionList(ctx, c, cc)
	require.EqualValues(t, codec.RespConsumerNotOnline, r.Code)
	hb := heartbeatReq(t, "1.1.1.1@9", "CG", "StatT")
	hb.Language = codec.LangGo
	hb.Version = 317
	_, err = b.handleHeartBeat(ctx, c, hb)
	require.NoError(t, err)
	r, _ = b.handleGetConsumerConnectionList(ctx, c, cc)
	require.EqualValues(t, codec.RespSuccess, r.Code)
	require.Contains(t, string(r.Body), `"clientId":"1.1.1.1@9","language":"GO","version":317`)
	pc := codec.NewRequest(codec.ReqGetProducerConnectionList)
	pc.Ext.Set("producerGroup", "PG")
	r, _ = b.handleGetProducerConnectionList(ctx, c, pc)
	require.EqualValues(t, codec.RespSuccess, r.Code)

	w := codec.NewRequest(codec.ReqQueryTopicConsumeByWho)
	w.Ext.Set("topic", "StatT")
	r, _ = b.handleQueryTopicConsumeByWho(ctx, c, w)
	require.JSONEq(t, `{"groupList":["CG","SG"]}`, string(r.Body))
}

func TestAdminListCodes(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	c := newTestConn(1)
	req := codec.NewRequest(codec.ReqUpdateAndCreateTopicList)
	req.Body = []byte(`{"topicConfigList":[{"topicName":"L1","readQueueNums":2,"writeQueueNums":2,"perm":6},{"topicName":"L2","readQueueNums":1,"writeQueueNums":1,"perm":6}]}`)
	r, _ := b.handleUpdateAndCreateTopicList(ctx, c, req)
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	tc, ok := b.topics.Select("L1")
	require.True(t, ok)
	require.EqualValues(t, 2, tc.ReadQueueNums)
	require.Equal(t, "SINGLE_TAG", tc.TopicFilterType)
	requireWrittenOnce(t, b, "topics.json", `"L`, `"L2"`) // a list is one write, as on Java

	req = codec.NewRequest(codec.ReqUpdateAndCreateSubscriptiongroupList)
	req.Body = []byte(`{"groupConfigList":[{"groupName":"LG","retryMaxTimes":3},{"groupName":""},{"groupName":"LG2"}]}`)
	r, _ = b.handleUpdateAndCreateSubscriptionGroupList(ctx, c, req)
	require.EqualValues(t, codec.RespSuccess, r.Code)
	requireWrittenOnce(t, b, "subscriptionGroup.json", `"LG`, `"LG2"`)
	_, ok = b.groups.Get("")
	require.False(t, ok, "a nameless entry is skipped")

	// A group's retry topic gets retryQueueNums queues: bounded as a topic's counts are.
	req = codec.NewRequest(codec.ReqUpdateAndCreateSubscriptiongroupList)
	req.Body = []byte(`{"groupConfigList":[{"groupName":"LG3","retryQueueNums":2147483647}]}`)
	r, _ = b.handleUpdateAndCreateSubscriptionGroupList(ctx, c, req)
	require.EqualValues(t, codec.RespInvalidParameter, r.Code)
	req = codec.NewRequest(codec.ReqUpdateAndCreateSubscriptiongroup)
	req.Body = []byte(`{"groupName":"LG3","retryQueueNums":65536}`)
	r, _ = b.handleUpdateAndCreateSubscriptionGroup(ctx, c, req)
	require.EqualValues(t, codec.RespInvalidParameter, r.Code)
	require.Contains(t, r.Remark, "retryQueueNums: queue nums 65536 is illegal")
	_, ok = b.groups.Get("LG3")
	require.False(t, ok)
	g := codec.NewRequest(codec.ReqGetSubscriptiongroupConfig)
	g.Ext.Set("group", "LG")
	r, _ = b.handleGetSubscriptionGroupConfig(ctx, c, g)
	require.EqualValues(t, codec.RespSuccess, r.Code)
	require.Contains(t, string(r.Body), `"retryMaxTimes":3`)
	require.Contains(t, string(r.Body), `"consumeEnable":true`, "defaults for fields the body left out")

	r, _ = b.handleGetAllDelayOffset(ctx, c, codec.NewRequest(codec.ReqGetAllDelayOffset))
	require.Contains(t, string(r.Body), `"offsetTable":{}`)
}

// maxOffsetCounter counts MaxOffsetInQueue calls.
type maxOffsetCounter struct {
	*store.DefaultStore
	calls atomic.Int32
}

func (m *maxOffsetCounter) MaxOffsetInQueue(topic string, queueID int32) int64 {
	m.calls.Add(1)
	return m.DefaultStore.MaxOffsetInQueue(topic, queueID)
}

// TestConsumeStatsTopicListOnce: a topic named many times in topicList is
// walked once.
func TestConsumeStatsTopicListOnce(t *testing.T) {
	var mc *maxOffsetCounter
	b := newTestBrokerWith(t, nil, nil, func(st *store.DefaultStore) MessageStore {
		mc = &maxOffsetCounter{DefaultStore: st}
		return mc
	})
	ctx := context.Background()
	tc := NewTopicConfig("DupT")
	tc.ReadQueueNums, tc.WriteQueueNums = 4, 4
	b.topics.Update(tc)
	cs := codec.NewRequest(codec.ReqGetConsumeStats)
	cs.Ext.Set("consumerGroup", "SG")
	cs.Ext.Set("topicList", strings.Repeat("DupT;", 1000)+"DupT")
	mc.calls.Store(0)
	r, _ := b.handleGetConsumeStats(ctx, newTestConn(1), cs)
	require.EqualValues(t, codec.RespSuccess, r.Code)
	require.EqualValues(t, 4, mc.calls.Load(), "one look per queue of the topic")
	require.Equal(t, 4, strings.Count(string(r.Body), `"topic":"DupT"`))
}

// TestSearchOffsetUpperBoundary: Java's boundaries (ConsumeQueue
// getOffsetInQueueByTime clamped by ConsumeQueueStore) for every time in and
// around the queue's: LOWER is the first message stored at or after the time
// (the max offset past the last), UPPER the last one stored at or before it
// (the min offset before the first). In a gap between store times UPPER is the
// message before the gap (it was the one after it, as LOWER), and past the last
// message it is that message (it was the max offset).
func TestSearchOffsetUpperBoundary(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	c := newTestConn(1)
	const n = 40
	for i := range n {
		resp, _ := b.handleSendMessage(ctx, c, sendReq("UpT", 0, []byte("x"), ""))
		require.EqualValues(t, codec.RespSuccess, resp.Code)
		if i%10 == 9 {
			time.Sleep(3 * time.Millisecond) // distinct store times with gaps between them
		}
	}
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("UpT", 0) == n }, 5*time.Second, 10*time.Millisecond)
	times := make([]int64, n)
	for i := range times {
		times[i] = b.st.MessageStoreTimestamp("UpT", 0, int64(i))
	}
	search := func(topic string, ts int64, boundary string) int64 {
		req := codec.NewRequest(codec.ReqSearchOffsetByTimestamp)
		for _, kv := range [][2]string{{"topic", topic}, {"queueId", "0"}, {"timestamp", i64s(ts)}} {
			req.Ext.Set(kv[0], kv[1])
		}
		if boundary != "" {
			req.Ext.Set("boundaryType", boundary)
		}
		resp, _ := b.handleSearchOffsetByTimestamp(ctx, c, req)
		require.EqualValues(t, codec.RespSuccess, resp.Code)
		v, _ := resp.Ext.Get("offset")
		off, err := strconv.ParseInt(v, 10, 64)
		require.NoError(t, err)
		return off
	}
	tss := []int64{math.MinInt64, -1, 0, times[0] - 1000, times[n-1] + 1000, math.MaxInt64}
	for _, base := range times {
		tss = append(tss, base-1, base, base+1)
	}
	gaps := 0
	for _, ts := range tss {
		lower := int64(n)
		for i := n - 1; i >= 0; i-- {
			if times[i] >= ts {
				lower = int64(i)
			}
		}
		upper := int64(0)
		for i := range n {
			if times[i] <= ts {
				upper = int64(i)
			}
		}
		if lower > upper && lower < n && upper > 0 {
			gaps++
		}
		require.Equal(t, lower, search("UpT", ts, ""), "lower, ts %d", ts)
		require.Equal(t, lower, search("UpT", ts, "LOWER"), "lower, ts %d", ts)
		require.Equal(t, upper, search("UpT", ts, "UPPER"), "upper, ts %d", ts)
		require.Equal(t, upper, search("UpT", ts, "upper"), "upper, ts %d", ts)
	}
	require.Positive(t, gaps, "some times fall between two store times")
	for _, boundary := range []string{"lower", "upper"} {
		require.Zero(t, search("NoSuchT", time.Now().UnixMilli(), boundary), "an unknown queue, %s", boundary)
	}
}

// A QUERY_MESSAGE by unique key answers at most defaultQueryMaxNum records,
// whatever maxNum it asked (QueryMessageProcessor); a key query keeps its own.
func TestQueryByUniqueKeyTakesDefaultQueryMaxNum(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.Store.DefaultQueryMaxNum = 1 })
	ctx := context.Background()
	c := newTestConn(7)
	for i := 0; i < 2; i++ { // a retried send: the same UNIQ_KEY twice
		resp, err := b.handleSendMessage(ctx, c, sendReq("QmT", 0, []byte("m"), "KEYS\x01k1\x02UNIQ_KEY\x01U1\x02"))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code)
	}
	query := func(key string, unique bool) int {
		q := codec.NewRequest(codec.ReqQueryMessage)
		for _, kv := range [][2]string{{"topic", "QmT"}, {"key", key}, {"maxNum", "10"}, {"beginTimestamp", "0"},
			{"endTimestamp", i64s(time.Now().Add(time.Hour).UnixMilli())}} {
			q.Ext.Set(kv[0], kv[1])
		}
		if unique {
			q.Ext.Set("_UNIQUE_KEY_QUERY", "true")
		}
		r, _ := b.handleQueryMessage(ctx, c, q)
		if r.Code != codec.RespSuccess {
			return 0
		}
		return len(decodeBody(t, r.Body))
	}
	require.Eventually(t, func() bool { return query("k1", false) == 2 }, 5*time.Second, 20*time.Millisecond)
	require.Equal(t, 1, query("U1", true))
}
