package codec

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	jsoniter "github.com/json-iterator/go"
)

// The one JSON approach for bodies and config files. Output the wire needs
// byte for byte in fastjson's form (sorted bean properties, object map keys,
// Long keys) is appended by the Append* helpers in fastjson.go; everything
// else is read and written here, with json-iterator configured to write what
// encoding/json writes (sorted map keys, HTML-escaped strings, invalid UTF-8
// as U+FFFD), and every input first passed through StrictJSON so what
// fastjson writes or accepts reads as it does in Java.
var bodyJSON = jsoniter.Config{EscapeHTML: true, SortMapKeys: true, ValidateJsonRawMessage: true}.Froze()

// RawJSON is a body fragment kept as its text (encoding/json's RawMessage,
// which json-iterator writes and reads as such).
type RawJSON = json.RawMessage

// MarshalBody writes v as JSON.
func MarshalBody(v any) ([]byte, error) { return bodyJSON.Marshal(v) }

// MarshalBodyIndent writes v as JSON indented by indent per level: "\t" is
// fastjson's pretty format, which Java uses for its config files.
func MarshalBodyIndent(v any, indent string) ([]byte, error) {
	b, err := bodyJSON.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Grow(len(b) + len(b)/4)
	if err := json.Indent(&out, b, "", indent); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// UnmarshalBody reads a body or config file written by fastjson (or anything
// fastjson accepts: bare and object map keys, single quotes) into v.
func UnmarshalBody(data []byte, v any) error {
	strict, err := StrictJSON(validUTF8(data))
	if err != nil {
		return err
	}
	return bodyJSON.Unmarshal(strict, v)
}

// validUTF8 replaces each byte of data that is not UTF-8 with U+FFFD, as
// encoding/json does inside strings (json-iterator copies such bytes), so a
// string reads as the Java String decoded from the same bytes would.
func validUTF8(data []byte) []byte {
	if utf8.Valid(data) {
		return data
	}
	out := make([]byte, 0, len(data)+8)
	for len(data) > 0 {
		r, n := utf8.DecodeRune(data)
		if r == utf8.RuneError && n == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, data[:n]...)
		}
		data = data[n:]
	}
	return out
}

// validJSON reports whether b is standard JSON. encoding/json's check, not
// json-iterator's: that one refuses a bare top-level number.
func validJSON(b []byte) bool { return json.Valid(b) }
