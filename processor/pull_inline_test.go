package processor

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// A caught-up long poll runs on the event loop: only a suspending pull at or
// past its queue's end qualifies.
func TestPullInlineOnlyForPullsThatWillBeHeld(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	b.topics.Update(func() TopicConfig { tc := NewTopicConfig("PI"); tc.ReadQueueNums, tc.WriteQueueNums = 1, 1; return tc }())
	suspend := codec.PullFlagSubscription | codec.PullFlagSuspend
	require.True(t, b.pullInline(pullReq("G", "PI", 0, 0, suspend, 20000)), "empty queue, long poll")
	require.False(t, b.pullInline(pullReq("G", "PI", 0, 0, codec.PullFlagSubscription, 0)), "no suspension: may wait for dispatch")
	resp, err := b.handleSendMessage(ctx, newTestConn(4), sendReq("PI", 0, []byte("x"), ""))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	require.False(t, b.pullInline(pullReq("G", "PI", 0, 0, suspend, 20000)), "a message to read")
	require.True(t, b.pullInline(pullReq("G", "PI", 0, 1, suspend, 20000)), "caught up again")
	require.False(t, b.pullInline(codec.NewRequest(codec.ReqPullMessage)), "no header: the worker answers the error")
}

// A held pull is woken by the send that stored its message and answered with
// it; while the store's dispatcher is idle, before the send returns (on the
// sender's goroutine, no hand-off).
func TestHeldPullWokenBySend(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	b.topics.Update(func() TopicConfig { tc := NewTopicConfig("HW"); tc.ReadQueueNums, tc.WriteQueueNums = 1, 1; return tc }())
	const rounds = 20
	answeredInline := 0
	for i := 0; i < rounds; i++ {
		c := newTestConn(3)
		r, err := b.handlePullMessage(ctx, c, pullReq("G", "HW", 0, int64(i), codec.PullFlagSubscription|codec.PullFlagSuspend, 20000))
		require.NoError(t, err)
		require.Nil(t, r, "held")
		resp, err := b.handleSendMessage(ctx, newTestConn(4), sendReq("HW", 0, []byte{byte('a' + i)}, ""))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code)
		if len(c.responses()) == 1 {
			answeredInline++
		}
		pr := waitResponse(t, c, 1)
		require.EqualValues(t, codec.RespSuccess, pr.Code)
		require.Equal(t, strconv.Itoa(i+1), ext(t, pr, "nextBeginOffset"))
		msgs := decodeBody(t, pr.Body)
		require.Len(t, msgs, 1)
		require.Equal(t, []byte{byte('a' + i)}, msgs[0].Body)
		require.Zero(t, b.HeldPulls())
	}
	// The dispatcher may be busy for an odd round; idle, it is bypassed.
	require.Greater(t, answeredInline, 0)
}
