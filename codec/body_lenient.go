package codec

import (
	"bytes"
	"fmt"
	"strconv"
	"time"
)

// Scalars of client bodies decoded as leniently as fastjson 1.2.83 (the Java
// broker's JSON library) decodes them, because clients in other languages write
// them differently from Java:
//   - rocketmq-client-cpp (jsoncpp) writes enums as ordinals, subVersion as a
//     string, and leaves out expressionType, classFilterMode, unitMode and every
//     empty collection;
//   - ali-ons writes enum names but its own key order and no unitMode.
// Strict where leniency would store something wrong: an enum ordinal out of range
// or an unknown enum name is an error (fastjson throws on the first; on the
// second it stores null, which rmqd has no use for), and so is a fraction where
// an integer belongs.

// unquote returns the content of a JSON string token, or the token itself.
func unquote(b []byte, field string) (string, bool, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '"' {
		return string(b), false, nil
	}
	var s string
	if err := UnmarshalBody(b, &s); err != nil {
		return "", true, fmt.Errorf("%s: %w", field, err)
	}
	return s, true, nil
}

// lenientInt parses a JSON number, a numeric string, or null (0), as fastjson
// casts to long; an empty string is 0 as well.
func lenientInt(b []byte, field string, bits int) (int64, error) {
	s, _, err := unquote(b, field)
	if err != nil {
		return 0, err
	}
	if s == "null" || s == "" {
		return 0, nil
	}
	v, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not an int%d", field, s, bits)
	}
	return v, nil
}

// jsonInt64 is a long field: number or numeric string.
type jsonInt64 int64

func (v *jsonInt64) UnmarshalJSON(b []byte) error {
	n, err := lenientInt(b, "long", 64)
	*v = jsonInt64(n)
	return err
}

// jsonInt32 is an int field: number or numeric string.
type jsonInt32 int32

func (v *jsonInt32) UnmarshalJSON(b []byte) error {
	n, err := lenientInt(b, "int", 32)
	*v = jsonInt32(n)
	return err
}

// jsonBool is a boolean field: true/false, "true"/"false", 1/0 or null, as
// fastjson casts to boolean.
type jsonBool bool

func (v *jsonBool) UnmarshalJSON(b []byte) error {
	s, _, err := unquote(b, "boolean")
	if err != nil {
		return err
	}
	switch s {
	case "true", "1", "TRUE", "True", "Y", "T":
		*v = true
	case "false", "0", "FALSE", "False", "N", "F", "null", "":
		*v = false
	default:
		return fmt.Errorf("boolean: %q", s)
	}
	return nil
}

// javaEnum decodes an enum written by name or by ordinal (a number, or a string
// of digits) into its name, given the enum's constants in declaration order.
func javaEnum(b []byte, field string, names []string) (string, error) {
	s, quoted, err := unquote(b, field)
	if err != nil {
		return "", err
	}
	if (!quoted && s == "null") || s == "" {
		return "", nil
	}
	if s[0] >= '0' && s[0] <= '9' || s[0] == '-' {
		i, err := strconv.Atoi(s)
		if err != nil || i < 0 || i >= len(names) {
			return "", fmt.Errorf("%s: ordinal %s out of range", field, s)
		}
		return names[i], nil
	}
	for _, n := range names {
		if n == s {
			return s, nil
		}
	}
	return "", fmt.Errorf("%s: unknown constant %q", field, s)
}

// The Java enums' constants in declaration order (their ordinals).
var (
	consumeTypeNames      = []string{"CONSUME_ACTIVELY", "CONSUME_PASSIVELY", "CONSUME_POP"}
	messageModelNames     = []string{"BROADCASTING", "CLUSTERING"}
	consumeFromWhereNames = []string{"CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
		"CONSUME_FROM_MIN_OFFSET", "CONSUME_FROM_MAX_OFFSET", "CONSUME_FROM_FIRST_OFFSET", "CONSUME_FROM_TIMESTAMP"}
)

type consumeTypeJSON string

func (e *consumeTypeJSON) UnmarshalJSON(b []byte) error {
	s, err := javaEnum(b, "consumeType", consumeTypeNames)
	*e = consumeTypeJSON(s)
	return err
}

type messageModelJSON string

func (e *messageModelJSON) UnmarshalJSON(b []byte) error {
	s, err := javaEnum(b, "messageModel", messageModelNames)
	*e = messageModelJSON(s)
	return err
}

type consumeFromWhereJSON string

func (e *consumeFromWhereJSON) UnmarshalJSON(b []byte) error {
	s, err := javaEnum(b, "consumeFromWhere", consumeFromWhereNames)
	*e = consumeFromWhereJSON(s)
	return err
}

// jsonString is a String field: fastjson casts a number or boolean to its text.
type jsonString string

func (v *jsonString) UnmarshalJSON(b []byte) error {
	s, quoted, err := unquote(b, "string")
	if err != nil {
		return err
	}
	if !quoted && s == "null" {
		s = ""
	} else if !quoted && len(s) > 0 && (s[0] == '{' || s[0] == '[') {
		return fmt.Errorf("string: got %.20s", s)
	}
	*v = jsonString(s)
	return nil
}

type messageQueueJSON struct {
	BrokerName jsonString `json:"brokerName"`
	QueueID    jsonInt32  `json:"queueId"`
	Topic      jsonString `json:"topic"`
}

// UnmarshalJSON accepts queueId as a number or a numeric string.
func (m *MessageQueue) UnmarshalJSON(b []byte) error {
	var j messageQueueJSON
	if err := UnmarshalBody(b, &j); err != nil {
		return fmt.Errorf("MessageQueue: %w", err)
	}
	*m = MessageQueue{BrokerName: string(j.BrokerName), QueueID: int32(j.QueueID), Topic: string(j.Topic)}
	return nil
}

type subscriptionDataJSON struct {
	ClassFilterMode jsonBool     `json:"classFilterMode"`
	CodeSet         CodeSet      `json:"codeSet"`
	ExpressionType  jsonString   `json:"expressionType"`
	SubString       jsonString   `json:"subString"`
	SubVersion      *jsonInt64   `json:"subVersion"` // nil when missing or null
	TagsSet         []jsonString `json:"tagsSet"`
	Topic           jsonString   `json:"topic"`
}

// UnmarshalJSON accepts subVersion as a string (the C++ client) and booleans as
// fastjson does; a missing expressionType stays empty (TAG, Java's default), and
// a missing or null subVersion is the decode time, Java's field initialiser, so
// the pull's "subscription not latest" check does not trip on it.
func (s *SubscriptionData) UnmarshalJSON(b []byte) error {
	var j subscriptionDataJSON
	if err := UnmarshalBody(b, &j); err != nil {
		return fmt.Errorf("SubscriptionData: %w", err)
	}
	ver := time.Now().UnixMilli()
	if j.SubVersion != nil {
		ver = int64(*j.SubVersion)
	}
	*s = SubscriptionData{ClassFilterMode: bool(j.ClassFilterMode), CodeSet: j.CodeSet,
		ExpressionType: string(j.ExpressionType), SubString: string(j.SubString),
		SubVersion: ver, Topic: string(j.Topic)}
	if j.TagsSet != nil {
		s.TagsSet = make([]string, len(j.TagsSet))
		for i, t := range j.TagsSet {
			s.TagsSet[i] = string(t)
		}
	}
	return nil
}

type consumerDataJSON struct {
	ConsumeFromWhere    consumeFromWhereJSON `json:"consumeFromWhere"`
	ConsumeType         consumeTypeJSON      `json:"consumeType"`
	GroupName           jsonString           `json:"groupName"`
	MessageModel        messageModelJSON     `json:"messageModel"`
	SubscriptionDataSet []SubscriptionData   `json:"subscriptionDataSet"`
	UnitMode            jsonBool             `json:"unitMode"`
}

// UnmarshalJSON accepts the enums by name or by ordinal (the C++ client writes
// ordinals).
func (c *ConsumerData) UnmarshalJSON(b []byte) error {
	var j consumerDataJSON
	if err := UnmarshalBody(b, &j); err != nil {
		return fmt.Errorf("ConsumerData: %w", err)
	}
	*c = ConsumerData{ConsumeFromWhere: string(j.ConsumeFromWhere), ConsumeType: string(j.ConsumeType),
		GroupName: string(j.GroupName), MessageModel: string(j.MessageModel),
		SubscriptionDataSet: j.SubscriptionDataSet, UnitMode: bool(j.UnitMode)}
	return nil
}

type producerDataJSON struct {
	GroupName jsonString `json:"groupName"`
}

// UnmarshalJSON accepts a non-string group name as its text.
func (p *ProducerData) UnmarshalJSON(b []byte) error {
	var j producerDataJSON
	if err := UnmarshalBody(b, &j); err != nil {
		return fmt.Errorf("ProducerData: %w", err)
	}
	p.GroupName = string(j.GroupName)
	return nil
}

type heartbeatDataJSON struct {
	ClientID             jsonString     `json:"clientID"`
	ConsumerDataSet      []ConsumerData `json:"consumerDataSet"`
	HeartbeatFingerprint jsonInt32      `json:"heartbeatFingerprint"`
	ProducerDataSet      []ProducerData `json:"producerDataSet"`
	WithoutSub           jsonBool       `json:"withoutSub"`
}

// DecodeHeartbeatData parses a HEART_BEAT body as fastjson would: any key order,
// unknown keys ignored, missing collections empty, enums by name or ordinal,
// numbers as strings.
func DecodeHeartbeatData(b []byte) (HeartbeatData, error) {
	var j heartbeatDataJSON
	if err := decodeBodyJSON(b, &j, "HeartbeatData"); err != nil {
		return HeartbeatData{}, err
	}
	return HeartbeatData{ClientID: string(j.ClientID), ConsumerDataSet: j.ConsumerDataSet,
		HeartbeatFingerprint: int32(j.HeartbeatFingerprint), ProducerDataSet: j.ProducerDataSet,
		WithoutSub: bool(j.WithoutSub)}, nil
}

type lockBatchJSON struct {
	ClientID       jsonString     `json:"clientId"`
	ConsumerGroup  jsonString     `json:"consumerGroup"`
	MQSet          []MessageQueue `json:"mqSet"`
	OnlyThisBroker jsonBool       `json:"onlyThisBroker"`
}

// DecodeLockBatchRequestBody parses a LOCK_BATCH_MQ or UNLOCK_BATCH_MQ body.
func DecodeLockBatchRequestBody(b []byte) (LockBatchRequestBody, error) {
	var j lockBatchJSON
	if err := decodeBodyJSON(b, &j, "LockBatchRequestBody"); err != nil {
		return LockBatchRequestBody{}, err
	}
	return LockBatchRequestBody{ClientID: string(j.ClientID), ConsumerGroup: string(j.ConsumerGroup),
		MQSet: j.MQSet, OnlyThisBroker: bool(j.OnlyThisBroker)}, nil
}

type checkClientJSON struct {
	ClientID         jsonString        `json:"clientId"`
	Group            jsonString        `json:"group"`
	SubscriptionData *SubscriptionData `json:"subscriptionData"`
}

// DecodeCheckClientRequestBody parses a CHECK_CLIENT_CONFIG body.
func DecodeCheckClientRequestBody(b []byte) (CheckClientRequestBody, error) {
	var j checkClientJSON
	if err := decodeBodyJSON(b, &j, "CheckClientRequestBody"); err != nil {
		return CheckClientRequestBody{}, err
	}
	return CheckClientRequestBody{ClientID: string(j.ClientID), Group: string(j.Group),
		SubscriptionData: j.SubscriptionData}, nil
}
