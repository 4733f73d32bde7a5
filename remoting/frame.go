package remoting

import (
	"encoding/binary"
	"fmt"

	"rmqd/codec"
)

// A frame is a 4-byte big-endian length followed by that many bytes: the
// header-length word (serialize type in the top byte, header length in the low
// 24 bits), the header and the body. These checks mirror what makes the Java
// decoder drop a channel (NettyDecoder, RemotingCommand.decode).

const (
	lengthFieldSize = 4
	headerWordSize  = 4
)

// checkLength validates the total-length field of a frame before any of its bytes
// are buffered. maxFrame counts the length field itself, as Netty's
// LengthFieldBasedFrameDecoder does.
func checkLength(length int32, maxFrame int) error {
	if length < headerWordSize {
		return fmt.Errorf("frame length %d is shorter than the header-length word", length)
	}
	if int64(length)+lengthFieldSize > int64(maxFrame) {
		return fmt.Errorf("frame length %d exceeds the maximum frame length %d", int64(length)+lengthFieldSize, maxFrame)
	}
	return nil
}

// checkHeaderWord validates the header-length word against the frame length
// (everything after the length field).
func checkHeaderWord(word []byte, length int) error {
	w := binary.BigEndian.Uint32(word)
	st := codec.SerializeType(w >> 24)
	if st != codec.SerializeJSON && st != codec.SerializeRocketMQ {
		return fmt.Errorf("unknown serialize type %d", st)
	}
	if h := int(w & 0xFFFFFF); h > length-headerWordSize {
		return fmt.Errorf("header length %d exceeds the frame (%d bytes after the header-length word)", h, length-headerWordSize)
	}
	return nil
}
