package compat

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseDelayLevels(t *testing.T) {
	l, err := ParseDelayLevels(DefaultMessageDelayLevel)
	require.NoError(t, err)
	require.Len(t, l, 18)
	require.Equal(t, time.Second, l[0])
	require.Equal(t, 2*time.Hour, l[17])
	for _, bad := range []string{"1x", "", "  ", "-1s", "s", "1.5m"} {
		_, err = ParseDelayLevels(bad)
		require.Error(t, err, bad)
	}
	l, err = ParseDelayLevels("9223372036854775807d 0s")
	require.NoError(t, err)
	require.Equal(t, []time.Duration{time.Duration(math.MaxInt64/int64(24*time.Hour)) * 24 * time.Hour, 0}, l)
}

func FuzzParseDelayLevels(f *testing.F) {
	f.Add(DefaultMessageDelayLevel)
	f.Add("1d -3s 99999999999999999h")
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseDelayLevels(s)
		if err != nil {
			return
		}
		require.NotEmpty(t, l)
		for _, d := range l {
			require.GreaterOrEqual(t, d, time.Duration(0))
		}
	})
}
