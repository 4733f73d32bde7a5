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

func endTxReq(group string, tranOffset, clOffset int64, kind int32) *codec.RemotingCommand {
	req := codec.NewRequest(codec.ReqEndTransaction)
	req.Ext.Set("producerGroup", group)
	req.Ext.Set("tranStateTableOffset", i64s(tranOffset))
	req.Ext.Set("commitLogOffset", i64s(clOffset))
	req.Ext.Set("commitOrRollback", i32s(kind))
	req.Ext.Set("msgId", "x")
	return req
}

func TestTransactions(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.TransactionTimeOut = 1; c.TransactionCheckInterval = 3600000 })
	ctx := context.Background()
	c := newTestConn(21)
	_, err := b.handleHeartBeat(ctx, c, heartbeatReq(t, "1.2.3.4@1", "CGX"))
	require.NoError(t, err)

	send := func(body string) (int64, int64) {
		req := sendReq("TxT", 1, []byte(body), "TRAN_MSG\x01true\x02PGROUP\x01PG\x02")
		req.Ext.Set("sysFlag", "4")
		resp, err := b.handleSendMessage(ctx, c, req)
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
		require.Equal(t, "1", ext(t, resp, "queueId"))
		_, off, err := compat.DecodeOffsetMsgID(ext(t, resp, "msgId"))
		require.NoError(t, err)
		qo := ext(t, resp, "queueOffset")
		var q int64
		for _, ch := range qo {
			q = q*10 + int64(ch-'0')
		}
		return q, off
	}
	q1, o1 := send("commit-me")
	q2, o2 := send("roll-me-back")
	q3, o3 := send("ask-me")
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue(TopicTransHalf, 0) == 3 }, 5*time.Second, 10*time.Millisecond)
	require.EqualValues(t, 0, b.st.MaxOffsetInQueue("TxT", 1), "half messages are invisible")

	// Wrong group / offsets are refused.
	r, _ := b.handleEndTransaction(ctx, c, endTxReq("OTHER", q1, o1, tranCommit))
	require.EqualValues(t, codec.RespSystemError, r.Code)
	r, _ = b.handleEndTransaction(ctx, c, endTxReq("PG", q1+5, o1, tranCommit))
	require.EqualValues(t, codec.RespSystemError, r.Code)

	r, _ = b.handleEndTransaction(ctx, c, endTxReq("PG", q1, o1, tranCommit))
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	r, _ = b.handleEndTransaction(ctx, c, endTxReq("PG", q2, o2, tranRollback))
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("TxT", 1) == 1 }, 5*time.Second, 10*time.Millisecond)
	msgs := pullAll(t, b, "TxT", 1)
	require.Len(t, msgs, 1)
	require.Equal(t, "commit-me", string(msgs[0].Body))
	require.EqualValues(t, tranCommit, msgs[0].SysFlag&sysFlagTransactionMask)
	_, hasReal := codec.PropertyValue(msgs[0].Properties, codec.PropRealTopic)
	require.False(t, hasReal)

	// The checker asks the producer about the third one only.
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue(TopicTransOpHalf, 0) == 2 }, 5*time.Second, 10*time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	n0 := c.onewayCount()
	b.trans.Check(ctx)
	require.Equal(t, n0+1, c.onewayCount(), "one check request")
	c.mu.Lock()
	chk := c.oneway[len(c.oneway)-1]
	c.mu.Unlock()
	require.Equal(t, codec.ReqCheckTransactionState, chk.Code)
	m := decodeBody(t, chk.Body)[0]
	require.Equal(t, "ask-me", string(m.Body))
	require.Equal(t, "TxT", m.Topic)
	pg, _ := codec.PropertyValue(m.Properties, "PGROUP")
	require.Equal(t, "PG", pg)
	require.NotEqual(t, i64s(q3), ext(t, chk, "tranStateTableOffset"), "the check is about the re-queued copy")
	_ = o3
	// Answer the check: commit the copy.
	var tq, tc int64
	for _, ch := range ext(t, chk, "tranStateTableOffset") {
		tq = tq*10 + int64(ch-'0')
	}
	for _, ch := range ext(t, chk, "commitLogOffset") {
		tc = tc*10 + int64(ch-'0')
	}
	r, _ = b.handleEndTransaction(ctx, c, endTxReq("PG", tq, tc, tranCommit))
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("TxT", 1) == 2 }, 5*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue(TopicTransOpHalf, 0) == 3 }, 5*time.Second, 10*time.Millisecond)
	n := c.onewayCount()
	b.trans.Check(ctx)
	require.Equal(t, n, c.onewayCount(), "nothing left to ask")
	require.EqualValues(t, 4, b.offsets.Query(transSysGroup, TopicTransHalf, 0))
}

// One producer's half message with a huge immunity, or born a century ahead,
// does not keep the checker from asking about another group's in-doubt one,
// round after round.
func TestTransactionCheckerNotHeldByOneHalf(t *testing.T) {
	for _, mode := range []string{"immunity", "futureBorn"} {
		t.Run(mode, func(t *testing.T) {
			b := newTestBroker(t, func(c *BrokerConfig) { c.TransactionTimeOut = 1; c.TransactionCheckInterval = 3600000 })
			ctx := context.Background()
			c := newTestConn(21)
			_, err := b.handleHeartBeat(ctx, c, heartbeatReq(t, "1.2.3.4@1", "CGX"))
			require.NoError(t, err)
			send := func(body, props string, born int64) {
				req := sendReq("TxT", 1, []byte(body), props)
				req.Ext.Set("sysFlag", "4")
				if born != 0 {
					req.Ext.Set("bornTimestamp", i64s(born))
				}
				resp, err := b.handleSendMessage(ctx, c, req)
				require.NoError(t, err)
				require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
			}
			if mode == "immunity" {
				send("attacker", "TRAN_MSG\x01true\x02PGROUP\x01EVIL\x02CHECK_IMMUNITY_TIME_IN_SECONDS\x011000000000\x02", 0)
			} else {
				send("attacker", "TRAN_MSG\x01true\x02PGROUP\x01EVIL\x02", time.Now().Add(100*365*24*time.Hour).UnixMilli())
			}
			send("victim", "TRAN_MSG\x01true\x02PGROUP\x01PG\x02", 0)
			require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue(TopicTransHalf, 0) == 2 }, 5*time.Second, 10*time.Millisecond)
			time.Sleep(20 * time.Millisecond)
			for round := 1; round <= 3; round++ {
				n0 := c.onewayCount()
				b.trans.Check(ctx)
				require.Equal(t, n0+1, c.onewayCount(), "round %d asks PG about the victim", round)
				c.mu.Lock()
				chk := c.oneway[len(c.oneway)-1]
				c.mu.Unlock()
				require.Equal(t, "victim", string(decodeBody(t, chk.Body)[0].Body))
			}
			require.Greater(t, b.offsets.Query(transSysGroup, TopicTransHalf, 0), int64(2))
		})
	}
}

// sendHalf sends a transactional half message with UNIQ_KEY uniq to topic's
// queue 1 and returns its half queue offset and commitlog offset.
func sendHalf(t *testing.T, b *testBroker, c *testConn, topic, body, uniq string) (int64, int64) {
	t.Helper()
	req := sendReq(topic, 1, []byte(body), "TRAN_MSG\x01true\x02PGROUP\x01PG\x02UNIQ_KEY\x01"+uniq+"\x02")
	req.Ext.Set("sysFlag", "4")
	resp, err := b.handleSendMessage(context.Background(), c, req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	_, off, err := compat.DecodeOffsetMsgID(ext(t, resp, "msgId"))
	require.NoError(t, err)
	q, err := strconv.ParseInt(ext(t, resp, "queueOffset"), 10, 64)
	require.NoError(t, err)
	return q, off
}

// lastCheck is the half queue and commitlog offsets of the last
// CHECK_TRANSACTION_STATE sent to c.
func lastCheck(t *testing.T, c *testConn) (int64, int64) {
	t.Helper()
	c.mu.Lock()
	chk := c.oneway[len(c.oneway)-1]
	c.mu.Unlock()
	require.Equal(t, codec.ReqCheckTransactionState, chk.Code)
	q, err := strconv.ParseInt(ext(t, chk, "tranStateTableOffset"), 10, 64)
	require.NoError(t, err)
	o, err := strconv.ParseInt(ext(t, chk, "commitLogOffset"), 10, 64)
	require.NoError(t, err)
	return q, o
}

// A transaction is delivered once however often it is committed: a repeated
// END_TRANSACTION, and the answer to a check about a copy of a half message
// the producer committed meanwhile, find the committed message and only
// settle their half message (Java puts the real message again each time).
func TestEndTransactionCommitsOnce(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.TransactionTimeOut = 1; c.TransactionCheckInterval = 3600000 })
	ctx := context.Background()
	c := newTestConn(21)
	_, err := b.handleHeartBeat(ctx, c, heartbeatReq(t, "1.2.3.4@1", "CGX"))
	require.NoError(t, err)
	q0, o0 := sendHalf(t, b, c, "TxT", "once", "UNIQ-ONCE")
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue(TopicTransHalf, 0) == 1 }, 5*time.Second, 10*time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	n0 := c.onewayCount()
	b.trans.Check(ctx)
	require.Equal(t, n0+1, c.onewayCount())
	q1, o1 := lastCheck(t, c)

	for _, e := range [][2]int64{{q0, o0}, {q0, o0}, {q1, o1}} {
		r, _ := b.handleEndTransaction(ctx, c, endTxReq("PG", e[0], e[1], tranCommit))
		require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	}
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue(TopicTransOpHalf, 0) == 3 }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, map[string]int{"once": 1}, deliveredBodies1(t, b, "TxT", 1))
	n := c.onewayCount()
	b.trans.Check(ctx)
	require.Equal(t, n, c.onewayCount(), "both halves settled")
}

// A plain send carrying the commit flag, the producer group and the UNIQ_KEY
// of a transaction does not stop its commit: only a record END_TRANSACTION
// put counts as committed.
func TestEndTransactionForgedCommitIgnored(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	c := newTestConn(21)
	send := func(body string) {
		resp, err := b.handleSendMessage(ctx, c, sendReq("TxT", 1, []byte(body), ""))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
	send("first") // the commitlog's offset 0, a forged prepared offset
	q, o := sendHalf(t, b, c, "TxT", "tx", "UNIQ-F")
	forged := sendReq("TxT", 1, []byte("tx"), "PGROUP\x01PG\x02UNIQ_KEY\x01UNIQ-F\x02")
	forged.Ext.Set("sysFlag", "8")
	resp, err := b.handleSendMessage(ctx, c, forged)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("TxT", 1) == 2 }, 5*time.Second, 10*time.Millisecond)
	r, _ := b.handleEndTransaction(ctx, c, endTxReq("PG", q, o, tranCommit))
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("TxT", 1) == 3 }, 5*time.Second, 10*time.Millisecond)
}

// A producer's own commit or rollback of a half message with a check immunity
// time, arriving after that time (when the checker may already have asked
// about it), is refused with ILLEGAL_OPERATION, as Java's
// rejectCommitOrRollback does; the answer to a check is not, nor is one in time.
func TestEndTransactionAfterImmunityRefused(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.TransactionTimeOut = 1; c.TransactionCheckInterval = 3600000 })
	ctx := context.Background()
	c := newTestConn(21)
	send := func(body string, immunity string, born time.Time) (int64, int64) {
		req := sendReq("TxT", 1, []byte(body), "TRAN_MSG\x01true\x02PGROUP\x01PG\x02CHECK_IMMUNITY_TIME_IN_SECONDS\x01"+immunity+"\x02")
		req.Ext.Set("sysFlag", "4")
		req.Ext.Set("bornTimestamp", i64s(born.UnixMilli()))
		resp, err := b.handleSendMessage(ctx, c, req)
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
		_, off, err := compat.DecodeOffsetMsgID(ext(t, resp, "msgId"))
		require.NoError(t, err)
		q, err := strconv.ParseInt(ext(t, resp, "queueOffset"), 10, 64)
		require.NoError(t, err)
		return q, off
	}
	past := time.Now().Add(-time.Minute)
	qLate, oLate := send("late", "10", past)
	qRb, oRb := send("late-rollback", "10", past)
	qChk, oChk := send("checked", "10", past)
	qOK, oOK := send("in-time", "3600", past)
	for _, e := range []struct {
		q, o      int64
		kind      int32
		fromCheck bool
		want      int32
	}{
		{qLate, oLate, tranCommit, false, codec.RespIllegalOperation},
		{qRb, oRb, tranRollback, false, codec.RespIllegalOperation},
		{qChk, oChk, tranCommit, true, codec.RespSuccess},
		{qOK, oOK, tranCommit, false, codec.RespSuccess},
	} {
		req := endTxReq("PG", e.q, e.o, e.kind)
		if e.fromCheck {
			req.Ext.Set("fromTransactionCheck", "true")
		}
		r, _ := b.handleEndTransaction(ctx, c, req)
		require.EqualValues(t, e.want, r.Code, "offset %d: %s", e.q, r.Remark)
	}
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue(TopicTransOpHalf, 0) == 2 }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, map[string]int{"checked": 1, "in-time": 1}, deliveredBodies1(t, b, "TxT", 1))
}

// RESUME_CHECK_HALF_MESSAGE puts a half message parked in
// TRANS_CHECK_MAX_TIME_TOPIC back in the half queue with its check count at 0,
// and the checker asks its producer again; ids of other records, of another
// topic than the header's, or that name nothing are refused.
func TestResumeCheckHalfMessage(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) {
		c.TransactionTimeOut, c.TransactionCheckMax, c.TransactionCheckInterval = 1, 1, 3600000
	})
	ctx, c := context.Background(), newTestConn(22)
	_, err := b.handleHeartBeat(ctx, c, heartbeatReq(t, "1.2.3.4@1", "CGX"))
	require.NoError(t, err)
	sendHalf(t, b, c, "TxR", "resume-me", "C0A8000100002A9F00000000000000R1")
	time.Sleep(5 * time.Millisecond) // older than the 1 ms transaction timeout
	b.trans.Check(ctx)               // asked once, the copy's count at 1
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue(TopicTransHalf, 0) == 2 }, 5*time.Second, 10*time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	b.trans.Check(ctx) // past transactionCheckMax: parked
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue(TopicTransCheckMax, 0) == 1 }, 5*time.Second, 10*time.Millisecond)
	parked := pullAll(t, b, TopicTransCheckMax, 0)
	require.Len(t, parked, 1)
	id := compat.OffsetMsgID(b.storeHost, parked[0].CommitLogOffset)

	resume := func(topic, msgID string) *codec.RemotingCommand {
		r, err := b.handleResumeCheckHalfMessage(ctx, c, adminReq(codec.ReqResumeCheckHalfMessage, "topic", topic, "msgId", msgID))
		require.NoError(t, err)
		return r
	}
	r := resume(TopicTransHalf, id)
	require.EqualValues(t, codec.RespSystemError, r.Code, "stored in TRANS_CHECK_MAX_TIME_TOPIC, not the header's topic")
	require.Contains(t, r.Remark, "is not stored in topic")
	r = resume(TopicTransCheckMax, "0000")
	require.Equal(t, "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC.", r.Remark)
	r = resume(TopicTransCheckMax, compat.OffsetMsgID(b.storeHost, 1<<40))
	require.EqualValues(t, codec.RespSystemError, r.Code, "no record there")
	sendN(t, b, "Plain", 1, []byte("p"))
	plain := pullAll(t, b, "Plain", 0)
	r = resume("Plain", compat.OffsetMsgID(b.storeHost, plain[0].CommitLogOffset))
	require.Contains(t, r.Remark, "is not a half message")

	n := c.onewayCount()
	r = resume(TopicTransCheckMax, id)
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	require.EqualValues(t, 3, b.st.MaxOffsetInQueue(TopicTransHalf, 0))
	back := pullAll(t, b, TopicTransHalf, 0)[2]
	require.Equal(t, "resume-me", string(back.Body))
	times, _ := codec.PropertyValue(back.Properties, codec.PropTranCheckTimes)
	require.Equal(t, "0", times)
	real, _ := codec.PropertyValue(back.Properties, codec.PropRealTopic)
	require.Equal(t, "TxR", real)
	time.Sleep(5 * time.Millisecond)
	b.trans.Check(ctx)
	require.Equal(t, n+1, c.onewayCount(), "the producer is asked about it again")
	c.mu.Lock()
	chk := c.oneway[len(c.oneway)-1]
	c.mu.Unlock()
	require.Equal(t, "resume-me", string(decodeBody(t, chk.Body)[0].Body))
}
