package processor

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/store"
)

// newDeliveryBenchBroker is newTestBroker with commitlog files large enough
// for a million messages.
func newDeliveryBenchBroker(tb testing.TB, mod func(*BrokerConfig)) *testBroker {
	tb.Helper()
	cfg := testConfig(tb)
	if mod != nil {
		mod(&cfg)
	}
	scfg := store.DefaultConfig()
	scfg.StorePathRootDir = cfg.Store.StorePathRootDir
	scfg.MappedFileSizeCommitLog = 256 << 20
	st, err := store.Open(scfg, quietLog())
	require.NoError(tb, err)
	require.NoError(tb, st.Start())
	b, err := NewBroker(cfg, st, quietLog())
	require.NoError(tb, err)
	require.NoError(tb, b.Start(context.Background()))
	tb.Cleanup(func() {
		require.NoError(tb, b.Shutdown())
		require.NoError(tb, st.Shutdown())
	})
	return &testBroker{Broker: b, st: st}
}

// sendTimer stores one timer message for topic with an absolute deliver time.
func sendTimer(tb testing.TB, b *testBroker, c *testConn, topic string, q int32, deliver int64) {
	r, err := b.handleSendMessage(context.Background(), c, sendReq(topic, q, []byte("timer-body-0123456789"),
		"TIMER_DELIVER_MS\x01"+strconv.FormatInt(deliver, 10)+"\x02"))
	if err != nil || r.Code != codec.RespSuccess {
		tb.Fatalf("send: %v %v", err, r)
	}
}

func totalInTopic(b *testBroker, topic string) int64 {
	var n int64
	for q := int32(0); q < 4; q++ {
		n += max(b.st.MaxOffsetInQueue(topic, q), 0)
	}
	return n
}

// BenchmarkTimerScheduleDeliver: timer messages scheduled then delivered per
// second (the wheel is driven with a clock past every deliver time).
func BenchmarkTimerScheduleDeliver(bm *testing.B) {
	b := newDeliveryBenchBroker(bm, nil)
	c := newTestConn(1)
	deliver := time.Now().Add(2 * time.Second).UnixMilli()
	bm.ResetTimer()
	for i := 0; i < bm.N; i++ {
		sendTimer(bm, b, c, "TimerBench", int32(i&3), deliver)
	}
	for totalInTopic(b, "TimerBench") < int64(bm.N) {
		b.timer.StepAt(context.Background(), deliver+10_000)
		time.Sleep(time.Millisecond) // let dispatch catch up rather than spin on empty reads
	}
	bm.ReportMetric(float64(bm.N)/bm.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkDelayLevelScheduleDeliver: delay-level-1 (1 s) messages scheduled
// and delivered per second, the 1 s wait included (amortised over b.N).
func BenchmarkDelayLevelScheduleDeliver(bm *testing.B) {
	b := newDeliveryBenchBroker(bm, func(c *BrokerConfig) { c.Store.MessageDelayLevel = "1s" })
	c := newTestConn(1)
	bm.ResetTimer()
	for i := 0; i < bm.N; i++ {
		r, err := b.handleSendMessage(context.Background(), c, sendReq("DelayBench", int32(i&3), []byte("delay-body-0123456789"), "DELAY\x011\x02"))
		if err != nil || r.Code != codec.RespSuccess {
			bm.Fatalf("send: %v %v", err, r)
		}
	}
	deadline := time.Now().Add(5 * time.Minute)
	for totalInTopic(b, "DelayBench") < int64(bm.N) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	bm.ReportMetric(float64(bm.N)/bm.Elapsed().Seconds(), "msgs/s")
}

func rssKB() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(data)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return -1
}

// TestTimerMillionPending puts RMQD_TIMER_PENDING (e.g. 1000000) timer
// messages due 90-120 s later, then reports memory with all of them pending
// and the delivery lateness (store time minus TIMER_DELIVER_MS) percentiles.
// Off by default so `make test` stays fast.
func TestTimerMillionPending(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("RMQD_TIMER_PENDING"))
	if n <= 0 {
		t.Skip("set RMQD_TIMER_PENDING=1000000 to run")
	}
	b := newDeliveryBenchBroker(t, nil)
	c := newTestConn(1)
	runtime.GC()
	var ms0 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	rss0 := rssKB()
	start := time.Now()
	base := start.Add(90 * time.Second).UnixMilli()
	for i := 0; i < n; i++ {
		sendTimer(t, b, c, "TimerMillion", int32(i&3), base+int64(i%30_000))
	}
	sendDur := time.Since(start)
	require.Eventually(t, func() bool { return b.timer.PendingCount() == n }, 90*time.Second, 50*time.Millisecond)
	loadDur := time.Since(start)
	runtime.GC()
	var ms1 runtime.MemStats
	runtime.ReadMemStats(&ms1)
	rss1 := rssKB()
	require.Eventually(t, func() bool { return totalInTopic(b, "TimerMillion") == int64(n) }, 3*time.Minute, 200*time.Millisecond)

	late := make([]int64, 0, n)
	slotLate := make([]int64, 0, n) // against the slot's due time (TIMER_OUT_MS + precision)
	var m codec.Message
	for q := int32(0); q < 4; q++ {
		for off := int64(0); ; {
			res := b.st.GetMessage("G_bench", "TimerMillion", q, off, 32, 1<<20, nil)
			if res.Status != store.GetFound {
				res.Release()
				break
			}
			for _, rec := range res.Records {
				_, err := codec.DecodeRecord(rec, &m)
				require.NoError(t, err)
				want, _ := codec.PropertyValue(m.Properties, codec.PropTimerDeliverMs)
				w, _ := strconv.ParseInt(want, 10, 64)
				late = append(late, m.StoreTimestamp-w)
				slot, _ := codec.PropertyValue(m.Properties, codec.PropTimerOutMs)
				sl, _ := strconv.ParseInt(slot, 10, 64)
				slotLate = append(slotLate, m.StoreTimestamp-(sl+1000)) // the slot is due one precision (1 s) after its second
			}
			off = res.NextBeginOffset
			res.Release()
		}
	}
	require.Len(t, late, n)
	slices.Sort(late)
	slices.Sort(slotLate)
	pct := func(p float64) int64 { return late[min(len(late)-1, int(p*float64(len(late))))] }
	spct := func(p float64) int64 { return slotLate[min(len(slotLate)-1, int(p*float64(len(slotLate))))] }
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("TIMER-PENDING n=%d send=%s (%.0f msg/s) loaded=%s heapInuse+%.1fMiB rss+%.1fMiB (rss %d KiB) "+
		"lateness_ms p50=%d p90=%d p99=%d p999=%d max=%d min=%d slot_lateness_ms p50=%d p99=%d max=%d loadavg=%s\n",
		n, sendDur.Round(time.Millisecond), float64(n)/sendDur.Seconds(), loadDur.Round(time.Millisecond),
		float64(int64(ms1.HeapInuse)-int64(ms0.HeapInuse))/(1<<20), float64(rss1-rss0)/1024, rss1,
		pct(0.5), pct(0.9), pct(0.99), pct(0.999), late[len(late)-1], late[0], spct(0.5), spct(0.99), slotLate[len(slotLate)-1], strings.TrimSpace(string(load)))
}
