package filter

import (
	"encoding/binary"
	"unsafe"

	"rmqd/codec"
)

// Commitlog record layout (store.md §2.1), enough to find the properties.
const (
	recMagicPos   = 4
	recSysFlagPos = 36
	// Offset of BODY length with 0-byte host fields: 4+4+4+4+4+8+8+4+8 + 8 + 4+8.
	recBodyLenBase = 68

	bornHostV6Flag  = 0x10
	storeHostV6Flag = 0x20
)

// recordProperties returns the encoded properties of a whole commitlog record, or
// ok=false if the record is cut short or has an unknown magic. The string aliases
// record (no copy) and must not outlive the caller's use of record.
func recordProperties(rec []byte) (string, bool) {
	if len(rec) < recSysFlagPos+4 {
		return "", false
	}
	topicLenSize := 0
	switch int32(binary.BigEndian.Uint32(rec[recMagicPos:])) {
	case codec.MagicV1:
		topicLenSize = 1
	case codec.MagicV2:
		topicLenSize = 2
	default:
		return "", false
	}
	sysFlag := binary.BigEndian.Uint32(rec[recSysFlagPos:])
	pos := recBodyLenBase + 8 + 8
	if sysFlag&bornHostV6Flag != 0 {
		pos += 12
	}
	if sysFlag&storeHostV6Flag != 0 {
		pos += 12
	}
	if len(rec) < pos+4 {
		return "", false
	}
	bodyLen := int(int32(binary.BigEndian.Uint32(rec[pos:])))
	if bodyLen < 0 || len(rec)-pos-4 < bodyLen {
		return "", false
	}
	pos += 4 + bodyLen
	if len(rec) < pos+topicLenSize {
		return "", false
	}
	var topicLen int
	if topicLenSize == 1 {
		topicLen = int(int8(rec[pos])) // Java reads the v1 length as a signed byte
	} else {
		topicLen = int(int16(binary.BigEndian.Uint16(rec[pos:])))
	}
	if topicLen < 0 {
		return "", false
	}
	pos += topicLenSize + topicLen
	if len(rec) < pos+2 {
		return "", false
	}
	propLen := int(int16(binary.BigEndian.Uint16(rec[pos:])))
	pos += 2
	if propLen <= 0 {
		return "", true // Java: no properties map at all; every property is NULL
	}
	if len(rec)-pos < propLen {
		return "", false
	}
	return unsafe.String(&rec[pos], propLen), true
}

// RecordProperties is recordProperties for callers that judge a stored record
// by another filter than its own (filterSupportRetry); same aliasing rule.
func RecordProperties(rec []byte) (string, bool) { return recordProperties(rec) }
