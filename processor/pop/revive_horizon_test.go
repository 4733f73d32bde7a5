package pop

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// putRevive writes a revive record straight to revive queue 0, as the timer
// delivers it (its TIMER_DELIVER_MS already past).
func (h *testHost) putRevive(t *testing.T, s *Service, body []byte, tag, uniq string, deliverMs int64) {
	t.Helper()
	msg := s.reviveMessage(body, 0, tag, uniq, deliverMs)
	require.True(t, h.st.PutMessage(context.Background(), msg).Status.Written())
}

// TestReviveWaitsForTimerHorizon: after a restart the timer delivers every
// record that fell due while the broker was down at once, in the order they
// were written, not by due time. A checkpoint with a later revive time may so
// reach the revive queue before the ack of an earlier one: the revive service
// took "a record delivered 2 s past its revive time" as proof that the ack
// could no longer come, and revived an acked message. Only the timer's
// horizon (every record due before it delivered) says so.
func TestReviveWaitsForTimerHorizon(t *testing.T) {
	h := newTestHost(t)
	h.topics["T"] = Topic{ReadQueueNums: 1, Perm: 6}
	s := New(h, nil) // not started: the test runs the rounds
	h.send(t, "T", 0, "acked", "a")
	h.send(t, "T", 0, "unacked", "a")
	pt := time.Now().UnixMilli() - 30_000
	ckX := &CheckPoint{Num: 1, PopTime: pt, InvisibleTime: 3_000, StartOffset: 0, CID: "G", Topic: "T", BrokerName: "broker-a"}
	ckX.addDiff(0)
	ckY := &CheckPoint{Num: 1, PopTime: pt, InvisibleTime: 12_000, StartOffset: 1, CID: "G", Topic: "T", BrokerName: "broker-a"}
	ckY.addDiff(0)
	for _, ck := range []*CheckPoint{ckX, ckY} {
		ck.ReviveTimeOut = ck.ReviveTime()
		body, err := jsonMarshal(ck)
		require.NoError(t, err)
		h.putRevive(t, s, body, ckTag, ck.uniqueID(), ck.ReviveTime()-ackTimeInterval)
	}
	rt := reviveTopic("C")
	require.Eventually(t, func() bool { return h.st.MaxOffsetInQueue(rt, 0) == 2 }, 5*time.Second, time.Millisecond)

	// X's ack is still in the timer, due at X's revive time: the horizon is before it.
	h.horizon.Store(ckX.ReviveTime() - 500)
	r := newReviver(s, 0)
	r.round(context.Background())
	retry := retryTopicV1("T", "G")
	require.LessOrEqual(t, h.st.MaxOffsetInQueue(rt, 0), int64(2))
	require.LessOrEqual(t, max(h.st.MaxOffsetInQueue(retry, 0), 0), int64(0), "nothing revived while X's ack may still come")
	require.EqualValues(t, -1, h.QueryOffset(reviveGroup, rt, 0), "no progress past X")

	// The ack comes out; then the horizon passes everything.
	ack := &AckMsg{AckOffset: 0, StartOffset: 0, ConsumerGroup: "G", Topic: "T", PopTime: pt, BrokerName: "broker-a"}
	h.putRevive(t, s, ack.appendJSON(nil), ackTag, ack.uniqueID(), ckX.ReviveTime())
	require.Eventually(t, func() bool { return h.st.MaxOffsetInQueue(rt, 0) == 3 }, 5*time.Second, time.Millisecond)
	h.horizon.Store(time.Now().UnixMilli())
	r.round(context.Background())
	require.Eventually(t, func() bool { return h.st.MaxOffsetInQueue(retry, 0) >= 1 }, 5*time.Second, time.Millisecond)
	res := h.GetMessage("x", retry, 0, 0, 32, nil)
	defer res.Release()
	require.Len(t, res.Records, 1, "only Y's message is revived")
	var m codec.Message
	_, err := codec.DecodeRecord(res.Records[0], &m)
	require.NoError(t, err)
	require.Equal(t, "unacked", string(m.Body))
	require.EqualValues(t, 1, h.QueryOffset(reviveGroup, rt, 0), "progress at Y")
}
