package processor

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// The paths added after TestSendAndPullAllocationBudget held to theirs, as
// counted when this test was written. A BatchCQ topic costs what a plain one
// does (send 2, pull of 32 3), an inner batch one more (the batch's rewritten
// properties); a static topic's send and pull one more each for Java's
// TopicQueueMappingContext, its pull one more for the rewritten request.
func TestNewPathsAllocationBudget(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	tb := newTestBroker(t, nil)
	c := newTestConn(1)
	ctx := context.Background()
	resp := updateTopicAttrs(t, tb, "AllocB", "+queue.type=BatchCQ")
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	bn := tb.conf().BrokerName
	detail := fmt.Sprintf(`{"bname":%q,"currIdMap":{},"dirty":false,"epoch":100,"hostedQueues":{1:[%s],3:[%s]},"scope":"__global__","topic":"AllocS","totalQueues":4}`,
		bn, item(0, 0, bn, 0), item(0, 1, bn, 0))
	resp, err := tb.handleUpdateAndCreateStaticTopic(ctx, c, staticTopicReq("AllocS", 2, detail))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)

	// AllocsPerRun counts every goroutine: the store's dispatcher and flusher
	// run alongside, so each bound allows a stray allocation.
	sends := []struct {
		name string
		req  *codec.RemotingCommand
		max  float64
	}{
		{"BatchCQ send", sendReq("AllocB", 0, make([]byte, 128), clientSendProps), 2.1},
		{"inner batch send", batchSendReq("AllocB", 1, 0, 4, "UNIQ_KEY\x01B\x02"), 3.1},
		{"static send", sendReq("AllocS", 3, make([]byte, 128), clientSendProps), 3.1},
	}
	for _, s := range sends {
		n := leastAllocs(func() {
			resp, _ := tb.handleSendMessage(ctx, c, s.req)
			if resp == nil || resp.Code != codec.RespSuccess {
				t.Fatalf("%s: %+v", s.name, resp)
			}
		})
		require.LessOrEqual(t, n, s.max, "allocations per %s", s.name)
	}

	waitQueued(tb, "AllocB", 32)
	pulls := []struct {
		name  string
		queue int32
		topic string
		max   float64
	}{
		{"BatchCQ pull of 32", 0, "AllocB", 3.1},
		{"BatchCQ pull of 8 inner batches", 1, "AllocB", 3.1},
		{"static pull of 32", 3, "AllocS", 5.1},
	}
	for _, p := range pulls {
		preq := pullReq("G", p.topic, p.queue, 0, codec.PullFlagSubscription, 0)
		sink := &discardConn{testConn: newTestConn(2)}
		n := leastAllocs(func() {
			if _, err := tb.handlePullMessage(ctx, sink, preq); err != nil {
				t.Fatal(err)
			}
		})
		require.Positive(t, sink.n, "%s: nothing pulled", p.name)
		require.LessOrEqual(t, n, p.max, "allocations per %s", p.name)
	}
}
