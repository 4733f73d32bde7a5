package delivery

import (
	"context"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// MessageStoreConfig.setTimerPrecisionMs takes a value down to one of 100,
// 200, 500 and 1000.
func TestTimerPrecisionAsJavaSetter(t *testing.T) {
	for in, want := range map[int64]int64{-5: 100, 0: 100, 50: 100, 100: 100, 199: 100, 200: 200, 499: 200,
		500: 500, 999: 500, 1000: 1000, 3000: 1000} {
		require.Equal(t, want, TimerPrecision(in), "%d", in)
	}
}

// At timerPrecisionMs 100 a timer is parked on a 100 ms slot (HookUtils
// floors the deliver time to the precision) and delivered once the clock
// passes its slot's end, not at the end of its second.
func TestTimerDeliversOnPrecisionSlots(t *testing.T) {
	h, st := newTestHost(t)
	tm := NewTimer(h, nil)
	tm.SetPrecision(150)
	require.EqualValues(t, 100, tm.Precision())
	require.Equal(t, 10*time.Millisecond, tm.tick, "Java waits 100 ms per 1000 ms of precision")

	deliver := (time.Now().UnixMilli()/1000+3)*1000 + 350
	m := &codec.Message{Topic: "Real", QueueID: 1, Body: []byte("later"),
		Properties: codec.SetProperty("", codec.PropTimerDeliverMs, strconv.FormatInt(deliver, 10))}
	ok, congested := ParkTimerGated(m, nil, TimerMaxDelayMs, tm.Precision(), nil)
	require.True(t, ok)
	require.False(t, congested)
	out, _ := codec.PropertyValue(m.Properties, codec.PropTimerOutMs)
	require.Equal(t, strconv.FormatInt(deliver-50, 10), out, "floored to 100 ms, not to the second")
	put(t, st, m)
	require.Eventually(t, func() bool { return st.MaxOffsetInQueue(TopicTimer, 0) == 1 }, 5*time.Second, 5*time.Millisecond)

	ctx := context.Background()
	tm.StepAt(ctx, deliver-50+99)
	require.Equal(t, 1, tm.PendingCount(), "its slot has not ended")
	tm.StepAt(ctx, deliver-50+100)
	require.Zero(t, tm.PendingCount(), "delivered 650 ms before a 1 s wheel would")
	require.Eventually(t, func() bool { return st.MaxOffsetInQueue("Real", 1) == 1 }, 5*time.Second, 5*time.Millisecond)
	readMs, _ := tm.Checkpoint()
	require.Equal(t, deliver-50+100, readMs, "the cursor counts 100 ms slots")
}

// Congested is isReject over the slot's count, read without waiting for a
// step (which holds the wheel's lock while it delivers): at or under n
// taken, at 2n or more refused; delivering the slot empties its count.
func TestTimerCongestedCountsTheSlot(t *testing.T) {
	h, st := newTestHost(t)
	tm := NewTimer(h, nil)
	deliver := (time.Now().UnixMilli()/1000+3)*1000 + 500
	for range 3 {
		m := &codec.Message{Topic: "Real", QueueID: 1, Body: []byte("x"),
			Properties: codec.SetProperty("", codec.PropTimerDeliverMs, strconv.FormatInt(deliver, 10))}
		ok, congested := ParkTimerGated(m, nil, TimerMaxDelayMs, tm.Precision(), func(ms int64) bool { return tm.Congested(ms, 1) })
		require.True(t, ok)
		require.False(t, congested, "nothing read into the wheel yet")
		put(t, st, m)
	}
	require.Eventually(t, func() bool { return st.MaxOffsetInQueue(TopicTimer, 0) == 3 }, 5*time.Second, 5*time.Millisecond)
	ctx := context.Background()
	done := make(chan struct{})
	go func() { // a sender racing the steps
		defer close(done)
		for range 200 {
			tm.Congested(deliver, 1)
		}
	}()
	tm.StepAt(ctx, time.Now().UnixMilli())
	<-done
	slot := deliver / 1000 * 1000
	require.EqualValues(t, 3, tm.SlotCount(slot))
	require.True(t, tm.Congested(slot, 1), "3 >= 2n")
	require.False(t, tm.Congested(slot, 3), "3 <= n")
	require.False(t, tm.Congested(slot+1000, 1), "another slot")
	require.False(t, tm.Congested(slot, math.MaxInt32), "Java's default")

	tm.StepAt(ctx, slot+1000)
	require.Zero(t, tm.PendingCount())
	require.Zero(t, tm.SlotCount(slot), "delivered")
	require.False(t, tm.Congested(slot, 1))
}
