// Package codec holds RocketMQ's wire formats: the RemotingCommand frame in both
// serialize types (JSON and the ROCKETMQ binary header), typed request and response
// headers, and the commitlog message record with its properties string.
package codec

import "fmt"

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

	// CustomHeader, when set, writes typed header fields straight into the
	// encoded frame, before Ext (Java's FastCodesHeader). Encoding only; decoding
	// always fills Ext. With a CustomHeader the JSON header always has extFields.
	CustomHeader HeaderWriter

	// Recycler, set on a response a server processor returns, is released once
	// the remoting layer has written or dropped the response and its RPC hooks
	// have seen it: a pooled answer goes back to its pool then, so a send costs
	// no garbage. Nothing may touch the command after that.
	Recycler interface{ Release() }

	// scratch holds JSON strings that needed unescaping; reused across decodes.
	scratch []byte
}

// The functions below are the codec's contract with remoting and the processors.
//
// Responses and extFields: Java writes "extFields" only when the map is non-null,
// and the Java client throws on a send response without it. Ext == nil (and no
// CustomHeader) therefore means "no extFields", as in Java; a send success
// response must carry a *SendMessageResponseHeader as CustomHeader, which always
// writes msgId, queueId, queueOffset and TRACE_ON (and MSG_REGION when set), and a
// pull response a *PullMessageResponseHeader, which always writes its four offsets.

// DecodeCommand decodes one frame into cmd. frame is everything after the 4-byte
// total-length field: the header-length word, the header and the body. cmd.Body and
// the strings in cmd may alias frame, so frame must stay unmodified for as long as
// cmd (or anything taken from it) is used; callers that keep a string for long
// (map keys) should strings.Clone it. cmd is reset first, so it can be reused.
//
// Strings are made with unsafe.String over frame (or over a buffer owned by cmd
// for JSON strings with escapes, valid until cmd is decoded into again): this is
// what makes decoding allocation-free, and it is safe because remoting gives
// every frame its own buffer and never writes to it afterwards.
//
// Decoding follows Java: a binary string of length 0 is null (absent); a repeated
// ext key keeps the last value; a null ext value removes the key; binary code and
// version are signed 16-bit. JSON is read leniently (unknown keys skipped, numbers
// as strings and strings as numbers, extFields absent or null). Errors wrap
// ErrShortFrame, ErrHeaderLength, ErrSerializeType, ErrBadHeader or ErrLimit; the
// caller should close the connection, as Java does. Limits are the defaults; use
// Limits.DecodeCommand for others.
func DecodeCommand(frame []byte, cmd *RemotingCommand) error {
	return Limits{}.DecodeCommand(frame, cmd)
}

// Encode appends the whole frame (total length, header-length word, header, body)
// to dst in cmd.SerializeType and returns the extended slice.
//
// JSON matches fastjson's output for RemotingCommand: keys sorted, "extFields"
// present iff Ext != nil or CustomHeader != nil (Java: map non-null), "remark"
// present iff HasRemark or Remark != "". Binary matches fastEncodeHeader:
// CustomHeader fields, then Ext in order; code and version are cut to 16 bits.
// Any SerializeType other than SerializeRocketMQ encodes as JSON. The header must
// stay below 16 MiB (24-bit length); typed headers are far below.
func (c *RemotingCommand) Encode(dst []byte) []byte {
	return c.encode(dst, len(c.Body), true)
}

// EncodeHeader appends the total length, header-length word and header, counting
// bodyLen body bytes that the caller writes next itself (pull responses hand mapped
// bytes to the socket without copying them into the frame).
func (c *RemotingCommand) EncodeHeader(dst []byte, bodyLen int) []byte {
	return c.encode(dst, bodyLen, false)
}

// NewRequest makes a request command in JSON with rmqd's version.
func NewRequest(code int32) *RemotingCommand {
	return &RemotingCommand{Code: code, Language: LangJava, Version: BrokerVersion}
}

// NewResponse makes the response to req: same opaque and serialize type, response
// flag set, rmqd's version.
func NewResponse(req *RemotingCommand, code int32, remark string) *RemotingCommand {
	r := MakeResponse(req, code, remark)
	return &r
}

// Release hands the command back to its Recycler, if it has one, once nothing
// will write it again; a command without one is the GC's.
func (c *RemotingCommand) Release() {
	if c.Recycler != nil {
		c.Recycler.Release()
	}
}

// MakeResponse is NewResponse as a value, for a caller that allocates the
// response together with what it answers with.
func MakeResponse(req *RemotingCommand, code int32, remark string) RemotingCommand {
	return RemotingCommand{Code: code, Language: LangJava, Version: BrokerVersion, Opaque: req.Opaque,
		Flag: FlagResponse, Remark: remark, HasRemark: remark != "", SerializeType: req.SerializeType}
}

// MakeCustomHeaderToNet moves CustomHeader's fields into Ext, ahead of Ext's own, as Java's
// makeCustomHeaderToNet does before its RPC hooks read extFields: a request's signature must cover
// them. The header is encoded in the command's serialize type and read back, so every field reads as
// the receiver will read it. Not for hot paths: it allocates.
func (c *RemotingCommand) MakeCustomHeaderToNet() error {
	if c.CustomHeader == nil {
		return nil
	}
	body := c.Body
	c.Body = nil
	frame := c.Encode(nil)
	c.Body = body
	var back RemotingCommand // its strings alias frame (and its scratch): both stay with them
	if err := DecodeCommand(frame[4:], &back); err != nil {
		return fmt.Errorf("codec: custom header of request %d: %w", c.Code, err)
	}
	c.Ext, c.CustomHeader = back.Ext, nil
	return nil
}

// IsResponse reports whether the response flag is set.
func (c *RemotingCommand) IsResponse() bool { return c.Flag&FlagResponse != 0 }

// IsOneway reports whether the oneway flag is set.
func (c *RemotingCommand) IsOneway() bool { return c.Flag&FlagOneway != 0 }

// Get returns the value of key.
func (e ExtFields) Get(key string) (string, bool) {
	for i := range e {
		if e[i].Key == key {
			return e[i].Value, true
		}
	}
	return "", false
}

// Set replaces or appends key.
func (e *ExtFields) Set(key, value string) {
	for i := range *e {
		if (*e)[i].Key == key {
			(*e)[i].Value = value
			return
		}
	}
	*e = append(*e, ExtField{Key: key, Value: value})
}
