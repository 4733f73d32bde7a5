package compat

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// DefaultMessageDelayLevel is MessageStoreConfig.messageDelayLevel.
const DefaultMessageDelayLevel = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

// ParseDelayLevels reads "1s 5s 1m 2h 1d" (ScheduleMessageService.parseDelayLevel).
// A level too long for a Duration saturates rather than wrapping negative, and one
// below zero is refused: either would make a delayed message come due at once.
func ParseDelayLevels(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Fields(s) {
		var unit time.Duration
		switch f[len(f)-1] {
		case 's':
			unit = time.Second
		case 'm':
			unit = time.Minute
		case 'h':
			unit = time.Hour
		case 'd':
			unit = 24 * time.Hour
		default:
			return nil, fmt.Errorf("delay level %q: unknown unit", f)
		}
		n, err := strconv.ParseInt(f[:len(f)-1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("delay level %q: %w", f, err)
		}
		if n < 0 {
			return nil, fmt.Errorf("delay level %q: below zero", f)
		}
		out = append(out, time.Duration(min(n, math.MaxInt64/int64(unit)))*unit)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no delay levels in %q", s)
	}
	return out, nil
}
