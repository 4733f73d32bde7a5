package codec

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPropertiesHelpers(t *testing.T) {
	p := AppendProperty("", PropTags, "TagA")
	p = AppendProperty(p, PropKeys, "k1 k2")
	require.Equal(t, "TAGS\x01TagA\x02KEYS\x01k1 k2\x02", p)
	v, ok := PropertyValue(p, PropKeys)
	require.True(t, ok)
	require.Equal(t, "k1 k2", v)
	_, ok = PropertyValue(p, "NOPE")
	require.False(t, ok)
	// Malformed pieces are skipped like Java's string2messageProperties.
	odd := "\x01x\x02A\x01\x02B\x01b\x02junk\x02C\x01c"
	require.Equal(t, map[string]string{"B": "b", "C": "c"}, ParseProperties(odd))
	// No trailing separator: AppendProperty adds one first.
	require.Equal(t, "A\x01a\x02B\x01b\x02", AppendProperty("A\x01a", "B", "b"))
	p = SetProperty(p, PropTags, "TagB")
	require.Equal(t, map[string]string{"TAGS": "TagB", "KEYS": "k1 k2"}, ParseProperties(p))
	p = DeleteProperty(p, PropTags)
	require.Equal(t, "KEYS\x01k1 k2\x02", p)
	m := map[string]string{"b": "2", "a": "1", "": "x", "e": ""}
	require.Equal(t, "a\x011\x02b\x012\x02", FormatProperties(m))
	v, ok = PropertyValue("A\x011\x02A\x012\x02", "A")
	require.True(t, ok)
	require.Equal(t, "2", v)
}

func TestBatchIterator(t *testing.T) {
	var body []byte
	body = AppendBatchEntry(body, 1, []byte("one"), "UNIQ_KEY\x01u1\x02")
	body = AppendBatchEntry(body, 2, nil, "")
	body = AppendBatchEntry(body, 3, []byte("three"), "KEYS\x01a b\x02")
	it := NewBatchIterator(body)
	var e BatchEntry
	var got []BatchEntry
	for it.Next(&e) {
		c := e
		c.Body = append([]byte(nil), e.Body...)
		got = append(got, c)
	}
	require.NoError(t, it.Err())
	require.Len(t, got, 3)
	require.Equal(t, int32(1), got[0].Flag)
	require.Equal(t, "one", string(got[0].Body))
	require.Equal(t, "UNIQ_KEY\x01u1\x02", got[0].Properties)
	require.Empty(t, got[1].Body)
	require.Equal(t, "", got[1].Properties)
	require.Equal(t, "three", string(got[2].Body))

	for i := 1; i < len(body); i++ {
		if i == 22+3+12 || i == 22+3+12+22 {
			continue // whole-entry boundaries are valid prefixes
		}
		it := NewBatchIterator(body[:i])
		for it.Next(&e) {
		}
		require.True(t, errors.Is(it.Err(), ErrBatchCorrupt), "prefix %d", i)
	}
	allocs := testing.AllocsPerRun(100, func() {
		it := NewBatchIterator(body)
		for it.Next(&e) {
		}
	})
	require.Zero(t, allocs)
}

func FuzzBatchIterator(f *testing.F) {
	var body []byte
	body = AppendBatchEntry(body, 1, []byte("one"), "UNIQ_KEY\x01u1\x02")
	body = AppendBatchEntry(body, 2, nil, "")
	f.Add(body)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		it := NewBatchIterator(data)
		var e BatchEntry
		total := 0
		for it.Next(&e) {
			total += 22 + len(e.Body) + len(e.Properties)
			if total > len(data) {
				t.Fatalf("overran: %d > %d", total, len(data))
			}
		}
		if it.Err() == nil && total != len(data) {
			t.Fatalf("consumed %d of %d without error", total, len(data))
		}
	})
}
