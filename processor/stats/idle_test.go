package stats

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// firstRate is the 10 s figure of a "10s 60s 600s" triple, -1 while unknown.
func firstRate(triple string) float64 {
	v, err := strconv.ParseFloat(strings.Fields(triple + " x")[0], 64)
	if err != nil {
		return -1
	}
	return v
}

// After an idle spell the sampler sleeps; a put wakes it and the put rate
// is reported.
func TestBrokerSamplerReportsRateAfterIdle(t *testing.T) {
	var s Broker
	for i := 12; i > 0; i-- { // a broker up for a while: the 10 s rate is known
		s.Sample(time.Now().Add(-time.Duration(i) * time.Second))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	sys := func(string) bool { return false }
	require.Eventually(t, s.nap.sleeping.Load, 10*time.Second, 5*time.Millisecond, "the sampler never slept")
	time.Sleep(1500 * time.Millisecond) // seconds the sampler skips
	s.CountPut("T", 50, 500, sys)
	s.CountGet("G", "T", 20, 200, sys)
	require.Eventually(t, func() bool {
		tb := map[string]string{}
		s.Runtime(tb)
		return firstRate(tb["putTps"]) > 0 && firstRate(tb["getTransferredTps"]) > 0
	}, 30*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { return s.TopicPutTps("T") > 0 && s.ConsumeTps("T", "G") > 0 },
		30*time.Second, 20*time.Millisecond)
	// Quiet again, it sleeps again.
	require.Eventually(t, s.nap.sleeping.Load, 10*time.Second, 5*time.Millisecond)
}

func TestStoreSamplerReportsRateAfterIdle(t *testing.T) {
	var s Store
	for i := 12; i > 0; i-- {
		s.Sample(time.Now().Add(-time.Duration(i) * time.Second))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	require.Eventually(t, s.nap.sleeping.Load, 10*time.Second, 5*time.Millisecond, "the sampler never slept")
	time.Sleep(1500 * time.Millisecond)
	for range 30 {
		s.CountGet(true, time.Millisecond)
	}
	require.Eventually(t, func() bool {
		tb := map[string]string{}
		s.Runtime(tb, 0)
		return firstRate(tb["getFoundTps"]) > 0
	}, 30*time.Second, 20*time.Millisecond)
}

// The seconds a sampler slept are filled with the totals that held: rates
// over them are 0, and a midnight passed while asleep moves the day counters.
func TestCatchUpFillsSleptSeconds(t *testing.T) {
	var s Broker
	day := time.Date(2026, 1, 1, 23, 59, 0, 0, time.Local)
	for i := range 12 {
		s.putNums.Add(10)
		s.Sample(day.Add(time.Duration(i) * time.Second))
	}
	require.Equal(t, "10.0", s.puts.tps(10))
	s.nap.sleeping.Store(true)
	s.mu.Lock()
	s.catchUpLocked(day.Add(2 * time.Hour))
	s.mu.Unlock()
	require.Equal(t, "0.0 0.0 0.0", s.puts.tps3())
	tb := map[string]string{}
	s.nap.sleeping.Store(false)
	s.Runtime(tb)
	require.Equal(t, "120", tb["msgPutTotalTodayMorning"])
	require.Equal(t, "0", tb["msgPutTotalYesterdayMorning"])
	require.Equal(t, "120", tb["msgPutTotalTodayNow"])
}
