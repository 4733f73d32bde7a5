package processor

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/remoting"
)

// rpcRecord is one timed request, from the remoting hook or the broker.
type rpcRecord struct {
	req, resp   int32
	elapsed     time.Duration
	longPolling bool
	written     bool
	deferred    bool // reported by the broker, not by the hook
}

// rpcRecorder is what the metrics exporter is to the broker: an RPC hook that
// times requests answered by their handler's return and the observer of those
// answered later.
type rpcRecorder struct {
	mu  sync.Mutex
	all []rpcRecord
}

func (r *rpcRecorder) Before(remoting.Conn, *codec.RemotingCommand) *codec.RemotingCommand {
	return nil
}
func (r *rpcRecorder) After(remoting.Conn, *codec.RemotingCommand, *codec.RemotingCommand) {}

func (r *rpcRecorder) Timed(_ remoting.Conn, req, resp *codec.RemotingCommand, d time.Duration) {
	if resp == nil { // answered later: the broker reports it
		return
	}
	r.mu.Lock()
	r.all = append(r.all, rpcRecord{req: req.Code, resp: resp.Code, elapsed: d, written: true})
	r.mu.Unlock()
}

func (r *rpcRecorder) ObserveDeferred(req, resp int32, d time.Duration, longPolling, written bool) {
	r.mu.Lock()
	r.all = append(r.all, rpcRecord{req: req, resp: resp, elapsed: d, longPolling: longPolling, written: written, deferred: true})
	r.mu.Unlock()
}

// pulls returns the PULL_MESSAGE records so far.
func (r *rpcRecorder) pulls() []rpcRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []rpcRecord
	for _, x := range r.all {
		if x.req == codec.ReqPullMessage {
			out = append(out, x)
		}
	}
	return out
}

// waitPulls returns the PULL_MESSAGE records once there are n: a request
// answered later is reported just after its answer was written, so the client
// may have it first.
func (r *rpcRecorder) waitPulls(t *testing.T, n int) []rpcRecord {
	t.Helper()
	for i := 0; ; i++ {
		ps := r.pulls()
		if len(ps) >= n || i == 500 {
			require.Len(t, ps, n, "each pull is timed once: %+v", ps)
			return ps
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Over a real connection, each pull is timed exactly once with the code it
// was answered: a held pull woken by a message as SUCCESS with
// is_long_polling and the time it was held, a held pull that expires as
// PULL_NOT_FOUND, a pull that finds messages at once (written with its store
// bytes after the handler) as SUCCESS without long polling, a refused pull by
// the hook.
func TestPullLatencyRecordedOnceWithRealCode(t *testing.T) {
	b := newTestBroker(t, nil)
	b.topics.Update(func() TopicConfig { tc := NewTopicConfig("LT"); tc.ReadQueueNums, tc.WriteQueueNums = 1, 1; return tc }())
	rec := &rpcRecorder{}
	b.SetDeferredRPCObserver(rec)
	srv := remoting.NewServer(remoting.ServerConfig{Addr: "127.0.0.1:0", Logger: quietLog()})
	b.Register(srv)
	srv.AddRPCHook(rec)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // every call below is bounded
	defer cancel()
	require.NoError(t, srv.Start(context.Background()))
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	cli := remoting.NewClient(remoting.ClientConfig{Logger: quietLog()})
	t.Cleanup(func() { _ = cli.Close() })
	addr := srv.Addr().String()

	// A held pull, answered when a message arrives.
	type answer struct {
		resp *codec.RemotingCommand
		err  error
	}
	got := make(chan answer, 1)
	require.NoError(t, cli.InvokeAsync(ctx, addr, pullReq("G", "LT", 0, 0, codec.PullFlagSubscription|codec.PullFlagSuspend, 20000),
		func(r *codec.RemotingCommand, err error) { got <- answer{r, err} }))
	for i := 0; b.HeldPulls() == 0; i++ {
		require.Less(t, i, 1000, "the pull was never held")
		time.Sleep(10 * time.Millisecond)
	}
	const heldFor = 50 * time.Millisecond
	time.Sleep(heldFor)
	sresp, err := cli.InvokeSync(ctx, addr, sendReq("LT", 0, []byte("wake"), ""))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, sresp.Code)
	var a answer
	select {
	case a = <-got:
	case <-ctx.Done():
		t.Fatal("the held pull was never answered")
	}
	require.NoError(t, a.err)
	require.EqualValues(t, codec.RespSuccess, a.resp.Code)
	ps := rec.waitPulls(t, 1)
	require.Equal(t, rpcRecord{req: codec.ReqPullMessage, resp: codec.RespSuccess, longPolling: true, written: true,
		deferred: true, elapsed: ps[0].elapsed}, ps[0])
	require.GreaterOrEqual(t, ps[0].elapsed, heldFor, "timed from the pull's arrival, not from its wake-up")

	// A pull that finds the message at once: written with its bodies, no long polling.
	presp, err := cli.InvokeSync(ctx, addr, pullReq("G", "LT", 0, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, presp.Code)
	ps = rec.waitPulls(t, 2)
	require.Equal(t, rpcRecord{req: codec.ReqPullMessage, resp: codec.RespSuccess, written: true, deferred: true,
		elapsed: ps[1].elapsed}, ps[1])

	// A held pull that expires with nothing to read.
	presp, err = cli.InvokeSync(ctx, addr, pullReq("G", "LT", 0, 1, codec.PullFlagSubscription|codec.PullFlagSuspend, 100))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespPullNotFound, presp.Code)
	ps = rec.waitPulls(t, 3)
	require.Equal(t, rpcRecord{req: codec.ReqPullMessage, resp: codec.RespPullNotFound, longPolling: true, written: true,
		deferred: true, elapsed: ps[2].elapsed}, ps[2])
	require.GreaterOrEqual(t, ps[2].elapsed, 100*time.Millisecond)

	// A refused pull, answered by the handler's return: the hook times it.
	presp, err = cli.InvokeSync(ctx, addr, pullReq("G", "NoSuchTopic", 0, 0, codec.PullFlagSubscription|codec.PullFlagSuspend, 20000))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespTopicNotExist, presp.Code)
	ps = rec.waitPulls(t, 4)
	require.Equal(t, rpcRecord{req: codec.ReqPullMessage, resp: codec.RespTopicNotExist, written: true,
		elapsed: ps[3].elapsed}, ps[3])
}
