package pop

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// TestPopInflightThreshold: with enablePopMessageThreshold a queue holding more
// than popInflightMessageThreshold unacked messages of the group is not popped
// (the POP finds nothing and reports the queue's backlog in restNum), and an
// ack brings it back under (PopMessageProcessor.isPopShouldStop).
func TestPopInflightThreshold(t *testing.T) {
	h := newTestHost(t)
	h.topics["T"] = Topic{ReadQueueNums: 1, Perm: 6}
	h.cfg.EnablePopMessageThreshold, h.cfg.PopInflightMessageThreshold = true, 2
	h.cfg.PopFromRetryProbability = 0
	s := startService(t, h)
	for i := 0; i < 6; i++ {
		h.send(t, "T", 0, fmt.Sprintf("m%d", i), "a")
	}
	c := newConn()
	p := popReq{topic: "T", group: "G", queue: 0, max: 3, invisible: 600000}
	_, hdr, ms := s.doPop(t, c, p)
	require.Len(t, ms, 3)

	resp, hdr2, ms2 := s.doPop(t, c, p)
	require.Equal(t, codec.RespPollingTimeout, resp.Code, "3 in flight is over the threshold 2")
	require.Empty(t, ms2)
	require.Equal(t, int64(3), hdr2.RestNum)
	require.Equal(t, int64(3), h.QueryOffset("G", "T", 0), "a stopped queue keeps its offset")
	// Another group is not held back.
	_, _, other := s.doPop(t, c, popReq{topic: "T", group: "G2", queue: 0, max: 1, invisible: 600000})
	require.Len(t, other, 1)

	r, err := s.handleAck(context.Background(), c, ackCmd("T", "G", 0, 0, handle(hdr, ms[0], 0)))
	require.NoError(t, err)
	require.Equal(t, codec.RespSuccess, r.Code)
	_, hdr3, ms3 := s.doPop(t, c, p)
	require.Len(t, ms3, 3, "2 in flight is not over the threshold")
	require.Equal(t, "m3", string(ms3[0].m.Body))

	// A batch ack counts down every offset it acks: 5 in flight, 3 acked.
	body := fmt.Sprintf(`{"acks":[{"b":"Bw==","c":"G","it":600000,"pt":%d,"q":0,"r":"0","rq":%d,"so":3,"t":"T"}],"brokerName":"broker-a"}`,
		hdr3.PopTime, hdr3.ReviveQid)
	req := codec.NewRequest(codec.ReqBatchAckMessage)
	req.Body = []byte(body)
	r, err = s.handleBatchAck(context.Background(), c, req)
	require.NoError(t, err)
	require.Equal(t, codec.RespSuccess, r.Code)
	require.Equal(t, int64(2), s.inflight.get("T", "G", 0))
}

// TestPopInflightCountedDownByRevive: a message revived to the retry topic is
// no longer in flight on its queue (PopReviveService.reviveRetry).
func TestPopInflightCountedDownByRevive(t *testing.T) {
	h := newTestHost(t)
	h.topics["T"] = Topic{ReadQueueNums: 1, Perm: 6}
	h.cfg.EnablePopMessageThreshold, h.cfg.PopInflightMessageThreshold = true, 0
	s := startService(t, h)
	h.send(t, "T", 0, "m0", "a")
	h.send(t, "T", 0, "m1", "a")
	c := newConn()
	p := popReq{topic: "T", group: "G", queue: 0, max: 1, invisible: 1000}
	_, _, ms := s.doPop(t, c, p)
	require.Len(t, ms, 1)
	require.Equal(t, int64(1), s.inflight.get("T", "G", 0))
	require.Eventually(t, func() bool { return s.inflight.get("T", "G", 0) == 0 }, 15*time.Second, 50*time.Millisecond)
}
