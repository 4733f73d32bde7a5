// Package compat holds formats of the Java world that rmqd must reproduce exactly:
// String.hashCode, message ids, fastjson quirks and Java properties files.
package compat

import (
	"math"
	"unicode/utf8"
)

// JavaStringHash is Java's String.hashCode: h = 31*h + c over UTF-16 code units,
// wrapping at int32. Tags codes, index keys and timer hashes are built from it,
// so it must agree with the JVM for non-ASCII text too.
func JavaStringHash(s string) int32 {
	var h int32
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			h = 31*h + int32(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// ConsistentHash is Guava's Hashing.consistentHash(long, int): the bucket
// in [0, buckets) of input, moving as few inputs as possible when buckets
// grows. rocketmq-proxy 5.5 sends a lite topic's messages, and a 5.5 broker
// keeps its subscriptions, at the write queue of
// consistentHash(liteTopic.hashCode(), queues); rmqd must pick the same.
func ConsistentHash(input int64, buckets int) int {
	if buckets <= 0 {
		return 0
	}
	state := uint64(input)
	candidate := int32(0)
	for {
		state = 2862933555777941757*state + 1
		// ((double) ((int) (state >>> 33) + 1)) / 0x1.0p31, with Java's int overflow.
		next := javaDoubleToInt(float64(candidate+1) / (float64(int32(state>>33)+1) / (1 << 31)))
		if next < 0 || int(next) >= buckets {
			return int(candidate)
		}
		candidate = next
	}
}

// javaDoubleToInt is Java's (int) cast of a double: NaN is 0, out of range
// saturates (Go leaves both to the platform).
func javaDoubleToInt(f float64) int32 {
	switch {
	case f != f:
		return 0
	case f >= math.MaxInt32:
		return math.MaxInt32
	case f <= math.MinInt32:
		return math.MinInt32
	}
	return int32(f)
}
