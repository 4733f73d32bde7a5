package processor

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
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

	b.admin.stats.manual.Store(true)
	b.admin.stats.sample(time.Now().Add(time.Hour)) // the windows below hold the puts
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

func TestSystemTopicsLeftOutOfTotals(t *testing.T) {
	var s brokerStats
	sys := func(topic string) bool { return topic == TopicSchedule }
	s.countPut(TopicSchedule, 5, 100, sys)
	s.countPut("user", 2, 10, sys)
	s.countGet("g", TopicSchedule, 4, 10, sys)
	require.EqualValues(t, 2, s.putNums.Load())
	require.EqualValues(t, 0, s.getNums.Load())
	c, _ := s.counter("TOPIC_PUT_NUMS", TopicSchedule)
	require.EqualValues(t, 5, c.nums.Load())
}

func TestSampleRingTps(t *testing.T) {
	var r sampleRing
	require.Equal(t, "  ", r.tps3())
	base := time.Now()
	for i := range 12 {
		r.add(base.Add(time.Duration(i)*time.Second).UnixMilli(), int64(i*50))
	}
	require.Equal(t, "50.0", r.tps(10))
	require.Equal(t, "", r.tps(60))
	for i := 12; i < 700; i++ {
		r.add(base.Add(time.Duration(i)*time.Second).UnixMilli(), int64(i*50))
	}
	require.Equal(t, "50.0 50.0 50.0", r.tps3())
}

func TestDayRollover(t *testing.T) {
	var s brokerStats
	day := time.Date(2026, 1, 1, 23, 59, 59, 0, time.Local)
	s.sample(day)
	s.putNums.Add(7)
	s.sample(day.Add(2 * time.Second))
	s.putNums.Add(1)
	tb := map[string]string{}
	s.runtime(tb)
	require.Equal(t, "7", tb["msgPutTotalTodayMorning"])
	require.Equal(t, "8", tb["msgPutTotalTodayNow"])
	require.Equal(t, "0", tb["msgPutTotalYesterdayMorning"])
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

// The per-message hooks must not allocate once a topic and group are known.
func TestStatsHooksDoNotAllocate(t *testing.T) {
	var s brokerStats
	sys := func(string) bool { return false }
	s.countPut("T", 1, 1, sys)
	s.countGet("G", "T", 1, 1, sys)
	topic, group := strings.Clone("T"), strings.Clone("G")
	allocs := testing.AllocsPerRun(1000, func() {
		s.countPut(topic, 1, 100, sys)
		s.countGet(group, topic, 1, 100, sys)
	})
	require.Zero(t, allocs)
}

func BenchmarkStatsCountPut(b *testing.B) {
	var s brokerStats
	sys := func(string) bool { return false }
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.countPut("BenchTopic", 1, 128, sys)
		}
	})
}

func TestMinuteStatsAndConsumeTps(t *testing.T) {
	var s brokerStats
	sys := func(string) bool { return false }
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.Local)
	s.countGet("G", "T", 1, 10, sys)
	for i := range 61 {
		s.sample(base.Add(time.Duration(i) * time.Second))
		s.countGet("G", "T", 5, 50, sys) // 5 messages a second
	}
	require.InDelta(t, 5.0, s.consumeTps("T", "G"), 0.01)
	require.Zero(t, s.consumeTps("T", "other"))
	c, _ := s.counter("GROUP_GET_SIZE", "T@G")
	m := s.windows(c, true)[winMinute]
	require.EqualValues(t, 50*60, m.sum)
	require.InDelta(t, 50.0, m.tps, 0.01)
}
