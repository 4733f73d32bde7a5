package compat

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
)

const upperHex = "0123456789ABCDEF"

// OffsetMsgIDMaxLen is the longest offsetMsgId: an IPv6 store host's.
const OffsetMsgIDMaxLen = 2 * (16 + 4 + 8)

// AppendOffsetMsgID appends the broker message id ("offsetMsgId"): upper-case hex of
// store IP (4 or 16 bytes), store port (int32) and commitlog offset (int64), as
// MessageDecoder.createMessageId writes it. Clients decode it to find the broker
// and the record (END_TRANSACTION, send-back, queryMsgById).
func AppendOffsetMsgID(dst []byte, storeHost netip.AddrPort, offset int64) []byte {
	var raw [28]byte
	n := 0
	addr := storeHost.Addr().Unmap()
	if addr.Is4() {
		a := addr.As4()
		n = copy(raw[:], a[:])
	} else {
		a := addr.As16()
		n = copy(raw[:], a[:])
	}
	binary.BigEndian.PutUint32(raw[n:], uint32(storeHost.Port()))
	binary.BigEndian.PutUint64(raw[n+4:], uint64(offset))
	n += 12
	for _, b := range raw[:n] {
		dst = append(dst, upperHex[b>>4], upperHex[b&0x0F])
	}
	return dst
}

// OffsetMsgID returns AppendOffsetMsgID as a string.
func OffsetMsgID(storeHost netip.AddrPort, offset int64) string {
	var buf [OffsetMsgIDMaxLen]byte
	return string(AppendOffsetMsgID(buf[:0], storeHost, offset))
}

// DecodeOffsetMsgID splits an offsetMsgId into its store address and commitlog
// offset. A 32-character id is IPv4; anything else is taken as IPv6, as Java does.
func DecodeOffsetMsgID(id string) (netip.AddrPort, int64, error) {
	raw, err := hex.DecodeString(id)
	if err != nil {
		return netip.AddrPort{}, 0, fmt.Errorf("offset msg id %q: %w", id, err)
	}
	ipLen := 16
	if len(id) == 32 {
		ipLen = 4
	}
	if len(raw) != ipLen+12 {
		return netip.AddrPort{}, 0, fmt.Errorf("offset msg id %q: %d bytes, want %d", id, len(raw), ipLen+12)
	}
	addr, _ := netip.AddrFromSlice(raw[:ipLen])
	port := binary.BigEndian.Uint32(raw[ipLen:])
	off := int64(binary.BigEndian.Uint64(raw[ipLen+4:]))
	return netip.AddrPortFrom(addr, uint16(port)), off, nil
}
