package lg

import (
	"fmt"
	"math/bits"
	"time"
)

// Hist is a log-linear latency histogram in nanoseconds, HDR-style: values below 64 ns have their own
// bucket, above that every power of two is split into 32 linear sub-buckets, so any recorded value is known
// within 1/32 (about 3 %). Fixed size, no allocation per record; one per goroutine, merged at the end.
type Hist struct {
	counts [histBuckets]uint64
	n      uint64
	sum    uint64
	min    uint64
	max    uint64
}

const (
	histSub     = 32
	histBuckets = 64 + 58*histSub
)

func histIndex(v uint64) int {
	if v < 64 {
		return int(v)
	}
	e := bits.Len64(v) - 6 // v>>e is in [32, 64)
	return 64 + (e-1)*histSub + int(v>>e) - histSub
}

// histUpper is the largest value that lands in bucket i.
func histUpper(i int) uint64 {
	if i < 64 {
		return uint64(i)
	}
	e := (i-64)/histSub + 1
	m := uint64((i-64)%histSub + histSub)
	return (m+1)<<e - 1
}

// Record adds one latency.
func (h *Hist) Record(d time.Duration) {
	v := uint64(max(d, 0))
	h.counts[histIndex(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	h.max = max(h.max, v)
	h.n++
	h.sum += v
}

// Merge adds o's records to h.
func (h *Hist) Merge(o *Hist) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// Count is the number of records.
func (h *Hist) Count() uint64 { return h.n }

// Quantile is the upper bound of the bucket holding the q-th record (0 < q <= 1), capped at the maximum.
func (h *Hist) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.5)
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(min(histUpper(i), h.max))
		}
	}
	return time.Duration(h.max)
}

// Summary is the figures a report prints.
type Summary struct {
	Count  uint64  `json:"count"`
	MeanUs float64 `json:"meanUs"`
	MinUs  float64 `json:"minUs"`
	P50Us  float64 `json:"p50Us"`
	P90Us  float64 `json:"p90Us"`
	P99Us  float64 `json:"p99Us"`
	P999Us float64 `json:"p999Us"`
	MaxUs  float64 `json:"maxUs"`
	// Buckets is the full histogram: [upper bound µs, count] for every non-empty bucket.
	Buckets [][2]float64 `json:"buckets,omitempty"`
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// Summarize returns the percentiles and, with full, every non-empty bucket.
func (h *Hist) Summarize(full bool) Summary {
	s := Summary{Count: h.n}
	if h.n == 0 {
		return s
	}
	s.MeanUs = float64(h.sum) / float64(h.n) / 1e3
	s.MinUs = float64(h.min) / 1e3
	s.MaxUs = float64(h.max) / 1e3
	s.P50Us, s.P90Us = us(h.Quantile(0.5)), us(h.Quantile(0.9))
	s.P99Us, s.P999Us = us(h.Quantile(0.99)), us(h.Quantile(0.999))
	if full {
		for i, c := range h.counts {
			if c > 0 {
				s.Buckets = append(s.Buckets, [2]float64{float64(histUpper(i)) / 1e3, float64(c)})
			}
		}
	}
	return s
}

func (s Summary) String() string {
	return fmt.Sprintf("n=%d p50=%.0fµs p99=%.0fµs p999=%.0fµs max=%.0fµs", s.Count, s.P50Us, s.P99Us, s.P999Us, s.MaxUs)
}
