package metrics

import (
	"strconv"
	"sync/atomic"
	"time"

	"rmqd/codec"
	"rmqd/processor"
	"rmqd/processor/stats"
	"rmqd/remoting"
)

// rpcBoundsMs are RemotingMetricsManager's rocketmq_rpc_latency buckets.
var rpcBoundsMs = [...]float64{1, 3, 5, 7, 10, 100, 1000, 2000, 3000}

var descRPCLatency = newDesc("rocketmq_rpc_latency_milliseconds", "Rpc latency", typeHistogram,
	"protocol_type", "request_code", "response_code", "is_long_polling", "result")

type rpcKey struct {
	req, resp   int32
	oneway      bool
	longPolling bool // the pull was held (is_long_polling)
	failed      bool // the answer could not be written (write_channel_failed)
}

// rpcSeries is one label set's histogram, kept in atomics.
type rpcSeries struct {
	counts [len(rpcBoundsMs) + 1]atomic.Uint64
	sumUs  atomic.Int64 // microseconds, so sub-millisecond requests add up
}

// rpcLatency keeps series in a copy-on-write map (stats.COWMap): a request
// finds its series with one atomic load and a map lookup; only a new code pair
// takes the lock.
type rpcLatency struct {
	series stats.COWMap[rpcKey, rpcSeries]
}

func newRPCLatency() *rpcLatency { return &rpcLatency{} }

func (l *rpcLatency) get(k rpcKey) *rpcSeries {
	return l.series.Get(k, func(k rpcKey) rpcKey { return k }, func() *rpcSeries { return &rpcSeries{} })
}

func (l *rpcLatency) observe(k rpcKey, d time.Duration) {
	s := l.get(k)
	ms := float64(d) / float64(time.Millisecond)
	i := 0
	for i < len(rpcBoundsMs) && ms > rpcBoundsMs[i] {
		i++
	}
	s.counts[i].Add(1)
	s.sumUs.Add(d.Microseconds())
}

func (l *rpcLatency) collect(out *sink) {
	l.series.Range(func(k rpcKey, s *rpcSeries) {
		cum := make([]uint64, len(rpcBoundsMs))
		var n uint64
		for i := range rpcBoundsMs {
			n += s.counts[i].Load()
			cum[i] = n
		}
		n += s.counts[len(rpcBoundsMs)].Load()
		result := "success"
		switch {
		case k.oneway:
			result = "oneway"
		case k.failed:
			result = "write_channel_failed"
		}
		out.histogram(descRPCLatency, rpcBoundsMs[:], cum, n, float64(s.sumUs.Load())/1000,
			"remoting", codeName(requestCodeNames, k.req), codeName(responseCodeNames, k.resp),
			strconv.FormatBool(k.longPolling), result)
	})
}

// codeName is RemotingHelper.getRequestCodeDesc / getResponseCodeDesc.
func codeName(names map[int32]string, code int32) string {
	if n, ok := names[code]; ok {
		return n
	}
	return strconv.Itoa(int(code))
}

// RPCHook times requests for rocketmq_rpc_latency: those answered by their
// handler's return as a remoting.RPCTimer, those answered later (pulls, held
// pulls, SYNC_FLUSH puts) as the broker's processor.DeferredRPCObserver.
type RPCHook struct{ l *rpcLatency }

var (
	_ remoting.RPCHook              = (*RPCHook)(nil)
	_ remoting.RPCTimer             = (*RPCHook)(nil)
	_ processor.DeferredRPCObserver = (*RPCHook)(nil)
)

// Before lets every request through.
func (h *RPCHook) Before(remoting.Conn, *codec.RemotingCommand) *codec.RemotingCommand { return nil }

// After does nothing; Timed records.
func (h *RPCHook) After(remoting.Conn, *codec.RemotingCommand, *codec.RemotingCommand) {}

// Timed records one answered request. Requests answered later come with a nil
// resp and are left to ObserveDeferred, so each is counted once.
func (h *RPCHook) Timed(_ remoting.Conn, req, resp *codec.RemotingCommand, elapsed time.Duration) {
	if resp == nil {
		return
	}
	h.l.observe(rpcKey{req: req.Code, resp: resp.Code, oneway: req.IsOneway()}, elapsed)
}

// ObserveDeferred records a request the broker answered after its handler
// returned, with the code it was answered and whether it had been held.
func (h *RPCHook) ObserveDeferred(reqCode, respCode int32, elapsed time.Duration, longPolling, written bool) {
	h.l.observe(rpcKey{req: reqCode, resp: respCode, longPolling: longPolling, failed: !written}, elapsed)
}
