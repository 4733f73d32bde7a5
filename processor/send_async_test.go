package processor

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/store"
)

// flushCheckConn records, at each response write, how far the commitlog was flushed.
type flushCheckConn struct {
	*testConn
	st      *store.DefaultStore
	mu      sync.Mutex
	flushed []int64
}

func (c *flushCheckConn) WriteResponse(cmd *codec.RemotingCommand) error {
	c.mu.Lock()
	c.flushed = append(c.flushed, c.st.FlushedPhyOffset())
	c.mu.Unlock()
	return c.testConn.WriteResponse(cmd)
}

func TestSyncFlushSendAnsweredAfterFlush(t *testing.T) {
	tb := newTestBrokerWith(t, nil, func(c *store.Config) { c.FlushDiskType = store.SyncFlush }, nil)
	b, st := tb.Broker, tb.st

	c := &flushCheckConn{testConn: newTestConn(40001), st: st}
	const n = 20
	ends := make([]int64, 0, n)
	inline := 0
	for i := range n {
		resp, err := b.handleSendMessage(context.Background(), c, sendReq("TopicS", 0, []byte("hello"), "KEYS\x01k\x02"))
		require.NoError(t, err)
		ends = append(ends, st.MaxPhyOffset())
		if resp != nil {
			// Answered inline: only when the bytes were flushed already.
			inline++
			require.Equal(t, codec.RespSuccess, resp.Code, "send %d", i)
			require.GreaterOrEqual(t, st.FlushedPhyOffset(), ends[i])
			continue
		}
	}
	require.Less(t, inline, n, "SYNC_FLUSH sends should be answered from the group commit")
	for i := 1; i <= n-inline; i++ {
		waitResponse(t, c.testConn, i)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	rs := c.responses()
	for i, r := range rs {
		require.Equal(t, codec.RespSuccess, r.Code)
		require.Equal(t, int32(7), r.Opaque)
		require.NotEmpty(t, ext(t, r, "msgId"))
		require.Equal(t, "0", ext(t, r, "queueId"))
		// The response leaves only once its record is on disk. One queue, one
		// caller: queue offset k is the k-th record, which ends at ends[k].
		qo, err := strconv.Atoi(ext(t, r, "queueOffset"))
		require.NoError(t, err)
		require.GreaterOrEqual(t, c.flushed[i], ends[qo], "response %d written before its record was flushed", i)
	}
}
