package processor

import (
	"bytes"
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

type statsItemJSON struct {
	Avgpt float64 `json:"avgpt"`
	Sum   int64   `json:"sum"`
	Tps   float64 `json:"tps"`
}

type statsDataJSON struct {
	Minute statsItemJSON `json:"statsMinute"`
	Hour   statsItemJSON `json:"statsHour"`
	Day    statsItemJSON `json:"statsDay"`
}

func viewStats(t *testing.T, b *testBroker, name, key string) statsDataJSON {
	t.Helper()
	v := codec.NewRequest(codec.ReqViewBrokerStatsData)
	v.Ext.Set("statsName", name)
	v.Ext.Set("statsKey", key)
	resp, err := b.handleViewBrokerStatsData(context.Background(), newTestConn(3), v)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	var d statsDataJSON
	require.NoError(t, json.Unmarshal(resp.Body, &d))
	return d
}

func topicPutTps(t *testing.T, b *testBroker, topic string) float64 {
	t.Helper()
	s := codec.NewRequest(codec.ReqGetTopicStatsInfo)
	s.Ext.Set("topic", topic)
	r, err := b.handleGetTopicStatsInfo(context.Background(), newTestConn(3), s)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	// The offset table has fastjson's object keys: read the last field alone.
	_, v, ok := strings.Cut(string(r.Body), `,"topicPutTps":`)
	require.True(t, ok, "%s", r.Body)
	tps, err := strconv.ParseFloat(strings.TrimSuffix(v, "}"), 64)
	require.NoError(t, err, "%s", r.Body)
	return tps
}

func sendN(t *testing.T, b *testBroker, topic string, n int, body []byte) {
	t.Helper()
	before := b.st.MaxOffsetInQueue(topic, 0)
	for range n {
		resp, err := b.handleSendMessage(context.Background(), newTestConn(7), sendReq(topic, 0, body, ""))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue(topic, 0) == before+int64(n) },
		5*time.Second, 5*time.Millisecond)
}

// TestStatsWindowsMinuteHourDay: VIEW_BROKER_STATS_DATA and topicPutTps are
// StatsItem's windows, sampled every 10 s / 10 min / 1 h from a zero seed a
// period before the first sample.
func TestStatsWindowsMinuteHourDay(t *testing.T) {
	b := newTestBroker(t, nil)
	b.admin.stats.SetManual(true) // this test takes the samples
	const topic = "WinT"
	require.Zero(t, topicPutTps(t, b, TopicSelfTest), "no puts, no rate")

	sendN(t, b, topic, 2, []byte("abcd"))
	ctr, _ := b.admin.stats.Counter("TOPIC_PUT_SIZE", topic)
	require.NotNil(t, ctr)
	per := ctr.Size() / 2 // stored bytes of one message

	t0 := time.Now().Add(24 * time.Hour)
	b.admin.stats.Sample(t0)
	d := viewStats(t, b, "TOPIC_PUT_NUMS", topic)
	require.EqualValues(t, 2, d.Minute.Sum)
	require.InDelta(t, 2.0/10, d.Minute.Tps, 1e-9)
	require.InDelta(t, 1.0, d.Minute.Avgpt, 1e-9, "one message per put")
	require.EqualValues(t, 2, d.Hour.Sum)
	require.InDelta(t, 2.0/600, d.Hour.Tps, 1e-9)
	require.EqualValues(t, 2, d.Day.Sum)
	require.InDelta(t, 2.0/3600, d.Day.Tps, 1e-9)
	require.InDelta(t, 0.2, topicPutTps(t, b, topic), 1e-9)

	sendN(t, b, topic, 3, []byte("abcd"))
	b.admin.stats.Sample(t0.Add(10 * time.Second))
	d = viewStats(t, b, "TOPIC_PUT_NUMS", topic)
	require.EqualValues(t, 5, d.Minute.Sum)
	require.InDelta(t, 5.0/20, d.Minute.Tps, 1e-9)
	require.EqualValues(t, 2, d.Hour.Sum, "the hour window has not sampled again")
	require.InDelta(t, 0.25, topicPutTps(t, b, topic), 1e-9)
	sz := viewStats(t, b, "TOPIC_PUT_SIZE", topic)
	require.EqualValues(t, 5*per, sz.Minute.Sum)
	require.InDelta(t, float64(per), sz.Minute.Avgpt, 1e-9, "bytes per put")

	// Ten minutes of 10 s samples with no traffic: the minute window empties,
	// the hour window takes its second sample.
	for i := 2; i <= 60; i++ {
		b.admin.stats.Sample(t0.Add(time.Duration(i) * 10 * time.Second))
	}
	d = viewStats(t, b, "TOPIC_PUT_NUMS", topic)
	require.Zero(t, d.Minute.Sum)
	require.Zero(t, d.Minute.Tps)
	require.Zero(t, topicPutTps(t, b, topic))
	require.EqualValues(t, 5, d.Hour.Sum)
	require.InDelta(t, 5.0/1200, d.Hour.Tps, 1e-9)
	require.EqualValues(t, 2, d.Day.Sum, "the day window samples hourly")

	// After 26 hours the day window (25 hourly samples) has let the puts go.
	for h := 1; h <= 26; h++ {
		b.admin.stats.Sample(t0.Add(time.Duration(h) * time.Hour))
	}
	d = viewStats(t, b, "TOPIC_PUT_NUMS", topic)
	require.Zero(t, d.Day.Sum)
	require.Zero(t, d.Hour.Sum)
}

// TestStatsWindowsGroupGets: GROUP_GET_NUMS averages messages per pull.
func TestStatsWindowsGroupGets(t *testing.T) {
	b := newTestBroker(t, nil)
	b.admin.stats.SetManual(true)
	sendN(t, b, "WinG", 4, []byte("x"))
	_, err := b.handleHeartBeat(context.Background(), newTestConn(7), heartbeatReq(t, "cid-w", "WinGG", "WinG"))
	require.NoError(t, err)
	_, err = b.handlePullMessage(context.Background(), newTestConn(7), pullReq("WinGG", "WinG", 0, 0, 0, 0))
	require.NoError(t, err) // the answer may go out on the connection later; the count is what matters
	require.Eventually(t, func() bool {
		c, _ := b.admin.stats.Counter("GROUP_GET_NUMS", "WinG@WinGG")
		return c != nil && c.Nums() == 4
	}, 5*time.Second, 5*time.Millisecond)
	b.admin.stats.Sample(time.Now().Add(24 * time.Hour))
	d := viewStats(t, b, "GROUP_GET_NUMS", "WinG@WinGG")
	require.EqualValues(t, 4, d.Minute.Sum)
	require.InDelta(t, 4.0, d.Minute.Avgpt, 1e-9, "four messages in one pull")
}

// TestCleanUnusedTopic: queues of a topic no longer configured go; configured,
// system and LMQ ones stay.
func TestCleanUnusedTopic(t *testing.T) {
	b := newTestBroker(t, nil)
	sendN(t, b, "KeepT", 1, []byte("k"))
	sendN(t, b, "GoneT", 2, []byte("g"))
	require.True(t, b.topics.Delete("GoneT"))
	require.EqualValues(t, 2, b.st.MaxOffsetInQueue("GoneT", 0), "deleting the config leaves the queue")

	resp, err := b.handleCleanUnusedTopic(context.Background(), newTestConn(3), codec.NewRequest(codec.ReqCleanUnusedTopic))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.NotContains(t, b.st.QueueTopics(), "GoneT")
	require.Contains(t, b.st.QueueTopics(), "KeepT")
	require.EqualValues(t, 0, b.st.MaxOffsetInQueue("GoneT", 0))
	require.EqualValues(t, 1, b.st.MaxOffsetInQueue("KeepT", 0))
}

// TestCleanExpiredConsumeQueue: once the commitlog file holding all of a
// queue's messages is deleted, CLEAN_EXPIRED_CONSUMEQUEUE removes that queue;
// a queue with messages still in the commitlog stays.
func TestCleanExpiredConsumeQueue(t *testing.T) {
	b := newTestBrokerWith(t, nil, func(c *store.Config) {
		c.FileReservedTime = 0
		c.DeleteWhen = "0;1;2;3;4;5;6;7;8;9;10;11;12;13;14;15;16;17;18;19;20;21;22;23"
		c.CleanResourceInterval = 10
		c.DeleteCommitLogFilesInterval = 0
	}, nil)
	big := bytes.Repeat([]byte("e"), 100<<10)
	sendN(t, b, "OldT", 3, big) // all in the first 1 MiB commitlog file
	sendN(t, b, "NewT", 9, big) // runs into the second
	require.Eventually(t, func() bool { return b.st.MinPhyOffset() >= 1<<20 }, 10*time.Second, 10*time.Millisecond,
		"the first commitlog file is deleted")

	resp, err := b.handleCleanExpiredConsumeQueue(context.Background(), newTestConn(3), codec.NewRequest(codec.ReqCleanExpiredConsumequeue))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	// Queue 0 held OldT's messages and goes; its other queues never had one
	// and stay, as Java keeps a queue "created just now".
	require.Contains(t, b.st.QueueTopics(), "NewT")
	require.EqualValues(t, 9, b.st.MaxOffsetInQueue("NewT", 0))

	// The removed queue starts over, as Java's removeTopicQueueTable makes it.
	require.Zero(t, b.st.MaxOffsetInQueue("OldT", 0))
	sendN(t, b, "OldT", 1, []byte("again"))
	require.EqualValues(t, 0, b.st.MinOffsetInQueue("OldT", 0))
	require.EqualValues(t, 1, b.st.MaxOffsetInQueue("OldT", 0))
}

// TestStatsBrokerTotals: BROKER_PUT_NUMS and BROKER_GET_NUMS, keyed by the
// cluster name (rocketmq-exporter's rocketmq_broker_tps and _qps), sum every
// topic's puts and group's gets; another key is refused as Java refuses it.
func TestStatsBrokerTotals(t *testing.T) {
	b := newTestBroker(t, nil)
	b.admin.stats.SetManual(true)
	cluster := b.conf().BrokerClusterName
	v := codec.NewRequest(codec.ReqViewBrokerStatsData)
	v.Ext.Set("statsName", "BROKER_PUT_NUMS")
	v.Ext.Set("statsKey", cluster)
	resp, err := b.handleViewBrokerStatsData(context.Background(), newTestConn(3), v)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSystemError, resp.Code, "nothing put yet: no stats item, as in Java")

	sendN(t, b, "TotA", 3, []byte("x"))
	sendN(t, b, "TotB", 2, []byte("y"))
	_, err = b.handleHeartBeat(context.Background(), newTestConn(7), heartbeatReq(t, "cid-t", "TotG", "TotA"))
	require.NoError(t, err)
	_, err = b.handlePullMessage(context.Background(), newTestConn(7), pullReq("TotG", "TotA", 0, 0, 0, 0))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		c, _ := b.admin.stats.Counter("GROUP_GET_NUMS", "TotA@TotG")
		return c != nil && c.Nums() == 3
	}, 5*time.Second, 5*time.Millisecond)
	b.admin.stats.Sample(time.Now().Add(24 * time.Hour))
	put := viewStats(t, b, "BROKER_PUT_NUMS", cluster)
	require.EqualValues(t, 5, put.Minute.Sum)
	require.InDelta(t, 1.0, put.Minute.Avgpt, 1e-9, "one message per put")
	require.EqualValues(t, 5, viewStats(t, b, "BROKER_PUT_NUMS_WITHOUT_SYSTEM_TOPIC", cluster).Minute.Sum)
	get := viewStats(t, b, "BROKER_GET_NUMS", cluster)
	require.EqualValues(t, 3, get.Minute.Sum)
	require.InDelta(t, 3.0, get.Minute.Avgpt, 1e-9, "three messages in one pull")

	v.Ext.Set("statsKey", "OtherCluster")
	resp, err = b.handleViewBrokerStatsData(context.Background(), newTestConn(3), v)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSystemError, resp.Code)
}
