package processor

import (
	"strconv"
	"strings"

	"rmqd/codec"
)

// headerReader reads a request's ext fields with Java's parse rules (codec's
// typed getters) and keeps the first error, so a handler can read every field and
// check once (Java fails the request when a @CFNotNull field is missing or
// malformed).
type headerReader struct {
	ext codec.ExtFields
	err error
}

func (h *headerReader) keep(err error) {
	if h.err == nil {
		h.err = err
	}
}

// str returns an optional string field.
func (h *headerReader) str(key string) string {
	v, _ := h.ext.Get(key)
	return v
}

// reqStr returns a required string field.
func (h *headerReader) reqStr(key string) string {
	v, err := h.ext.Require(key)
	if err != nil {
		h.keep(err)
	}
	return v
}

func (h *headerReader) int64Field(key string, required bool, def int64) int64 {
	v, ok, err := h.ext.GetInt64(key)
	return h.checked(key, required, ok, err, v, def)
}

func (h *headerReader) int32Field(key string, required bool, def int32) int32 {
	v, ok, err := h.ext.GetInt32(key)
	return int32(h.checked(key, required, ok, err, int64(v), int64(def)))
}

// checked turns a typed getter's answer into the value or def, keeping the error
// of an absent required or a malformed field.
func (h *headerReader) checked(key string, required, ok bool, err error, v, def int64) int64 {
	switch {
	case !ok:
		if required {
			h.keep(codec.MissingField(key))
		}
		return def
	case err != nil:
		h.keep(err)
		return def
	}
	return v
}

func (h *headerReader) reqInt32(key string) int32 { return h.int32Field(key, true, 0) }
func (h *headerReader) reqInt64(key string) int64 { return h.int64Field(key, true, 0) }
func (h *headerReader) optInt32(key string, def int32) int32 {
	return h.int32Field(key, false, def)
}
func (h *headerReader) optInt64(key string, def int64) int64 {
	return h.int64Field(key, false, def)
}

// optBool is Boolean.parseBoolean of an optional field.
func (h *headerReader) optBool(key string) bool {
	v, _ := h.ext.GetBool(key)
	return v
}

// sendHeader is SendMessageRequestHeader (V1 keys) / V2 (single-letter keys).
type sendHeader struct {
	producerGroup         string
	topic                 string
	defaultTopic          string
	defaultTopicQueueNums int32
	queueID               int32
	sysFlag               int32
	bornTimestamp         int64
	flag                  int32
	properties            string
	reconsumeTimes        int32
	unitMode              bool
	maxReconsumeTimes     int32
	hasMaxReconsumeTimes  bool
	batch                 bool
}

// parseSendHeader reads V2 keys when the request has them (SEND_MESSAGE_V2, and
// SEND_BATCH_MESSAGE from both clients), else V1 keys.
func parseSendHeader(req *codec.RemotingCommand) (sendHeader, error) {
	h := headerReader{ext: req.Ext}
	var s sendHeader
	if _, v2 := req.Ext.Get("b"); v2 {
		s.producerGroup = h.reqStr("a")
		s.topic = h.reqStr("b")
		s.defaultTopic = h.reqStr("c")
		s.defaultTopicQueueNums = h.reqInt32("d")
		s.queueID = h.reqInt32("e")
		s.sysFlag = h.reqInt32("f")
		s.bornTimestamp = h.reqInt64("g")
		s.flag = h.reqInt32("h")
		s.properties = h.str("i")
		s.reconsumeTimes = h.optInt32("j", 0)
		s.unitMode = h.optBool("k")
		_, s.hasMaxReconsumeTimes = req.Ext.Get("l")
		s.maxReconsumeTimes = h.optInt32("l", 0)
		s.batch = h.optBool("m")
	} else {
		s.producerGroup = h.reqStr("producerGroup")
		s.topic = h.reqStr("topic")
		s.defaultTopic = h.reqStr("defaultTopic")
		s.defaultTopicQueueNums = h.reqInt32("defaultTopicQueueNums")
		s.queueID = h.reqInt32("queueId")
		s.sysFlag = h.reqInt32("sysFlag")
		s.bornTimestamp = h.reqInt64("bornTimestamp")
		s.flag = h.reqInt32("flag")
		s.properties = h.str("properties")
		s.reconsumeTimes = h.optInt32("reconsumeTimes", 0)
		s.unitMode = h.optBool("unitMode")
		_, s.hasMaxReconsumeTimes = req.Ext.Get("maxReconsumeTimes")
		s.maxReconsumeTimes = h.optInt32("maxReconsumeTimes", 0)
		s.batch = h.optBool("batch")
	}
	return s, h.err
}

// pullHeader is PullMessageRequestHeader. Its strings alias the request frame
// until clone is called (a held pull outlives the frame).
type pullHeader struct {
	consumerGroup        string
	topic                string
	queueID              int32
	queueOffset          int64
	maxMsgNums           int32
	sysFlag              int32
	commitOffset         int64
	suspendTimeoutMillis int64
	subscription         string
	subVersion           int64
	expressionType       string
	maxMsgBytes          int32
}

// PullSysFlag bits.
const (
	pullFlagCommitOffset = 0x1
	pullFlagSuspend      = 0x2
	pullFlagSubscription = 0x4
	pullFlagClassFilter  = 0x8
	pullFlagLitePull     = 0x10
)

func parsePullHeader(req *codec.RemotingCommand) (pullHeader, error) {
	h := headerReader{ext: req.Ext}
	p := pullHeader{
		consumerGroup:        h.reqStr("consumerGroup"),
		topic:                h.reqStr("topic"),
		queueID:              h.reqInt32("queueId"),
		queueOffset:          h.reqInt64("queueOffset"),
		maxMsgNums:           h.reqInt32("maxMsgNums"),
		sysFlag:              h.reqInt32("sysFlag"),
		commitOffset:         h.reqInt64("commitOffset"),
		suspendTimeoutMillis: h.reqInt64("suspendTimeoutMillis"),
		subscription:         h.str("subscription"),
		subVersion:           h.reqInt64("subVersion"),
		expressionType:       h.str("expressionType"),
		maxMsgBytes:          h.optInt32("maxMsgBytes", 0),
	}
	return p, h.err
}

// clone gives the header its own strings.
func (p *pullHeader) clone() {
	p.consumerGroup = strings.Clone(p.consumerGroup)
	p.topic = strings.Clone(p.topic)
	p.subscription = strings.Clone(p.subscription)
	p.expressionType = strings.Clone(p.expressionType)
}

func i32s(v int32) string { return strconv.FormatInt(int64(v), 10) }
func i64s(v int64) string { return strconv.FormatInt(v, 10) }
