package lg

import (
	"testing"
	"time"
)

func TestHistIndexMonotoneAndBounded(t *testing.T) {
	prev := -1
	for v := uint64(0); v < 1<<22; v += 7 {
		i := histIndex(v)
		if i < prev {
			t.Fatalf("index not monotone at %d", v)
		}
		if up := histUpper(i); up < v {
			t.Fatalf("value %d above its bucket's upper bound %d", v, up)
		}
		if i > 0 && histUpper(i-1) >= v {
			t.Fatalf("value %d also fits the bucket below (%d)", v, histUpper(i-1))
		}
		prev = i
	}
	if i := histIndex(1 << 62); i >= histBuckets {
		t.Fatalf("index %d out of range", i)
	}
}

func TestHistQuantiles(t *testing.T) {
	var h Hist
	for i := 1; i <= 10000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 5000 * time.Microsecond}, {0.99, 9900 * time.Microsecond}, {0.999, 9990 * time.Microsecond}} {
		got := h.Quantile(c.q)
		if got < c.want || float64(got) > float64(c.want)*1.04 {
			t.Errorf("q%.3f = %v, want within 4%% above %v", c.q, got, c.want)
		}
	}
	var m Hist
	m.Merge(&h)
	m.Merge(&h)
	if m.Count() != 20000 || m.Quantile(0.5) != h.Quantile(0.5) {
		t.Errorf("merge: count %d p50 %v", m.Count(), m.Quantile(0.5))
	}
}
