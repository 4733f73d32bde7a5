package codec

import (
	"encoding/binary"
	"strconv"
	"sync"
)

// HeaderWriter is a typed custom header that writes its fields straight into the
// frame being encoded, like Java's FastCodesHeader: numbers are formatted into the
// output buffer, so encoding a response header allocates nothing. Set it as
// RemotingCommand.CustomHeader; Encode writes its fields first, then cmd.Ext.
// A key must not appear in both (a reader keeps the last one).
type HeaderWriter interface {
	WriteExt(w *ExtWriter)
}

// ExtWriter appends custom header fields in the serialize type of the command
// being encoded: `"key":"value"` members of the JSON extFields object, or the
// binary map's int16 key length, key, int32 value length, value.
type ExtWriter struct {
	buf  []byte
	json bool
	n    int
}

// extWriters recycles writers: a HeaderWriter is an interface, so a *ExtWriter
// handed to it escapes and would otherwise be allocated on every Encode.
var extWriters = sync.Pool{New: func() any { return new(ExtWriter) }}

// maxBinaryKeyLen is the longest key the binary map's int16 length can carry.
const maxBinaryKeyLen = 1<<15 - 1

func (w *ExtWriter) key(k string) {
	if w.json {
		if w.n > 0 {
			w.buf = append(w.buf, ',')
		}
		w.buf = appendHeaderString(w.buf, k)
		w.buf = append(w.buf, ':')
	} else {
		if len(k) > maxBinaryKeyLen {
			k = k[:maxBinaryKeyLen] // Java would write a wrapped length; keep the frame parseable
		}
		w.buf = binary.BigEndian.AppendUint16(w.buf, uint16(len(k)))
		w.buf = append(w.buf, k...)
	}
	w.n++
}

// String writes key with a string value. In the binary type an empty value reads
// back as absent (Java null); in JSON it stays "".
func (w *ExtWriter) String(key, value string) {
	w.key(key)
	if w.json {
		w.buf = appendHeaderString(w.buf, value)
	} else {
		w.buf = binary.BigEndian.AppendUint32(w.buf, uint32(len(value)))
		w.buf = append(w.buf, value...)
	}
}

// StringIfSet writes key only when value is not empty, the way Java skips null
// fields.
func (w *ExtWriter) StringIfSet(key, value string) {
	if value != "" {
		w.String(key, value)
	}
}

// Int64 writes key with the decimal form of v (as a JSON string in JSON: every
// ext value is a string on the wire).
func (w *ExtWriter) Int64(key string, v int64) {
	w.key(key)
	if w.json {
		w.buf = append(w.buf, '"')
		w.buf = strconv.AppendInt(w.buf, v, 10)
		w.buf = append(w.buf, '"')
	} else {
		at := len(w.buf)
		w.buf = append(w.buf, 0, 0, 0, 0)
		w.buf = strconv.AppendInt(w.buf, v, 10)
		binary.BigEndian.PutUint32(w.buf[at:], uint32(len(w.buf)-at-4))
	}
}

// Int32 writes key with the decimal form of v.
func (w *ExtWriter) Int32(key string, v int32) { w.Int64(key, int64(v)) }

// Bool writes key as "true" or "false".
func (w *ExtWriter) Bool(key string, v bool) {
	if v {
		w.String(key, "true")
	} else {
		w.String(key, "false")
	}
}

// writeExt runs the command's custom header and then its Ext through a pooled
// writer appending to dst.
func (c *RemotingCommand) writeExt(dst []byte, json bool) []byte {
	if c.CustomHeader == nil {
		// no interface call: write Ext without borrowing a writer
		w := ExtWriter{buf: dst, json: json}
		for i := range c.Ext {
			w.String(c.Ext[i].Key, c.Ext[i].Value)
		}
		return w.buf
	}
	w := extWriters.Get().(*ExtWriter)
	*w = ExtWriter{buf: dst, json: json}
	c.CustomHeader.WriteExt(w)
	for i := range c.Ext {
		w.String(c.Ext[i].Key, c.Ext[i].Value)
	}
	dst = w.buf
	*w = ExtWriter{}
	extWriters.Put(w)
	return dst
}
