package codec

import (
	"errors"
	"strconv"
)

// Errors DecodeCommand wraps (test with errors.Is). Every one of them means the
// peer sent a frame Java would also reject, and Java closes the channel then.
var (
	// ErrShortFrame: the frame is too short for what its own lengths announce.
	ErrShortFrame = errors.New("codec: short frame")
	// ErrHeaderLength: the header length word is larger than the frame or a limit.
	ErrHeaderLength = errors.New("codec: bad header length")
	// ErrSerializeType: the top byte of the header length word is neither 0 nor 1.
	ErrSerializeType = errors.New("codec: unknown serialize type")
	// ErrBadHeader: the header bytes do not parse.
	ErrBadHeader = errors.New("codec: malformed header")
	// ErrLimit: the header exceeds a sanity limit of Limits.
	ErrLimit = errors.New("codec: header exceeds limit")
)

// MissingFieldError reports a required (@CFNotNull in Java) custom header field
// that is absent. Java only logs this and then fails with a NullPointerException
// further on; rmqd refuses the request instead, so the processor can answer with
// a clear remark.
type MissingFieldError struct {
	Field string
}

func (e *MissingFieldError) Error() string {
	return "the custom field <" + e.Field + "> is null"
}

// MissingField returns the error reporting that a required header field is absent.
func MissingField(name string) error { return &MissingFieldError{Field: name} }

// FieldError reports a header field whose value does not parse as its Java type
// (Integer.parseInt / Long.parseLong would throw NumberFormatException).
type FieldError struct {
	Field string
	Value string
	Type  string // "int32" or "int64"
}

func (e *FieldError) Error() string {
	v := e.Value
	if len(v) > 64 {
		v = v[:64] + "..."
	}
	return "the custom field <" + e.Field + "> is not a valid " + e.Type + ": " + strconv.Quote(v)
}
