package processor

import (
	"context"
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// The send and pull handlers' allocations per request, as counted when this
// test was written; a change that adds one fails here instead of in a profile.
// Send (0): the answer (response, header, message id and the rewritten
// properties together) comes from a pool, and goes back when remoting
// releases it after the write, as the test does. Pull of 32 (2): the store's
// result and its record slice (the answer is pooled, released after the
// write); a caught-up pull of one (1) keeps its record inside the result.
func TestSendAndPullAllocationBudget(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	tb := newTestBroker(t, nil)
	c := newTestConn(1)
	ctx := context.Background()
	req := sendReq("AllocT", 0, make([]byte, 128), clientSendProps)
	send := leastAllocs(func() {
		resp, _ := tb.handleSendMessage(ctx, c, req)
		if resp == nil || resp.Code != codec.RespSuccess || resp.Recycler == nil {
			t.Fatalf("send: %+v", resp)
		}
		resp.Release()
	})
	// AllocsPerRun counts every goroutine: the store's dispatcher and flusher
	// run alongside, so the bounds allow a stray allocation.
	require.LessOrEqual(t, send, 0.1, "allocations per SEND_MESSAGE")

	waitQueued(tb, "AllocT", 32)
	preq := pullReq("G", "AllocT", 0, 0, codec.PullFlagSubscription, 0)
	sink := &discardConn{testConn: newTestConn(2)}
	pull := leastAllocs(func() {
		if _, err := tb.handlePullMessage(ctx, sink, preq); err != nil {
			t.Fatal(err)
		}
	})
	require.Positive(t, sink.n, "nothing pulled")
	require.LessOrEqual(t, pull, 2.1, "allocations per PULL_MESSAGE of 32")

	last := tb.store.MaxOffsetInQueue("AllocT", 0) - 1
	preq = pullReq("G", "AllocT", 0, last, codec.PullFlagSubscription, 0)
	sink.n = 0
	pull = leastAllocs(func() {
		if _, err := tb.handlePullMessage(ctx, sink, preq); err != nil {
			t.Fatal(err)
		}
	})
	calls := leastAllocsWarmup + 3*501
	t.Logf("pull at %d: %d records a pull", last, sink.n/calls)
	require.Equal(t, calls, sink.n, "one record a pull (warm-up and three runs of 501 calls)")
	require.LessOrEqual(t, pull, 1.1, "allocations per PULL_MESSAGE of the last one")
}

// TestPopAndAckAllocationBudget holds POP_MESSAGE and ACK_MESSAGE to their
// counts when this test was written. Pop of 32 (28): the response, its
// header and offset infos, the checkpoint record, the store's result. Ack (7):
// the response, the header's strings, the ack record's body, its UNIQ_KEY,
// the message and its properties (twice: as written, then parked in the
// timer wheel).
func TestPopAndAckAllocationBudget(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	r := newPopAckRig(t, "AllocPop")
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const pops = 20
	var ms runtime.MemStats
	// Mallocs counts the whole process: the store's dispatcher, flusher and
	// timers allocate now and then beside the handler, so the least of three
	// rounds is the POP's own figure.
	best := math.Inf(1)
	for round := 0; round < 3; round++ {
		var mallocs uint64
		for i := -2; i < pops; i++ { // two pops first: the group, its lock and offsets come into being
			r.fill(t, 32)
			req := r.popReq()
			runtime.ReadMemStats(&ms)
			before := ms.Mallocs
			resp := r.call(t, req)
			runtime.ReadMemStats(&ms)
			if i >= 0 {
				mallocs += ms.Mallocs - before
			}
			require.Equal(t, 32, r.prepareAcks(t, resp), "popped")
		}
		best = min(best, float64(mallocs)/pops)
	}
	t.Logf("%.1f allocations per POP_MESSAGE of 32", best)
	require.LessOrEqual(t, best, 30.0, "allocations per POP_MESSAGE of 32")

	ack := r.acks[0]
	perAck := leastAllocs(func() {
		if resp := r.call(t, ack); resp.Code != codec.RespSuccess {
			t.Fatalf("ack: %d %s", resp.Code, resp.Remark)
		}
	})
	// The store's dispatcher and flusher run alongside, as in the send budget.
	t.Logf("%.1f allocations per ACK_MESSAGE", perAck)
	require.LessOrEqual(t, perAck, 7.1, "allocations per ACK_MESSAGE")
}

// leastAllocsWarmup calls come before leastAllocs counts.
const leastAllocsWarmup = 200

// leastAllocs is the least of three testing.AllocsPerRun(500, f). A run
// counts every goroutine's allocations: a store service or a pool refilled
// after a GC can add a whole one per call to a run while the package's other
// tests load the machine, never to all three.
func leastAllocs(f func()) float64 {
	// Past the first hundred offsets: strconv hands out cached strings below
	// 100, which once hid an allocation that every later message paid.
	for range leastAllocsWarmup {
		f()
	}
	least := testing.AllocsPerRun(500, f)
	for range 2 {
		least = min(least, testing.AllocsPerRun(500, f))
	}
	return least
}
