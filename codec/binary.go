package codec

import (
	"encoding/binary"
	"fmt"
)

// The ROCKETMQ binary header (RocketMQSerializable): code int16, language byte,
// version int16, opaque int32, flag int32, remark (int32 length + UTF-8), then
// the ext map (int32 byte length, then int16 key length + key, int32 value
// length + value per entry). A zero length means null.

// binaryFixedLen is the header size before the remark bytes.
const binaryFixedLen = 17

func (c *RemotingCommand) appendBinaryHeader(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(c.Code)) // Java writes (short) code: codes > 32767 wrap
	dst = append(dst, byte(c.Language))
	dst = binary.BigEndian.AppendUint16(dst, uint16(c.Version))
	dst = binary.BigEndian.AppendUint32(dst, uint32(c.Opaque))
	dst = binary.BigEndian.AppendUint32(dst, uint32(c.Flag))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(c.Remark))) // "" is null, as in Java
	dst = append(dst, c.Remark...)
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = c.writeExt(dst, false)
	binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
	return dst
}

func decodeBinaryHeader(h []byte, cmd *RemotingCommand, lim Limits) error {
	if len(h) < binaryFixedLen+4 {
		return fmt.Errorf("%w: binary header of %d bytes, need at least %d", ErrShortFrame, len(h), binaryFixedLen+4)
	}
	cmd.Code = int32(int16(binary.BigEndian.Uint16(h)))
	cmd.Language = LanguageCode(h[2]) // Java maps an unknown byte to null; we keep it
	cmd.Version = int32(int16(binary.BigEndian.Uint16(h[3:])))
	cmd.Opaque = int32(binary.BigEndian.Uint32(h[5:]))
	cmd.Flag = int32(binary.BigEndian.Uint32(h[9:]))
	p := binaryFixedLen - 4
	rl := int32(binary.BigEndian.Uint32(h[p:]))
	p += 4
	if rl != 0 {
		if rl < 0 || int64(rl) > int64(len(h)-p) {
			return fmt.Errorf("%w: remark length %d, %d header bytes left", ErrBadHeader, rl, len(h)-p)
		}
		cmd.Remark = alias(h, p, p+int(rl))
		cmd.HasRemark = true
		p += int(rl)
	}
	if len(h)-p < 4 {
		return fmt.Errorf("%w: no ext length after the remark", ErrShortFrame)
	}
	el := int32(binary.BigEndian.Uint32(h[p:]))
	p += 4
	if el <= 0 { // Java reads a map only when the length is positive
		return nil
	}
	if int64(el) > int64(len(h)-p) {
		return fmt.Errorf("%w: ext length %d, %d header bytes left", ErrBadHeader, el, len(h)-p)
	}
	end := p + int(el)
	n := 0
	var seen uint64
	for p < end {
		if end-p < 2 {
			return fmt.Errorf("%w: truncated ext key length at %d", ErrBadHeader, p)
		}
		kl := int(int16(binary.BigEndian.Uint16(h[p:])))
		p += 2
		if kl < 0 || kl > end-p {
			return fmt.Errorf("%w: ext key length %d at %d", ErrBadHeader, kl, p-2)
		}
		key := alias(h, p, p+kl)
		p += kl
		if end-p < 4 {
			return fmt.Errorf("%w: truncated ext value length at %d", ErrBadHeader, p)
		}
		vl := int32(binary.BigEndian.Uint32(h[p:]))
		p += 4
		if vl < 0 || int64(vl) > int64(end-p) {
			return fmt.Errorf("%w: ext value length %d at %d", ErrBadHeader, vl, p-4)
		}
		val := alias(h, p, p+int(vl))
		p += int(vl)
		if n++; n > lim.maxExtFields() {
			return fmt.Errorf("%w: more than %d ext fields", ErrLimit, lim.maxExtFields())
		}
		if kl == 0 { // a null key: Java stores it, nobody can look it up
			continue
		}
		cmd.putExt(key, val, vl == 0, &seen)
	}
	return nil
}
