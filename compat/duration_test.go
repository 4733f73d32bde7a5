package compat

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMillisSaturates(t *testing.T) {
	require.Equal(t, 5*time.Second, Millis(5000))
	require.Equal(t, -time.Millisecond, Millis(-1))
	for _, v := range []int64{9223372036855, math.MaxInt64, math.MaxInt64 / 1000} {
		require.Greater(t, Millis(v), time.Duration(0), "%d", v)
	}
	require.Less(t, Millis(math.MinInt64), time.Duration(0))
	require.Greater(t, Seconds(math.MaxInt64), time.Duration(0))
	require.Equal(t, 30*time.Second, Seconds(30))
}
