package processor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

func queryOffsetReq(group, topic string, queueID string) *codec.RemotingCommand {
	q := codec.NewRequest(codec.ReqQueryConsumerOffset)
	q.Ext.Set("consumerGroup", group)
	q.Ext.Set("topic", topic)
	q.Ext.Set("queueId", queueID)
	return q
}

// QUERY_CONSUMER_OFFSET without a stored offset (Java 4.9
// ConsumerManageProcessor.queryConsumerOffset): 0 while the queue starts at 0
// and its first message is in memory (or the queue is empty), QUERY_NOT_FOUND
// once that message is cold, so a new group does not replay a long history;
// 5.x setZeroIfNotFound=false always gets QUERY_NOT_FOUND.
func TestQueryConsumerOffsetWithoutStoredOffset(t *testing.T) {
	b, ls := newLaggingBroker(t)
	ctx := context.Background()
	c := newTestConn(40010)

	resp, err := b.handleQueryConsumerOffset(ctx, c, queryOffsetReq("QG", "QueryT", "0"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, "empty queue")
	require.Equal(t, "0", ext(t, resp, "offset"))

	sendDispatched(t, b, ls, "QueryT", 2)
	resp, _ = b.handleQueryConsumerOffset(ctx, c, queryOffsetReq("QG", "QueryT", "0"))
	require.EqualValues(t, codec.RespSuccess, resp.Code, "first message in memory")
	require.Equal(t, "0", ext(t, resp, "offset"))

	q := queryOffsetReq("QG", "QueryT", "0")
	q.Ext.Set("setZeroIfNotFound", "false")
	resp, _ = b.handleQueryConsumerOffset(ctx, c, q)
	require.EqualValues(t, codec.RespQueryNotFound, resp.Code)
	require.Equal(t, "Not found, do not set to zero, maybe this group boot first", resp.Remark)

	// The commitlog has grown past the in-memory share of physical memory.
	ls.maxPhyAdd.Store(ls.HotCommitLogBytes() + 1)
	resp, _ = b.handleQueryConsumerOffset(ctx, c, queryOffsetReq("QG", "QueryT", "0"))
	require.EqualValues(t, codec.RespQueryNotFound, resp.Code, "first message cold")
	require.Equal(t, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first", resp.Remark)
	resp, _ = b.handleQueryConsumerOffset(ctx, c, queryOffsetReq("QG", "QueryT", "1"))
	require.EqualValues(t, codec.RespSuccess, resp.Code, "an empty queue has no cold message")

	// A stored offset wins.
	b.offsets.Commit("QG", "QueryT", 0, 1)
	resp, _ = b.handleQueryConsumerOffset(ctx, c, queryOffsetReq("QG", "QueryT", "0"))
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	require.Equal(t, "1", ext(t, resp, "offset"))
}

func TestFirstOffsetRule(t *testing.T) {
	for _, tc := range []struct {
		first, max, hot int64
		want            bool
	}{
		{0, 100, 100, true},
		{0, 101, 100, false},
		{50, 150, 100, true},
		{0, 0, 0, true},
	} {
		require.Equal(t, tc.want, firstOffsetRule(tc.first, tc.max, tc.hot), "%+v", tc)
	}
}
