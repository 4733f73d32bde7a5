package codec

import (
	"cmp"
	"slices"
	"strconv"
	"unicode/utf8"
)

// fastjson (1.2.83, what RocketMQ 5.x serializes bodies with) writes bean properties
// sorted by name, omits nulls, and writes map keys with the key's own serializer.
// The helpers below reproduce its output for the shapes the name server and broker
// emit. They append to a caller's buffer so hot paths (route data) allocate nothing.

// AppendJSONString appends s as a JSON string escaped the way fastjson does by
// default: control characters as \uXXXX (upper-case hex) except \b \t \n \f \r,
// DEL and C1 controls (U+007F..U+009F) and U+2028/U+2029 as \uXXXX, '"' and '\'
// backslashed, everything else (including '/' and non-ASCII) raw. Invalid UTF-8
// becomes \uFFFD, as a Java String decoded from those bytes would hold it.
func AppendJSONString(dst []byte, s string) []byte {
	return appendFastjsonString(dst, s, true)
}

// appendHeaderString is AppendJSONString for command headers: invalid UTF-8 is
// copied through instead of replaced, so that whatever a header decoded from
// encodes back to the same bytes (a relayed command stays byte-identical).
func appendHeaderString(dst []byte, s string) []byte {
	return appendFastjsonString(dst, s, false)
}

func appendFastjsonString(dst []byte, s string, replaceInvalid bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != 0x7F {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\r':
				dst = append(dst, '\\', 'r')
			default:
				dst = appendUnicodeEscape(dst, rune(c))
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			if !replaceInvalid {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = appendUnicodeEscape(dst, utf8.RuneError)
			i++
			start = i
			continue
		}
		if (r >= 0x80 && r <= 0x9F) || r == 0x2028 || r == 0x2029 {
			dst = append(dst, s[start:i]...)
			dst = appendUnicodeEscape(dst, r)
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// JSONStringLen is len(AppendJSONString(nil, s)), quotes included, without
// building it: what s takes in a body or a config file. Each byte of s takes
// one to six bytes, so a caller can bound a size before encoding anything.
func JSONStringLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c >= 0x20 && c != '"' && c != '\\' && c != 0x7F:
				n++
			case c == '"' || c == '\\' || c == '\b' || c == '\t' || c == '\n' || c == '\f' || c == '\r':
				n += 2
			default:
				n += 6
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
		case (r >= 0x80 && r <= 0x9F) || r == 0x2028 || r == 0x2029:
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

func appendUnicodeEscape(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u',
		hexDigits[(r>>12)&0xF], hexDigits[(r>>8)&0xF],
		hexDigits[(r>>4)&0xF], hexDigits[r&0xF])
}

// AppendJSONKey appends a quoted property name and the colon.
func AppendJSONKey(dst []byte, key string) []byte {
	return append(AppendJSONString(dst, key), ':')
}

// AppendJSONStringSlice appends a JSON array of strings; nil is written as [] because
// Java callers iterate collections without null checks.
func AppendJSONStringSlice(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendJSONString(dst, s)
	}
	return append(dst, ']')
}

// AppendJSONStringMap appends a string→string map with keys sorted (fastjson's
// MapSortField order, and stable for tests); nil is written as {}.
func AppendJSONStringMap(dst []byte, m map[string]string) []byte {
	dst = append(dst, '{')
	for i, k := range SortedKeys(m) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendJSONKey(dst, k)
		dst = AppendJSONString(dst, m[k])
	}
	return append(dst, '}')
}

// AppendJSONLongKeyMap appends a map with Long/Integer keys in the quoted form
// {"0":"10.0.0.5:10911"} (fastjson's BrowserCompatible output), keys in numeric
// order. Java 4.9.4+/5.x and the Go client parse it; the bare form {0:"…"} that
// fastjson writes by default is not JSON and breaks strict parsers. The caller
// writes each value with appendValue; nil is written as {}.
func AppendJSONLongKeyMap[V any](dst []byte, m map[int64]V, appendValue func([]byte, V) []byte) []byte {
	dst = append(dst, '{')
	// Broker id maps hold a master and a few slaves: sort those keys on the stack.
	var small [8]int64
	keys := small[:0]
	if len(m) > len(small) {
		keys = make([]int64, 0, len(m))
	}
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = strconv.AppendInt(dst, k, 10)
		dst = append(dst, '"', ':')
		dst = appendValue(dst, m[k])
	}
	return append(dst, '}')
}

// AppendMessageQueueKey appends a MessageQueue as fastjson writes it when it is a
// map key: the object itself, compact, properties in the order brokerName, queueId,
// topic, e.g. {"brokerName":"b","queueId":0,"topic":"t"}. The caller follows it with
// ':' and the value: {{"brokerName":"b","queueId":0,"topic":"t"}:12}. The Go
// client's reset-offset parser splits this text and needs exactly this form.
func AppendMessageQueueKey(dst []byte, brokerName string, queueID int32, topic string) []byte {
	dst = append(dst, `{"brokerName":`...)
	dst = AppendJSONString(dst, brokerName)
	dst = append(dst, `,"queueId":`...)
	dst = strconv.AppendInt(dst, int64(queueID), 10)
	dst = append(dst, `,"topic":`...)
	dst = AppendJSONString(dst, topic)
	return append(dst, '}')
}

// SortedKeys returns the keys of m in ascending order.
func SortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// AppendJSONObjectKeyMap appends a map whose keys are beans, in fastjson's
// object-key form: {<key object>:<value>,…} (ConsumeStats.offsetTable,
// TopicStatsTable.offsetTable, ResetOffsetBody.offsetTable, …). appendKey writes a
// key object (AppendMessageQueueKey for MessageQueue), cmpKey orders the entries
// (Java's HashMap order is arbitrary; sorted output is stable), appendValue writes
// a value. nil is written as {}.
func AppendJSONObjectKeyMap[K comparable, V any](dst []byte, m map[K]V, cmpKey func(a, b K) int,
	appendKey func([]byte, K) []byte, appendValue func([]byte, V) []byte) []byte {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmpKey)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendKey(dst, k)
		dst = append(dst, ':')
		dst = appendValue(dst, m[k])
	}
	return append(dst, '}')
}
