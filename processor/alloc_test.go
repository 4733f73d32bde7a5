package processor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// The send and pull handlers' allocations per request, as counted when this
// test was written; a change that adds one fails here instead of in a profile.
// Send: the response, its header, the offset message id and the rewritten
// properties string. Pull of 32: the response, its header, the store's result
// and its record slices.
func TestSendAndPullAllocationBudget(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	tb := newTestBroker(t, nil)
	c := newTestConn(1)
	ctx := context.Background()
	req := sendReq("AllocT", 0, make([]byte, 128), clientSendProps)
	send := testing.AllocsPerRun(500, func() {
		resp, _ := tb.handleSendMessage(ctx, c, req)
		if resp == nil || resp.Code != codec.RespSuccess {
			t.Fatalf("send: %+v", resp)
		}
	})
	// AllocsPerRun counts every goroutine: the store's dispatcher and flusher
	// run alongside, so the bounds allow a stray allocation.
	require.LessOrEqual(t, send, 4.1, "allocations per SEND_MESSAGE")

	waitQueued(tb, "AllocT", 32)
	preq := pullReq("G", "AllocT", 0, 0, codec.PullFlagSubscription, 0)
	sink := &discardConn{testConn: newTestConn(2)}
	pull := testing.AllocsPerRun(500, func() {
		if _, err := tb.handlePullMessage(ctx, sink, preq); err != nil {
			t.Fatal(err)
		}
	})
	require.Positive(t, sink.n, "nothing pulled")
	require.LessOrEqual(t, pull, 6.1, "allocations per PULL_MESSAGE of 32")
}
