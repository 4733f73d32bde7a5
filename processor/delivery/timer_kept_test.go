package delivery

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/store"
)

// parkTopic parks a timer message for topic due at deliver (ms).
func parkTopic(t *testing.T, st *store.DefaultStore, topic string, deliver int64) {
	t.Helper()
	n := st.MaxOffsetInQueue(TopicTimer, 0)
	m := &codec.Message{Topic: topic, QueueID: 0, Body: []byte(topic),
		Properties: codec.SetProperty("", codec.PropTimerDeliverMs, strconv.FormatInt(deliver, 10))}
	require.True(t, ParkTimer(m, nil, TimerMaxDelayMs))
	put(t, st, m)
	require.Eventually(t, func() bool { return st.MaxOffsetInQueue(TopicTimer, 0) > n }, 5*time.Second, time.Millisecond)
}

// A record of a kept topic (SetKept: an acting slave's revive records) stays
// pending, moved along with the cursor, while the records after it are
// delivered; the progress and the horizon never claim it, and it is
// delivered once no longer kept.
func TestTimerKeptRecordsStayPending(t *testing.T) {
	h, st := newTestHost(t)
	tm := NewTimer(h, nil)
	keep := true
	tm.SetKept(func(topic string) bool { return keep && topic == "Kept" })
	ctx := context.Background()
	sec := time.Now().UnixMilli()/timerPrecisionMs + 10
	now := sec*timerPrecisionMs + 500
	parkTopic(t, st, "Kept", (sec-2)*timerPrecisionMs) // queue offset 0
	parkTopic(t, st, "Real", (sec-1)*timerPrecisionMs) // queue offset 1
	tm.StepAt(ctx, now)
	tm.StepAt(ctx, now+timerPrecisionMs)
	tm.StepAt(ctx, now+5*timerPrecisionMs)
	require.EqualValues(t, 1, st.MaxOffsetInQueue("Real", 0), "the record behind it is delivered")
	require.EqualValues(t, 0, st.MaxOffsetInQueue("Kept", 0))
	require.Equal(t, 1, tm.PendingCount())
	s, ok := tm.ProgressNow()
	require.True(t, ok)
	require.EqualValues(t, 0, s.QueueOffset, "not claimed delivered")
	require.LessOrEqual(t, s.DeliveredBeforeMs, (sec-2)*timerPrecisionMs, "nor by time")
	require.LessOrEqual(t, tm.Horizon(now+5*timerPrecisionMs), (sec-2)*timerPrecisionMs)

	keep = false
	tm.StepAt(ctx, now+6*timerPrecisionMs)
	require.EqualValues(t, 1, st.MaxOffsetInQueue("Kept", 0), "delivered once no longer kept")
	require.Equal(t, 0, tm.PendingCount())
	s, _ = tm.ProgressNow()
	require.EqualValues(t, 2, s.QueueOffset)
}
