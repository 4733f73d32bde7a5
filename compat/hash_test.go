package compat

import (
	"math"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

// Expected values were printed by jshell 17: "…".hashCode().
func TestJavaStringHash(t *testing.T) {
	cases := map[string]int32{
		"":        0,
		"TagA":    2598919,
		"a":       97,
		"hello":   99162322,
		"中文":      646394,
		"😀":       1772899,
		"TBW102":  -1826525782,
		"%RETRY%": 891795202,
	}
	for s, want := range cases {
		require.Equal(t, want, JavaStringHash(s), "hash of %q", s)
	}
}

func TestOffsetMsgIDRoundTrip(t *testing.T) {
	host := netip.MustParseAddrPort("192.168.0.1:10911")
	id := OffsetMsgID(host, 3118)
	require.Equal(t, "C0A8000100002A9F0000000000000C2E", id)
	gotHost, off, err := DecodeOffsetMsgID(id)
	require.NoError(t, err)
	require.Equal(t, host, gotHost)
	require.Equal(t, int64(3118), off)

	v6 := netip.MustParseAddrPort("[::1]:10911")
	id6 := OffsetMsgID(v6, 1<<40)
	require.Len(t, id6, 56)
	gotHost, off, err = DecodeOffsetMsgID(id6)
	require.NoError(t, err)
	require.Equal(t, v6, gotHost)
	require.Equal(t, int64(1<<40), off)

	_, _, err = DecodeOffsetMsgID("zz")
	require.Error(t, err)
}

// Expected values were printed by jshell 17 with Guava 32.0.1:
// Hashing.consistentHash(key.hashCode(), b) and Hashing.consistentHash(n, b).
func TestConsistentHash(t *testing.T) {
	buckets := []int{1, 2, 3, 4, 8, 16, 100}
	for _, c := range []struct {
		key  string
		hash int32
		want []int
	}{
		{"order-1", -1207111310, []int{0, 0, 0, 3, 3, 3, 3}},
		{"order-2", -1207111309, []int{0, 0, 2, 2, 2, 11, 46}},
		{"order-3", -1207111308, []int{0, 1, 1, 3, 7, 7, 35}},
		{"solo", 3536095, []int{0, 1, 2, 2, 2, 12, 53}},
		{"wild-1", -787813650, []int{0, 1, 1, 1, 1, 1, 67}},
		{"user-42", -147182656, []int{0, 1, 1, 1, 1, 1, 61}},
		{"", 0, []int{0, 0, 0, 0, 0, 0, 0}},
		{"a", 97, []int{0, 0, 0, 0, 0, 0, 29}},
		{"l0", 3396, []int{0, 0, 0, 0, 0, 0, 28}},
		{"l99", 105612, []int{0, 1, 1, 1, 4, 4, 21}},
		{"zzzzzzzzzzzzzzzz", -509494784, []int{0, 1, 1, 3, 3, 10, 64}},
	} {
		if h := JavaStringHash(c.key); h != c.hash {
			t.Fatalf("%q.hashCode() = %d, want %d", c.key, h, c.hash)
		}
		for i, b := range buckets {
			if got := ConsistentHash(int64(c.hash), b); got != c.want[i] {
				t.Errorf("consistentHash(%q.hashCode(), %d) = %d, want %d", c.key, b, got, c.want[i])
			}
		}
	}
	for _, c := range []struct {
		in   int64
		want []int
	}{
		{0, []int{0, 0, 0, 0, 0, 0, 0}},
		{1, []int{0, 0, 0, 0, 6, 6, 55}},
		{-1, []int{0, 1, 2, 2, 7, 10, 92}},
		{math.MaxInt64, []int{0, 0, 2, 2, 7, 8, 97}},
		{math.MinInt64, []int{0, 1, 1, 3, 5, 12, 84}},
		{123456789, []int{0, 0, 0, 0, 7, 7, 34}},
		{math.MinInt32, []int{0, 1, 2, 2, 2, 2, 58}},
	} {
		for i, b := range buckets {
			if got := ConsistentHash(c.in, b); got != c.want[i] {
				t.Errorf("consistentHash(%d, %d) = %d, want %d", c.in, b, got, c.want[i])
			}
		}
	}
}
