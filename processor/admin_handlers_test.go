package processor

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/store"
)

func runtimeTable(t *testing.T, b *testBroker) map[string]string {
	t.Helper()
	resp, err := b.handleBrokerRuntimeInfo(context.Background(), newTestConn(3), codec.NewRequest(codec.ReqGetBrokerRuntimeInfo))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	var kv kvTable
	require.NoError(t, json.Unmarshal(resp.Body, &kv))
	return kv.Table
}

func TestRuntimeInfoCountsPutsAndGets(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	c := newTestConn(7)
	for range 3 {
		resp, err := b.handleSendMessage(ctx, c, sendReq("RtT", 0, []byte("x"), "TAGS\x01a\x02"))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code)
	}
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("RtT", 0) == 3 }, 5*time.Second, 10*time.Millisecond)
	sub := heartbeatReq(t, "cid-1", "RtG", "RtT")
	_, err := b.handleHeartBeat(ctx, c, sub)
	require.NoError(t, err)
	_, err = b.handlePullMessage(ctx, c, pullReq("RtG", "RtT", 0, 0, 0, 0))
	require.NoError(t, err)

	b.admin.stats.SetManual(true)
	b.admin.stats.Sample(time.Now().Add(time.Hour)) // the windows below hold the puts
	tb := runtimeTable(t, b)
	require.Equal(t, "3", tb["msgPutTotalTodayNow"])
	require.Equal(t, "3", tb["msgGetTotalTodayNow"])
	require.Equal(t, "V5_3_3", tb["brokerVersionDesc"])
	// clusterList parses these two outside its try block: they must be numbers.
	for _, k := range []string{"earliestMessageTimeStamp", "commitLogDiskRatio"} {
		require.NotEmpty(t, tb[k], k)
		require.NotContains(t, tb[k], " ", k)
	}
	require.Len(t, strings.Split(tb["putTps"], " "), 3)

	// Per-topic and per-group counters feed VIEW_BROKER_STATS_DATA.
	v := codec.NewRequest(codec.ReqViewBrokerStatsData)
	v.Ext.Set("statsName", "TOPIC_PUT_NUMS")
	v.Ext.Set("statsKey", "RtT")
	resp, _ := b.handleViewBrokerStatsData(ctx, c, v)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Contains(t, string(resp.Body), `"statsDay":{"avgpt":1.0,"sum":3,`)
	v.Ext.Set("statsName", "GROUP_GET_NUMS")
	v.Ext.Set("statsKey", "RtT@RtG")
	resp, _ = b.handleViewBrokerStatsData(ctx, c, v)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Contains(t, string(resp.Body), `"sum":3,`)
	v.Ext.Set("statsKey", "nope@RtG")
	resp, _ = b.handleViewBrokerStatsData(ctx, c, v)
	require.EqualValues(t, codec.RespSystemError, resp.Code)
}

func TestUpdateBrokerConfig(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	c := newTestConn(4)
	up := codec.NewRequest(codec.ReqUpdateBrokerConfig)
	up.Body = []byte("consumerFallbehindThreshold=1234567\nbrokerPermission=4\n")
	resp, _ := b.handleUpdateBrokerConfig(ctx, c, up)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	resp, _ = b.handleBrokerConfig(ctx, c, codec.NewRequest(codec.ReqGetBrokerConfig))
	require.Contains(t, string(resp.Body), "consumerFallbehindThreshold=1234567\n")
	require.Contains(t, string(resp.Body), "brokerPermission=4\n")
	require.NotEmpty(t, resp.Ext)

	up.Body = []byte("brokerConfigPath=/tmp/x\n")
	resp, _ = b.handleUpdateBrokerConfig(ctx, c, up)
	require.EqualValues(t, codec.RespNoPermission, resp.Code)
	up.Body = []byte("brokerPermission=lots\n")
	resp, _ = b.handleUpdateBrokerConfig(ctx, c, up)
	require.EqualValues(t, codec.RespSystemError, resp.Code)
	resp, _ = b.handleBrokerConfig(ctx, c, codec.NewRequest(codec.ReqGetBrokerConfig))
	require.Contains(t, string(resp.Body), "brokerPermission=4\n")
}

func TestQueryConsumeQueue(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	c := newTestConn(8)
	for range 4 {
		resp, _ := b.handleSendMessage(ctx, c, sendReq("CqT", 1, []byte("abc"), "TAGS\x01TagA\x02"))
		require.EqualValues(t, codec.RespSuccess, resp.Code)
	}
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("CqT", 1) == 4 }, 5*time.Second, 10*time.Millisecond)
	q := codec.NewRequest(codec.ReqQueryConsumeQueue)
	for _, kv := range [][2]string{{"topic", "CqT"}, {"queueId", "1"}, {"index", "1"}, {"count", "2"}} {
		q.Ext.Set(kv[0], kv[1])
	}
	resp, _ := b.handleQueryConsumeQueue(ctx, c, q)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	var body struct {
		MaxQueueIndex int64 `json:"maxQueueIndex"`
		QueueData     []struct {
			PhysicOffset int64 `json:"physicOffset"`
			PhysicSize   int32 `json:"physicSize"`
			TagsCode     int64 `json:"tagsCode"`
		} `json:"queueData"`
	}
	require.NoError(t, json.Unmarshal(resp.Body, &body))
	require.EqualValues(t, 4, body.MaxQueueIndex)
	require.Len(t, body.QueueData, 2)
	require.Greater(t, body.QueueData[1].PhysicOffset, body.QueueData[0].PhysicOffset)
	require.EqualValues(t, 2598919, body.QueueData[0].TagsCode) // "TagA".hashCode()
	rec, err := b.st.ReadRecordByOffset(body.QueueData[0].PhysicOffset)
	require.NoError(t, err)
	require.Len(t, rec, int(body.QueueData[0].PhysicSize))
}

// TestQueryConsumeQueueStopsAtTheFileEnd: as Java's getIndexBuffer, one answer
// covers at most the consume-queue file holding index, whatever count asks.
func TestQueryConsumeQueueStopsAtTheFileEnd(t *testing.T) {
	const perFile = 300
	b := newTestBrokerWith(t, nil, func(c *store.Config) { c.MappedFileSizeConsumeQueue = perFile * 20 }, nil)
	ctx := context.Background()
	c := newTestConn(8)
	const sent = perFile + 20
	for range sent {
		resp, _ := b.handleSendMessage(ctx, c, sendReq("CqF", 0, []byte("abc"), ""))
		require.EqualValues(t, codec.RespSuccess, resp.Code)
	}
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("CqF", 0) == sent }, 5*time.Second, 10*time.Millisecond)
	for _, tc := range []struct{ index, want int }{{0, perFile}, {perFile - 5, 5}, {perFile, 20}} {
		q := codec.NewRequest(codec.ReqQueryConsumeQueue)
		for _, kv := range [][2]string{{"topic", "CqF"}, {"queueId", "0"}, {"index", strconv.Itoa(tc.index)}, {"count", "2147483647"}} {
			q.Ext.Set(kv[0], kv[1])
		}
		resp, _ := b.handleQueryConsumeQueue(ctx, c, q)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
		var body struct {
			QueueData []json.RawMessage `json:"queueData"`
		}
		require.NoError(t, json.Unmarshal(resp.Body, &body))
		require.Len(t, body.QueueData, tc.want, "from index %d", tc.index)
	}
}
