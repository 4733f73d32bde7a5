package codec

import (
	"fmt"
	"strconv"
)

// Client-facing JSON bodies (HEART_BEAT, LOCK_BATCH_MQ, GET_CONSUMER_LIST_BY_GROUP,
// CHECK_CLIENT_CONFIG). Fields are declared in fastjson's alphabetical order so
// marshalled output matches what a Java broker writes.

// MessageQueue is Java's MessageQueue.
type MessageQueue struct {
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
	Topic      string `json:"topic"`
}

// CodeSet is SubscriptionData.codeSet. Java writes numbers, the Go client
// writes strings; both are accepted (fastjson does too). It marshals as numbers.
type CodeSet []int32

// UnmarshalJSON accepts [1,2], ["1","2"] and null.
func (c *CodeSet) UnmarshalJSON(data []byte) error {
	if string(data) == "null" { // as encoding/json leaves a nil slice
		return nil
	}
	var raw []RawJSON
	if err := UnmarshalBody(data, &raw); err != nil {
		return fmt.Errorf("codeSet: %w", err)
	}
	out := make([]int32, 0, len(raw))
	for _, r := range raw {
		s := string(r)
		if len(s) >= 2 && s[0] == '"' {
			if err := UnmarshalBody(r, &s); err != nil {
				return fmt.Errorf("codeSet: %w", err)
			}
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("codeSet element %s: %w", r, err)
		}
		out = append(out, int32(v))
	}
	*c = out
	return nil
}

// SubscriptionData is one subscription of a consumer group.
type SubscriptionData struct {
	ClassFilterMode bool     `json:"classFilterMode"`
	CodeSet         CodeSet  `json:"codeSet"`
	ExpressionType  string   `json:"expressionType"`
	SubString       string   `json:"subString"`
	SubVersion      int64    `json:"subVersion"`
	TagsSet         []string `json:"tagsSet"`
	Topic           string   `json:"topic"`
}

// ConsumerData is one consumer group in a heartbeat.
type ConsumerData struct {
	ConsumeFromWhere    string             `json:"consumeFromWhere"`
	ConsumeType         string             `json:"consumeType"`
	GroupName           string             `json:"groupName"`
	MessageModel        string             `json:"messageModel"`
	SubscriptionDataSet []SubscriptionData `json:"subscriptionDataSet"`
	UnitMode            bool               `json:"unitMode"`
}

// ProducerData is one producer group in a heartbeat.
type ProducerData struct {
	GroupName string `json:"groupName"`
}

// HeartbeatData is the HEART_BEAT body.
type HeartbeatData struct {
	ClientID             string         `json:"clientID"`
	ConsumerDataSet      []ConsumerData `json:"consumerDataSet"`
	HeartbeatFingerprint int32          `json:"heartbeatFingerprint,omitempty"`
	ProducerDataSet      []ProducerData `json:"producerDataSet"`
	WithoutSub           bool           `json:"withoutSub,omitempty"`
}

// LockBatchRequestBody is the LOCK_BATCH_MQ body.
type LockBatchRequestBody struct {
	ClientID       string         `json:"clientId"`
	ConsumerGroup  string         `json:"consumerGroup"`
	MQSet          []MessageQueue `json:"mqSet"`
	OnlyThisBroker bool           `json:"onlyThisBroker"`
}

// UnlockBatchRequestBody is the UNLOCK_BATCH_MQ body.
type UnlockBatchRequestBody = LockBatchRequestBody

// LockBatchResponseBody is the LOCK_BATCH_MQ response body.
type LockBatchResponseBody struct {
	LockOKMQSet []MessageQueue `json:"lockOKMQSet"`
}

// GetConsumerListByGroupResponseBody is the GET_CONSUMER_LIST_BY_GROUP body.
type GetConsumerListByGroupResponseBody struct {
	ConsumerIDList []string `json:"consumerIdList"`
}

// CheckClientRequestBody is the CHECK_CLIENT_CONFIG body.
type CheckClientRequestBody struct {
	ClientID         string            `json:"clientId"`
	Group            string            `json:"group"`
	SubscriptionData *SubscriptionData `json:"subscriptionData"`
}
