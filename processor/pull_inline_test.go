package processor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

func TestPullInlinePicksReadsThatCannotBlock(t *testing.T) {
	tb := newTestBroker(t, nil)
	c := newTestConn(1)
	for i := 0; i < 10; i++ {
		tb.handleSendMessage(context.Background(), c, sendReq("InlineT", 0, []byte("x"), "TAGS\x01a\x02"))
	}
	deadline := time.Now().Add(5 * time.Second)
	for tb.st.MaxOffsetInQueue("InlineT", 0) < 10 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	sub := codec.PullFlagSubscription
	suspend := sub | codec.PullFlagSuspend
	require.True(t, tb.pullInline(pullReq("G", "InlineT", 0, 0, suspend, 1000)), "a long poll of stored messages")
	require.True(t, tb.pullInline(pullReq("G", "InlineT", 0, 10, suspend, 1000)), "a caught-up long poll: held, no read")
	require.True(t, tb.pullInline(pullReq("G", "InlineT", 0, 3, sub, 0)), "a plain pull with messages to return")
	require.False(t, tb.pullInline(pullReq("G", "InlineT", 0, 10, sub, 0)),
		"a plain pull at the end may wait for the dispatcher")

	tagged := pullReq("G", "InlineT", 0, 0, suspend, 1000)
	tagged.Ext.Set("subscription", "a || b")
	require.False(t, tb.pullInline(tagged), "a tag filter may scan many units")
	sql := pullReq("G", "InlineT", 0, 0, suspend, 1000)
	sql.Ext.Set("expressionType", "SQL92")
	sql.Ext.Set("subscription", "a > 1")
	require.False(t, tb.pullInline(sql), "an SQL92 filter may scan many records")
	noSub := pullReq("G", "InlineT", 0, 0, codec.PullFlagSuspend, 1000)
	require.False(t, tb.pullInline(noSub), "no subscription sent and none from heartbeats")
}
