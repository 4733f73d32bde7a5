package processor

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/processor/delivery"
)

// What a sender and a consumer of timer and delay messages see, against
// Apache 5.3.3's HookUtils.handleScheduleMessage, SendMessageProcessor and
// TimerMessageStore.convert.

// TimerMessageStore.convert stamps TIMER_ENQUEUE_MS (when the wheel took the
// record) and TIMER_DEQUEUE_MS (when it put it back) into the properties the
// delivered copy is stored with.
func TestTimerDeliveredCopyStampsEnqueueAndDequeue(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	before := time.Now().UnixMilli()
	r, err := b.handleSendMessage(ctx, newTestConn(1), sendReq("TimerStampT", 0, []byte("x"), "TIMER_DELAY_MS\x011500\x02"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("TimerStampT", 0) == 1 }, 8*time.Second, 20*time.Millisecond)
	msgs := pullAll(t, b, "TimerStampT", 0)
	require.Len(t, msgs, 1)
	enq, ok := codec.PropertyValue(msgs[0].Properties, delivery.PropTimerEnqueueMs)
	require.True(t, ok, "TIMER_ENQUEUE_MS")
	deq, ok := codec.PropertyValue(msgs[0].Properties, delivery.PropTimerDequeueMs)
	require.True(t, ok, "TIMER_DEQUEUE_MS")
	e, err := strconv.ParseInt(enq, 10, 64)
	require.NoError(t, err)
	d, err := strconv.ParseInt(deq, 10, 64)
	require.NoError(t, err)
	require.GreaterOrEqual(t, e, before)
	require.GreaterOrEqual(t, d, e)
	require.LessOrEqual(t, d, msgs[0].StoreTimestamp)
	_, rolled := codec.PropertyValue(msgs[0].Properties, delivery.PropTimerRollTimes)
	require.False(t, rolled, "not rolled: no TIMER_ROLL_TIMES")
}

// A delete marker (TIMER_DEL_UNIQKEY) due already is WHEEL_TIMER_MSG_ILLEGAL
// in Java (transformTimerMessage), not an ordinary message for the topic's
// consumers.
func TestTimerDeleteMarkerDueAlreadyRefused(t *testing.T) {
	b := newTestBroker(t, nil)
	r, err := b.handleSendMessage(context.Background(), newTestConn(1), sendReq("TimerDelT", 0, []byte("0"),
		"TIMER_DEL_UNIQKEY\x01TimerDelT+ABC\x02TIMER_DELIVER_MS\x011\x02"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespMessageIllegal, r.Code)
	require.Equal(t, fmt.Sprintf("timer message illegal, the delay time should not be bigger than the max delay %dms; or if set del msg, the delay time should be bigger than the current time", b.conf().TimerMaxDelaySec*1000), r.Remark)
	require.Zero(t, b.st.MaxOffsetInQueue("TimerDelT", 0))
}

// The answers to a refused timer message carry Java's remarks (the client's
// MQBrokerException message).
func TestTimerRefusalRemarks(t *testing.T) {
	ctx := context.Background()
	b := newTestBroker(t, nil)
	r, _ := b.handleSendMessage(ctx, newTestConn(1), sendReq("TimerT", 0, []byte("x"), "TIMER_DELAY_SEC\x01abc\x02"))
	require.EqualValues(t, codec.RespMessageIllegal, r.Code)
	require.Equal(t, "timer message illegal, the delay time should not be bigger than the max delay 259200000ms;"+
		" or if set del msg, the delay time should be bigger than the current time", r.Remark)

	off := newTestBroker(t, func(c *BrokerConfig) { c.TimerWheelEnable = false })
	r, _ = off.handleSendMessage(ctx, newTestConn(1), sendReq("TimerT", 0, []byte("x"), "TIMER_DELAY_SEC\x015\x02"))
	require.EqualValues(t, codec.RespSystemError, r.Code)
	require.Equal(t, "accurate timer message is not enabled, timerWheelEnable is false", r.Remark)
}

// With the wheel off a DELAY level still parks the message, and the timer
// properties it also carries are dropped as checkIfTimerMessage does, wheel
// or not.
func TestDelayLevelDropsTimerPropsWithoutWheel(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.TimerWheelEnable = false })
	r, err := b.handleSendMessage(context.Background(), newTestConn(1), sendReq("DelayNoWheelT", 0, []byte("x"),
		"DELAY\x011\x02TIMER_DELAY_SEC\x015\x02TIMER_DELIVER_MS\x011\x02TIMER_DELAY_MS\x015\x02"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue(TopicSchedule, 0) == 1 }, 5*time.Second, 10*time.Millisecond)
	parked := pullAll(t, b, TopicSchedule, 0)
	require.Len(t, parked, 1)
	for _, k := range []string{codec.PropTimerDelaySec, codec.PropTimerDeliverMs, codec.PropTimerDelayMs} {
		_, ok := codec.PropertyValue(parked[0].Properties, k)
		require.False(t, ok, k)
	}
}

// A batch whose header asks for a delay level is parked by Java's hook and
// then refused by CommitLog.asyncPutMessages (MESSAGE_ILLEGAL): it is not
// stored at once without its delay.
func TestBatchWithDelayLevelRefused(t *testing.T) {
	b := newTestBroker(t, nil)
	var body []byte
	for i := range 2 {
		body = codec.AppendBatchEntry(body, 0, []byte(fmt.Sprintf("m%d", i)), "")
	}
	req := codec.NewRequest(codec.ReqSendBatchMessage)
	for _, kv := range [][2]string{{"a", "PG"}, {"b", "BatchDelayT"}, {"c", TopicAutoCreate}, {"d", "4"}, {"e", "0"},
		{"f", "0"}, {"g", "1"}, {"h", "0"}, {"i", "DELAY\x012\x02"}, {"j", "0"}, {"k", "false"}, {"l", "16"}, {"m", "true"}} {
		req.Ext.Set(kv[0], kv[1])
	}
	req.Body = body
	r, err := b.handleSendMessage(context.Background(), newTestConn(1), req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespMessageIllegal, r.Code, r.Remark)
	require.Zero(t, b.st.MaxOffsetInQueue("BatchDelayT", 0))
}

// RECALL_MESSAGE with the wheel off: Java's put of the delete marker fails
// (WHEEL_TIMER_NOT_ENABLE) and the recall answers SYSTEM_ERROR; the marker
// must not reach the topic's consumers as a message.
func TestRecallWithoutTimerWheel(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.RecallMessageEnable, c.TimerWheelEnable = true, false })
	ctx := context.Background()
	c := newTestConn(1)
	r, err := b.handleSendMessage(ctx, c, sendReq("RecallOffT", 0, []byte("x"), ""))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	at := i64s(time.Now().Add(time.Minute).UnixMilli())
	r, err = b.handleRecallMessage(ctx, c, recallReq("RecallOffT", buildRecallHandle("RecallOffT", b.conf().BrokerName, at, "UNIQ-1")))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSystemError, r.Code)
	require.Equal(t, "recall failed, execute error", r.Remark)
	require.EqualValues(t, 1, b.st.MaxOffsetInQueue("RecallOffT", 0))
}

// A send already carrying TIMER_OUT_MS is no timer request for Java's
// checkIfTimerMessage: with the wheel off it is stored, not refused.
func TestTimerOutMsSendWithoutWheelStored(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.TimerWheelEnable = false })
	r, err := b.handleSendMessage(context.Background(), newTestConn(1), sendReq("TimerOutT", 0, []byte("x"),
		"TIMER_OUT_MS\x011\x02TIMER_DELAY_SEC\x015\x02"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("TimerOutT", 0) == 1 }, 5*time.Second, 10*time.Millisecond)
}

// A transactional prepare asking for a timer is checked when it is sent, as
// Java's hook checks the half message's put: a malformed or too distant time
// is MESSAGE_ILLEGAL, and with the wheel off SYSTEM_ERROR. rmqd accepted both
// and, at the commit, delivered the message at once.
func TestTransactionalTimerCheckedAtPrepare(t *testing.T) {
	ctx := context.Background()
	prepare := func(b *testBroker, timer string) *codec.RemotingCommand {
		t.Helper()
		req := sendReq("TxTimerT", 0, []byte("x"), "TRAN_MSG\x01true\x02PGROUP\x01PG\x02"+timer)
		req.Ext.Set("sysFlag", "4")
		r, err := b.handleSendMessage(ctx, newTestConn(1), req)
		require.NoError(t, err)
		return r
	}
	b := newTestBroker(t, nil)
	for _, bad := range []string{"TIMER_DELAY_SEC\x01abc\x02", "TIMER_DELAY_SEC\x01999999999\x02"} {
		r := prepare(b, bad)
		require.EqualValues(t, codec.RespMessageIllegal, r.Code, bad)
		require.Equal(t, b.timerIllegalRemark(), r.Remark)
	}
	r := prepare(b, "TIMER_DELAY_SEC\x0110\x02")
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue(TopicTransHalf, 0) == 1 }, 5*time.Second, 10*time.Millisecond)

	off := newTestBroker(t, func(c *BrokerConfig) { c.TimerWheelEnable = false })
	r = prepare(off, "TIMER_DELAY_SEC\x0110\x02")
	require.EqualValues(t, codec.RespSystemError, r.Code)
	require.Equal(t, timerNotEnabledRemark, r.Remark)
}

// The commit of a transactional timer parks it in the wheel; with the wheel
// turned off since the prepare it is refused as Java's sendFinalMessage
// answers WHEEL_TIMER_NOT_ENABLE (the half message stays for the checker),
// not delivered at once.
func TestTransactionalTimerCommit(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.TransactionCheckInterval = 3600000 })
	ctx := context.Background()
	c := newTestConn(1)
	prepare := func(body string) (q, off int64) {
		t.Helper()
		req := sendReq("TxTimerC", 0, []byte(body), "TRAN_MSG\x01true\x02PGROUP\x01PG\x02TIMER_DELAY_SEC\x01600\x02")
		req.Ext.Set("sysFlag", "4")
		r, err := b.handleSendMessage(ctx, c, req)
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
		_, off, err = compat.DecodeOffsetMsgID(ext(t, r, "msgId"))
		require.NoError(t, err)
		q, err = strconv.ParseInt(ext(t, r, "queueOffset"), 10, 64)
		require.NoError(t, err)
		return q, off
	}
	q1, o1 := prepare("one")
	q2, o2 := prepare("two")
	r, _ := b.handleEndTransaction(ctx, c, endTxReq("PG", q1, o1, tranCommit))
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue(TopicTimer, 0) == 1 }, 5*time.Second, 10*time.Millisecond)

	next := *b.conf()
	next.TimerWheelEnable = false
	b.cfg.Store(&next)
	r, _ = b.handleEndTransaction(ctx, c, endTxReq("PG", q2, o2, tranCommit))
	require.EqualValues(t, codec.RespSystemError, r.Code)
	require.Equal(t, timerNotEnabledRemark, r.Remark)
	time.Sleep(100 * time.Millisecond)
	require.Zero(t, b.st.MaxOffsetInQueue("TxTimerC", 0), "neither delivered at once")
}

// A prepare from a pre-4.6.1 client's retry path (reconsumeTimes > 0 with a
// delay level) is no transaction; with DELAY=-1 or 0 (no delay level, as
// getDelayTimeLevel() > 0 reads it) it is one and waits as a half message.
func TestPrepareWithoutDelayLevelIsHalf(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.TransactionCheckInterval = 3600000 })
	for i, delay := range []string{"-1", "0", "2"} {
		req := sendReq("TxDelayT", 0, []byte("x"), "TRAN_MSG\x01true\x02PGROUP\x01PG\x02DELAY\x01"+delay+"\x02")
		req.Ext.Set("sysFlag", "4")
		req.Ext.Set("reconsumeTimes", "1")
		r, err := b.handleSendMessage(context.Background(), newTestConn(1), req)
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
		half := int64(min(i+1, 2))
		require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue(TopicTransHalf, 0) == half }, 5*time.Second, 10*time.Millisecond, delay)
	}
	time.Sleep(100 * time.Millisecond)
	require.EqualValues(t, 2, b.st.MaxOffsetInQueue(TopicTransHalf, 0), "DELAY=2: no half message")
}

// A consumer's send-back of a message carrying timer properties parks the
// retry copy by its delay level, and Java's hook drops the timer properties
// from it (checkIfTimerMessage with a delay level).
func TestSendBackDropsTimerProps(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	c := newTestConn(1)
	r, err := b.handleSendMessage(ctx, c, sendReq("BackTimerT", 0, []byte("x"), "TIMER_DELIVER_MS\x011\x02TIMER_DELAY_MS\x01-5\x02"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("BackTimerT", 0) == 1 }, 5*time.Second, 10*time.Millisecond)
	orig := pullAll(t, b, "BackTimerT", 0)[0]
	r, err = b.handleConsumerSendMsgBack(ctx, c, sendBackReq(orig.CommitLogOffset, "CG", 0, 16))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue(TopicSchedule, 2) == 1 }, 5*time.Second, 10*time.Millisecond)
	parked := pullAll(t, b, TopicSchedule, 2)
	require.Len(t, parked, 1)
	for _, k := range []string{codec.PropTimerDeliverMs, codec.PropTimerDelayMs} {
		_, ok := codec.PropertyValue(parked[0].Properties, k)
		require.False(t, ok, k)
	}
}
