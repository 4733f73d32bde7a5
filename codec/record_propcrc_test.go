package codec

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/require"
)

// javaPropCRCRecord lays out the record Java writes for sampleMessage under
// enabledAppendPropCRC, field by field as MessageExtEncoder.encode and
// DefaultAppendMessageCallback.doAppend do: the properties as sent, a 0x02
// when they lack a closing one, then CRC32_RESERVED_LEN bytes filled by
// MessageDecoder.createCrc32 with the masked CRC of everything before them.
func javaPropCRCRecord(m *Message, props string) []byte {
	be := binary.BigEndian
	closeSep := props != "" && props[len(props)-1] != 0x02
	propLen := len(props) + 20 // "__CRC32#" + 0x01 + 10 digits + 0x02
	if closeSep {
		propLen++
	}
	total := 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 8 + 8 + 8 + 4 + 8 + 4 + len(m.Body) + 1 + len(m.Topic) + 2 + propLen
	var b []byte
	b = be.AppendUint32(b, uint32(total))
	b = be.AppendUint32(b, 0xdaa320a7) // MESSAGE_MAGIC_CODE
	b = be.AppendUint32(b, crc32.ChecksumIEEE(m.Body)&0x7FFFFFFF)
	b = be.AppendUint32(b, uint32(m.QueueID))
	b = be.AppendUint32(b, uint32(m.Flag))
	b = be.AppendUint64(b, uint64(m.QueueOffset))
	b = be.AppendUint64(b, uint64(m.CommitLogOffset))
	b = be.AppendUint32(b, uint32(m.SysFlag))
	b = be.AppendUint64(b, uint64(m.BornTimestamp))
	b = append(b, 10, 1, 2, 3)
	b = be.AppendUint32(b, 54321)
	b = be.AppendUint64(b, uint64(m.StoreTimestamp))
	b = append(b, 192, 168, 0, 9)
	b = be.AppendUint32(b, 10911)
	b = be.AppendUint32(b, uint32(m.ReconsumeTimes))
	b = be.AppendUint64(b, uint64(m.PreparedTransactionOffset))
	b = be.AppendUint32(b, uint32(len(m.Body)))
	b = append(b, m.Body...)
	b = append(b, byte(len(m.Topic)))
	b = append(b, m.Topic...)
	b = be.AppendUint16(b, uint16(propLen))
	b = append(b, props...)
	if closeSep {
		b = append(b, 0x02)
	}
	crc := crc32.ChecksumIEEE(b) & 0x7FFFFFFF
	b = append(b, "__CRC32#\x01"...)
	for i := 0; i < 10; i++ {
		b = append(b, byte('0'+crc%10))
		crc /= 10
	}
	b = append(b, 0x02)
	if len(b) != total {
		panic("bad layout")
	}
	return b
}

func TestEncodeRecordPropCRCMatchesJava(t *testing.T) {
	for _, props := range []string{
		"TAGS\x01TagA\x02KEYS\x01k1 k2\x02", // as Java clients send them
		"TAGS\x01TagA\x02KEYS\x01k1 k2",     // no closing 0x02: Java adds one
		"",                                  // no properties: the CRC alone
	} {
		m := sampleMessage()
		m.Properties = props
		want := javaPropCRCRecord(m, props)
		buf := make([]byte, len(want)+7)
		n := EncodeRecordPropCRC(buf, m)
		require.Equal(t, len(want), n, "%q", props)
		require.Equal(t, want, buf[:n], "%q", props)
		require.Equal(t, props, m.Properties, "the property is not added to the message")

		var got Message
		dn, err := DecodeRecord(buf[:n], &got)
		require.NoError(t, err)
		require.Equal(t, n, dn)
		if props != "" {
			// The closing 0x02 keeps the last sent property intact for clients.
			require.Equal(t, map[string]string{PropTags: "TagA", PropKeys: "k1 k2", PropCRC32: string(want[n-11 : n-1])},
				ParseProperties(got.Properties))
		}
		v, ok := PropertyValue(got.Properties, PropCRC32)
		require.True(t, ok)
		require.Len(t, v, 10)
		ok, found := RecordPropCRC(buf[:n], &got)
		require.True(t, found)
		require.True(t, ok)

		// One flipped body byte: the property no longer matches.
		buf[88] ^= 0xff // the body's first byte (IPv4 hosts)
		ok, found = RecordPropCRC(buf[:n], &got)
		require.True(t, found)
		require.False(t, ok)
	}
}

// The digits go least significant first (MessageDecoder.createCrc32) and are
// read back from the end (checkMessageAndReturnSize).
func TestPropCRCDigitOrder(t *testing.T) {
	b := make([]byte, 4+PropCRCReservedLen)
	putPropCRC(b, len(b))
	var sz [4]byte
	binary.BigEndian.PutUint32(sz[:], uint32(len(b)))
	crc := crc32.Update(crc32.ChecksumIEEE(sz[:]), crc32.IEEETable, b[4:4]) & 0x7FFFFFFF
	digits := string(b[4+9 : 4+19])
	var back uint32
	for i := 9; i >= 0; i-- {
		back = back*10 + uint32(digits[i]-'0')
	}
	require.Equal(t, crc, back)
	require.Equal(t, "__CRC32#\x01", string(b[4:13]))
	require.Equal(t, byte(0x02), b[len(b)-1])
}

func TestRecordPropCRCMissing(t *testing.T) {
	m := sampleMessage()
	buf := make([]byte, RecordSize(m))
	n := EncodeRecord(buf, m)
	var got Message
	_, err := DecodeRecord(buf[:n], &got)
	require.NoError(t, err)
	ok, found := RecordPropCRC(buf[:n], &got)
	require.False(t, ok)
	require.False(t, found)
}
