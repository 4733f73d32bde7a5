package processor

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/compat"
)

func topicCountMap(cs []TopicCount) map[string]int64 {
	m := map[string]int64{}
	for _, c := range cs {
		m[c.Topic] = c.N
	}
	return m
}

// BrokerMetricsManager's DLQ counter counts both routes to a DLQ with the
// labels Java gives each (send-back: consumer group and origin topic; retry
// send: producer group and %RETRY% topic), and a deleted topic's series go.
func TestEventMetricsCountDLQ(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.Store.MessageDelayLevel = "1s" })
	ctx := context.Background()
	c := newTestConn(1)
	sendOK(t, b, sendReq("DlqT", 0, []byte("x"), "TAGS\x01x\x02"))
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("DlqT", 0) == 1 }, 5*time.Second, 5*time.Millisecond)
	orig := pullAll(t, b, "DlqT", 0)[0]
	back := sendBackReq(orig.CommitLogOffset, "CGD", -1, 16)
	back.Ext.Set("originTopic", "DlqT")
	resp, err := b.handleConsumerSendMsgBack(ctx, c, back)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	sendOK(t, b, retrySendReq("CGD", 3, 2, "TAGS\x01x\x02"))

	got := map[[2]string]int64{}
	for _, d := range b.MetricsSnapshot(time.Now()).DLQ {
		require.False(t, d.System)
		got[[2]string{d.Group, d.Topic}] = d.N
	}
	require.Equal(t, map[[2]string]int64{{"CGD", "DlqT"}: 1, {"PG", "%RETRY%CGD"}: 1}, got)

	del := codec.NewRequest(codec.ReqDeleteTopicInBroker)
	del.Ext.Set("topic", "DlqT")
	r, err := b.handleDeleteTopicInBroker(ctx, c, del)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	s := b.MetricsSnapshot(time.Now())
	require.Len(t, s.DLQ, 1)
	require.Equal(t, "%RETRY%CGD", s.DLQ[0].Topic)
}

// Half messages count per real topic from their put until END_TRANSACTION
// settles them; commits and rollbacks count per real topic.
func TestEventMetricsCountTransactions(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.TransactionCheckInterval = 3600000 })
	ctx := context.Background()
	c := newTestConn(21)
	send := func() (int64, int64) {
		req := sendReq("TxM", 0, []byte("t"), "TRAN_MSG\x01true\x02PGROUP\x01PG\x02")
		req.Ext.Set("sysFlag", "4")
		resp, err := b.handleSendMessage(ctx, c, req)
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
		_, off, err := compat.DecodeOffsetMsgID(ext(t, resp, "msgId"))
		require.NoError(t, err)
		q, err := strconv.ParseInt(ext(t, resp, "queueOffset"), 10, 64)
		require.NoError(t, err)
		return q, off
	}
	q1, o1 := send()
	q2, o2 := send()
	send()
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue(TopicTransHalf, 0) == 3 }, 5*time.Second, 5*time.Millisecond)
	s := b.MetricsSnapshot(time.Now())
	require.Equal(t, map[string]int64{"TxM": 3}, topicCountMap(s.HalfMessages))
	require.Empty(t, s.Commits)

	r, _ := b.handleEndTransaction(ctx, c, endTxReq("PG", q1, o1, tranCommit))
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	r, _ = b.handleEndTransaction(ctx, c, endTxReq("PG", q2, o2, tranRollback))
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	s = b.MetricsSnapshot(time.Now())
	require.Equal(t, map[string]int64{"TxM": 1}, topicCountMap(s.HalfMessages))
	require.Equal(t, map[string]int64{"TxM": 1}, topicCountMap(s.Commits))
	require.Equal(t, map[string]int64{"TxM": 1}, topicCountMap(s.Rollbacks))
	require.Len(t, s.FinishLatency, 1, "a commit's latency, not a rollback's")
	require.Equal(t, "TxM", s.FinishLatency[0].Topic)
	require.EqualValues(t, [7]uint64{1}, s.FinishLatency[0].Counts, "committed within 5 s")
}

// Counting into a known series allocates nothing: the send and end paths
// add to an atomic found through a copy-on-write map.
func TestEventCountsDoNotAllocate(t *testing.T) {
	var e eventCounts
	props := "REAL_TOPIC\x01TxA\x02REAL_QID\x010\x02"
	e.countHalfPut(props)
	e.countEnd("TxA", true, 0, 1)
	e.countEnd("TxA", false, 0, 1)
	e.countDLQ("G", "T")
	n := testing.AllocsPerRun(100, func() {
		e.countHalfPut(props)
		e.countEnd("TxA", true, 0, 7000)
		e.countEnd("TxA", false, 0, 1)
		e.countDLQ("G", "T")
	})
	require.Zero(t, n)
}
