package ha

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// HAConnectionState ordinals, the first int of every auto-switch frame.
const (
	StateReady     int32 = 0
	StateHandshake int32 = 1
	StateTransfer  int32 = 2
	StateSuspend   int32 = 3
	StateShutdown  int32 = 4
)

// Auto-switch frame sizes (AutoSwitchHAClient / AutoSwitchHAConnection).
const (
	// slave -> master: state(4) isSyncFromLastFile(2) isAsyncLearner(2) brokerId(8)
	slaveHandshakeSize = 4 + 4 + 8
	// slave -> master: state(4) maxOffset(8)
	slaveTransferSize = 4 + 8
	// master -> slave: state(4) bodySize(4) maxPhyOffset(8) lastEpoch(4), then
	// bodySize/12 epoch entries of epoch(4) startOffset(8)
	masterHandshakeSize = 4 + 4 + 8 + 4
	// master -> slave: state(4) bodySize(4) offset(8) epoch(4)
	// epochStartOffset(8) confirmOffset(8), then bodySize commitlog bytes
	masterTransferSize = masterHandshakeSize + 8 + 8
	epochEntrySize     = 12
	// maxHandshakeEntries is the master's handshake buffer (EPOCH_ENTRY_SIZE * 1000).
	maxHandshakeEntries = 1000
	// maxAutoFrameBody: a Java slave reads into a 4 MiB buffer.
	maxAutoFrameBody = 4<<20 - masterTransferSize
)

var errBadFrame = errors.New("ha: malformed auto-switch frame")

// SlaveHandshake is the slave's first frame.
type SlaveHandshake struct {
	SyncFromLastFile bool
	AsyncLearner     bool
	BrokerID         int64
}

func boolShort(b bool) uint16 {
	if b {
		return 1
	}
	return 0
}

// AppendSlaveHandshake encodes h after dst.
func AppendSlaveHandshake(dst []byte, h SlaveHandshake) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(StateHandshake))
	dst = binary.BigEndian.AppendUint16(dst, boolShort(h.SyncFromLastFile))
	dst = binary.BigEndian.AppendUint16(dst, boolShort(h.AsyncLearner))
	return binary.BigEndian.AppendUint64(dst, uint64(h.BrokerID))
}

// DecodeSlaveHandshake reads the 12 bytes after the state int (Java takes a
// flag as set only when it is exactly 1).
func DecodeSlaveHandshake(rest []byte) (SlaveHandshake, error) {
	if len(rest) != slaveHandshakeSize-4 {
		return SlaveHandshake{}, fmt.Errorf("slave handshake of %d bytes: %w", len(rest)+4, errBadFrame)
	}
	return SlaveHandshake{
		SyncFromLastFile: binary.BigEndian.Uint16(rest[0:]) == 1,
		AsyncLearner:     binary.BigEndian.Uint16(rest[2:]) == 1,
		BrokerID:         int64(binary.BigEndian.Uint64(rest[4:])),
	}, nil
}

// AppendSlaveReport encodes a TRANSFER offset report.
func AppendSlaveReport(dst []byte, offset int64) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(StateTransfer))
	return binary.BigEndian.AppendUint64(dst, uint64(offset))
}

// MasterHandshake is the master's answer: its end, last epoch and entries.
type MasterHandshake struct {
	MaxOffset int64
	LastEpoch int32
	Entries   []EpochEntry
}

// AppendMasterHandshake encodes h (header and body).
func AppendMasterHandshake(dst []byte, h MasterHandshake) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(StateHandshake))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(h.Entries)*epochEntrySize))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.MaxOffset))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.LastEpoch))
	for _, e := range h.Entries {
		dst = binary.BigEndian.AppendUint32(dst, uint32(e.Epoch))
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.StartOffset))
	}
	return dst
}

// decodeMasterHandshakeHeader checks the 20-byte header and returns the body size.
func decodeMasterHandshakeHeader(hdr []byte) (MasterHandshake, int, error) {
	if len(hdr) != masterHandshakeSize {
		return MasterHandshake{}, 0, errBadFrame
	}
	state := int32(binary.BigEndian.Uint32(hdr[0:]))
	size := int32(binary.BigEndian.Uint32(hdr[4:]))
	if state != StateHandshake {
		return MasterHandshake{}, 0, fmt.Errorf("master state %d in handshake: %w", state, errBadFrame)
	}
	if size < 0 || size%epochEntrySize != 0 || size > maxHandshakeEntries*epochEntrySize {
		return MasterHandshake{}, 0, fmt.Errorf("handshake body of %d bytes: %w", size, errBadFrame)
	}
	return MasterHandshake{MaxOffset: int64(binary.BigEndian.Uint64(hdr[8:])), LastEpoch: int32(binary.BigEndian.Uint32(hdr[16:]))},
		int(size), nil
}

// decodeEpochEntries reads the handshake body.
func decodeEpochEntries(body []byte) []EpochEntry {
	es := make([]EpochEntry, 0, len(body)/epochEntrySize)
	for i := 0; i+epochEntrySize <= len(body); i += epochEntrySize {
		es = append(es, EpochEntry{Epoch: int32(binary.BigEndian.Uint32(body[i:])),
			StartOffset: int64(binary.BigEndian.Uint64(body[i+4:]))})
	}
	return es
}

// DecodeMasterHandshake decodes a whole handshake frame (header and body).
func DecodeMasterHandshake(b []byte) (MasterHandshake, error) {
	if len(b) < masterHandshakeSize {
		return MasterHandshake{}, errBadFrame
	}
	h, size, err := decodeMasterHandshakeHeader(b[:masterHandshakeSize])
	if err != nil {
		return h, err
	}
	if len(b) != masterHandshakeSize+size {
		return h, fmt.Errorf("handshake of %d bytes, header says %d: %w", len(b), masterHandshakeSize+size, errBadFrame)
	}
	h.Entries = decodeEpochEntries(b[masterHandshakeSize:])
	return h, nil
}

// TransferHeader is the master's 36-byte TRANSFER header.
type TransferHeader struct {
	BodySize         int32
	Offset           int64
	Epoch            int32
	EpochStartOffset int64
	ConfirmOffset    int64
}

// PutTransferHeader writes h into b[:36].
func PutTransferHeader(b []byte, h TransferHeader) {
	_ = b[masterTransferSize-1]
	binary.BigEndian.PutUint32(b[0:], uint32(StateTransfer))
	binary.BigEndian.PutUint32(b[4:], uint32(h.BodySize))
	binary.BigEndian.PutUint64(b[8:], uint64(h.Offset))
	binary.BigEndian.PutUint32(b[16:], uint32(h.Epoch))
	binary.BigEndian.PutUint64(b[20:], uint64(h.EpochStartOffset))
	binary.BigEndian.PutUint64(b[28:], uint64(h.ConfirmOffset))
}

// DecodeTransferHeader reads a TRANSFER header; the body size is bounded by
// what a Java slave's read buffer could take.
func DecodeTransferHeader(b []byte) (TransferHeader, error) {
	if len(b) != masterTransferSize {
		return TransferHeader{}, errBadFrame
	}
	if state := int32(binary.BigEndian.Uint32(b[0:])); state != StateTransfer {
		return TransferHeader{}, fmt.Errorf("master state %d in transfer: %w", state, errBadFrame)
	}
	h := TransferHeader{
		BodySize:         int32(binary.BigEndian.Uint32(b[4:])),
		Offset:           int64(binary.BigEndian.Uint64(b[8:])),
		Epoch:            int32(binary.BigEndian.Uint32(b[16:])),
		EpochStartOffset: int64(binary.BigEndian.Uint64(b[20:])),
		ConfirmOffset:    int64(binary.BigEndian.Uint64(b[28:])),
	}
	if h.BodySize < 0 || h.BodySize > maxAutoFrameBody || h.Offset < 0 {
		return h, fmt.Errorf("transfer of %d bytes at %d: %w", h.BodySize, h.Offset, errBadFrame)
	}
	return h, nil
}
