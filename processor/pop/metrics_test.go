package pop

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// sumCounts adds the series of one counter that match group, topic, type and
// (when not empty) put status.
func sumCounts(cs []ReviveCount, group, topic, typ, status string) int64 {
	var n int64
	for _, c := range cs {
		if c.Group == group && c.Topic == topic && c.Type == typ && (status == "" || c.PutStatus == status) {
			n += c.N
		}
	}
	return n
}

// A POP of three messages, one ack, and the revive of the other two move
// every PopMetricsManager counter by what happened.
func TestPopMetricsCountPopAckRevive(t *testing.T) {
	h := newTestHost(t)
	h.topics["T"] = Topic{ReadQueueNums: 1, Perm: 6}
	s := startService(t, h)
	m0 := s.Metrics(time.Now())
	require.Empty(t, m0.RevivePut)
	require.Len(t, m0.ReviveQueues, 2, "one entry per revive queue")
	for i := 0; i < 3; i++ {
		h.send(t, "T", 0, fmt.Sprintf("m%d", i), "a")
	}
	c := newConn()
	p := popReq{topic: "T", group: "G", queue: -1, max: 32, invisible: 1000}
	resp, hdr, ms := s.doPop(t, c, p)
	require.Equal(t, codec.RespSuccess, resp.Code)
	require.Len(t, ms, 3)
	m := s.Metrics(time.Now())
	require.Equal(t, int64(1), sumCounts(m.RevivePut, "G", "T", "CK", "PUT_OK"), "one checkpoint for the pop")

	ackResp, err := s.handleAck(context.Background(), c, ackCmd("T", "G", 0, 1, handle(hdr, ms[1], 0)))
	require.NoError(t, err)
	require.Equal(t, codec.RespSuccess, ackResp.Code)
	m = s.Metrics(time.Now())
	require.Equal(t, int64(1), sumCounts(m.RevivePut, "G", "T", "ACK", "PUT_OK"))
	for _, r := range m.RevivePut {
		require.Zero(t, r.QueueID, "puts carry no queue_id")
	}

	got := s.waitPop(t, c, p, 2, 15*time.Second)
	require.Len(t, got, 2)
	m = s.Metrics(time.Now())
	require.Equal(t, int64(2), sumCounts(m.Retry, "G", "T", "", "PUT_OK"), "two messages revived to the retry topic")
	// A round reads the queue from its committed offset, so records not yet
	// due are read (and counted) again by later rounds, as Java's do.
	require.GreaterOrEqual(t, sumCounts(m.ReviveGet, "G", "T", "CK", ""), int64(1), "the checkpoint read back")
	require.GreaterOrEqual(t, sumCounts(m.ReviveGet, "G", "T", "ACK", ""), int64(1), "the ack read back")
	for _, r := range m.ReviveGet {
		require.Equal(t, hdr.ReviveQid, r.QueueID, "reads are labelled with their revive queue")
		require.Empty(t, r.PutStatus)
	}
	for _, r := range m.Retry {
		require.Empty(t, r.Type)
	}

	// Once the reviver has caught up its queue reports no backlog.
	require.Eventually(t, func() bool {
		q := s.Metrics(time.Now()).ReviveQueues[hdr.ReviveQid]
		return q.BehindMessages == 0 && q.BehindMillis == 0
	}, 5*time.Second, 20*time.Millisecond)

	// A deleted topic's series go (the retry pop's checkpoint of %RETRY%G_T stays).
	s.ForgetTopic("T")
	m = s.Metrics(time.Now())
	for _, cs := range [][]ReviveCount{m.RevivePut, m.ReviveGet, m.Retry} {
		for _, c := range cs {
			require.NotEqual(t, "T", c.Topic)
		}
	}
	s.ForgetGroup("G")
	require.Empty(t, s.Metrics(time.Now()).RevivePut)
}

// A revive queue with records its reviver has not read reports them, and how
// long they have waited since its last round's oldest checkpoint.
func TestPopMetricsReviveBacklog(t *testing.T) {
	h := newTestHost(t)
	s := New(h, nil)
	r := newReviver(s, 1)
	rs := []*reviver{newReviver(s, 0), r}
	s.revivers.Store(&rs)
	ck := &CheckPoint{Num: 1, PopTime: time.Now().UnixMilli(), InvisibleTime: 0, CID: "G", Topic: "T", BrokerName: "broker-a"}
	ck.addDiff(0)
	for i := 0; i < 3; i++ {
		require.True(t, s.putCheckPoint(ck, 1))
	}
	require.Eventually(t, func() bool { return h.MaxOffset(reviveTopic("C"), 1) == 3 }, 5*time.Second, 10*time.Millisecond)
	now := time.Now()
	require.Equal(t, ReviveQueueMetrics{QueueID: 1}, s.Metrics(now).ReviveQueues[1], "no round yet: 0, as Java")
	r.lastReviveTime.Store(now.UnixMilli() - 5000)
	require.Equal(t, ReviveQueueMetrics{QueueID: 1, BehindMessages: 3, BehindMillis: 5000}, s.Metrics(now).ReviveQueues[1])
	h.CommitOffset(reviveGroup, reviveTopic("C"), 1, 1)
	require.Equal(t, ReviveQueueMetrics{QueueID: 1, BehindMessages: 1, BehindMillis: 5000}, s.Metrics(now).ReviveQueues[1])
	h.CommitOffset(reviveGroup, reviveTopic("C"), 1, 2)
	require.Equal(t, ReviveQueueMetrics{QueueID: 1}, s.Metrics(now).ReviveQueues[1], "all read")
	require.Equal(t, int64(3), sumCounts(s.Metrics(now).RevivePut, "G", "T", "CK", "PUT_OK"))
}

// Counting a record of a known series takes no allocation.
func TestPopCountersAddDoesNotAllocate(t *testing.T) {
	var c counters
	k := countKey{group: "G", topic: "T", kind: kindACK}
	c.add(k)
	require.Zero(t, testing.AllocsPerRun(100, func() { c.add(k) }))
	require.Equal(t, int64(101+1), c.list(true, false)[0].N)
}
