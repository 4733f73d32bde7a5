package processor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
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
