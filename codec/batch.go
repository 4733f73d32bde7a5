package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrBatchCorrupt reports a SEND_BATCH_MESSAGE body that does not parse.
var ErrBatchCorrupt = errors.New("codec: batch body corrupt")

// BatchEntry is one message of a SEND_BATCH_MESSAGE body. Body and Properties alias
// the body buffer.
type BatchEntry struct {
	Flag       int32
	Body       []byte
	Properties string
}

// BatchIterator walks a SEND_BATCH_MESSAGE body (MessageDecoder.encodeMessages):
// per message TOTALSIZE, MAGIC (0), BODYCRC (0), FLAG, BODYLEN+BODY,
// PROPLEN(int16)+PROPS. Fields are read in sequence as Java's decodeMessages does;
// TOTALSIZE must agree with them. It never allocates.
type BatchIterator struct {
	buf []byte
	off int
	err error
}

// NewBatchIterator starts iterating body.
func NewBatchIterator(body []byte) BatchIterator {
	return BatchIterator{buf: body}
}

// Next decodes the next message into e. It returns false at the end or on error;
// check Err afterwards.
func (it *BatchIterator) Next(e *BatchEntry) bool {
	if it.err != nil || it.off >= len(it.buf) {
		return false
	}
	b := it.buf[it.off:]
	be := binary.BigEndian
	const head = 4 + 4 + 4 + 4 + 4
	if len(b) < head {
		it.err = fmt.Errorf("%w: %d trailing bytes at %d", ErrBatchCorrupt, len(b), it.off)
		return false
	}
	total := int(int32(be.Uint32(b)))
	bodyLen := int(int32(be.Uint32(b[16:])))
	if bodyLen < 0 || bodyLen > len(b)-head-2 {
		it.err = fmt.Errorf("%w: body length %d at %d", ErrBatchCorrupt, bodyLen, it.off)
		return false
	}
	p := head + bodyLen
	propLen := int(int16(be.Uint16(b[p:])))
	p += 2
	if propLen < 0 || propLen > len(b)-p {
		it.err = fmt.Errorf("%w: properties length %d at %d", ErrBatchCorrupt, propLen, it.off)
		return false
	}
	if total != p+propLen {
		it.err = fmt.Errorf("%w: TOTALSIZE %d, fields %d at %d", ErrBatchCorrupt, total, p+propLen, it.off)
		return false
	}
	e.Flag = int32(be.Uint32(b[12:]))
	e.Body = b[head : head+bodyLen : head+bodyLen]
	e.Properties = aliasString(b[p : p+propLen])
	it.off += total
	return true
}

// Err is the parse error that stopped Next, if any.
func (it *BatchIterator) Err() error { return it.err }

// AppendBatchEntry appends one message in the batch body layout (tests and tools).
func AppendBatchEntry(dst []byte, flag int32, body []byte, props string) []byte {
	total := 4 + 4 + 4 + 4 + 4 + len(body) + 2 + len(props)
	dst = binary.BigEndian.AppendUint32(dst, uint32(total))
	dst = binary.BigEndian.AppendUint32(dst, 0)
	dst = binary.BigEndian.AppendUint32(dst, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(flag))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(body)))
	dst = append(dst, body...)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(props)))
	return append(dst, props...)
}
