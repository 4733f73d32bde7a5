// Package compat holds formats of the Java world that rmqd must reproduce exactly:
// String.hashCode, message ids, fastjson quirks and Java properties files.
package compat

import "unicode/utf8"

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
