package pop

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/store"
)

// TestReviveTakesAWrittenPutAsDone: on a SYNC_MASTER whose slave is away the
// retry-topic put is written but answers SLAVE_NOT_AVAILABLE; revive takes it
// as done (Java checks the append status), so it writes no re-put checkpoint
// that would revive the message again later.
func TestReviveTakesAWrittenPutAsDone(t *testing.T) {
	h := newTestHost(t)
	h.topics["T"] = Topic{ReadQueueNums: 1, Perm: 6}
	h.retryStatus.Store(int32(store.PutSlaveNotAvailable))
	s := startService(t, h)
	h.send(t, "T", 0, "m0", "a")
	c := newConn()
	resp, hdr, ms := s.doPop(t, c, popReq{topic: "T", group: "G", queue: -1, max: 1, invisible: 1000})
	require.Equal(t, codec.RespSuccess, resp.Code)
	require.Len(t, ms, 1)
	require.EqualValues(t, 1, h.ckPuts.Load())
	rt := reviveTopic("C")
	require.Eventually(t, func() bool { return h.QueryOffset(reviveGroup, rt, hdr.ReviveQid) >= 0 }, 15*time.Second,
		20*time.Millisecond, "the checkpoint is revived")
	require.EqualValues(t, 1, h.MaxOffset("%RETRY%G_T", 0), "m0 is in the retry topic once")
	require.EqualValues(t, 1, h.ckPuts.Load(), "no re-put checkpoint for a written put")
}
