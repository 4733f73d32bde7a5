package codec

import (
	"math"
	"testing"
)

func TestMappingItemOffsets(t *testing.T) {
	it := LogicQueueMappingItem{LogicOffset: 100, StartOffset: 5, EndOffset: 15}
	for _, c := range []struct{ got, want int64 }{
		{it.StaticOffsetStrictly(7), 102}, {it.StaticOffsetStrictly(2), 100},
		{it.StaticOffsetLoosely(20), 110}, {it.StaticOffsetLoosely(2), 100},
		{it.PhysicalOffset(102), 7}, {it.MaxStaticOffset(), 110}, {it.OffsetDelta(), 95},
		{(&LogicQueueMappingItem{LogicOffset: -1}).StaticOffsetLoosely(3), -1},
		// Wire values saturate instead of wrapping.
		{it.PhysicalOffset(math.MinInt64), math.MinInt64 + 5},
		{(&LogicQueueMappingItem{LogicOffset: math.MaxInt64 - 1}).StaticOffsetStrictly(10), math.MaxInt64},
		{(&LogicQueueMappingItem{LogicOffset: -5, StartOffset: math.MaxInt64}).PhysicalOffset(math.MaxInt64), math.MaxInt64},
	} {
		if c.got != c.want {
			t.Errorf("got %d, want %d", c.got, c.want)
		}
	}
	if !it.EndDecided() || (&LogicQueueMappingItem{EndOffset: -1}).EndDecided() {
		t.Error("EndDecided")
	}
}

func TestFindMappingItem(t *testing.T) {
	items := []LogicQueueMappingItem{{Gen: 0, LogicOffset: 0}, {Gen: 1, LogicOffset: 10}, {Gen: 2, LogicOffset: -1}}
	for _, c := range []struct {
		off       int64
		ignoreNeg bool
		want      int
	}{{0, true, 0}, {9, true, 0}, {10, true, 1}, {math.MaxInt64, true, 1}, {-3, true, 0}, {5, false, 2}} {
		if got := FindMappingItem(items, c.off, c.ignoreNeg); got != c.want {
			t.Errorf("FindMappingItem(%d, %v) = %d, want %d", c.off, c.ignoreNeg, got, c.want)
		}
	}
	if FindMappingItem(items[2:], 5, true) != -1 || FindMappingItem(nil, 0, false) != -1 {
		t.Error("no decided item")
	}
	if NextMappingItem(items, 0, true) != 1 || NextMappingItem(items, 1, true) != -1 ||
		NextMappingItem(items, 1, false) != 2 || NextMappingItem(items, 2, false) != -1 {
		t.Error("NextMappingItem")
	}
}
