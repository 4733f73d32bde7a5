package processor

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/store"
)

// laggingStore is the real store with a dispatch position the test sets, and
// optionally a commitlog end far ahead (a cold first message).
type laggingStore struct {
	*store.DefaultStore
	dispatched atomic.Int64 // < 0: caught up (the commitlog end)
	maxPhyAdd  atomic.Int64
}

func (s *laggingStore) DispatchedPhyOffset() int64 {
	if v := s.dispatched.Load(); v >= 0 {
		return v
	}
	return s.MaxPhyOffset()
}

func (s *laggingStore) MaxPhyOffset() int64 {
	return s.DefaultStore.MaxPhyOffset() + s.maxPhyAdd.Load()
}

func newLaggingBroker(t *testing.T) (*Broker, *laggingStore) {
	t.Helper()
	var ls *laggingStore
	tb := newTestBrokerWith(t, nil, nil, func(st *store.DefaultStore) MessageStore {
		ls = &laggingStore{DefaultStore: st}
		ls.dispatched.Store(-1)
		return ls
	})
	return tb.Broker, ls
}

// sendDispatched stores n messages in topic's queue 0 and waits until the
// consume queue holds them.
func sendDispatched(t *testing.T, b *Broker, ls *laggingStore, topic string, n int) {
	t.Helper()
	c := newTestConn(40000)
	for i := 0; i < n; i++ {
		resp, err := b.handleSendMessage(context.Background(), c, sendReq(topic, 0, []byte{'m', byte('0' + i)}, "TAGS\x01t\x02"))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code)
	}
	require.Eventually(t, func() bool { return ls.MaxOffsetInQueue(topic, 0) == int64(n) }, 5*time.Second, time.Millisecond)
}

// A pull without the suspend flag that reaches the end of the consume queue
// while records stored before it arrived are not dispatched yet is answered
// only once they are: the client sees every message acknowledged before its
// pull (e2e PullParamTest.testNormal_simple_receive_multi_nack pulls each queue
// once, right after its sends).
func TestPullWaitsForDispatchOfEarlierRecords(t *testing.T) {
	b, ls := newLaggingBroker(t)
	sendDispatched(t, b, ls, "DispT", 3)
	ls.dispatched.Store(0) // dispatch "behind" everything stored

	c := newTestConn(40001)
	r, err := b.handlePullMessage(context.Background(), c, pullReq("DG", "DispT", 0, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.Nil(t, r)
	time.Sleep(20 * time.Millisecond)
	require.Empty(t, c.responses(), "answered before dispatch caught up")

	ls.dispatched.Store(-1)
	pr := waitResponse(t, c, 1)
	require.EqualValues(t, codec.RespSuccess, pr.Code)
	require.EqualValues(t, 9, pr.Opaque)
	require.Equal(t, "3", ext(t, pr, "nextBeginOffset"))
	require.Len(t, decodeBody(t, pr.Body), 3)
	require.Len(t, c.responses(), 1, "answered once")
}

// The wait is bounded: a dispatcher that never catches up delays the answer by
// maxDispatchWait, and the pull gets what the queue holds.
func TestPullDispatchWaitIsBounded(t *testing.T) {
	b, ls := newLaggingBroker(t)
	sendDispatched(t, b, ls, "StuckT", 2)
	ls.dispatched.Store(0)

	c := newTestConn(40002)
	start := time.Now()
	_, err := b.handlePullMessage(context.Background(), c, pullReq("SG", "StuckT", 0, 2, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	pr := waitResponse(t, c, 1)
	require.GreaterOrEqual(t, time.Since(start), maxDispatchWait)
	require.EqualValues(t, codec.RespPullNotFound, pr.Code, "at the end of the queue")
	require.Equal(t, "2", ext(t, pr, "nextBeginOffset"))
}

// Pulls that do not end at the queue's end, long-polling pulls (the hold
// service wakes them on arrival) and pulls while dispatch is caught up are
// answered at once.
func TestPullDispatchWaitOnlyWhenItCanMatter(t *testing.T) {
	b, ls := newLaggingBroker(t)
	sendDispatched(t, b, ls, "NoWaitT", 3)
	ctx := context.Background()

	// Caught up: answered in the handler.
	c := newTestConn(40003)
	_, err := b.handlePullMessage(ctx, c, pullReq("NG", "NoWaitT", 0, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.Len(t, c.responses(), 1)

	ls.dispatched.Store(0)
	// A batch that stops before the queue's end.
	c = newTestConn(40004)
	req := pullReq("NG", "NoWaitT", 0, 0, codec.PullFlagSubscription, 0)
	req.Ext.Set("maxMsgNums", "1")
	_, err = b.handlePullMessage(ctx, c, req)
	require.NoError(t, err)
	require.Len(t, c.responses(), 1)
	require.Equal(t, "1", ext(t, c.responses()[0], "nextBeginOffset"))

	// A long-polling pull in the middle of the queue.
	c = newTestConn(40005)
	_, err = b.handlePullMessage(ctx, c, pullReq("NG", "NoWaitT", 0, 0, codec.PullFlagSubscription|codec.PullFlagSuspend, 1000))
	require.NoError(t, err)
	require.Len(t, c.responses(), 1)
	require.Len(t, decodeBody(t, c.responses()[0].Body), 3)
}

// A connection that closes while its pull waits gets nothing written.
func TestPullDispatchWaitStopsOnClose(t *testing.T) {
	b, ls := newLaggingBroker(t)
	sendDispatched(t, b, ls, "CloseT", 1)
	ls.dispatched.Store(0)
	c := newTestConn(40006)
	_, err := b.handlePullMessage(context.Background(), c, pullReq("CG", "CloseT", 0, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.NoError(t, c.Close())
	ls.dispatched.Store(-1)
	time.Sleep(50 * time.Millisecond)
	require.Empty(t, c.responses())
}

// GET_MAX_OFFSET counts what was stored before it arrived: it waits (at most
// syncDispatchWait) for dispatch to pass that point.
func TestGetMaxOffsetWaitsForDispatch(t *testing.T) {
	b, ls := newLaggingBroker(t)
	sendDispatched(t, b, ls, "MaxT", 2)
	req := func() *codec.RemotingCommand {
		r := codec.NewRequest(codec.ReqGetMaxOffset)
		r.Ext.Set("topic", "MaxT")
		r.Ext.Set("queueId", "0")
		return r
	}
	c := newTestConn(40003)

	ls.dispatched.Store(0) // behind everything stored
	caughtUp := make(chan struct{})
	go func() {
		defer close(caughtUp)
		time.Sleep(5 * time.Millisecond)
		ls.dispatched.Store(-1)
	}()
	start := time.Now()
	r, err := b.handleGetMaxOffset(context.Background(), c, req())
	require.NoError(t, err)
	require.Equal(t, "2", ext(t, r, "offset"))
	require.GreaterOrEqual(t, time.Since(start), 5*time.Millisecond, "answered before dispatch caught up")
	// On a busy machine the catch-up may come after the first answer's own
	// bounded wait: it must not land in the stuck case below.
	<-caughtUp

	// Stuck dispatch: answered after the bounded wait with what the queue holds.
	ls.dispatched.Store(0)
	start = time.Now()
	r, _ = b.handleGetMaxOffset(context.Background(), c, req())
	require.Equal(t, "2", ext(t, r, "offset"))
	require.GreaterOrEqual(t, time.Since(start), syncDispatchWait)
	require.Less(t, time.Since(start), maxDispatchWait)
}

// dispatchCounter is the real store counting reads of its dispatch progress.
type dispatchCounter struct {
	*store.DefaultStore
	reads atomic.Int32
}

func (s *dispatchCounter) DispatchedPhyOffset() int64 {
	s.reads.Add(1)
	return s.DefaultStore.DispatchedPhyOffset()
}

// In controller mode dispatch stops at the confirm offset, which only replicas
// move: GET_MAX_OFFSET and a pull at the end of the queue answer what is
// confirmed (Java's committed max offset) without waiting for the records past
// it. They polled dispatch until their wait ran out (20 ms, and 1 s for a pull).
func TestDispatchWaitStopsAtTheConfirmOffset(t *testing.T) {
	var dc *dispatchCounter
	tb := newTestBrokerWith(t, nil, nil, func(st *store.DefaultStore) MessageStore {
		dc = &dispatchCounter{DefaultStore: st}
		return dc
	})
	b, st := tb.Broker, tb.st
	ctx := context.Background()
	c := newTestConn(40007)
	send := func() {
		resp, err := b.handleSendMessage(ctx, c, sendReq("ConfT", 0, []byte("m"), ""))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code)
	}
	send()
	require.Eventually(t, func() bool { return st.MaxOffsetInQueue("ConfT", 0) == 1 }, 5*time.Second, time.Millisecond)
	st.SetConfirmOffset(st.MaxPhyOffset())
	st.UseConfirmOffset(true)
	send()
	require.Less(t, st.DispatchedPhyOffset(), st.MaxPhyOffset(), "the second message waits for its replicas")

	dc.reads.Store(0)
	r := codec.NewRequest(codec.ReqGetMaxOffset)
	r.Ext.Set("topic", "ConfT")
	r.Ext.Set("queueId", "0")
	resp, err := b.handleGetMaxOffset(ctx, c, r)
	require.NoError(t, err)
	require.Equal(t, "1", ext(t, resp, "offset"))
	require.LessOrEqual(t, dc.reads.Load(), int32(2), "no polling for unconfirmed records")

	dc.reads.Store(0)
	pc := newTestConn(40008)
	pr, err := b.handlePullMessage(ctx, pc, pullReq("CfG", "ConfT", 0, 1, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.NotNil(t, pr, "answered in the handler")
	require.EqualValues(t, codec.RespPullNotFound, pr.Code)
	require.LessOrEqual(t, dc.reads.Load(), int32(2), "no polling for unconfirmed records")
}
