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

// timerSend sends a message due in delayMs through the wheel and requires it
// accepted.
func timerSend(t *testing.T, b *testBroker, topic string, delayMs string) {
	t.Helper()
	r, err := b.handleSendMessage(context.Background(), newTestConn(1), sendReq(topic, 0, []byte("x"), "TIMER_DELAY_MS\x01"+delayMs+"\x02"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
}

// timerStopEnqueue (TimerMessageStore.enqueue) holds the wheel from reading
// rmq_sys_wheel_timer: a timer sent meanwhile is stored there, not delivered
// when due, and is read and delivered once UPDATE_BROKER_CONFIG clears it.
func TestTimerStopEnqueueHoldsNewTimers(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.TimerStopEnqueue = true })
	timerSend(t, b, "TimerHoldEnqT", "200")
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue(TopicTimer, 0) == 1 }, 5*time.Second, 10*time.Millisecond,
		"stored in the timer topic")
	time.Sleep(1500 * time.Millisecond) // well past due: the wheel would have delivered it
	require.Zero(t, b.timer.PendingCount(), "not read into the wheel")
	_, readPos := b.timer.Checkpoint()
	require.Zero(t, readPos)
	require.LessOrEqual(t, b.st.MaxOffsetInQueue("TimerHoldEnqT", 0), int64(0), "not delivered")

	_, _, err := b.updateConfig(map[string]string{"timerStopEnqueue": "false"})
	require.NoError(t, err)
	require.False(t, b.conf().TimerStopEnqueue)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("TimerHoldEnqT", 0) == 1 }, 5*time.Second, 20*time.Millisecond,
		"read and delivered (overdue) once cleared")

	// Set live again: the next timer waits.
	_, _, err = b.updateConfig(map[string]string{"timerStopEnqueue": "true"})
	require.NoError(t, err)
	timerSend(t, b, "TimerHoldEnqT", "100")
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue(TopicTimer, 0) == 2 }, 5*time.Second, 10*time.Millisecond)
	time.Sleep(1200 * time.Millisecond)
	require.EqualValues(t, 1, b.st.MaxOffsetInQueue("TimerHoldEnqT", 0), "held again")
}

// timerStopDequeue (TimerMessageStore.dequeue) holds the wheel's delivery: a
// timer is read into the wheel but not delivered when due, and is delivered
// once UPDATE_BROKER_CONFIG clears the hold.
func TestTimerStopDequeueHoldsDueTimers(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.TimerStopDequeue = true })
	timerSend(t, b, "TimerHoldDeqT", "200")
	require.Eventually(t, func() bool { return b.timer.PendingCount() == 1 }, 5*time.Second, 10*time.Millisecond,
		"read into the wheel")
	time.Sleep(1500 * time.Millisecond) // well past due
	require.Equal(t, 1, b.timer.PendingCount(), "still in the wheel")
	require.LessOrEqual(t, b.st.MaxOffsetInQueue("TimerHoldDeqT", 0), int64(0), "not delivered")

	_, _, err := b.updateConfig(map[string]string{"timerStopDequeue": "false"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("TimerHoldDeqT", 0) == 1 }, 5*time.Second, 20*time.Millisecond,
		"delivered once cleared")
	require.Eventually(t, func() bool { return b.timer.PendingCount() == 0 }, 5*time.Second, 10*time.Millisecond)
}

// timerCongestNumEachSlot (TimerMessageStore.isReject, checked by HookUtils
// at a send and at an end-transaction commit): a timer for a slot already
// holding twice the limit is refused with SendMessageProcessor's and
// EndTransactionProcessor's WHEEL_TIMER_FLOW_CONTROL answer; other slots and a
// raised limit (live) take it. A prepare is not flow-controlled, as in Java.
func TestTimerCongestNumEachSlotFlowControl(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) {
		c.TimerCongestNumEachSlot = 1
		c.TransactionCheckInterval = 3600000
	})
	ctx := context.Background()
	c := newTestConn(1)
	slot := (time.Now().UnixMilli()/1000 + 60) * 1000
	at := func(ms int64) string { return "TIMER_DELIVER_MS\x01" + strconv.FormatInt(ms, 10) + "\x02" }
	send := func(props string) *codec.RemotingCommand {
		t.Helper()
		r, err := b.handleSendMessage(ctx, c, sendReq("TimerCongestT", 0, []byte("x"), props))
		require.NoError(t, err)
		return r
	}
	const remark = "timer message is under flow control, max num limit is 2 or the current value is greater than 1" +
		" and less than 2, trigger random flow control"

	for i := range 2 { // 0 then 1 in the slot: both at or under the limit
		r := send(at(slot + 500))
		require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
		require.Eventually(t, func() bool { return b.timer.PendingCount() == i+1 }, 5*time.Second, 10*time.Millisecond)
	}
	r := send(at(slot + 300))
	require.EqualValues(t, codec.RespSystemError, r.Code)
	require.Equal(t, remark, r.Remark)
	require.EqualValues(t, 2, b.st.MaxOffsetInQueue(TopicTimer, 0), "not stored")
	r = send(at(slot + 1500))
	require.EqualValues(t, codec.RespSuccess, r.Code, "another slot: %s", r.Remark)

	req := sendReq("TimerCongestT", 0, []byte("tx"), "TRAN_MSG\x01true\x02PGROUP\x01PG\x02"+at(slot+700))
	req.Ext.Set("sysFlag", "4")
	r, err := b.handleSendMessage(ctx, c, req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code, "a prepare is not flow-controlled: %s", r.Remark)
	_, off, err := compat.DecodeOffsetMsgID(ext(t, r, "msgId"))
	require.NoError(t, err)
	q, err := strconv.ParseInt(ext(t, r, "queueOffset"), 10, 64)
	require.NoError(t, err)
	r, _ = b.handleEndTransaction(ctx, c, endTxReq("PG", q, off, tranCommit))
	require.EqualValues(t, codec.RespSystemError, r.Code)
	require.Equal(t, remark, r.Remark)

	_, _, err = b.updateConfig(map[string]string{"timerCongestNumEachSlot": "10"})
	require.NoError(t, err)
	r = send(at(slot + 300))
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	r, _ = b.handleEndTransaction(ctx, c, endTxReq("PG", q, off, tranCommit))
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
}

// timerPrecisionMs is taken as Java's setter takes it and sizes the slots
// sends are parked on: at 100 ms a timer's TIMER_OUT_MS is floored to 100 ms
// and it is delivered after its slot, never before.
func TestTimerPrecisionMs(t *testing.T) {
	cfg := DefaultBrokerConfig()
	_, err := cfg.ApplyProperties(map[string]string{"timerPrecisionMs": "300"})
	require.NoError(t, err)
	require.EqualValues(t, 200, cfg.TimerPrecisionMs, "taken down to 200 as setTimerPrecisionMs does")
	require.Equal(t, "200", cfg.Properties()["timerPrecisionMs"])
	dflt := DefaultBrokerConfig()
	require.Equal(t, "1000", dflt.Properties()["timerPrecisionMs"])

	b := newTestBroker(t, func(c *BrokerConfig) { c.TimerPrecisionMs = 100 })
	deliver := (time.Now().UnixMilli()/1000+1)*1000 + 350
	r, err := b.handleSendMessage(context.Background(), newTestConn(1),
		sendReq("TimerPrecT", 0, []byte("x"), "TIMER_DELIVER_MS\x01"+strconv.FormatInt(deliver, 10)+"\x02"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("TimerPrecT", 0) == 1 }, 8*time.Second, 10*time.Millisecond)
	msgs := pullAll(t, b, "TimerPrecT", 0)
	require.Len(t, msgs, 1)
	out, _ := codec.PropertyValue(msgs[0].Properties, codec.PropTimerOutMs)
	require.Equal(t, strconv.FormatInt(deliver-50, 10), out, "a 100 ms slot")
	require.GreaterOrEqual(t, msgs[0].StoreTimestamp, deliver-50+100, "not before its slot ended")
}
