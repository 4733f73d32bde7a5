package processor

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/remoting"
	"rmqd/store"
)

func TestPullInlinePicksReadsThatCannotBlock(t *testing.T) {
	tb := newTestBroker(t, nil)
	c := newTestConn(1)
	for i := 0; i < 10; i++ {
		tb.handleSendMessage(context.Background(), c, sendReq("InlineT", 0, []byte("x"), "TAGS\x01a\x02"))
	}
	waitQueued(tb, "InlineT", 10)
	sub := codec.PullFlagSubscription
	suspend := sub | codec.PullFlagSuspend
	require.False(t, tb.pullInline(pullReq("G", "InlineT", 0, 0, suspend, 1000)),
		"an unknown group: created and written to disk on a worker")
	_, ok := tb.groups.Find("G")
	require.True(t, ok)
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

	// A static topic's logical queue may be read from another broker: never
	// on the loop; a forwarded (lo=false) pull is an ordinary one.
	bn := tb.conf().BrokerName
	resp, _ := tb.handleUpdateAndCreateStaticTopic(context.Background(), c, staticTopicReq("InlineT", 1,
		`{"bname":"`+bn+`","epoch":1,"hostedQueues":{0:[`+item(0, 0, bn, 0)+`]},"topic":"InlineT","totalQueues":1}`))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.False(t, tb.pullInline(pullReq("G", "InlineT", 0, 0, suspend, 1000)), "a static topic's logical queue")
	fwd := pullReq("G", "InlineT", 0, 0, suspend, 1000)
	fwd.Ext.Set("lo", "false")
	require.True(t, tb.pullInline(fwd), "a forwarded pull of a physical queue")
}

// readCounter counts the store reads of each kind.
type readCounter struct {
	*store.DefaultStore
	plain, onLoop atomic.Int32
}

func (r *readCounter) GetMessage(group, topic string, queueID int32, offset int64, maxMsgNums, maxTotalBytes int32, f store.MessageFilter) *store.GetResult {
	r.plain.Add(1)
	return r.DefaultStore.GetMessage(group, topic, queueID, offset, maxMsgNums, maxTotalBytes, f)
}

func (r *readCounter) GetMessageOnLoop(topic string, queueID int32, offset int64, maxMsgNums, maxTotalBytes int32, f store.MessageFilter) *store.GetResult {
	r.onLoop.Add(1)
	return r.DefaultStore.GetMessageOnLoop(topic, queueID, offset, maxMsgNums, maxTotalBytes, f)
}

// A pull on the event loop reads without touching the pages first (the loop
// writes them itself); one on a worker touches them, off the loop.
func TestPullOnLoopSkipsTheTouch(t *testing.T) {
	var rc *readCounter
	tb := newTestBrokerWith(t, nil, nil, func(st *store.DefaultStore) MessageStore {
		rc = &readCounter{DefaultStore: st}
		return rc
	})
	c := newTestConn(1)
	for range 4 {
		tb.handleSendMessage(context.Background(), c, sendReq("LoopT", 0, []byte("x"), "TAGS\x01a\x02"))
	}
	waitQueued(tb, "LoopT", 4)
	sub := codec.PullFlagSubscription
	found := func(resp *codec.RemotingCommand, err error) {
		t.Helper()
		require.NoError(t, err)
		require.Nil(t, resp, "a pull that found messages writes its answer itself")
		rs := c.responses()
		require.NotEmpty(t, rs)
		require.Equal(t, codec.RespSuccess, rs[len(rs)-1].Code)
		require.NotEmpty(t, rs[len(rs)-1].Body)
	}
	found(tb.handlePullMessage(remoting.LoopContext(context.Background()), c, pullReq("G", "LoopT", 0, 0, sub, 0)))
	require.Equal(t, int32(1), rc.onLoop.Load())
	require.Equal(t, int32(0), rc.plain.Load())

	found(tb.handlePullMessage(context.Background(), c, pullReq("G", "LoopT", 0, 2, sub, 0)))
	require.Equal(t, int32(1), rc.onLoop.Load())
	require.Equal(t, int32(1), rc.plain.Load())
}
