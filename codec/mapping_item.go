package codec

import "math"

// Offset arithmetic of a static topic's mapping items (Java's
// LogicQueueMappingItem and TopicQueueMappingUtils). Offsets come from the
// wire and from mappings mqadmin wrote: every sum saturates instead of
// wrapping.

// addSat is a+b clamped to the int64 range.
func addSat(a, b int64) int64 {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		if b > 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return s
}

// subSat is a-b clamped to the int64 range.
func subSat(a, b int64) int64 {
	if b == math.MinInt64 {
		if a >= 0 {
			return math.MaxInt64
		}
		return a - b
	}
	return addSat(a, -b)
}

// StaticOffsetLoosely is computeStaticQueueOffsetLoosely: the logical offset
// of physical offset phys, -1 while the item's logic offset is undecided, kept
// inside the item's stretch (sends and min offsets).
func (it *LogicQueueMappingItem) StaticOffsetLoosely(phys int64) int64 {
	switch {
	case it.LogicOffset < 0:
		return -1
	case phys < it.StartOffset:
		return it.LogicOffset
	case it.EndOffset >= it.StartOffset && it.EndOffset < phys:
		return addSat(it.LogicOffset, it.EndOffset-it.StartOffset)
	}
	return addSat(it.LogicOffset, phys-it.StartOffset)
}

// StaticOffsetStrictly is computeStaticQueueOffsetStrictly: the logical
// offset of physical offset phys, not below the item's logic offset.
func (it *LogicQueueMappingItem) StaticOffsetStrictly(phys int64) int64 {
	if phys < it.StartOffset {
		return it.LogicOffset
	}
	return addSat(it.LogicOffset, phys-it.StartOffset)
}

// PhysicalOffset is computePhysicalQueueOffset: the physical offset of
// logical offset logical.
func (it *LogicQueueMappingItem) PhysicalOffset(logical int64) int64 {
	return addSat(subSat(logical, it.LogicOffset), it.StartOffset)
}

// MaxStaticOffset is computeMaxStaticQueueOffset: the item's last logical
// offset when its end is decided, else its logic offset.
func (it *LogicQueueMappingItem) MaxStaticOffset() int64 {
	if it.EndOffset >= it.StartOffset {
		return addSat(it.LogicOffset, it.EndOffset-it.StartOffset)
	}
	return it.LogicOffset
}

// EndDecided is checkIfEndOffsetDecided.
func (it *LogicQueueMappingItem) EndDecided() bool { return it.EndOffset > it.StartOffset }

// OffsetDelta is computeOffsetDelta: what a client adds to the physical
// queue offsets of the messages a pull of this item returns.
func (it *LogicQueueMappingItem) OffsetDelta() int64 { return subSat(it.LogicOffset, it.StartOffset) }

// FindMappingItem is TopicQueueMappingUtils.findLogicQueueMappingItem: the
// index of the last item whose logic offset is at most logical, else of the
// first one (an offset below them all); items with an undecided (negative)
// logic offset are skipped when ignoreNegative. -1 when none fits.
func FindMappingItem(items []LogicQueueMappingItem, logical int64, ignoreNegative bool) int {
	for i := len(items) - 1; i >= 0; i-- {
		if ignoreNegative && items[i].LogicOffset < 0 {
			continue
		}
		if logical >= items[i].LogicOffset {
			return i
		}
	}
	for i := range items {
		if !ignoreNegative || items[i].LogicOffset >= 0 {
			return i
		}
	}
	return -1
}

// NextMappingItem is TopicQueueMappingUtils.findNext: the index of the item
// after items[i], -1 when there is none or (ignoreNegative) its logic offset
// is undecided.
func NextMappingItem(items []LogicQueueMappingItem, i int, ignoreNegative bool) int {
	if i < 0 || i+1 >= len(items) || ignoreNegative && items[i+1].LogicOffset < 0 {
		return -1
	}
	return i + 1
}
