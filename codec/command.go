// Package codec holds RocketMQ's wire formats: the RemotingCommand frame in both
// serialize types (JSON and the ROCKETMQ binary header), typed request and response
// headers, and the commitlog message record with its properties string.
package codec

// SerializeType is the top byte of the header-length word of a frame.
type SerializeType byte

const (
	SerializeJSON     SerializeType = 0
	SerializeRocketMQ SerializeType = 1
)

// Flag bits of RemotingCommand.Flag.
const (
	FlagResponse int32 = 1 << 0
	FlagOneway   int32 = 1 << 1
)

// LanguageCode is LanguageCode.java's ordinal; JSON carries its name.
type LanguageCode byte

const (
	LangJava LanguageCode = iota
	LangCPP
	LangDotNet
	LangPython
	LangDelphi
	LangErlang
	LangRuby
	LangOther
	LangHTTP
	LangGo
	LangPHP
	LangOMS
	LangRust
	LangNodeJS
)

// BrokerVersion is the MQVersion ordinal rmqd puts in every command it writes:
// V5_3_3 (479). Java clients refuse SQL92 pulls below 232 and choose standard JSON
// route bodies at >= 401; the Go client needs it to fit int16.
const BrokerVersion int32 = 479

// ExtField is one custom header entry. Values are strings on the wire in both
// serialize types.
type ExtField struct {
	Key   string
	Value string
}

// ExtFields is the custom header as an ordered list. A slice rather than a map
// so that a decoded command can be reused without allocating; lookups are linear,
// which is faster than hashing for the dozen fields a header has.
type ExtFields []ExtField

// RemotingCommand is one request or response frame.
type RemotingCommand struct {
	Code          int32
	Language      LanguageCode
	Version       int32
	Opaque        int32
	Flag          int32
	Remark        string
	HasRemark     bool // JSON: Java omits a null remark; binary: length 0 means null
	Ext           ExtFields
	Body          []byte
	SerializeType SerializeType
}
