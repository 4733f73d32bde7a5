package processor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

func TestTimerMessages(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	c := newTestConn(1)
	start := time.Now()
	// Relative (TIMER_DELAY_MS) and absolute (TIMER_DELIVER_MS) times; the later
	// one is sent first, so delivery is out of queue order.
	late := i64s(time.Now().Add(3500 * time.Millisecond).UnixMilli())
	r, err := b.handleSendMessage(ctx, c, sendReq("TimerT", 0, []byte("late"), "TIMER_DELIVER_MS\x01"+late+"\x02"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	r, err = b.handleSendMessage(ctx, c, sendReq("TimerT", 0, []byte("soon"), "TIMER_DELAY_MS\x012200\x02"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue(TopicTimer, 0) == 2 }, 5*time.Second, 10*time.Millisecond)
	require.EqualValues(t, 0, b.st.MaxOffsetInQueue("TimerT", 0))
	// Both wait in the wheel: the runtime info mqadmin's clusterList shows.
	require.Eventually(t, func() bool {
		_, offsetBehind, congest := b.timer.Progress(time.Now().UnixMilli())
		return offsetBehind == 0 && congest == 2
	}, 5*time.Second, 10*time.Millisecond)
	readBehind, _, _ := b.timer.Progress(time.Now().UnixMilli())
	require.LessOrEqual(t, readBehind, int64(1))

	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("TimerT", 0) == 1 }, 5*time.Second, 20*time.Millisecond)
	// Deliver times are rounded down to the 1 s precision, as Java does: 2.2 s
	// becomes at least 1.2 s.
	require.GreaterOrEqual(t, time.Since(start), time.Second)
	require.Equal(t, "soon", string(pullAll(t, b, "TimerT", 0)[0].Body))
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("TimerT", 0) == 2 }, 8*time.Second, 20*time.Millisecond)
	msgs := pullAll(t, b, "TimerT", 0)
	require.Equal(t, "late", string(msgs[1].Body))
	out, ok := codec.PropertyValue(msgs[1].Properties, codec.PropTimerOutMs)
	require.True(t, ok)
	require.NotEmpty(t, out)
	require.Eventually(t, func() bool { return b.offsets.Query(timerSysGroup, TopicTimer, 0) == 2 }, 2*time.Second, 20*time.Millisecond)
	_, _, congest := b.timer.Progress(time.Now().UnixMilli())
	require.Zero(t, congest)

	// Malformed and too distant times are refused; a DELAY level wins.
	r, _ = b.handleSendMessage(ctx, c, sendReq("TimerT", 0, []byte("x"), "TIMER_DELAY_SEC\x01abc\x02"))
	require.EqualValues(t, codec.RespMessageIllegal, r.Code)
	r, _ = b.handleSendMessage(ctx, c, sendReq("TimerT", 0, []byte("x"), "TIMER_DELAY_SEC\x01999999999\x02"))
	require.EqualValues(t, codec.RespMessageIllegal, r.Code)
	// Already due: stored at once.
	r, _ = b.handleSendMessage(ctx, c, sendReq("TimerT", 1, []byte("now"), "TIMER_DELIVER_MS\x011\x02"))
	require.EqualValues(t, codec.RespSuccess, r.Code)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("TimerT", 1) == 1 }, 5*time.Second, 10*time.Millisecond)
}

// timerMaxDelaySec from broker.conf bounds how far ahead a timer may be due,
// lower or higher than the 3-day default (HookUtils.handleScheduleMessage).
func TestTimerMaxDelaySecBound(t *testing.T) {
	cfg := DefaultBrokerConfig()
	_, err := cfg.ApplyProperties(map[string]string{"timerMaxDelaySec": "60", "timerRollWindowSlot": "3600"})
	require.NoError(t, err)
	require.EqualValues(t, 60, cfg.TimerMaxDelaySec)
	require.EqualValues(t, 3600, cfg.TimerRollWindowSlot)
	require.Equal(t, "60", cfg.Properties()["timerMaxDelaySec"])

	ctx := context.Background()
	c := newTestConn(7)
	short := newTestBroker(t, func(c *BrokerConfig) { c.TimerMaxDelaySec = 60 })
	r, _ := short.handleSendMessage(ctx, c, sendReq("TimerT", 0, []byte("x"), "TIMER_DELAY_SEC\x01120\x02"))
	require.EqualValues(t, codec.RespMessageIllegal, r.Code, "two minutes past a one-minute limit")
	r, _ = short.handleSendMessage(ctx, c, sendReq("TimerT", 0, []byte("x"), "TIMER_DELAY_SEC\x0130\x02"))
	require.EqualValues(t, codec.RespSuccess, r.Code)

	long := newTestBroker(t, func(c *BrokerConfig) { c.TimerMaxDelaySec = 10 * 86400 })
	r, _ = long.handleSendMessage(ctx, c, sendReq("TimerT", 0, []byte("x"), "TIMER_DELAY_SEC\x01"+"345600"+"\x02"))
	require.EqualValues(t, codec.RespSuccess, r.Code, "four days within a ten-day limit")
	require.Eventually(t, func() bool { return long.st.MaxOffsetInQueue(TopicTimer, 0) == 1 }, 5*time.Second, 10*time.Millisecond)
}

// DELETE_TOPIC_IN_BROKER drops the topic's timer series with its other
// per-topic series (Java's removeTimingCount): the table does not grow with
// every topic that ever had a timer.
func TestDeleteTopicDropsTimerSeries(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	c := newTestConn(1)
	sendOK(t, b, sendReq("TmDel", 0, []byte("x"), "TIMER_DELAY_MS\x01600000\x02"))
	sendOK(t, b, sendReq("TmKeep", 0, []byte("x"), "TIMER_DELAY_MS\x01600000\x02"))
	topics := func() map[string]int64 {
		out := map[string]int64{}
		for _, m := range b.MetricsSnapshot(time.Now()).Timer.Topics {
			out[m.Topic] = m.Timing
		}
		return out
	}
	require.Eventually(t, func() bool { return len(topics()) == 2 }, 5*time.Second, 10*time.Millisecond)
	del := codec.NewRequest(codec.ReqDeleteTopicInBroker)
	del.Ext.Set("topic", "TmDel")
	r, err := b.handleDeleteTopicInBroker(ctx, c, del)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	require.Equal(t, map[string]int64{"TmKeep": 1}, topics())
}
