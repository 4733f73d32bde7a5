package delivery

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// Timers read into the wheel and delivered move the per-topic counts
// DefaultStoreMetricsManager exports: enqueued, dequeued, in timing, and the
// delay latency histogram (deliver time - born time, in seconds).
func TestTimerMetricsCountPerTopic(t *testing.T) {
	h, st := newTestHost(t)
	tm := NewTimer(h, nil)
	now := time.Now().UnixMilli()
	deliver := (now/1000 + 3) * 1000
	var wantSum int64 // of A's (TIMER_OUT_MS - born) / 1000
	park := func(topic string, deliverMs, bornMs int64) {
		m := &codec.Message{Topic: topic, QueueID: 0, Body: []byte("x"), BornTimestamp: bornMs,
			Properties: codec.SetProperty("", codec.PropTimerDeliverMs, strconv.FormatInt(deliverMs, 10))}
		ok, _ := ParkTimerGated(m, nil, TimerMaxDelayMs, tm.Precision(), nil)
		require.True(t, ok)
		if topic == "A" {
			out, _ := codec.PropertyValue(m.Properties, codec.PropTimerOutMs)
			o, _ := strconv.ParseInt(out, 10, 64)
			wantSum += (o - bornMs) / 1000
		}
		m.BornHost, m.StoreHost = testHost, testHost
		require.True(t, st.PutMessage(context.Background(), m).Status.Written())
	}
	park("A", deliver, now)          // ~3 s: first bucket
	park("A", deliver, now-2*3600e3) // ~2 h: (3600, 43200]
	park("B", deliver+60e3, now)     // ~63 s: (60, 600]
	require.Eventually(t, func() bool { return st.MaxOffsetInQueue(TopicTimer, 0) == 3 }, 5*time.Second, 5*time.Millisecond)
	require.Empty(t, tm.Metrics(now).Topics, "nothing read yet")

	ctx := context.Background()
	tm.StepAt(ctx, now)
	byTopic := func() map[string]TimerTopicMetrics {
		out := map[string]TimerTopicMetrics{}
		for _, m := range tm.Metrics(time.Now().UnixMilli()).Topics {
			out[m.Topic] = m
		}
		return out
	}
	got := byTopic()
	require.Len(t, got, 2)
	a, b := got["A"], got["B"]
	require.EqualValues(t, 2, a.Enqueued)
	require.EqualValues(t, 2, a.Timing)
	require.Zero(t, a.Dequeued)
	require.Equal(t, [7]uint64{1, 0, 0, 1, 0, 0, 0}, a.Latency)
	require.Equal(t, wantSum, a.LatencySumSec, "whole seconds of the deliver time, as Java's")
	require.Equal(t, [7]uint64{0, 1, 0, 0, 0, 0, 0}, b.Latency)
	require.EqualValues(t, 1, b.Timing)

	tm.StepAt(ctx, deliver+1000) // A's slot is due, B's is not
	require.Eventually(t, func() bool { return st.MaxOffsetInQueue("A", 0) == 2 }, 5*time.Second, 5*time.Millisecond)
	got = byTopic()
	require.EqualValues(t, 2, got["A"].Dequeued)
	require.Zero(t, got["A"].Timing)
	require.EqualValues(t, 2, got["A"].Enqueued, "cumulative")
	require.EqualValues(t, 1, got["B"].Timing)
	require.Zero(t, got["B"].Dequeued)
}

// A deleted topic's timer counts go (removeTimingCount); the other topics'
// counts stay right, their entries still in the wheel counted under them.
func TestTimerForgetTopicDropsItsCounts(t *testing.T) {
	h, st := newTestHost(t)
	tm := NewTimer(h, nil)
	now := time.Now().UnixMilli()
	deliver := (now/1000 + 30) * 1000
	for _, topic := range []string{"A", "B", "C", "B"} {
		m := &codec.Message{Topic: topic, QueueID: 0, Body: []byte("x"), BornTimestamp: now,
			Properties: codec.SetProperty("", codec.PropTimerDeliverMs, strconv.FormatInt(deliver, 10))}
		ok, _ := ParkTimerGated(m, nil, TimerMaxDelayMs, tm.Precision(), nil)
		require.True(t, ok)
		m.BornHost, m.StoreHost = testHost, testHost
		require.True(t, st.PutMessage(context.Background(), m).Status.Written())
	}
	require.Eventually(t, func() bool { return st.MaxOffsetInQueue(TopicTimer, 0) == 4 }, 5*time.Second, 5*time.Millisecond)
	tm.StepAt(context.Background(), now)
	timing := func() map[string]int64 {
		out := map[string]int64{}
		for _, m := range tm.Metrics(now).Topics {
			out[m.Topic] = m.Timing
		}
		return out
	}
	require.Equal(t, map[string]int64{"A": 1, "B": 2, "C": 1}, timing())

	tm.ForgetTopic("A")
	require.Equal(t, map[string]int64{"B": 2, "C": 1}, timing())
	tm.ForgetTopic("nope")
	require.Equal(t, map[string]int64{"B": 2, "C": 1}, timing())

	tm.ForgetTopic("B")
	require.Equal(t, map[string]int64{"C": 1}, timing())
}
