package pop

import (
	"fmt"
	"strconv"
	"strings"

	"rmqd/codec"
)

// CheckPoint is Java's PopCheckPoint as fastjson writes it: short names,
// sorted, the reviveTime getter included (Java ignores it on read).
type CheckPoint struct {
	BitMap        int32   `json:"bm"`
	BrokerName    string  `json:"bn,omitempty"`
	CID           string  `json:"c"`
	Diff          []int32 `json:"d,omitempty"`
	InvisibleTime int64   `json:"it"`
	Num           int8    `json:"n"`
	PopTime       int64   `json:"pt"`
	QueueID       int32   `json:"q"`
	ReviveTimeOut int64   `json:"reviveTime"`
	ReviveOffset  int64   `json:"ro"`
	RePutTimes    string  `json:"rp,omitempty"`
	StartOffset   int64   `json:"so"`
	Topic         string  `json:"t"`
}

// ReviveTime is when the messages become visible again.
func (c *CheckPoint) ReviveTime() int64 { return c.PopTime + c.InvisibleTime }

func (c *CheckPoint) addDiff(d int32) { c.Diff = append(c.Diff, d) }

// indexOfAck is the bit of a message offset, -1 when not in the checkpoint.
func (c *CheckPoint) indexOfAck(off int64) int {
	if off < c.StartOffset {
		return -1
	}
	if len(c.Diff) == 0 { // checkpoints of old versions
		if off-c.StartOffset < int64(c.Num) {
			return int(off - c.StartOffset)
		}
		return -1
	}
	d := off - c.StartOffset
	for i, v := range c.Diff {
		if int64(v) == d {
			return i
		}
	}
	return -1
}

// valid says whether a checkpoint read from the revive topic can be revived:
// at most a POP's 32 messages, an offset for each, a re-put count that indexes
// the back-off table.
func (c *CheckPoint) valid() bool {
	return c.Topic != "" && c.CID != "" && c.Num > 0 && c.Num <= 32 &&
		(len(c.Diff) == 0 || len(c.Diff) >= int(c.Num)) && c.rePutTimes() >= 0
}

// ackOffsetByIndex is the queue offset of message i.
func (c *CheckPoint) ackOffsetByIndex(i int) int64 {
	if len(c.Diff) == 0 {
		return c.StartOffset + int64(i)
	}
	return c.StartOffset + int64(c.Diff[i])
}

// rePutTimes is PopCheckPoint.parseRePutTimes (Byte.MAX_VALUE when garbled).
func (c *CheckPoint) rePutTimes() int {
	if c.RePutTimes == "" {
		return 0
	}
	n, err := strconv.Atoi(c.RePutTimes)
	if err != nil {
		return 127
	}
	return n
}

// mergeKey matches a checkpoint with its acks (PopReviveService).
func (c *CheckPoint) mergeKey() string {
	return c.Topic + c.CID + strconv.Itoa(int(c.QueueID)) + strconv.FormatInt(c.StartOffset, 10) +
		strconv.FormatInt(c.PopTime, 10) + c.BrokerName
}

// uniqueID is PopMessageProcessor.genCkUniqueId, the record's UNIQ_KEY.
func (c *CheckPoint) uniqueID() string {
	return recordUniqueID(c.Topic, c.QueueID, c.StartOffset, c.CID, c.PopTime, c.BrokerName, ckTag)
}

// recordUniqueID is topic@queueId@offset@group@popTime@brokerName@tag, built
// in one allocation.
func recordUniqueID(topic string, queueID int32, offset int64, group string, popTime int64, brokerName, tag string) string {
	var sb strings.Builder
	var num [20]byte
	sb.Grow(len(topic) + len(group) + len(brokerName) + len(tag) + 64) // three numbers, six '@'
	sb.WriteString(topic)
	sb.WriteByte('@')
	sb.Write(strconv.AppendInt(num[:0], int64(queueID), 10))
	sb.WriteByte('@')
	sb.Write(strconv.AppendInt(num[:0], offset, 10))
	sb.WriteByte('@')
	sb.WriteString(group)
	sb.WriteByte('@')
	sb.Write(strconv.AppendInt(num[:0], popTime, 10))
	sb.WriteByte('@')
	sb.WriteString(brokerName)
	sb.WriteByte('@')
	sb.WriteString(tag)
	return sb.String()
}

// AckMsg is Java's AckMsg (and BatchAckMsg with AckOffsetList) as fastjson
// writes it; Java reads the long names too.
type AckMsg struct {
	AckOffset     int64   `json:"ao"`
	AckOffsetList []int64 `json:"aol,omitempty"`
	BrokerName    string  `json:"bn,omitempty"`
	ConsumerGroup string  `json:"c"`
	PopTime       int64   `json:"pt"`
	QueueID       int32   `json:"q"`
	StartOffset   int64   `json:"so"`
	Topic         string  `json:"t"`
}

// UnmarshalJSON takes the short names and fastjson's alternate long ones.
func (a *AckMsg) UnmarshalJSON(data []byte) error {
	var m map[string]codec.RawJSON
	if err := codec.UnmarshalBody(data, &m); err != nil {
		return err
	}
	fields := []struct {
		short, long string
		dst         any
	}{
		{"ao", "ackOffset", &a.AckOffset}, {"aol", "ackOffsetList", &a.AckOffsetList},
		{"bn", "brokerName", &a.BrokerName}, {"c", "consumerGroup", &a.ConsumerGroup},
		{"pt", "popTime", &a.PopTime}, {"q", "queueId", &a.QueueID},
		{"so", "startOffset", &a.StartOffset}, {"t", "topic", &a.Topic},
	}
	for _, f := range fields {
		raw, ok := m[f.short]
		if !ok {
			raw, ok = m[f.long]
		}
		if !ok || string(raw) == "null" {
			continue
		}
		if err := codec.UnmarshalBody(raw, f.dst); err != nil {
			return fmt.Errorf("ack field %s: %w", f.short, err)
		}
	}
	return nil
}

func (a *AckMsg) mergeKey(defaultBroker string) string {
	bn := a.BrokerName
	if strings.TrimSpace(bn) == "" {
		bn = defaultBroker
	}
	return a.Topic + a.ConsumerGroup + strconv.Itoa(int(a.QueueID)) + strconv.FormatInt(a.StartOffset, 10) +
		strconv.FormatInt(a.PopTime, 10) + bn
}

// uniqueID is PopMessageProcessor.genAckUniqueId (Java writes it for batch
// acks too: the batch id it sets first is overwritten).
func (a *AckMsg) uniqueID() string {
	return recordUniqueID(a.Topic, a.QueueID, a.AckOffset, a.ConsumerGroup, a.PopTime, a.BrokerName, ackTag)
}

// appendJSON writes a as MarshalBody would (the json tags' names and order,
// which are fastjson's sorted ones) without going through reflection: every
// ack writes one.
func (a *AckMsg) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"ao":`...)
	dst = strconv.AppendInt(dst, a.AckOffset, 10)
	if len(a.AckOffsetList) > 0 {
		dst = append(dst, `,"aol":[`...)
		for i, o := range a.AckOffsetList {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(dst, o, 10)
		}
		dst = append(dst, ']')
	}
	if a.BrokerName != "" {
		dst = append(dst, `,"bn":`...)
		dst = codec.AppendJSONString(dst, a.BrokerName)
	}
	dst = append(dst, `,"c":`...)
	dst = codec.AppendJSONString(dst, a.ConsumerGroup)
	dst = append(dst, `,"pt":`...)
	dst = strconv.AppendInt(dst, a.PopTime, 10)
	dst = append(dst, `,"q":`...)
	dst = strconv.AppendInt(dst, int64(a.QueueID), 10)
	dst = append(dst, `,"so":`...)
	dst = strconv.AppendInt(dst, a.StartOffset, 10)
	dst = append(dst, `,"t":`...)
	dst = codec.AppendJSONString(dst, a.Topic)
	return append(dst, '}')
}

// Retry topic names (KeyBuilder).
func retryTopicV1(topic, group string) string { return retryGroupPrefix + group + "_" + topic }
func retryTopicV2(topic, group string) string { return retryGroupPrefix + group + "+" + topic }

// RetryTopics are the POP retry topics group may have of topic, v1 and v2:
// deleting topic deletes them too (clearRetryTopicWhenDeleteTopic).
func RetryTopics(topic, group string) [2]string {
	return [2]string{retryTopicV1(topic, group), retryTopicV2(topic, group)}
}

func retryTopic(topic, group string, v2 bool) string {
	if v2 {
		return retryTopicV2(topic, group)
	}
	return retryTopicV1(topic, group)
}

func isRetryTopicV2(t string) bool {
	return strings.HasPrefix(t, retryGroupPrefix) && strings.Contains(t, "+")
}

// normalTopic is KeyBuilder.parseNormalTopic(topic, cid).
func normalTopic(topic, group string) string {
	if !strings.HasPrefix(topic, retryGroupPrefix) {
		return topic
	}
	if p := retryGroupPrefix + group + "+"; strings.HasPrefix(topic, p) {
		return topic[len(p):]
	}
	if p := retryGroupPrefix + group + "_"; strings.HasPrefix(topic, p) {
		return topic[len(p):]
	}
	return topic
}

// retryMark is ExtraInfoUtil.getRetry: 0 normal, 1 retry v1, 2 retry v2.
func retryMark(topic string) string {
	switch {
	case isRetryTopicV2(topic):
		return "2"
	case strings.HasPrefix(topic, retryGroupPrefix):
		return "1"
	}
	return "0"
}

// realTopic is ExtraInfoUtil.getRealTopic(topic, cid, retry).
func realTopic(topic, group, retry string) (string, error) {
	switch retry {
	case "0":
		return topic, nil
	case "1":
		return retryTopicV1(topic, group), nil
	case "2":
		return retryTopicV2(topic, group), nil
	}
	return "", fmt.Errorf("getRetry fail, format is wrong: %q", retry)
}

// ValidReviveRecord reports a revive topic record another broker may send
// (an acting slave's, EscapeBridge.putMessageToSpecificQueue): a checkpoint
// the reviver would revive, or an ack or batch ack naming a group's message.
func ValidReviveRecord(tag string, body []byte) bool {
	switch tag {
	case ckTag:
		var ck CheckPoint
		return codec.UnmarshalBody(body, &ck) == nil && ck.valid()
	case ackTag, batchAckTag:
		var a AckMsg
		if codec.UnmarshalBody(body, &a) != nil || a.Topic == "" || a.ConsumerGroup == "" {
			return false
		}
		// A batch ack lists the offsets it acks (Java writes none empty).
		return tag == ackTag || len(a.AckOffsetList) > 0
	}
	return false
}
