package compat

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// ParseProperties reads a Java properties file (java.util.Properties.load): `k=v`,
// `k:v` and `k v` separators, `#` and `!` comment lines, backslash escapes (\t \n
// \r \f \uXXXX, any other \c is c), and lines continued by an odd number of trailing
// backslashes (leading blanks of the next line dropped). A later key wins. Bytes
// are taken as UTF-8 where Java's InputStream variant would read ISO-8859-1; rmqd's
// config files are UTF-8 and \uXXXX escapes work the same in both.
func ParseProperties(r io.Reader) (map[string]string, error) {
	br := bufio.NewReader(r)
	props := make(map[string]string)
	var logical strings.Builder
	lineNo := 0
	for {
		line, err := br.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read properties: %w", err)
		}
		atEOF := err != nil
		if line == "" && atEOF {
			break
		}
		// Java also ends natural lines at a lone '\r'.
		natural := strings.Split(strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r"), "\r")
		for _, nl := range natural {
			lineNo++
			continuing := logical.Len() > 0
			nl = strings.TrimLeft(nl, " \t\f")
			if !continuing && (nl == "" || nl[0] == '#' || nl[0] == '!') {
				continue
			}
			if trailingBackslashes(nl)%2 == 1 {
				logical.WriteString(nl[:len(nl)-1])
				continue
			}
			logical.WriteString(nl)
			if err := parsePropertyLine(logical.String(), props); err != nil {
				return nil, fmt.Errorf("properties line %d: %w", lineNo, err)
			}
			logical.Reset()
		}
		if atEOF {
			break
		}
	}
	if logical.Len() > 0 { // a continuation at end of input
		if err := parsePropertyLine(logical.String(), props); err != nil {
			return nil, fmt.Errorf("properties line %d: %w", lineNo, err)
		}
	}
	return props, nil
}

func trailingBackslashes(s string) int {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n
}

func isPropBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

func parsePropertyLine(line string, props map[string]string) error {
	keyEnd := len(line)
	valStart := len(line)
	hasSep := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++
			continue
		}
		if c == '=' || c == ':' {
			keyEnd, valStart, hasSep = i, i+1, true
			break
		}
		if isPropBlank(c) {
			keyEnd, valStart = i, i+1
			break
		}
	}
	for valStart < len(line) && isPropBlank(line[valStart]) {
		valStart++
	}
	if !hasSep && valStart < len(line) && (line[valStart] == '=' || line[valStart] == ':') {
		valStart++
		for valStart < len(line) && isPropBlank(line[valStart]) {
			valStart++
		}
	}
	key, err := unescapeProperty(line[:keyEnd])
	if err != nil {
		return err
	}
	val, err := unescapeProperty(line[valStart:])
	if err != nil {
		return err
	}
	props[key] = val
	return nil
}

func unescapeProperty(s string) (string, error) {
	if strings.IndexByte(s, '\\') < 0 {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			if c != '\\' {
				b.WriteByte(c)
			}
			continue
		}
		i++
		switch c = s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", errors.New("malformed \\uxxxx encoding")
			}
			r, ok := parseHex4(s[i+1 : i+5])
			if !ok {
				return "", errors.New("malformed \\uxxxx encoding")
			}
			i += 4
			// A character outside the BMP arrives as two escapes (a surrogate pair).
			if r >= 0xD800 && r < 0xDC00 && i+7 <= len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
				if lo, ok := parseHex4(s[i+3 : i+7]); ok && lo >= 0xDC00 && lo < 0xE000 {
					r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
					i += 6
				}
			}
			b.WriteRune(r)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

func parseHex4(s string) (rune, bool) {
	var r rune
	for i := 0; i < 4; i++ {
		h := s[i]
		r <<= 4
		switch {
		case h >= '0' && h <= '9':
			r |= rune(h - '0')
		case h >= 'a' && h <= 'f':
			r |= rune(h-'a') + 10
		case h >= 'A' && h <= 'F':
			r |= rune(h-'A') + 10
		default:
			return 0, false
		}
	}
	return r, true
}

// FormatProperties writes m as `key=value` lines sorted by key, the layout of
// RocketMQ's MixAll.properties2String(…, true) (GET_NAMESRV_CONFIG, GET_BROKER_CONFIG,
// persisted config files). Plain keys and values come out byte for byte as Java
// writes them; only what would not read back through ParseProperties (or Java's
// Properties.load) is escaped: backslashes, line breaks, tabs and form feeds, blanks,
// '=' and ':' in keys, a leading '#'/'!' in a key and leading blanks of a value.
func FormatProperties(m map[string]string) []byte {
	var dst []byte
	for _, k := range slices.Sorted(maps.Keys(m)) {
		dst = appendPropertyText(dst, k, true)
		dst = append(dst, '=')
		dst = appendPropertyText(dst, m[k], false)
		dst = append(dst, '\n')
	}
	return dst
}

func appendPropertyText(dst []byte, s string, isKey bool) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			dst = append(dst, '\\', '\\')
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c == '\f':
			dst = append(dst, '\\', 'f')
		case c == ' ' && (isKey || i == 0):
			dst = append(dst, '\\', ' ')
		case isKey && (c == '=' || c == ':'):
			dst = append(dst, '\\', c)
		case isKey && i == 0 && (c == '#' || c == '!'):
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', upperHex[c>>4], upperHex[c&0xF])
		case c >= utf8.RuneSelf:
			_, size := utf8.DecodeRuneInString(s[i:])
			dst = append(dst, s[i:i+size]...)
			i += size
			continue
		default:
			dst = append(dst, c)
		}
		i++
	}
	return dst
}
