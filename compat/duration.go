package compat

import (
	"math"
	"time"
)

// Millis is a Java millisecond count (a config value, a header field) as a
// Duration, saturated: past ~292 years a Duration wraps, and a wrapped
// interval turned negative panicked time.NewTicker at the next start (an
// UPDATE_BROKER_CONFIG of cleanResourceInterval=9223372036855 persisted
// that into broker.conf) or made a 5 s loop spin.
func Millis(ms int64) time.Duration {
	const limit = math.MaxInt64 / int64(time.Millisecond)
	return time.Duration(min(max(ms, -limit), limit)) * time.Millisecond
}

// Seconds is Millis for a count of seconds.
func Seconds(s int64) time.Duration {
	const limit = math.MaxInt64 / int64(time.Second)
	return time.Duration(min(max(s, -limit), limit)) * time.Second
}
