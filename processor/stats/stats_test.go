package stats

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSystemTopicsLeftOutOfTotals(t *testing.T) {
	const schedule = "SCHEDULE_TOPIC_XXXX"
	var s Broker
	sys := func(topic string) bool { return topic == schedule }
	s.CountPut(schedule, 5, 100, sys)
	s.CountPut("user", 2, 10, sys)
	s.CountGet("g", schedule, 4, 10, sys)
	require.EqualValues(t, 2, s.putNums.Load())
	require.EqualValues(t, 0, s.getNums.Load())
	c, _ := s.Counter("TOPIC_PUT_NUMS", schedule)
	require.EqualValues(t, 5, c.nums.Load())
}

func TestSampleRingTps(t *testing.T) {
	var r sampleRing
	require.Equal(t, "  ", r.tps3())
	base := time.Now()
	for i := range 12 {
		r.add(base.Add(time.Duration(i)*time.Second).UnixMilli(), int64(i*50))
	}
	require.Equal(t, "50.0", r.tps(10))
	require.Equal(t, "", r.tps(60))
	for i := 12; i < 700; i++ {
		r.add(base.Add(time.Duration(i)*time.Second).UnixMilli(), int64(i*50))
	}
	require.Equal(t, "50.0 50.0 50.0", r.tps3())
}

func TestDayRollover(t *testing.T) {
	var s Broker
	day := time.Date(2026, 1, 1, 23, 59, 59, 0, time.Local)
	s.Sample(day)
	s.putNums.Add(7)
	s.Sample(day.Add(2 * time.Second))
	s.putNums.Add(1)
	tb := map[string]string{}
	s.Runtime(tb)
	require.Equal(t, "7", tb["msgPutTotalTodayMorning"])
	require.Equal(t, "8", tb["msgPutTotalTodayNow"])
	require.Equal(t, "0", tb["msgPutTotalYesterdayMorning"])
}

// The per-message hooks must not allocate once a topic and group are known.
func TestStatsHooksDoNotAllocate(t *testing.T) {
	var s Broker
	sys := func(string) bool { return false }
	s.CountPut("T", 1, 1, sys)
	s.CountGet("G", "T", 1, 1, sys)
	topic, group := strings.Clone("T"), strings.Clone("G")
	allocs := testing.AllocsPerRun(1000, func() {
		s.CountPut(topic, 1, 100, sys)
		s.CountGet(group, topic, 1, 100, sys)
	})
	require.Zero(t, allocs)
}

func BenchmarkStatsCountPut(b *testing.B) {
	var s Broker
	sys := func(string) bool { return false }
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.CountPut("BenchTopic", 1, 128, sys)
		}
	})
}

func TestMinuteStatsAndConsumeTps(t *testing.T) {
	var s Broker
	sys := func(string) bool { return false }
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.Local)
	s.CountGet("G", "T", 1, 10, sys)
	for i := range 61 {
		s.Sample(base.Add(time.Duration(i) * time.Second))
		s.CountGet("G", "T", 5, 50, sys) // 5 messages a second
	}
	require.InDelta(t, 5.0, s.ConsumeTps("T", "G"), 0.01)
	require.Zero(t, s.ConsumeTps("T", "other"))
	c, _ := s.Counter("GROUP_GET_SIZE", "T@G")
	m := s.Windows(c, true)[WinMinute]
	require.EqualValues(t, 50*60, m.Sum)
	require.InDelta(t, 50.0, m.Tps, 0.01)
}

func TestHumanBytesMatchesMixAll(t *testing.T) {
	for b, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 8300: "8.1 KiB", 5 << 30: "5.0 GiB"} {
		require.Equal(t, want, HumanBytes(b))
	}
}
