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

// TestDelayLevelsSurviveKill: a delay-level message delivered just before a
// kill comes at least once and at most twice (its offset may not be on disk
// yet, as in Java); one due after the restart comes once; a clean restart
// after that delivers nothing again.
func TestDelayLevelsSurviveKill(t *testing.T) {
	r := newRestartable(t, func(c *BrokerConfig) { c.Store.MessageDelayLevel = "1s 3s" })
	ctx := context.Background()
	c := newTestConn(1)
	for _, m := range []struct{ body, level string }{{"a", "1"}, {"b", "2"}} {
		resp, err := r.b.handleSendMessage(ctx, c, sendReq("DelayK", 0, []byte(m.body), "DELAY\x01"+m.level+"\x02"))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
	require.Eventually(t, func() bool { return r.st.MaxOffsetInQueue("DelayK", 0) == 1 }, 5*time.Second, 10*time.Millisecond)
	r.kill()
	r.open()
	b := r.tb()
	require.Eventually(t, func() bool { return deliveredBodies(t, b, "DelayK")["b"] == 1 }, 8*time.Second, 20*time.Millisecond)
	got := deliveredBodies(t, b, "DelayK")
	require.Contains(t, []int{1, 2}, got["a"])
	require.Equal(t, 1, got["b"])
	r.stop()
	r.open()
	b = r.tb()
	time.Sleep(1500 * time.Millisecond) // more than a level-1 delay and several schedule ticks
	require.Equal(t, got, deliveredBodies(t, b, "DelayK"))
}

// TestTransactionsSurviveKill: after a kill, a committed and a rolled-back
// half message are not asked about again and the committed one is not
// delivered again; one never settled is asked again from its check count
// and, past transactionCheckMax, parked in TRANS_CHECK_MAX_TIME_TOPIC once.
func TestTransactionsSurviveKill(t *testing.T) {
	r := newRestartable(t, func(c *BrokerConfig) {
		c.TransactionTimeOut = 1
		c.TransactionCheckInterval = 3600000
		c.TransactionCheckMax = 2
		c.FlushConsumerOffsetInterval = 100
	})
	ctx := context.Background()
	c := newTestConn(21)
	send := func(body string) (int64, int64) {
		req := sendReq("TxK", 1, []byte(body), "TRAN_MSG\x01true\x02PGROUP\x01PG\x02")
		req.Ext.Set("sysFlag", "4")
		resp, err := r.b.handleSendMessage(ctx, c, req)
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
		_, off, err := compat.DecodeOffsetMsgID(ext(t, resp, "msgId"))
		require.NoError(t, err)
		q, err := strconv.ParseInt(ext(t, resp, "queueOffset"), 10, 64)
		require.NoError(t, err)
		return q, off
	}
	q1, o1 := send("commit-me")
	q2, o2 := send("roll-me-back")
	send("never")
	for _, e := range []struct {
		q, o int64
		kind int32
	}{{q1, o1, tranCommit}, {q2, o2, tranRollback}} {
		resp, err := r.b.handleEndTransaction(ctx, c, endTxReq("PG", e.q, e.o, e.kind))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
	require.Eventually(t, func() bool { return r.st.MaxOffsetInQueue(TopicTransOpHalf, 0) == 2 }, 5*time.Second, 10*time.Millisecond)
	time.Sleep(5 * time.Millisecond) // older than the 1 ms transaction timeout
	r.b.trans.Check(ctx)
	require.Eventually(t, func() bool { return r.st.MaxOffsetInQueue(TopicTransHalf, 0) == 4 }, 5*time.Second, 10*time.Millisecond)
	require.EqualValues(t, 3, r.b.offsets.Query(transSysGroup, TopicTransHalf, 0))
	time.Sleep(500 * time.Millisecond) // the offsets' 100 ms flush has run
	r.kill()

	r.open()
	b := r.tb()
	halfCount := func() int64 { return b.st.MaxOffsetInQueue(TopicTransHalf, 0) }
	b.trans.Check(ctx)
	require.Eventually(t, func() bool { return halfCount() == 5 }, 5*time.Second, 10*time.Millisecond)
	last := pullAll(t, b, TopicTransHalf, 0)
	require.Len(t, last, 5)
	require.Equal(t, "never", string(last[4].Body), "only the unsettled one was asked about again")
	times, _ := codec.PropertyValue(last[4].Properties, codec.PropTranCheckTimes)
	require.Equal(t, "2", times)
	time.Sleep(5 * time.Millisecond)
	b.trans.Check(ctx)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue(TopicTransCheckMax, 0) == 1 }, 5*time.Second, 10*time.Millisecond)
	b.trans.Check(ctx)
	require.EqualValues(t, 5, halfCount())
	time.Sleep(500 * time.Millisecond)
	r.stop()

	r.open()
	b = r.tb()
	b.trans.Check(ctx)
	time.Sleep(200 * time.Millisecond)
	require.EqualValues(t, 5, b.st.MaxOffsetInQueue(TopicTransHalf, 0), "nothing asked after a clean restart")
	require.EqualValues(t, 1, b.st.MaxOffsetInQueue(TopicTransCheckMax, 0))
	require.Equal(t, map[string]int{"commit-me": 1}, deliveredBodies1(t, b, "TxK", 1))
}

// deliveredBodies1 counts the messages of one queue by body.
func deliveredBodies1(t *testing.T, b *testBroker, topic string, q int32) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, m := range pullAll(t, b, topic, q) {
		out[string(m.Body)]++
	}
	return out
}

// TestTransactionCommitOnceAfterKill: a producer's commit put the real message
// and the broker was killed (say before its op record); the check after the
// restart asks again and the producer commits again. The committed message,
// found through the index rebuilt after the crash, is not delivered twice.
func TestTransactionCommitOnceAfterKill(t *testing.T) {
	r := newRestartable(t, func(c *BrokerConfig) {
		c.TransactionTimeOut = 1
		c.TransactionCheckInterval = 3600000
		c.FlushConsumerOffsetInterval = 100
	})
	ctx := context.Background()
	c := newTestConn(21)
	_, err := r.b.handleHeartBeat(ctx, c, heartbeatReq(t, "1.2.3.4@1", "CGX"))
	require.NoError(t, err)
	q0, o0 := sendHalf(t, r.tb(), c, "TxK", "once", "UNIQ-KILL")
	require.Eventually(t, func() bool { return r.st.MaxOffsetInQueue(TopicTransHalf, 0) == 1 }, 5*time.Second, 10*time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	r.b.trans.Check(ctx)
	q1, o1 := lastCheck(t, c)
	resp, err := r.b.handleEndTransaction(ctx, c, endTxReq("PG", q0, o0, tranCommit))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Eventually(t, func() bool { return r.st.MaxOffsetInQueue("TxK", 1) == 1 }, 5*time.Second, 10*time.Millisecond)
	r.kill()

	r.open()
	b := r.tb()
	resp, err = b.handleEndTransaction(ctx, c, endTxReq("PG", q1, o1, tranCommit))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue(TopicTransOpHalf, 0) == 2 }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, map[string]int{"once": 1}, deliveredBodies1(t, b, "TxK", 1))
}
