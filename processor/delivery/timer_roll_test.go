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

// TestTimerRollsFarTimers: a timer due further than the roll window from its
// store time is stored again in rmq_sys_wheel_timer when the window passes
// (Java's roll, with TIMER_ROLL_TIMES, TIMER_ENQUEUE_MS, TIMER_DEQUEUE_MS), so
// the bytes read when it is due are never older than the window, whatever
// commitlog retention deletes. A restart whose consumer offset predates the
// roll (a slave's copy) does not roll it again; it comes once. A message
// recalled before its roll is dropped there.
func TestTimerRollsFarTimers(t *testing.T) {
	dflt := NewTimer(nil, nil)
	require.EqualValues(t, timerRollWindowMs, dflt.rollSlots*dflt.prec, "Java's default, 2 days")
	for _, bad := range []int64{0, 1, -5, 4 * 86400} {
		dflt.SetRollWindow(bad)
		require.EqualValues(t, maxRollWindowSlots*1000, dflt.rollSlots*dflt.prec, bad)
	}

	h, st := newTestHost(t)
	dir := t.TempDir()
	newTimer := func() *Timer {
		tm := NewTimer(h, nil)
		tm.SetProgressFile(dir)
		tm.SetRollWindow(3) // timerRollWindowSlot=3: 3 s
		return tm
	}
	run := func(tm *Timer) (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); tm.Run(ctx) }()
		return func() { cancel(); <-done }
	}
	deliver := (time.Now().UnixMilli()/1000 + 6) * 1000
	park := func(body string, props string) {
		t.Helper()
		m := &codec.Message{Topic: "Real", QueueID: 0, Body: []byte(body),
			Properties: codec.SetProperty(props, codec.PropTimerDeliverMs, strconv.FormatInt(deliver, 10))}
		require.True(t, ParkTimer(m, nil, TimerMaxDelayMs))
		put(t, st, m)
	}
	park("far", codec.SetProperty("", codec.PropUniqKey, "U1"))
	park("recalled", codec.SetProperty("", codec.PropUniqKey, "U2"))
	park("marker", codec.SetProperty("", PropTimerDelUniqKey, "Real+U2"))
	require.Eventually(t, func() bool { return st.MaxOffsetInQueue(TopicTimer, 0) == 3 }, 5*time.Second, time.Millisecond)
	stored := st.MessageStoreTimestamp(TopicTimer, 0, 0)

	tm := newTimer()
	stop := run(tm)
	// far and the marker are stored again; recalled is dropped at its roll.
	require.Eventually(t, func() bool {
		_, behind, pending := tm.Progress(time.Now().UnixMilli())
		return st.MaxOffsetInQueue(TopicTimer, 0) == 5 && behind == 0 && pending == 2
	}, 10*time.Second, 10*time.Millisecond)
	stop()
	s, ok := tm.ProgressNow()
	require.True(t, ok)
	require.LessOrEqual(t, st.MaxOffsetInQueue("Real", 0), int64(0), "nothing delivered yet")
	require.Less(t, time.Now().UnixMilli(), deliver, "rolled before it was due")

	// A restart from an old consumer offset and progress whose commit point
	// is older too (as a promoted slave's copies may be): the originals are
	// read again, and skipped by their roll time.
	h.Offsets.Commit(TimerSysGroup, TopicTimer, 0, 0)
	s.QueueOffset = 0
	tm = newTimer()
	ok, err := tm.AdoptProgress(s)
	require.NoError(t, err)
	require.True(t, ok)
	tm.StepAt(context.Background(), time.Now().UnixMilli())
	require.Equal(t, 2, tm.PendingCount(), "the copies only")
	time.Sleep(100 * time.Millisecond)
	require.EqualValues(t, 5, st.MaxOffsetInQueue(TopicTimer, 0), "not rolled again")

	stop = run(tm)
	defer stop()
	require.Eventually(t, func() bool { return st.MaxOffsetInQueue("Real", 0) == 1 }, 10*time.Second, 10*time.Millisecond)
	time.Sleep(1200 * time.Millisecond) // a wheel step past it: nothing more comes
	require.EqualValues(t, 1, st.MaxOffsetInQueue("Real", 0))
	require.Zero(t, tm.PendingCount())

	res := st.GetMessage("G", "Real", 0, 0, 32, 1<<20, nil)
	defer res.Release()
	require.Equal(t, store.GetFound, res.Status)
	var m codec.Message
	_, err = codec.DecodeRecord(res.Records[0], &m)
	require.NoError(t, err)
	require.Equal(t, "far", string(m.Body))
	props := codec.ParseProperties(m.Properties)
	require.Equal(t, "1", props[PropTimerRollTimes])
	// As Java's convert at delivery: when the wheel took the copy it came from
	// (the roll stamped the original's; delivery stamps again).
	copyStored := st.MessageStoreTimestamp(TopicTimer, 0, 3)
	require.Greater(t, copyStored, stored)
	require.Equal(t, strconv.FormatInt(copyStored, 10), props[PropTimerEnqueueMs])
	require.NotEmpty(t, props[PropTimerDequeueMs])
	require.Equal(t, strconv.FormatInt(deliver-1000, 10), props[codec.PropTimerOutMs], "its deliver time kept")
}
