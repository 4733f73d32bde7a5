package processor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// Past maxHeldPullRequests a pull that finds nothing is answered
// PULL_NOT_FOUND at once instead of being held; the held ones still wake.
func TestHeldPullsBounded(t *testing.T) {
	b := newTestBroker(t, nil)
	b.SetMaxHeldPulls(3)
	ctx := context.Background()
	b.topics.Update(func() TopicConfig { tc := NewTopicConfig("HB"); tc.ReadQueueNums, tc.WriteQueueNums = 1, 1; return tc }())

	held := newTestConn(3)
	for i := 0; i < 3; i++ {
		r, err := b.handlePullMessage(ctx, held, pullReq("G", "HB", 0, 0, codec.PullFlagSubscription|codec.PullFlagSuspend, 20000))
		require.NoError(t, err)
		require.Nil(t, r)
	}
	require.Equal(t, 3, b.HeldPulls())

	over := newTestConn(5)
	r, err := b.handlePullMessage(ctx, over, pullReq("G", "HB", 0, 0, codec.PullFlagSubscription|codec.PullFlagSuspend, 20000))
	require.NoError(t, err)
	require.Nil(t, r)
	pr := waitResponse(t, over, 1)
	require.EqualValues(t, codec.RespPullNotFound, pr.Code)
	require.Equal(t, "0", ext(t, pr, "nextBeginOffset"))
	require.Equal(t, 3, b.HeldPulls())

	resp, err := b.handleSendMessage(ctx, newTestConn(4), sendReq("HB", 0, []byte("wake"), ""))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	for i := 1; i <= 3; i++ {
		require.EqualValues(t, codec.RespSuccess, waitResponse(t, held, i).Code)
	}
	require.Zero(t, b.HeldPulls())
}

// panicFilter stands for a filter with a bug.
type panicFilter struct{}

func (panicFilter) MatchTagsCode(int64) bool { panic("filter bug") }
func (panicFilter) MatchRecord([]byte) bool  { panic("filter bug") }

// A held pull whose filter panics, on the store's notification and again when
// re-run, is answered SYSTEM_ERROR; the broker goes on serving.
func TestHeldPullPanicIsAnswered(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	b.topics.Update(func() TopicConfig { tc := NewTopicConfig("HP"); tc.ReadQueueNums, tc.WriteQueueNums = 1, 1; return tc }())
	var h codec.PullMessageRequestHeader
	err := h.Decode(pullReq("G", "HP", 0, 0, codec.PullFlagSubscription|codec.PullFlagSuspend, 20000).Ext)
	require.NoError(t, err)
	h.CloneStrings()
	c := newTestConn(3)
	b.hold.suspend(&heldPull{conn: c, header: h, reply: pullReply{opaque: 9}, filter: panicFilter{},
		deadline: time.Now().Add(20 * time.Second)})
	resp, err := b.handleSendMessage(ctx, newTestConn(4), sendReq("HP", 0, []byte("x"), ""))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	pr := waitResponse(t, c, 1)
	require.EqualValues(t, codec.RespSystemError, pr.Code)
	require.EqualValues(t, 9, pr.Opaque)

	// Still serving, and the same queue's other pulls still wake.
	other := newTestConn(6)
	r, err := b.handlePullMessage(ctx, other, pullReq("G", "HP", 0, 1, codec.PullFlagSubscription|codec.PullFlagSuspend, 20000))
	require.NoError(t, err)
	require.Nil(t, r)
	_, err = b.handleSendMessage(ctx, newTestConn(4), sendReq("HP", 0, []byte("y"), ""))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, waitResponse(t, other, 1).Code)
}

// Only an SQL92 filter keeps a woken pull off its connection's event loop: a
// tag subscription (which compiles to the same Expression type) stays on it.
// The check once asked for the propsMatcher interface, which every compiled
// filter has, and sent every woken pull to a goroutine of its own.
func TestWokenPullOffLoopOnlyForSQL92(t *testing.T) {
	b := newTestBroker(t, nil)
	for _, c := range []struct {
		typ, expr string
		off       bool
	}{
		{"", "", false},
		{exprTag, "*", false},
		{exprTag, "a || b", false},
		{exprSQL92, "a > 1", true},
	} {
		f, err := b.newMessageFilter(&codec.SubscriptionData{ExpressionType: c.typ, SubString: c.expr})
		require.NoError(t, err)
		require.Equal(t, c.off, evaluatesProperties(f), "%s %q", c.typ, c.expr)
	}
	require.False(t, evaluatesProperties(nil))
}
