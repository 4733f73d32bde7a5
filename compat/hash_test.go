package compat

import (
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
