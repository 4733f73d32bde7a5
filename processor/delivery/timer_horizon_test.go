package delivery

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// parkAt parks a timer message due at deliver (ms) and waits until the
// timer's queue has it.
func parkAt(t *testing.T, h *Host, deliver int64, body string) {
	t.Helper()
	st := h.Store
	n := st.MaxOffsetInQueue(TopicTimer, 0)
	m := &codec.Message{Topic: "Real", QueueID: 0, Body: []byte(body),
		Properties: codec.SetProperty("", codec.PropTimerDeliverMs, strconv.FormatInt(deliver, 10))}
	require.True(t, ParkTimer(m, nil, TimerMaxDelayMs))
	m.BornHost, m.StoreHost, m.BornTimestamp = testHost, testHost, time.Now().UnixMilli()
	require.True(t, st.PutMessage(context.Background(), m).Status.Written())
	require.Eventually(t, func() bool { return st.MaxOffsetInQueue(TopicTimer, 0) > n }, 5*time.Second, time.Millisecond)
}

// TestTimerHorizonCountsPendingRecords: the horizon (every timer record due
// before it delivered, which POP's revive service relies on to know an ack
// can no longer come) stays before a record read overdue into the cursor's
// slot and not yet delivered, and before a record not yet read (a backlog
// after a restart): it was the cursor in both cases.
func TestTimerHorizonCountsPendingRecords(t *testing.T) {
	h, _ := newTestHost(t)
	tm := NewTimer(h, nil)
	ctx := context.Background()
	sec := time.Now().UnixMilli()/timerPrecisionMs + 10 // a wheel clock ahead of the records' times
	now := sec*timerPrecisionMs + 500
	parkAt(t, h, now+60_000, "far") // keeps the wheel non-empty
	tm.StepAt(ctx, now)
	require.Equal(t, 1, tm.PendingCount())

	// Read overdue: it waits in the cursor's slot, due before the cursor.
	overdue := (sec - 3) * timerPrecisionMs
	parkAt(t, h, overdue, "overdue")
	tm.StepAt(ctx, now)
	require.Equal(t, 2, tm.PendingCount(), "in the cursor's slot, not delivered yet")
	require.LessOrEqual(t, tm.Horizon(now), overdue, "an overdue record waits in the cursor's slot")
	tm.StepAt(ctx, now+timerPrecisionMs)
	require.Equal(t, 1, tm.PendingCount())
	require.Greater(t, tm.Horizon(now+timerPrecisionMs), overdue, "delivered: the horizon moves on")

	// Not read yet: written now, due soon, and the wheel's clock past it.
	stored := time.Now().UnixMilli()
	parkAt(t, h, stored+1000, "unread")
	require.LessOrEqual(t, tm.Horizon(now+timerPrecisionMs), stored+1000, "a record not read yet may be due before the cursor")
}
