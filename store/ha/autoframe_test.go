package ha

import (
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"
)

// Golden frames written from AutoSwitchHAClient.sendHandshakeHeader /
// reportSlaveOffset and AutoSwitchHAConnection.buildHandshakeBuffer /
// buildTransferHeaderBuffer (big-endian ByteBuffer puts).
func TestAutoFramesMatchJava(t *testing.T) {
	hs := AppendSlaveHandshake(nil, SlaveHandshake{SyncFromLastFile: true, BrokerID: 2})
	require.Equal(t, "00000001"+"0001"+"0000"+"0000000000000002", hex.EncodeToString(hs))
	require.Len(t, hs, 16) // HANDSHAKE_HEADER_SIZE of the client

	rep := AppendSlaveReport(nil, 0x0102030405)
	require.Equal(t, "00000002"+"0000000102030405", hex.EncodeToString(rep))
	require.Len(t, rep, 12) // TRANSFER_HEADER_SIZE of the client

	mh := AppendMasterHandshake(nil, MasterHandshake{MaxOffset: 4096, LastEpoch: 3,
		Entries: []EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 2048}}})
	require.Equal(t, "00000001"+"00000018"+"0000000000001000"+"00000003"+
		"00000001"+"0000000000000000"+"00000003"+"0000000000000800", hex.EncodeToString(mh))
	got, err := DecodeMasterHandshake(mh)
	require.NoError(t, err)
	require.Equal(t, int64(4096), got.MaxOffset)
	require.Equal(t, []EpochEntry{{Epoch: 1}, {Epoch: 3, StartOffset: 2048}}, got.Entries)

	th := make([]byte, masterTransferSize)
	PutTransferHeader(th, TransferHeader{BodySize: 300, Offset: 2048, Epoch: 3, EpochStartOffset: 2048, ConfirmOffset: 1000})
	require.Equal(t, "00000002"+"0000012c"+"0000000000000800"+"00000003"+"0000000000000800"+"00000000000003e8",
		hex.EncodeToString(th))
	require.Len(t, th, 36) // TRANSFER_HEADER_SIZE of the connection: 4+4+8+4+8+8
	h, err := DecodeTransferHeader(th)
	require.NoError(t, err)
	require.Equal(t, TransferHeader{BodySize: 300, Offset: 2048, Epoch: 3, EpochStartOffset: 2048, ConfirmOffset: 1000}, h)

	sh, err := DecodeSlaveHandshake(hs[4:])
	require.NoError(t, err)
	require.Equal(t, SlaveHandshake{SyncFromLastFile: true, BrokerID: 2}, sh)
}

func FuzzDecodeTransferHeader(f *testing.F) {
	th := make([]byte, masterTransferSize)
	PutTransferHeader(th, TransferHeader{BodySize: 300, Offset: 2048, Epoch: 3, EpochStartOffset: 2048, ConfirmOffset: 1000})
	f.Add(th)
	f.Add(make([]byte, masterTransferSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := DecodeTransferHeader(b)
		if err != nil {
			return
		}
		require.GreaterOrEqual(t, h.BodySize, int32(0))
		require.LessOrEqual(t, h.BodySize, int32(maxAutoFrameBody))
		again := make([]byte, masterTransferSize)
		PutTransferHeader(again, h)
		require.Equal(t, b, again)
	})
}

func FuzzDecodeMasterHandshake(f *testing.F) {
	f.Add(AppendMasterHandshake(nil, MasterHandshake{MaxOffset: 4096, LastEpoch: 3,
		Entries: []EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 2048}}}))
	f.Add(AppendMasterHandshake(nil, MasterHandshake{LastEpoch: -1}))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := DecodeMasterHandshake(b)
		if err != nil {
			return
		}
		require.LessOrEqual(t, len(h.Entries), maxHandshakeEntries)
		require.Equal(t, b, AppendMasterHandshake(nil, h))
	})
}

func FuzzDecodeSlaveHandshake(f *testing.F) {
	f.Add(AppendSlaveHandshake(nil, SlaveHandshake{SyncFromLastFile: true, BrokerID: 2})[4:])
	f.Add(make([]byte, 12))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := DecodeSlaveHandshake(b)
		if err != nil {
			return
		}
		require.Len(t, b, 12)
		again := AppendSlaveHandshake(nil, h)[4:]
		// Flags other than 0 and 1 read as false, as in Java.
		require.Equal(t, b[4:], again[4:])
	})
}
