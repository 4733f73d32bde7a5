package processor

import (
	"context"
	"testing"
	"time"

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
	req := sendReq("AllocT", 0, make([]byte, 128), "TAGS\x01tagA\x02KEYS\x01k1\x02UNIQ_KEY\x01C0A8000100002A9F0000000000000001\x02WAIT\x01true\x02")
	send := testing.AllocsPerRun(500, func() {
		resp, _ := tb.handleSendMessage(ctx, c, req)
		if resp == nil || resp.Code != codec.RespSuccess {
			t.Fatalf("send: %+v", resp)
		}
	})
	// AllocsPerRun counts every goroutine: the store's dispatcher and flusher
	// run alongside, so the bounds allow a stray allocation.
	require.LessOrEqual(t, send, 4.1, "allocations per SEND_MESSAGE")

	deadline := time.Now().Add(5 * time.Second)
	for tb.st.MaxOffsetInQueue("AllocT", 0) < 32 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
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
