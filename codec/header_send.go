package codec

// SEND_MESSAGE family headers (SendMessageRequestHeader, SendMessageRequestHeaderV2,
// SendMessageResponseHeader). Decoding walks Ext once and switches on the key: no
// reflection, no allocation (strings alias the decoded frame).

// SendMessageRequestHeader is the send request header in V1 terms. Java's nullable
// Integer/Boolean fields that the broker reads as 0/false when null are plain
// values here; MaxReconsumeTimes keeps its presence because null means "use the
// group's retry setting".
type SendMessageRequestHeader struct {
	ProducerGroup         string
	Topic                 string
	DefaultTopic          string
	DefaultTopicQueueNums int32
	QueueID               int32
	SysFlag               int32
	BornTimestamp         int64
	Flag                  int32
	Properties            string
	ReconsumeTimes        int32
	UnitMode              bool
	MaxReconsumeTimes     int32
	HasMaxReconsumeTimes  bool
	Batch                 bool
	// BrokerName is V2 "n"; in V1 5.x clients send it as RpcRequestHeader "bname".
	BrokerName string
}

// SendMessageRequestHeaderV2 is the same header written with the single-letter V2
// keys: (*SendMessageRequestHeaderV2)(h) converts without copying.
type SendMessageRequestHeaderV2 SendMessageRequestHeader

// Field indexes, in V2 letter order (a = 0 ... n = 13).
const (
	sendProducerGroup = iota
	sendTopic
	sendDefaultTopic
	sendDefaultTopicQueueNums
	sendQueueID
	sendSysFlag
	sendBornTimestamp
	sendFlag
	sendProperties
	sendReconsumeTimes
	sendUnitMode
	sendMaxReconsumeTimes
	sendBatch
	sendBrokerName
	sendFieldCount
)

// sendV1Names are the V1 keys by field index.
var sendV1Names = [sendFieldCount]string{
	"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
	"bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode", "maxReconsumeTimes",
	"batch", "bname",
}

// sendRequired are Java's @CFNotNull fields (V2: getAndCheckNotNull of a..h):
// a request without one fails as the Java broker fails it.
const sendRequired = 1<<sendProducerGroup | 1<<sendTopic | 1<<sendDefaultTopic | 1<<sendDefaultTopicQueueNums |
	1<<sendQueueID | 1<<sendSysFlag | 1<<sendBornTimestamp | 1<<sendFlag

func sendFieldV1(k string) int {
	switch k {
	case "producerGroup":
		return sendProducerGroup
	case "topic":
		return sendTopic
	case "defaultTopic":
		return sendDefaultTopic
	case "defaultTopicQueueNums":
		return sendDefaultTopicQueueNums
	case "queueId":
		return sendQueueID
	case "sysFlag":
		return sendSysFlag
	case "bornTimestamp":
		return sendBornTimestamp
	case "flag":
		return sendFlag
	case "properties":
		return sendProperties
	case "reconsumeTimes":
		return sendReconsumeTimes
	case "unitMode":
		return sendUnitMode
	case "maxReconsumeTimes":
		return sendMaxReconsumeTimes
	case "batch":
		return sendBatch
	case "bname":
		return sendBrokerName
	}
	return -1
}

func sendFieldV2(k string) int {
	if len(k) == 1 && k[0] >= 'a' && k[0] < 'a'+sendFieldCount {
		return int(k[0] - 'a')
	}
	return -1
}

func (h *SendMessageRequestHeader) set(idx int, key, v string) (err error) {
	switch idx {
	case sendProducerGroup:
		h.ProducerGroup = v
	case sendTopic:
		h.Topic = v
	case sendDefaultTopic:
		h.DefaultTopic = v
	case sendDefaultTopicQueueNums:
		h.DefaultTopicQueueNums, err = parseInt32Field(key, v)
	case sendQueueID:
		h.QueueID, err = parseInt32Field(key, v)
	case sendSysFlag:
		h.SysFlag, err = parseInt32Field(key, v)
	case sendBornTimestamp:
		h.BornTimestamp, err = parseInt64Field(key, v)
	case sendFlag:
		h.Flag, err = parseInt32Field(key, v)
	case sendProperties:
		h.Properties = v
	case sendReconsumeTimes:
		h.ReconsumeTimes, err = parseInt32Field(key, v)
	case sendUnitMode:
		h.UnitMode = parseJavaBool(v)
	case sendMaxReconsumeTimes:
		h.MaxReconsumeTimes, err = parseInt32Field(key, v)
		h.HasMaxReconsumeTimes = true
	case sendBatch:
		h.Batch = parseJavaBool(v)
	case sendBrokerName:
		h.BrokerName = v
	}
	return err
}

func (h *SendMessageRequestHeader) decode(ext ExtFields, field func(string) int, v2 bool) error {
	*h = SendMessageRequestHeader{}
	var seen uint32
	for i := range ext {
		idx := field(ext[i].Key)
		if idx < 0 {
			continue
		}
		if err := h.set(idx, ext[i].Key, ext[i].Value); err != nil {
			return err
		}
		seen |= 1 << idx
	}
	if missing := sendRequired &^ seen; missing != 0 {
		for idx := 0; idx < sendFieldCount; idx++ {
			if missing&(1<<idx) != 0 {
				name := sendV1Names[idx]
				if v2 {
					name = string(rune('a' + idx))
				}
				return &MissingFieldError{Field: name}
			}
		}
	}
	return nil
}

// Decode reads the V1 keys (SEND_MESSAGE 10, SEND_REPLY_MESSAGE 324; the Go
// client uses them). A missing required field is a *MissingFieldError, a number
// that does not parse a *FieldError.
func (h *SendMessageRequestHeader) Decode(ext ExtFields) error {
	return h.decode(ext, sendFieldV1, false)
}

// DecodeV2 reads the single-letter V2 keys a..n.
func (h *SendMessageRequestHeader) DecodeV2(ext ExtFields) error {
	return h.decode(ext, sendFieldV2, true)
}

// DecodeSend picks the key set by request code as the Java broker does: V2 for
// SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320) and SEND_REPLY_MESSAGE_V2 (325),
// V1 otherwise.
func (h *SendMessageRequestHeader) DecodeSend(code int32, ext ExtFields) error {
	switch code {
	case ReqSendMessageV2, ReqSendBatchMessage, ReqSendReplyMessageV2:
		return h.DecodeV2(ext)
	}
	return h.Decode(ext)
}

// SendTopic is a send request's topic, read with DecodeSend's key rule, for
// the choices made before the header is decoded.
func SendTopic(code int32, ext ExtFields) (string, bool) {
	if IsV2Code(code) {
		return ext.Get("b")
	}
	return ext.Get("topic")
}

// IsV2Code reports whether a send request code carries V2 keys.
func IsV2Code(code int32) bool {
	return code == ReqSendMessageV2 || code == ReqSendBatchMessage || code == ReqSendReplyMessageV2
}

func (h *SendMessageRequestHeader) write(w *ExtWriter, name func(int) string) {
	w.String(name(sendProducerGroup), h.ProducerGroup)
	w.String(name(sendTopic), h.Topic)
	w.String(name(sendDefaultTopic), h.DefaultTopic)
	w.Int32(name(sendDefaultTopicQueueNums), h.DefaultTopicQueueNums)
	w.Int32(name(sendQueueID), h.QueueID)
	w.Int32(name(sendSysFlag), h.SysFlag)
	w.Int64(name(sendBornTimestamp), h.BornTimestamp)
	w.Int32(name(sendFlag), h.Flag)
	w.StringIfSet(name(sendProperties), h.Properties)
	w.Int32(name(sendReconsumeTimes), h.ReconsumeTimes)
	w.Bool(name(sendUnitMode), h.UnitMode)
	if h.HasMaxReconsumeTimes {
		w.Int32(name(sendMaxReconsumeTimes), h.MaxReconsumeTimes)
	}
	w.Bool(name(sendBatch), h.Batch)
	w.StringIfSet(name(sendBrokerName), h.BrokerName)
}

var sendV2Names = [sendFieldCount]string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n"}

// WriteExt writes the V1 keys.
func (h *SendMessageRequestHeader) WriteExt(w *ExtWriter) {
	h.write(w, func(i int) string { return sendV1Names[i] })
}

// WriteExt writes the V2 keys in Java's order (a..n).
func (h *SendMessageRequestHeaderV2) WriteExt(w *ExtWriter) {
	(*SendMessageRequestHeader)(h).write(w, func(i int) string { return sendV2Names[i] })
}

// Keys the broker adds to every send response beside the header fields
// (MessageConst.PROPERTY_MSG_REGION, PROPERTY_TRACE_SWITCH).
const (
	ExtMsgRegion = "MSG_REGION"
	ExtTraceOn   = "TRACE_ON"
)

// SendMessageResponseHeader is the send response header plus the two fields the
// Java broker adds to every send response. WriteExt always writes msgId, queueId,
// queueOffset and TRACE_ON, so a response carrying it always has extFields: the
// Java client reads getExtFields().get(MSG_REGION) without a null check and
// throws on a response without them (MQClientAPIImpl.processSendResponse).
type SendMessageResponseHeader struct {
	MsgID         string // offset message id; batches: ids joined by ','
	QueueID       int32
	QueueOffset   int64
	TransactionID string // written when set
	BatchUniqID   string // written when set
	RecallHandle  string // written when set
	MsgRegion     string // MSG_REGION, written when set
	TraceOn       bool   // TRACE_ON, always written
}

// WriteExt writes the fields in the Java broker's binary order: the
// FastCodesHeader fields, then TRACE_ON and MSG_REGION (their HashMap order).
func (h *SendMessageResponseHeader) WriteExt(w *ExtWriter) {
	w.String("msgId", h.MsgID)
	w.Int32("queueId", h.QueueID)
	w.Int64("queueOffset", h.QueueOffset)
	w.StringIfSet("transactionId", h.TransactionID)
	w.StringIfSet("batchUniqId", h.BatchUniqID)
	w.StringIfSet("recallHandle", h.RecallHandle)
	w.Bool(ExtTraceOn, h.TraceOn)
	w.StringIfSet(ExtMsgRegion, h.MsgRegion)
}

// Decode reads a send response (client side and tests). TraceOn follows the Java
// client: true unless TRACE_ON is "false".
func (h *SendMessageResponseHeader) Decode(ext ExtFields) error {
	r := ExtReader{Ext: ext}
	*h = SendMessageResponseHeader{
		MsgID:         r.ReqStr("msgId"),
		QueueID:       r.ReqInt32("queueId"),
		QueueOffset:   r.ReqInt64("queueOffset"),
		TransactionID: r.Str("transactionId"),
		BatchUniqID:   r.Str("batchUniqId"),
		RecallHandle:  r.Str("recallHandle"),
		MsgRegion:     r.Str(ExtMsgRegion),
		TraceOn:       r.Str(ExtTraceOn) != "false",
	}
	return r.Err()
}
