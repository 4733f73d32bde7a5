package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"net/netip"
	"strings"
	"unsafe"
)

// SYSFLAG bits of a record (MessageSysFlag.java).
const (
	SysFlagCompressed      int32 = 0x1
	SysFlagMultiTags       int32 = 0x2
	SysFlagTransPrepared   int32 = 0x4
	SysFlagTransCommit     int32 = 0x8
	SysFlagTransRollback   int32 = 0xC
	SysFlagTransMask       int32 = 0xC
	SysFlagBornHostV6      int32 = 0x10
	SysFlagStoreHostV6     int32 = 0x20
	SysFlagNeedUnwrap      int32 = 0x40
	SysFlagInnerBatch      int32 = 0x80
	SysFlagCompressionType int32 = 0x700
)

// MaxV1TopicLen is the longest topic a v1 record can carry: Java reads the one-byte
// length as signed.
const MaxV1TopicLen = 127

// Record decoding errors. DecodeRecord wraps them with the offending values.
var (
	ErrRecordTruncated = errors.New("codec: record truncated")
	ErrRecordMagic     = errors.New("codec: bad record magic")
	ErrRecordBlank     = errors.New("codec: blank end-of-file record")
	ErrRecordCorrupt   = errors.New("codec: record fields inconsistent")
)

// BodyCRC is the BODYCRC field value: CRC32 (IEEE) of the body as stored, masked to
// 31 bits as UtilAll.crc32 does.
func BodyCRC(body []byte) int32 {
	return int32(crc32.ChecksumIEEE(body) & 0x7FFFFFFF)
}

// hostLen is the encoded length of a host: 4-byte IPv4 or 16-byte IPv6, plus port.
func hostLen(a netip.AddrPort) int {
	if isV6(a) {
		return 20
	}
	return 8
}

func isV6(a netip.AddrPort) bool {
	ad := a.Addr()
	return ad.Is6() && !ad.Is4In6()
}

// RecordSize is the encoded length of m as a commitlog record.
func RecordSize(m *Message) int {
	tl := 1
	if len(m.Topic) > MaxV1TopicLen {
		tl = 2
	}
	return 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + hostLen(m.BornHost) + 8 + hostLen(m.StoreHost) + 4 + 8 +
		4 + len(m.Body) + tl + len(m.Topic) + 2 + len(m.Properties)
}

// EncodeRecord writes m as one commitlog record at the start of dst and returns its
// length, or 0 if dst is too short. It fills in the fields the encoding decides:
// StoreSize, Magic, BodyCRC and the IPv6 SYSFLAG bits. Lengths beyond the field
// widths (properties > 32767, topic > 65535) are the caller's to reject first.
func EncodeRecord(dst []byte, m *Message) int {
	return encodeRecord(dst, m, false)
}

// EncodeRecordPropCRC is EncodeRecord with the CRC property Java's
// enabledAppendPropCRC appends (CommitLog.DefaultAppendMessageCallback): a 0x02
// closes the properties if they lack one, then "__CRC32#" 0x01, ten digits and
// 0x02 follow, the digits holding the CRC of every record byte before them.
// The property is not added to m.Properties.
func EncodeRecordPropCRC(dst []byte, m *Message) int {
	return encodeRecord(dst, m, true)
}

// PropCRCExtra is how many bytes EncodeRecordPropCRC adds to properties props.
func PropCRCExtra(props string) int {
	if props != "" && props[len(props)-1] != PropSep {
		return PropCRCReservedLen + 1
	}
	return PropCRCReservedLen
}

func encodeRecord(dst []byte, m *Message, propCRC bool) int {
	size := RecordSize(m)
	extra := 0
	if propCRC {
		extra = PropCRCExtra(m.Properties)
		size += extra
	}
	if len(dst) < size {
		return 0
	}
	m.StoreSize = int32(size)
	m.Magic = MagicV1
	if len(m.Topic) > MaxV1TopicLen {
		m.Magic = MagicV2
	}
	m.BodyCRC = BodyCRC(m.Body)
	m.SysFlag &^= SysFlagBornHostV6 | SysFlagStoreHostV6
	if isV6(m.BornHost) {
		m.SysFlag |= SysFlagBornHostV6
	}
	if isV6(m.StoreHost) {
		m.SysFlag |= SysFlagStoreHostV6
	}
	b := dst[:size]
	be := binary.BigEndian
	be.PutUint32(b[4:], uint32(m.Magic))
	be.PutUint32(b[8:], uint32(m.BodyCRC))
	be.PutUint32(b[12:], uint32(m.QueueID))
	be.PutUint32(b[16:], uint32(m.Flag))
	be.PutUint64(b[20:], uint64(m.QueueOffset))
	be.PutUint64(b[28:], uint64(m.CommitLogOffset))
	be.PutUint32(b[36:], uint32(m.SysFlag))
	be.PutUint64(b[40:], uint64(m.BornTimestamp))
	p := 48
	p += putHost(b[p:], m.BornHost)
	be.PutUint64(b[p:], uint64(m.StoreTimestamp))
	p += 8
	p += putHost(b[p:], m.StoreHost)
	be.PutUint32(b[p:], uint32(m.ReconsumeTimes))
	p += 4
	be.PutUint64(b[p:], uint64(m.PreparedTransactionOffset))
	p += 8
	be.PutUint32(b[p:], uint32(len(m.Body)))
	p += 4
	p += copy(b[p:], m.Body)
	if m.Magic == MagicV1 {
		b[p] = byte(len(m.Topic))
		p++
	} else {
		be.PutUint16(b[p:], uint16(len(m.Topic)))
		p += 2
	}
	p += copy(b[p:], m.Topic)
	be.PutUint16(b[p:], uint16(len(m.Properties)+extra))
	p += 2
	p += copy(b[p:], m.Properties)
	if propCRC {
		if extra > PropCRCReservedLen {
			b[p] = PropSep
		}
		putPropCRC(b, size)
	}
	// TOTALSIZE goes last: a writer killed mid-record into zeroed space leaves a
	// record whose size field is still 0, which every reader rejects.
	be.PutUint32(b[0:], uint32(size))
	return size
}

// putPropCRC writes the CRC property into the last PropCRCReservedLen bytes of
// record b of length size, over b[:size-PropCRCReservedLen] with TOTALSIZE
// taken as size (b[0:4] is written after it).
func putPropCRC(b []byte, size int) {
	var sz [4]byte
	binary.BigEndian.PutUint32(sz[:], uint32(size))
	at := size - PropCRCReservedLen
	crc := crc32.Update(crc32.ChecksumIEEE(sz[:]), crc32.IEEETable, b[4:at])
	v := crc & 0x7FFFFFFF // UtilAll.crc32
	p := at + copy(b[at:], PropCRC32)
	b[p] = PropNameValueSep
	p++
	// Least significant digit first, as MessageDecoder.createCrc32 writes it.
	for i := 0; i < 10; i++ {
		b[p+i] = byte('0' + v%10)
		v /= 10
	}
	b[p+10] = PropSep
}

// RecordPropCRC checks the CRC property of record b (as decoded into m) the way
// Java's recovery does under forceVerifyPropCRC
// (CommitLog.checkMessageAndReturnSize): the property's digits, read least
// significant first, must equal the CRC of b's bytes before the last
// PropCRCReservedLen. found is false when m has no such property.
func RecordPropCRC(b []byte, m *Message) (ok, found bool) {
	s, found := PropertyValue(m.Properties, PropCRC32)
	if !found {
		return false, false
	}
	var want int32 // int arithmetic, wrapping, as Java's loop
	for i := len(s) - 1; i >= 0; i-- {
		want = want*10 + int32(s[i]) - '0'
	}
	size := int(m.StoreSize)
	if want < 0 {
		return false, false
	}
	if size < PropCRCReservedLen || size > len(b) {
		return false, true
	}
	return int32(crc32.ChecksumIEEE(b[:size-PropCRCReservedLen])&0x7FFFFFFF) == want, true
}

func putHost(b []byte, a netip.AddrPort) int {
	ad := a.Addr().Unmap()
	if ad.Is6() {
		ip := ad.As16()
		copy(b, ip[:])
		binary.BigEndian.PutUint32(b[16:], uint32(a.Port()))
		return 20
	}
	var ip [4]byte
	if ad.Is4() {
		ip = ad.As4()
	}
	copy(b, ip[:])
	binary.BigEndian.PutUint32(b[4:], uint32(a.Port()))
	return 8
}

func getHost(b []byte, v6 bool) netip.AddrPort {
	if v6 {
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[:16])), uint16(binary.BigEndian.Uint32(b[16:])))
	}
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[:4])), uint16(binary.BigEndian.Uint32(b[4:])))
}

// RecordMagic reads the magic of the record at the start of buf, 0 if buf is short.
func RecordMagic(buf []byte) int32 {
	if len(buf) < 8 {
		return 0
	}
	return int32(binary.BigEndian.Uint32(buf[4:]))
}

// DecodeRecord parses the record at the start of buf into m and returns its length.
// Body, Topic and Properties alias buf (no copies), so they are valid only as long as
// buf is. A blank end-of-file record yields ErrRecordBlank with n = 0. The body CRC is
// not checked here (see BodyCRC). Garbage gives an error, never a panic.
func DecodeRecord(buf []byte, m *Message) (n int, err error) {
	if len(buf) < 8 {
		return 0, fmt.Errorf("%w: %d bytes", ErrRecordTruncated, len(buf))
	}
	be := binary.BigEndian
	size := int(int32(be.Uint32(buf)))
	magic := int32(be.Uint32(buf[4:]))
	if magic == MagicBlank {
		return 0, ErrRecordBlank
	}
	if magic != MagicV1 && magic != MagicV2 {
		return 0, fmt.Errorf("%w: %#x", ErrRecordMagic, uint32(magic))
	}
	if size < 0 || size > len(buf) {
		return 0, fmt.Errorf("%w: size %d, have %d", ErrRecordTruncated, size, len(buf))
	}
	b := buf[:size]
	const fixed = 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 // through BORNTIMESTAMP
	if size < fixed {
		return 0, fmt.Errorf("%w: size %d", ErrRecordCorrupt, size)
	}
	sysFlag := int32(be.Uint32(b[36:]))
	bh, sh := 8, 8
	if sysFlag&SysFlagBornHostV6 != 0 {
		bh = 20
	}
	if sysFlag&SysFlagStoreHostV6 != 0 {
		sh = 20
	}
	p := fixed
	if size < p+bh+8+sh+4+8+4 {
		return 0, fmt.Errorf("%w: size %d too small for header", ErrRecordCorrupt, size)
	}
	m.StoreSize = int32(size)
	m.Magic = magic
	m.BodyCRC = int32(be.Uint32(b[8:]))
	m.QueueID = int32(be.Uint32(b[12:]))
	m.Flag = int32(be.Uint32(b[16:]))
	m.QueueOffset = int64(be.Uint64(b[20:]))
	m.CommitLogOffset = int64(be.Uint64(b[28:]))
	m.SysFlag = sysFlag
	m.BornTimestamp = int64(be.Uint64(b[40:]))
	m.BornHost = getHost(b[p:], bh == 20)
	p += bh
	m.StoreTimestamp = int64(be.Uint64(b[p:]))
	p += 8
	m.StoreHost = getHost(b[p:], sh == 20)
	p += sh
	m.ReconsumeTimes = int32(be.Uint32(b[p:]))
	p += 4
	m.PreparedTransactionOffset = int64(be.Uint64(b[p:]))
	p += 8
	bodyLen := int(int32(be.Uint32(b[p:])))
	p += 4
	if bodyLen < 0 || bodyLen > size-p {
		return 0, fmt.Errorf("%w: body length %d", ErrRecordCorrupt, bodyLen)
	}
	m.Body = b[p : p+bodyLen : p+bodyLen]
	p += bodyLen
	var topicLen int
	if magic == MagicV1 {
		if p+1 > size {
			return 0, fmt.Errorf("%w: no topic length", ErrRecordCorrupt)
		}
		topicLen = int(int8(b[p])) // signed, as Java reads it
		p++
	} else {
		if p+2 > size {
			return 0, fmt.Errorf("%w: no topic length", ErrRecordCorrupt)
		}
		topicLen = int(int16(be.Uint16(b[p:]))) // signed short in Java
		p += 2
	}
	if topicLen < 0 || topicLen > size-p {
		return 0, fmt.Errorf("%w: topic length %d", ErrRecordCorrupt, topicLen)
	}
	m.Topic = aliasString(b[p : p+topicLen])
	p += topicLen
	if p+2 > size {
		return 0, fmt.Errorf("%w: no properties length", ErrRecordCorrupt)
	}
	propLen := int(int16(be.Uint16(b[p:])))
	p += 2
	if propLen < 0 || propLen > size-p {
		return 0, fmt.Errorf("%w: properties length %d", ErrRecordCorrupt, propLen)
	}
	m.Properties = aliasString(b[p : p+propLen])
	p += propLen
	if p != size {
		return 0, fmt.Errorf("%w: fields end at %d, TOTALSIZE %d", ErrRecordCorrupt, p, size)
	}
	return size, nil
}

// aliasString views b as a string without copying. The caller promises b is not
// written while the string is in use (records are immutable once written).
func aliasString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// CloneMessage returns a copy of m that owns its body and strings, for callers that
// keep a decoded record beyond the life of the buffer it aliases.
func CloneMessage(m *Message) *Message {
	c := *m
	if m.Body != nil {
		c.Body = append([]byte(nil), m.Body...)
	}
	c.Topic = strings.Clone(m.Topic)
	c.Properties = strings.Clone(m.Properties)
	return &c
}
