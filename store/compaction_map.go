package store

import (
	"crypto/md5"
	"encoding/binary"
)

// offsetMapEntry is what one key costs in Java's OffsetMap (an MD5 and a long);
// maxOffsetMapSize / offsetMapEntry keys fit.
const offsetMapEntry = 24

// offsetMap is Java's OffsetMap: the newest queue offset per key, keyed by
// the key's MD5 in one flat open-addressed table, so its memory is bounded
// by maxOffsetMapSize whatever the keys' lengths.
type offsetMap struct {
	slots []omSlot
	n     int
	limit int
}

type omSlot struct {
	h   [md5.Size]byte
	off int64 // offset+1; 0 is an empty slot
}

// newOffsetMap sizes the table for hint keys, within maxBytes; it takes keys
// up to three quarters full, so probes stay short.
func newOffsetMap(maxBytes, hint int) *offsetMap {
	size := min(max(maxBytes/offsetMapEntry, 100), max(hint*4/3+1, 100))
	return &offsetMap{slots: make([]omSlot, size), limit: max(size*3/4, 1)}
}

func (m *offsetMap) find(h *[md5.Size]byte) int {
	i := int(binary.BigEndian.Uint64(h[:8]) % uint64(len(m.slots)))
	for m.slots[i].off != 0 && m.slots[i].h != *h {
		i = (i + 1) % len(m.slots)
	}
	return i
}

// put records off for key; false when the map is full and key is new.
func (m *offsetMap) put(key string, off int64) bool {
	h := md5.Sum([]byte(key))
	i := m.find(&h)
	if m.slots[i].off == 0 {
		if m.n >= m.limit {
			return false
		}
		m.n++
		m.slots[i].h = h
	}
	m.slots[i].off = off + 1
	return true
}

// get is the newest offset put for key, -1 if none.
func (m *offsetMap) get(key string) int64 {
	h := md5.Sum([]byte(key))
	return m.slots[m.find(&h)].off - 1
}
