package codec

import "net/netip"

// Record magic codes (MessageDecoder / MessageVersion).
const (
	MagicV1    int32 = -626843481 // 0xDAA320A7: 1-byte topic length
	MagicV2    int32 = -626843477 // 0xDAA320AB: 2-byte topic length
	MagicBlank int32 = -875286124 // 0xCBD43194: end-of-file filler
)

// Message is one commitlog record, decoded or about to be written. Body, Topic and
// Properties may alias a larger buffer (a request frame or a mapped file); whoever
// decodes says how long that buffer stays valid.
type Message struct {
	StoreSize                 int32
	Magic                     int32
	BodyCRC                   int32
	QueueID                   int32
	Flag                      int32
	QueueOffset               int64
	CommitLogOffset           int64
	SysFlag                   int32
	BornTimestamp             int64
	BornHost                  netip.AddrPort
	StoreTimestamp            int64
	StoreHost                 netip.AddrPort
	ReconsumeTimes            int32
	PreparedTransactionOffset int64
	Body                      []byte
	Topic                     string
	// Properties is the encoded properties string: name 0x01 value 0x02 ...
	Properties string
}
