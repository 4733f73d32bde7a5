package codec

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// The JSON header, written the way fastjson writes RemotingCommand
// (RemotingSerializable.encode): keys in sorted order (SortField), extFields only
// when there is one, remark only when set, every ext value a JSON string,
// serializeTypeCurrentRPC always "JSON". The Go client decodes it with jsoniter
// into code int16 / version int16 / extFields map[string]string.

func (c *RemotingCommand) appendJSONHeader(dst []byte) []byte {
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, int64(c.Code), 10)
	// Java writes extFields iff the map is non-null. Ext == nil means null; a
	// CustomHeader always makes a map (makeCustomHeaderToNet creates it).
	if c.Ext != nil || c.CustomHeader != nil {
		dst = append(dst, `,"extFields":{`...)
		dst = c.writeExt(dst, true)
		dst = append(dst, '}')
	}
	dst = append(dst, `,"flag":`...)
	dst = strconv.AppendInt(dst, int64(c.Flag), 10)
	if name := c.Language.String(); name != "" { // Java omits a null language
		dst = append(dst, `,"language":"`...)
		dst = append(dst, name...)
		dst = append(dst, '"')
	}
	dst = append(dst, `,"opaque":`...)
	dst = strconv.AppendInt(dst, int64(c.Opaque), 10)
	if c.HasRemark || c.Remark != "" {
		dst = append(dst, `,"remark":`...)
		dst = appendHeaderString(dst, c.Remark)
	}
	dst = append(dst, `,"serializeTypeCurrentRPC":"JSON","version":`...)
	dst = strconv.AppendInt(dst, int64(c.Version), 10)
	return append(dst, '}')
}

const hexDigits = "0123456789ABCDEF"

// maxJSONDepth bounds the nesting of values skipped under unknown keys, so a
// hostile header cannot exhaust the stack.
const maxJSONDepth = 64

// jsonScanner is a hand-written, allocation-free reader for the command header.
// It is lenient where fastjson is (unknown keys, numbers or strings for numbers,
// scalars for ext values, null anywhere) and fails cleanly on anything else.
type jsonScanner struct {
	b       []byte
	pos     int
	scratch *[]byte // unescaped strings; grown once to len(b), so never reallocated mid-decode
}

func (s *jsonScanner) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: json at offset %d: %s", ErrBadHeader, s.pos, fmt.Sprintf(format, args...))
}

func (s *jsonScanner) ws() {
	if s.pos < len(s.b) && s.b[s.pos] > ' ' { // compact JSON: the common case, kept inlinable
		return
	}
	s.wsSlow()
}

func (s *jsonScanner) wsSlow() {
	for s.pos < len(s.b) {
		switch s.b[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// next returns the byte at pos after whitespace, or 0 at the end.
func (s *jsonScanner) next() byte {
	s.ws()
	if s.pos < len(s.b) {
		return s.b[s.pos]
	}
	return 0
}

func (s *jsonScanner) expect(c byte) error {
	if s.next() != c {
		return s.errorf("expected %q", c)
	}
	s.pos++
	return nil
}

// shortString is how far str looks byte by byte before it asks IndexByte.
const shortString = 24

// plainEnd returns the index of the first quote or backslash in b[i:end], or
// end: where a run of a string's plain bytes stops.
func plainEnd(b []byte, i, end int) int {
	for i < end && b[i] != '"' && b[i] != '\\' {
		i++
	}
	return i
}

// alias returns b[i:j] as a string without copying.
func alias(b []byte, i, j int) string {
	if i >= j {
		return ""
	}
	return unsafe.String(&b[i], j-i)
}

// str reads a JSON string at pos (the opening quote) and returns its value,
// aliasing the input when it has no escapes.
func (s *jsonScanner) str() (string, error) {
	if s.pos >= len(s.b) || s.b[s.pos] != '"' {
		return "", s.errorf("expected string")
	}
	start := s.pos + 1
	// Most header strings are short (keys, numbers as strings): one pass over
	// a few bytes beats two IndexByte calls; long ones (properties) get those.
	short := min(start+shortString, len(s.b))
	if i := plainEnd(s.b, start, short); i < short {
		if s.b[i] == '"' {
			s.pos = i + 1
			return alias(s.b, start, i), nil
		}
		return s.unescape(start, i)
	}
	rest := s.b[start:]
	q := bytes.IndexByte(rest, '"')
	if q < 0 {
		q = len(rest) // unterminated: unescape (if any escape) or the check below reports it
	}
	if e := bytes.IndexByte(rest[:q], '\\'); e >= 0 {
		return s.unescape(start, start+e)
	}
	if q == len(rest) {
		s.pos = len(s.b)
		return "", s.errorf("unterminated string")
	}
	s.pos = start + q + 1
	return alias(s.b, start, start+q), nil
}

func hexVal(c byte) rune {
	switch {
	case c >= '0' && c <= '9':
		return rune(c - '0')
	case c >= 'a' && c <= 'f':
		return rune(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return rune(c-'A') + 10
	}
	return -1
}

func (s *jsonScanner) hex(i, n int) (rune, bool) {
	if i+n > len(s.b) {
		return 0, false
	}
	var r rune
	for k := 0; k < n; k++ {
		h := hexVal(s.b[i+k])
		if h < 0 {
			return 0, false
		}
		r = r<<4 | h
	}
	return r, true
}

// unescape copies the string starting at start (first escape at i) into scratch.
// The output is never longer than the input, and scratch has room for the whole
// header, so strings handed out earlier stay valid.
func (s *jsonScanner) unescape(start, i int) (string, error) {
	if cap(*s.scratch) < len(s.b) { // first escape of this header (scratch starts empty)
		*s.scratch = make([]byte, 0, len(s.b))
	}
	buf := *s.scratch
	from := len(buf)
	buf = append(buf, s.b[start:i]...)
	for i < len(s.b) {
		c := s.b[i]
		if c == '"' {
			s.pos = i + 1
			*s.scratch = buf
			return unsafe.String(unsafe.SliceData(buf[from:]), len(buf)-from), nil
		}
		if c != '\\' { // a run of plain bytes up to the next quote or escape, copied at once
			j := plainEnd(s.b, i+1, len(s.b))
			buf = append(buf, s.b[i:j]...)
			i = j
			continue
		}
		if i+1 >= len(s.b) {
			break
		}
		e := s.b[i+1]
		i += 2
		switch e {
		case '"', '\\', '/', '\'':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'x': // fastjson accepts \xHH
			r, ok := s.hex(i, 2)
			if !ok {
				s.pos = i
				return "", s.errorf("bad \\x escape")
			}
			buf = utf8.AppendRune(buf, r)
			i += 2
		case 'u':
			r, ok := s.hex(i, 4)
			if !ok {
				s.pos = i
				return "", s.errorf("bad \\u escape")
			}
			i += 4
			if r >= 0xD800 && r < 0xDC00 && i+6 <= len(s.b) && s.b[i] == '\\' && s.b[i+1] == 'u' {
				if lo, ok := s.hex(i+2, 4); ok && lo >= 0xDC00 && lo < 0xE000 {
					r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
					i += 6
				}
			}
			buf = utf8.AppendRune(buf, r) // a lone surrogate becomes U+FFFD
		default:
			s.pos = i - 1
			return "", s.errorf("bad escape")
		}
	}
	*s.scratch = buf[:from]
	s.pos = len(s.b)
	return "", s.errorf("unterminated string")
}

// skipString moves past a string without decoding it.
func (s *jsonScanner) skipString() error {
	if s.pos >= len(s.b) || s.b[s.pos] != '"' {
		return s.errorf("expected string")
	}
	for i := s.pos + 1; i < len(s.b); i++ {
		switch s.b[i] {
		case '"':
			s.pos = i + 1
			return nil
		case '\\':
			i++ // the escaped byte; \u digits are plain bytes
		}
	}
	s.pos = len(s.b)
	return s.errorf("unterminated string")
}

// number moves past a number token and returns its text, and whether it is an
// integer (no fraction or exponent).
func (s *jsonScanner) number() (string, bool, error) {
	start := s.pos
	i := s.pos
	if i < len(s.b) && (s.b[i] == '-' || s.b[i] == '+') {
		i++
	}
	digits := i
	for i < len(s.b) && s.b[i] >= '0' && s.b[i] <= '9' {
		i++
	}
	if i == digits {
		s.pos = i
		return "", false, s.errorf("bad number")
	}
	integer := true
	if i < len(s.b) && s.b[i] == '.' {
		integer = false
		i++
		d := i
		for i < len(s.b) && s.b[i] >= '0' && s.b[i] <= '9' {
			i++
		}
		if i == d {
			s.pos = i
			return "", false, s.errorf("bad number")
		}
	}
	if i < len(s.b) && (s.b[i] == 'e' || s.b[i] == 'E') {
		integer = false
		i++
		if i < len(s.b) && (s.b[i] == '-' || s.b[i] == '+') {
			i++
		}
		d := i
		for i < len(s.b) && s.b[i] >= '0' && s.b[i] <= '9' {
			i++
		}
		if i == d {
			s.pos = i
			return "", false, s.errorf("bad number")
		}
	}
	s.pos = i
	return alias(s.b, start, i), integer, nil
}

func (s *jsonScanner) literal(word string) error {
	if len(s.b)-s.pos < len(word) || string(s.b[s.pos:s.pos+len(word)]) != word {
		return s.errorf("bad literal")
	}
	s.pos += len(word)
	return nil
}

// skip moves past any value.
func (s *jsonScanner) skip(depth int) error {
	if depth > maxJSONDepth {
		return s.errorf("nested too deep")
	}
	switch s.next() {
	case '"':
		return s.skipString()
	case '{':
		s.pos++
		if s.next() == '}' {
			s.pos++
			return nil
		}
		for {
			s.ws()
			if err := s.skipString(); err != nil {
				return err
			}
			if err := s.expect(':'); err != nil {
				return err
			}
			if err := s.skip(depth + 1); err != nil {
				return err
			}
			switch s.next() {
			case ',':
				s.pos++
			case '}':
				s.pos++
				return nil
			default:
				return s.errorf("expected ',' or '}'")
			}
		}
	case '[':
		s.pos++
		if s.next() == ']' {
			s.pos++
			return nil
		}
		for {
			if err := s.skip(depth + 1); err != nil {
				return err
			}
			switch s.next() {
			case ',':
				s.pos++
			case ']':
				s.pos++
				return nil
			default:
				return s.errorf("expected ',' or ']'")
			}
		}
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	case 0:
		return s.errorf("unexpected end")
	}
	_, _, err := s.number()
	return err
}

// scalar reads a value as a string the way fastjson casts to String: strings as
// they are, numbers and booleans as their text, objects and arrays as their raw
// JSON. null reports isNull.
func (s *jsonScanner) scalar() (v string, isNull bool, err error) {
	switch s.next() {
	case '"':
		v, err = s.str()
		return v, false, err
	case 'n':
		return "", true, s.literal("null")
	case 't':
		return "true", false, s.literal("true")
	case 'f':
		return "false", false, s.literal("false")
	case '{', '[':
		start := s.pos
		err = s.skip(1)
		return alias(s.b, start, s.pos), false, err
	case 0:
		return "", false, s.errorf("unexpected end")
	}
	v, _, err = s.number()
	return v, false, err
}

// int32Value reads a number, a numeric string or null (0) as an int32.
func (s *jsonScanner) int32Value(field string) (int32, error) {
	var text string
	switch s.next() {
	case 'n':
		return 0, s.literal("null")
	case '"':
		var err error
		if text, err = s.str(); err != nil {
			return 0, err
		}
	default:
		t, integer, err := s.number()
		if err != nil {
			return 0, err
		}
		if !integer {
			return 0, s.errorf("%s is not an integer", field)
		}
		text = t
	}
	v, ok := parseJavaLong(text)
	if !ok || v < -1<<31 || v > 1<<31-1 {
		return 0, s.errorf("%s is not an int32", field)
	}
	return int32(v), nil
}

func decodeJSONHeader(h []byte, cmd *RemotingCommand, lim Limits) error {
	cmd.scratch = cmd.scratch[:0]
	s := jsonScanner{b: h, scratch: &cmd.scratch}
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.next() == '}' {
		s.pos++
		return s.end()
	}
	for {
		s.ws()
		key, err := s.str()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		switch key {
		case "code":
			cmd.Code, err = s.int32Value(key)
		case "version":
			cmd.Version, err = s.int32Value(key)
		case "opaque":
			cmd.Opaque, err = s.int32Value(key)
		case "flag":
			cmd.Flag, err = s.int32Value(key)
		case "language":
			err = s.language(cmd)
		case "remark":
			var null bool
			cmd.Remark, null, err = s.scalar()
			cmd.HasRemark = !null
		case "extFields":
			err = s.extFields(cmd, lim)
		default: // serializeTypeCurrentRPC and anything unknown
			err = s.skip(1)
		}
		if err != nil {
			return err
		}
		switch s.next() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return s.end()
		default:
			return s.errorf("expected ',' or '}'")
		}
	}
}

func (s *jsonScanner) end() error {
	if s.next() != 0 || s.pos != len(s.b) {
		return s.errorf("trailing data")
	}
	return nil
}

// language accepts the enum name (unknown names become LangOther), an ordinal
// number, or null (keeps Java's default, JAVA).
func (s *jsonScanner) language(cmd *RemotingCommand) error {
	switch s.next() {
	case '"':
		name, err := s.str()
		if err != nil {
			return err
		}
		cmd.Language, _ = ParseLanguage(name)
		return nil
	case 'n':
		return s.literal("null")
	}
	v, err := s.int32Value("language")
	if err != nil {
		return err
	}
	if v >= 0 && v < 256 && LanguageCode(v).Known() {
		cmd.Language = LanguageCode(v)
	} else {
		cmd.Language = LangOther
	}
	return nil
}

func (s *jsonScanner) extFields(cmd *RemotingCommand, lim Limits) error {
	cmd.Ext.Reset() // a repeated "extFields" key replaces the map, as in fastjson
	switch s.next() {
	case 'n':
		return s.literal("null")
	case '{':
		s.pos++
	default:
		return s.errorf("extFields is not an object")
	}
	if s.next() == '}' {
		s.pos++
		return nil
	}
	n := 0
	var seen uint64
	for {
		s.ws()
		key, err := s.str()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		val, null, err := s.scalar()
		if err != nil {
			return err
		}
		if n++; n > lim.maxExtFields() {
			return fmt.Errorf("%w: more than %d ext fields", ErrLimit, lim.maxExtFields())
		}
		cmd.putExt(key, val, null, &seen)
		switch s.next() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil
		default:
			return s.errorf("expected ',' or '}'")
		}
	}
}
