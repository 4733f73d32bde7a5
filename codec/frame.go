package codec

import (
	"encoding/binary"
	"fmt"
)

// Sanity limits for decoding. The frame itself is bounded by remoting
// (DefaultMaxFrameLength); these bound what one header may make us do.
const (
	// DefaultMaxHeaderLen is far above any real header (properties are at most
	// 32 KiB, six times that escaped in JSON) yet stops a 16 MiB header.
	DefaultMaxHeaderLen = 4 << 20
	// DefaultMaxExtFields is far above the 20-odd fields of the largest header.
	DefaultMaxExtFields = 1024
)

// Limits bounds DecodeCommand. The zero value means the defaults.
type Limits struct {
	MaxHeaderLen int // header bytes; 0: DefaultMaxHeaderLen
	MaxExtFields int // ext entries, duplicates included; 0: DefaultMaxExtFields
}

func (l Limits) maxHeaderLen() int {
	if l.MaxHeaderLen > 0 {
		return l.MaxHeaderLen
	}
	return DefaultMaxHeaderLen
}

func (l Limits) maxExtFields() int {
	if l.MaxExtFields > 0 {
		return l.MaxExtFields
	}
	return DefaultMaxExtFields
}

// frameHeaderLen is the total-length field plus the header-length word.
const frameHeaderLen = 8

// DecodeCommand is the package DecodeCommand with these limits. See there for
// aliasing; nothing is allocated once cmd has been used for a frame of the same
// shape (Ext capacity and the JSON unescape buffer are reused).
func (l Limits) DecodeCommand(frame []byte, cmd *RemotingCommand) error {
	cmd.reset()
	if len(frame) < 4 {
		return fmt.Errorf("%w: %d bytes, no header length word", ErrShortFrame, len(frame))
	}
	word := binary.BigEndian.Uint32(frame)
	st := SerializeType(word >> 24)
	hl := int(word & 0xFFFFFF)
	if hl > len(frame)-4 {
		return fmt.Errorf("%w: header length %d, frame has %d bytes after the length word", ErrHeaderLength, hl, len(frame)-4)
	}
	if hl > l.maxHeaderLen() {
		return fmt.Errorf("%w: header length %d above %d", ErrLimit, hl, l.maxHeaderLen())
	}
	h := frame[4 : 4+hl]
	var err error
	switch st {
	case SerializeJSON:
		err = decodeJSONHeader(h, cmd, l)
	case SerializeRocketMQ:
		err = decodeBinaryHeader(h, cmd, l)
	default:
		return fmt.Errorf("%w: %d", ErrSerializeType, st)
	}
	if err != nil {
		return fmt.Errorf("decode command header (type %d, %d bytes): %w", st, hl, err)
	}
	cmd.SerializeType = st
	if b := frame[4+hl:]; len(b) > 0 {
		cmd.Body = b[:len(b):len(b)] // capped: an append by the user cannot run past the frame
	}
	return nil
}

// reset clears cmd for decoding, keeping the capacity of Ext and scratch.
func (c *RemotingCommand) reset() {
	ext := c.Ext
	clear(ext) // drop references into the previous frame
	scratch := c.scratch
	*c = RemotingCommand{Ext: ext[:0], scratch: scratch[:0]}
}

// putExt stores a decoded entry with Java HashMap semantics: a repeated key
// replaces the earlier value, and a null value removes the key. seen is a 64-bit
// filter of the keys stored so far in this decode: the linear search for a
// duplicate runs only when the key's bit is already set, which for real headers
// (distinct keys) is almost never.
func (c *RemotingCommand) putExt(key, val string, null bool, seen *uint64) {
	bit := extKeyBit(key)
	if *seen&bit != 0 {
		for i := range c.Ext {
			if c.Ext[i].Key == key {
				if null {
					c.Ext.Del(key)
				} else {
					c.Ext[i].Value = val
				}
				return
			}
		}
	}
	*seen |= bit
	if !null {
		if c.Ext == nil {
			// A fresh command (its pool emptied by a GC) takes room for a
			// pull header's dozen fields at once, not five doublings.
			c.Ext = make(ExtFields, 0, 16)
		}
		c.Ext = append(c.Ext, ExtField{Key: key, Value: val})
	}
}

func extKeyBit(k string) uint64 {
	if k == "" {
		return 1
	}
	h := uint(k[0])*31 + uint(k[len(k)-1])*7 + uint(len(k))
	return 1 << (h & 63)
}

func (c *RemotingCommand) encode(dst []byte, bodyLen int, withBody bool) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	st := SerializeJSON
	if c.SerializeType == SerializeRocketMQ {
		st = SerializeRocketMQ
		dst = c.appendBinaryHeader(dst)
	} else {
		dst = c.appendJSONHeader(dst)
	}
	hl := len(dst) - start - frameHeaderLen
	binary.BigEndian.PutUint32(dst[start:], uint32(4+hl+bodyLen))
	binary.BigEndian.PutUint32(dst[start+4:], uint32(st)<<24|uint32(hl)&0xFFFFFF)
	if withBody {
		dst = append(dst, c.Body...)
	}
	return dst
}

// Own copies everything cmd references in the decoded frame (remark, ext keys
// and values, body) into one new buffer, so cmd stays valid after the frame is
// released or cmd's scratch is reused. For requests a processor keeps past its
// return (long polling). Two allocations (bytes and the Ext slice).
func (c *RemotingCommand) Own() {
	n := len(c.Remark) + len(c.Body)
	for i := range c.Ext {
		n += len(c.Ext[i].Key) + len(c.Ext[i].Value)
	}
	buf := make([]byte, 0, n)
	take := func(s string) string {
		at := len(buf)
		buf = append(buf, s...)
		return alias(buf, at, len(buf))
	}
	c.Remark = take(c.Remark)
	ext := make(ExtFields, len(c.Ext))
	for i := range c.Ext {
		ext[i] = ExtField{Key: take(c.Ext[i].Key), Value: take(c.Ext[i].Value)}
	}
	c.Ext = ext
	if c.Body != nil {
		at := len(buf)
		buf = append(buf, c.Body...)
		c.Body = buf[at:len(buf):len(buf)]
	}
	c.scratch = nil
}
