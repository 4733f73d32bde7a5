package codec

import (
	"sort"
	"strings"
)

// Property separators of the encoded properties string.
const (
	PropNameValueSep = '\x01'
	PropSep          = '\x02'
)

// Property names the store and broker read (MessageConst.java).
const (
	PropKeys        = "KEYS"
	PropTags        = "TAGS"
	PropWait        = "WAIT"
	PropDelay       = "DELAY"
	PropUniqKey     = "UNIQ_KEY"
	PropRealTopic   = "REAL_TOPIC"
	PropRealQueueID = "REAL_QID"
	PropTranMsg     = "TRAN_MSG"
	PropCluster     = "CLUSTER"
)

// nextProperty returns the next well-formed pair of props starting at i, following
// MessageDecoder.string2messageProperties: pieces split on 0x02, a pair needs a 0x01
// with a non-empty name before it and a non-empty value after it; other pieces are
// skipped. ok is false when nothing is left.
func nextProperty(props string, i int) (name, value string, next int, ok bool) {
	for i < len(props) {
		end := strings.IndexByte(props[i:], PropSep)
		var piece string
		if end < 0 {
			piece, next = props[i:], len(props)
		} else {
			piece, next = props[i:i+end], i+end+1
		}
		i = next
		sep := strings.IndexByte(piece, PropNameValueSep)
		if sep > 0 && sep < len(piece)-1 {
			return piece[:sep], piece[sep+1:], next, true
		}
	}
	return "", "", len(props), false
}

// NextProperty iterates the well-formed pairs of props without allocating: start
// with i = 0 and continue with the returned next while ok.
func NextProperty(props string, i int) (name, value string, next int, ok bool) {
	return nextProperty(props, i)
}

// PropertyValue finds name in an encoded properties string without allocating. When
// a name repeats, the last value wins, as it does in Java's HashMap.
func PropertyValue(props, name string) (string, bool) {
	var val string
	found := false
	for i := 0; ; {
		n, v, next, ok := nextProperty(props, i)
		if !ok {
			return val, found
		}
		if n == name {
			val, found = v, true
		}
		i = next
	}
}

// AppendProperty adds name=value at the end of props (a 0x02 is inserted first if
// props does not end with one). It does not look for an existing entry.
func AppendProperty(props, name, value string) string {
	var b strings.Builder
	b.Grow(len(props) + len(name) + len(value) + 3)
	b.WriteString(props)
	if len(props) > 0 && props[len(props)-1] != PropSep {
		b.WriteByte(PropSep)
	}
	b.WriteString(name)
	b.WriteByte(PropNameValueSep)
	b.WriteString(value)
	b.WriteByte(PropSep)
	return b.String()
}

// DeleteProperty removes every entry of name (and drops malformed pieces).
func DeleteProperty(props, name string) string {
	if _, ok := PropertyValue(props, name); !ok {
		return props
	}
	var b strings.Builder
	b.Grow(len(props))
	for i := 0; ; {
		n, v, next, ok := nextProperty(props, i)
		if !ok {
			return b.String()
		}
		if n != name {
			b.WriteString(n)
			b.WriteByte(PropNameValueSep)
			b.WriteString(v)
			b.WriteByte(PropSep)
		}
		i = next
	}
}

// SetProperty replaces name's value, or appends it.
func SetProperty(props, name, value string) string {
	return AppendProperty(DeleteProperty(props, name), name, value)
}

// ParseProperties decodes props into a map (tests and cold paths).
func ParseProperties(props string) map[string]string {
	m := make(map[string]string)
	for i := 0; ; {
		n, v, next, ok := nextProperty(props, i)
		if !ok {
			return m
		}
		m[n] = v
		i = next
	}
}

// FormatProperties encodes m with names sorted, skipping empty names and values
// (which a Java reader would drop anyway).
func FormatProperties(m map[string]string) string {
	names := make([]string, 0, len(m))
	for k, v := range m {
		if k != "" && v != "" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		b.WriteString(k)
		b.WriteByte(PropNameValueSep)
		b.WriteString(m[k])
		b.WriteByte(PropSep)
	}
	return b.String()
}
