package codec

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// maxBodyJSONDepth bounds nesting of bodies so hostile input cannot exhaust the stack.
const maxBodyJSONDepth = 256

// StrictJSON turns what fastjson writes or accepts into standard JSON that
// encoding/json can decode:
//   - bare map keys, numeric or identifier ({0:"x"}, {a:1}) become quoted ({"0":"x"});
//   - object or array keys ({{"brokerName":"b","queueId":0,"topic":"t"}:12}) become
//     the compact text of the key as a JSON string, so callers can parse it again;
//   - single-quoted strings become double-quoted.
//
// Valid JSON is returned as is, without copying. Anything else malformed is an error.
func StrictJSON(src []byte) ([]byte, error) {
	if validJSON(src) {
		return src, nil
	}
	p := lenientParser{src: src, dst: make([]byte, 0, len(src)+16)}
	p.skipSpace()
	if err := p.value(0); err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.src) {
		return nil, p.errorf("trailing data")
	}
	return p.dst, nil
}

type lenientParser struct {
	src []byte
	pos int
	dst []byte
}

var errJSONEnd = errors.New("unexpected end of JSON")

func (p *lenientParser) errorf(format string, args ...any) error {
	return fmt.Errorf("lenient json at offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *lenientParser) skipSpace() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r', '\f', '\b':
			p.pos++
		default:
			return
		}
	}
}

func (p *lenientParser) value(depth int) error {
	if depth > maxBodyJSONDepth {
		return p.errorf("nesting deeper than %d", maxBodyJSONDepth)
	}
	if p.pos >= len(p.src) {
		return errJSONEnd
	}
	switch c := p.src[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"' || c == '\'':
		return p.str()
	default:
		return p.literal()
	}
}

func (p *lenientParser) object(depth int) error {
	p.pos++ // '{'
	p.dst = append(p.dst, '{')
	p.skipSpace()
	first := true
	for {
		if p.pos >= len(p.src) {
			return errJSONEnd
		}
		if p.src[p.pos] == '}' {
			p.pos++
			p.dst = append(p.dst, '}')
			return nil
		}
		if !first {
			if p.src[p.pos] != ',' {
				return p.errorf("expected , or } in object")
			}
			p.pos++
			p.skipSpace()
			if p.pos < len(p.src) && p.src[p.pos] == '}' { // fastjson tolerates a trailing comma
				continue
			}
			p.dst = append(p.dst, ',')
		}
		first = false
		if err := p.key(depth); err != nil {
			return err
		}
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return p.errorf("expected : after key")
		}
		p.pos++
		p.dst = append(p.dst, ':')
		p.skipSpace()
		if err := p.value(depth + 1); err != nil {
			return err
		}
		p.skipSpace()
	}
}

func (p *lenientParser) key(depth int) error {
	if p.pos >= len(p.src) {
		return errJSONEnd
	}
	switch c := p.src[p.pos]; c {
	case '"', '\'':
		return p.str()
	case '{', '[':
		// A bean or collection used as a key: normalise it on its own, then write its
		// text as the key string.
		sub := lenientParser{src: p.src, pos: p.pos}
		if err := sub.value(depth + 1); err != nil {
			return err
		}
		p.pos = sub.pos
		p.dst = AppendJSONString(p.dst, string(sub.dst))
		return nil
	default:
		start := p.pos
		for p.pos < len(p.src) {
			c := p.src[p.pos]
			if c == ':' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '}' || c == ',' {
				break
			}
			p.pos++
		}
		if p.pos == start {
			return p.errorf("empty key")
		}
		p.dst = AppendJSONString(p.dst, string(p.src[start:p.pos]))
		return nil
	}
}

func (p *lenientParser) array(depth int) error {
	p.pos++ // '['
	p.dst = append(p.dst, '[')
	p.skipSpace()
	first := true
	for {
		if p.pos >= len(p.src) {
			return errJSONEnd
		}
		if p.src[p.pos] == ']' {
			p.pos++
			p.dst = append(p.dst, ']')
			return nil
		}
		if !first {
			if p.src[p.pos] != ',' {
				return p.errorf("expected , or ] in array")
			}
			p.pos++
			p.skipSpace()
			p.dst = append(p.dst, ',')
		}
		first = false
		if err := p.value(depth + 1); err != nil {
			return err
		}
		p.skipSpace()
	}
}

// str copies a string in either quote style, re-escaping it in double quotes.
func (p *lenientParser) str() error {
	quote := p.src[p.pos]
	p.pos++
	start := p.pos
	if quote == '"' {
		// Copy verbatim after checking escapes; the content is already JSON.
		for p.pos < len(p.src) {
			switch c := p.src[p.pos]; {
			case c == '\\':
				if p.pos+1 >= len(p.src) {
					return errJSONEnd
				}
				p.pos += 2
			case c == '"':
				p.dst = append(p.dst, '"')
				p.dst = append(p.dst, p.src[start:p.pos]...)
				p.dst = append(p.dst, '"')
				p.pos++
				if !validJSON(p.dst[len(p.dst)-(p.pos-start)-1:]) {
					return p.errorf("invalid string")
				}
				return nil
			default:
				p.pos++
			}
		}
		return errJSONEnd
	}
	// Single-quoted: unescape \' and re-quote.
	var buf []byte
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '\\' && p.pos+1 < len(p.src) && p.src[p.pos+1] == '\'':
			buf = append(buf, '\'')
			p.pos += 2
		case c == '\\':
			if p.pos+1 >= len(p.src) {
				return errJSONEnd
			}
			buf = append(buf, c, p.src[p.pos+1])
			p.pos += 2
		case c == '"':
			buf = append(buf, '\\', '"')
			p.pos++
		case c == '\'':
			p.pos++
			p.dst = append(p.dst, '"')
			p.dst = append(p.dst, buf...)
			p.dst = append(p.dst, '"')
			if !validJSON(p.dst[len(p.dst)-len(buf)-2:]) {
				return p.errorf("invalid string")
			}
			return nil
		case c < 0x20:
			buf = appendUnicodeEscape(buf, rune(c))
			p.pos++
		default:
			_, size := utf8.DecodeRune(p.src[p.pos:])
			buf = append(buf, p.src[p.pos:p.pos+size]...)
			p.pos += size
		}
	}
	return errJSONEnd
}

// literal copies a number, true, false or null; encoding/json validates it later,
// here it only has to end at a delimiter.
func (p *lenientParser) literal() error {
	start := p.pos
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if c == ',' || c == '}' || c == ']' || c == ':' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			break
		}
		p.pos++
	}
	if p.pos == start {
		return p.errorf("unexpected %q", p.src[p.pos])
	}
	lit := p.src[start:p.pos]
	if !validJSON(lit) {
		return p.errorf("invalid literal %q", lit)
	}
	p.dst = append(p.dst, lit...)
	return nil
}

// ParseMessageQueueKey parses a MessageQueue written as a map key, as StrictJSON
// leaves it: the key string holding {"brokerName":…,"queueId":…,"topic":…}.
func ParseMessageQueueKey(key string) (brokerName string, queueID int32, topic string, err error) {
	strict, err := StrictJSON([]byte(key))
	if err != nil {
		return "", 0, "", fmt.Errorf("message queue key: %w", err)
	}
	var mq struct {
		BrokerName string `json:"brokerName"`
		QueueID    int32  `json:"queueId"`
		Topic      string `json:"topic"`
	}
	if err := UnmarshalBody(strict, &mq); err != nil {
		return "", 0, "", fmt.Errorf("message queue key: %w", err)
	}
	return mq.BrokerName, mq.QueueID, mq.Topic, nil
}
