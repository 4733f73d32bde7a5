package stats

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// putTimeBoundsMs are StoreStatsService's put-time buckets (upper bounds in ms
// of "[<=0ms]" ... "[5~10s]"; the last bucket is "[10s~]").
var putTimeBoundsMs = [...]int64{0, 10, 50, 100, 200, 500, 1000, 2000, 3000, 4000, 5000, 10000}

var putTimeDesc = [...]string{"[<=0ms]", "[0~10ms]", "[10~50ms]", "[50~100ms]", "[100~200ms]", "[200~500ms]",
	"[500ms~1s]", "[1~2s]", "[2~3s]", "[3~4s]", "[4~5s]", "[5~10s]", "[10s~]"}

// Store is the part of StoreStatsService the broker measures around its
// store calls: pull lookups found or missed, put times and failures. The hot
// paths only add to atomics; a sampler snapshots the lookup totals each second.
type Store struct {
	getFound, getMiss atomic.Int64
	getMaxMs          atomic.Int64
	putFailed         atomic.Int64
	putMaxMs          atomic.Int64
	putTimes          [len(putTimeDesc)]atomic.Int64

	mu            sync.Mutex
	founds, misss sampleRing
	lastAt        int64  // unix ms of the last sample
	nap           napper // the sampler sleeps while no lookup is counted (idle.go)
	manual        atomic.Bool
}

func (s *Store) CountGet(found bool, d time.Duration) {
	if found {
		s.getFound.Add(1)
	} else {
		s.getMiss.Add(1)
	}
	raiseMax(&s.getMaxMs, d.Milliseconds())
	s.nap.kick()
}

func (s *Store) CountPut(d time.Duration) {
	ms := d.Milliseconds()
	s.putTimes[BucketIndex(putTimeBoundsMs[:], ms)].Add(1)
	raiseMax(&s.putMaxMs, ms)
}

func raiseMax(m *atomic.Int64, v int64) {
	for {
		cur := m.Load()
		if v <= cur || m.CompareAndSwap(cur, v) {
			return
		}
	}
}

// Run samples the lookup totals once a second while they move, and sleeps
// while they do not.
func (s *Store) Run(ctx context.Context) {
	s.nap.run(ctx, &s.manual, s.Sample, func() int64 { return s.getFound.Load() + s.getMiss.Load() },
		func(now time.Time) {
			s.mu.Lock()
			s.catchUpLocked(now)
			s.nap.sleeping.Store(false)
			s.mu.Unlock()
		})
}

func (s *Store) Sample(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sampleLocked(now.UnixMilli())
}

func (s *Store) sampleLocked(ms int64) {
	s.lastAt = ms
	s.founds.add(ms, s.getFound.Load())
	s.misss.add(ms, s.getMiss.Load())
}

// catchUpLocked fills the samples a sleeping sampler skipped (s.mu held).
func (s *Store) catchUpLocked(now time.Time) {
	if s.nap.sleeping.Load() {
		gapSamples(s.lastAt, now.UnixMilli(), statsWindow, s.sampleLocked)
	}
}

// rate is a sampleRing's rate over secs as a number, 0 while too few samples
// are held (getGetTotalTps always prints a number).
func rate(r *sampleRing, secs int) float64 {
	v, err := strconv.ParseFloat(r.tps(secs), 64)
	if err != nil {
		return 0
	}
	return v
}

// percentile is findPutMessageEntireTimePX: the upper bound of the bucket in
// which the p-th put falls.
func percentile(counts []int64, p float64) float64 {
	var total int64
	for _, c := range counts {
		total += c
	}
	if total == 0 {
		return 0
	}
	want := int64(math.Ceil(float64(total) * p))
	var cum int64
	for i, c := range counts {
		cum += c
		if cum >= want {
			if i < len(putTimeBoundsMs) {
				return float64(putTimeBoundsMs[i])
			}
			return float64(putTimeBoundsMs[len(putTimeBoundsMs)-1])
		}
	}
	return 0
}

// HumanBytes is MixAll.humanReadableByteCount(bytes, false).
func HumanBytes(b int64) string {
	if b < 1024 {
		return strconv.FormatInt(b, 10) + " B"
	}
	exp := int(math.Log(float64(b)) / math.Log(1024))
	return fmt.Sprintf("%.1f %ciB", float64(b)/math.Pow(1024, float64(exp)), "KMGTPE"[exp-1])
}

// CountPutFailed records a put the store refused.
func (s *Store) CountPutFailed() { s.putFailed.Add(1) }

// GetFound is how many pull lookups found messages.
func (s *Store) GetFound() int64 { return s.getFound.Load() }

// Runtime fills StoreStatsService.getRuntimeInfo's keys that come from these
// counters: lookup TPS, put counts, sizes, times and failures. putSize is the
// bytes put over all topics (Broker.PutSizeTotal).
func (s *Store) Runtime(t map[string]string, putSize int64) {
	s.mu.Lock()
	s.catchUpLocked(time.Now())
	var found, miss, total [3]string
	for i, secs := range [3]int{10, 60, 600} {
		found[i], miss[i] = s.founds.tps(secs), s.misss.tps(secs)
		total[i] = JavaDouble(rate(&s.founds, secs) + rate(&s.misss, secs))
	}
	s.mu.Unlock()
	t["getFoundTps"] = strings.Join(found[:], " ")
	t["getMissTps"] = strings.Join(miss[:], " ")
	t["getTotalTps"] = strings.Join(total[:], " ")
	t["getMessageEntireTimeMax"] = strconv.FormatInt(s.getMaxMs.Load(), 10)

	var counts [len(putTimeDesc)]int64
	var times int64
	var dist strings.Builder
	for i := range counts {
		counts[i] = s.putTimes[i].Load()
		times += counts[i]
		fmt.Fprintf(&dist, "%s:%d ", putTimeDesc[i], counts[i])
	}
	times = max(times, 1) // as Java, to divide by
	t["putMessageEntireTimeMax"] = strconv.FormatInt(s.putMaxMs.Load(), 10)
	t["putMessageTimesTotal"] = strconv.FormatInt(times, 10)
	t["putMessageFailedTimes"] = strconv.FormatInt(s.putFailed.Load(), 10)
	t["putMessageSizeTotal"] = strconv.FormatInt(putSize, 10)
	t["putMessageDistributeTime"] = dist.String()
	t["putMessageAverageSize"] = JavaDouble(float64(putSize) / float64(times))
	t["putLatency99"] = fmt.Sprintf("%.2f", percentile(counts[:], 0.99))
	t["putLatency999"] = fmt.Sprintf("%.2f", percentile(counts[:], 0.999))
	t["dispatchMaxBuffer"] = "0" // never raised in Java 5.x either
}
