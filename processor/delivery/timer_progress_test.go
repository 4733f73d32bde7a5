package delivery

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// TestTimerProgressSkipsOnlyDelivered: a timer restarted from its progress
// file skips the records it had delivered, even behind a pending one far
// ahead, and not one read overdue into the cursor's slot and still waiting
// there (it is due before the cursor, yet not delivered).
func TestTimerProgressSkipsOnlyDelivered(t *testing.T) {
	h, st := newTestHost(t)
	dir := t.TempDir()
	ctx := context.Background()
	base := (time.Now().UnixMilli()/1000 + 100) * 1000
	park := func(q int32, atSec int64) {
		t.Helper()
		m := &codec.Message{Topic: "Real", QueueID: q, Body: []byte("x"),
			Properties: codec.SetProperty("", codec.PropTimerDeliverMs, strconv.FormatInt(base+atSec*1000+500, 10))}
		require.True(t, ParkTimer(m, nil, TimerMaxDelayMs))
		put(t, st, m)
	}
	delivered := func(q int32) int64 {
		require.Eventually(t, func() bool { return st.MaxOffsetInQueue(TopicTimer, 0) > 0 }, 5*time.Second, time.Millisecond)
		time.Sleep(50 * time.Millisecond) // let the store dispatch the puts
		return max(st.MaxOffsetInQueue("Real", q), 0)
	}
	newTimer := func() *Timer {
		tm := NewTimer(h, nil)
		tm.SetProgressFile(dir)
		tm.StepAt(ctx, time.Now().UnixMilli())
		return tm
	}
	waitRead := func(n int64) {
		require.Eventually(t, func() bool { return st.MaxOffsetInQueue(TopicTimer, 0) == n }, 5*time.Second, time.Millisecond)
	}

	park(0, 1000) // far: holds the commit point back
	park(1, 10)
	waitRead(2)
	tm := newTimer()
	tm.StepAt(ctx, base+15_000)
	require.EqualValues(t, 1, delivered(1))
	park(2, 5) // read overdue at the cursor, not yet due by the wheel's clock
	waitRead(3)
	tm.StepAt(ctx, base+15_500)
	require.EqualValues(t, 0, delivered(2))
	require.NoError(t, tm.Persist())

	tm = newTimer()
	// Far and the overdue one are kept; so is queue 1's, due after the
	// overdue one (at least once: it comes again).
	require.Equal(t, 3, tm.PendingCount())
	tm.StepAt(ctx, base+17_000)
	require.EqualValues(t, 1, delivered(2), "the overdue one is not lost")
	require.Equal(t, 1, tm.PendingCount())
	require.NoError(t, tm.Persist())
	q1 := delivered(1)

	tm = newTimer()
	require.Equal(t, 1, tm.PendingCount(), "only far is read again")
	tm.StepAt(ctx, base+18_000)
	require.EqualValues(t, 1, delivered(2))
	require.Equal(t, q1, delivered(1))
	tm.StepAt(ctx, base+1002_000)
	require.EqualValues(t, 1, delivered(0))
	require.Zero(t, tm.PendingCount())
	require.NoError(t, tm.Persist())
	require.Equal(t, 0, newTimer().PendingCount())

	// Java's timercheck for an Apache broker taking the store over: read the
	// queue from 3, the wheel from the cursor; rmqd keeps reading its own.
	check, err := os.ReadFile(filepath.Join(dir, javaCheckpointFile))
	require.NoError(t, err)
	require.Len(t, check, 56)
	require.EqualValues(t, 3, binary.BigEndian.Uint64(check[16:]), "lastTimerQueueOffset")
	require.EqualValues(t, 3, binary.BigEndian.Uint64(check[24:]), "masterTimerQueueOffset")
	readMs := int64(binary.BigEndian.Uint64(check))
	require.True(t, readMs > base+1000_000 && readMs <= base+1002_000, "lastReadTimeMs %d", readMs-base)
	fresh := NewTimer(h, nil)
	fresh.SetProgressFile(dir)
	require.False(t, fresh.loadProgress().RollsUnknown, "rmqd's own progress, not the timercheck it wrote")
}

// TestTimerAdoptProgress: a slave's timer takes its master's progress only
// while it does not run, and a stale wheel from a demoted master's run is not
// persisted over it.
func TestTimerAdoptProgress(t *testing.T) {
	h, _ := newTestHost(t)
	dir := t.TempDir()
	tm := NewTimer(h, nil)
	tm.SetProgressFile(dir)
	tm.StepAt(context.Background(), time.Now().UnixMilli()) // ran as master once
	adopted := ProgressState{QueueOffset: 3, ReadOffset: 7, DeliveredBeforeMs: 5000}
	ok, err := tm.AdoptProgress(adopted)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, tm.Persist())
	b, err := os.ReadFile(filepath.Join(dir, "timerProgress.json"))
	require.NoError(t, err)
	var got ProgressState
	require.NoError(t, codec.UnmarshalBody(b, &got))
	require.Equal(t, adopted, got)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); tm.Run(ctx) }()
	require.Eventually(t, func() bool { _, loaded := tm.ProgressNow(); return loaded }, 5*time.Second, time.Millisecond)
	ok, err = tm.AdoptProgress(ProgressState{QueueOffset: 9, ReadOffset: 9})
	require.NoError(t, err)
	require.False(t, ok, "a running wheel keeps its own")
	cancel()
	<-done
}

// TestTimerStartsFromJavaCheckpoint: on a store a Java broker ran after rmqd
// (its timercheck newer than timerProgress.json), the wheel skips what Java's
// checkpoint says it delivered, delivers what it had not, and rolls a far
// record again rather than trust a roll time Java took from its own clock.
// Once rmqd's progress is written after it, that is what a restart reads.
func TestTimerStartsFromJavaCheckpoint(t *testing.T) {
	h, st := newTestHost(t)
	dir := t.TempDir()
	ctx := context.Background()
	now := time.Now().UnixMilli() / 1000 * 1000
	// Parked while due in the future, then read after the times below passed.
	park := func(q int32, deliverMs int64) {
		t.Helper()
		m := &codec.Message{Topic: "Real", QueueID: q, Body: []byte("x"),
			Properties: codec.SetProperty("", codec.PropTimerDeliverMs, strconv.FormatInt(now+60_000, 10))}
		require.True(t, ParkTimer(m, nil, TimerMaxDelayMs))
		m.Properties = codec.SetProperty(m.Properties, codec.PropTimerOutMs, strconv.FormatInt(deliverMs, 10))
		m.StoreTimestamp = now - 60_000
		put(t, st, m)
	}
	park(0, now+TimerMaxDelayMs) // far: rolled
	park(1, now-20_000)          // delivered by Java
	park(2, now-5_000)           // due after Java's last read
	require.Eventually(t, func() bool { return st.MaxOffsetInQueue(TopicTimer, 0) == 3 }, 5*time.Second, time.Millisecond)
	delivered := func(q int32) int64 {
		time.Sleep(50 * time.Millisecond) // let the store dispatch the puts
		return max(st.MaxOffsetInQueue("Real", q), 0)
	}

	check := make([]byte, 4096) // TimerCheckpoint: lastReadTimeMs, lastTimerLogFlushPos, lastTimerQueueOffset, ...
	binary.BigEndian.PutUint64(check[0:], uint64(now-10_000))
	binary.BigEndian.PutUint64(check[16:], 3)
	binary.BigEndian.PutUint64(check[24:], 3)
	js, ok := JavaCheckpointProgress(check)
	require.True(t, ok)
	require.Equal(t, ProgressState{ReadOffset: 3, DeliveredBeforeMs: now - 10_000, RollsUnknown: true}, js)
	_, ok = JavaCheckpointProgress(make([]byte, 56))
	require.False(t, ok, "the checkpoint of a timer that never ran claims nothing")
	require.NoError(t, os.WriteFile(filepath.Join(dir, javaCheckpointFile), check, 0o644))

	start := func() *Timer {
		tm := NewTimer(h, nil)
		tm.SetProgressFile(dir)
		tm.StepAt(ctx, now)
		tm.StepAt(ctx, now+2_000)
		return tm
	}
	tm := start()
	require.Zero(t, delivered(1), "Java delivered it")
	require.EqualValues(t, 1, delivered(2))
	require.Equal(t, 1, tm.PendingCount(), "the far one")
	require.NoError(t, tm.Persist())

	tm = start() // from rmqd's progress, now the newer file
	require.Zero(t, delivered(1))
	require.EqualValues(t, 1, delivered(2), "not again")
	require.Equal(t, 1, tm.PendingCount())
}

// TestTimerProgressIdleWritesNothing: while only a far timer waits, the
// cursor moves every second but nothing is delivered, so the progress (and
// Java's timercheck) is not written again; a delivery writes it.
func TestTimerProgressIdleWritesNothing(t *testing.T) {
	h, st := newTestHost(t)
	dir := t.TempDir()
	ctx := context.Background()
	now := (time.Now().UnixMilli()/1000 + 100) * 1000
	parkAt(t, h, now+86_400_000, "far")
	tm := NewTimer(h, nil)
	tm.SetProgressFile(dir)
	progress := filepath.Join(dir, "timerProgress.json")
	read := func() string {
		t.Helper()
		b, err := os.ReadFile(progress)
		require.NoError(t, err)
		return string(b)
	}
	tm.StepAt(ctx, now)
	require.NoError(t, tm.Persist())
	first := read()
	for i := int64(1); i <= 5; i++ {
		tm.StepAt(ctx, now+i*1000)
		require.NoError(t, tm.Persist())
		require.Equal(t, first, read(), "second %d: nothing delivered, nothing written", i)
	}

	parkAt(t, h, now+6_000, "near")
	tm.StepAt(ctx, now+5_500) // read, not due
	require.NoError(t, tm.Persist())
	read2 := read()
	require.NotEqual(t, first, read2, "a record read is written")
	tm.StepAt(ctx, now+8_000)
	require.Eventually(t, func() bool { return st.MaxOffsetInQueue("Real", 0) == 1 }, 5*time.Second, time.Millisecond)
	require.NoError(t, tm.Persist())
	require.NotEqual(t, read2, read(), "a delivery is written")
}
