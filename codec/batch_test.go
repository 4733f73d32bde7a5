package codec

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

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
