package pop

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ExtraInfo is a receipt handle (the POP_CK property, the extraInfo header of
// ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME): ExtraInfoUtil's space
// separated ckQueueOffset popTime invisibleTime reviveQid retry brokerName
// queueId [queueOffset].
type ExtraInfo struct {
	CkQueueOffset int64
	PopTime       int64
	InvisibleTime int64
	ReviveQid     int32
	Retry         string
	BrokerName    string
	QueueID       int32
	QueueOffset   int64
	// Fields is how many fields were present (ExtraInfoUtil fails a getter
	// past the end; callers check what they need).
	Fields int
}

var errExtraInfo = errors.New("extraInfo is malformed")

// ParseExtraInfo parses a receipt handle. Only the first four fields are
// required, as Java's ack reads those before the broker name.
func ParseExtraInfo(s string) (ExtraInfo, error) {
	var e ExtraInfo
	// Fields as strings.Split(s, " ") gives them, without the slice: an ack
	// parses one per request.
	var parts [8]string
	e.Fields = strings.Count(s, " ") + 1
	if e.Fields < 4 {
		return e, fmt.Errorf("%w: %d fields", errExtraInfo, e.Fields)
	}
	rest := s
	for i := range parts {
		var ok bool
		parts[i], rest, ok = strings.Cut(rest, " ")
		if !ok {
			break
		}
	}
	var err error
	if e.CkQueueOffset, err = strconv.ParseInt(parts[0], 10, 64); err != nil {
		return e, fmt.Errorf("%w: ck offset: %w", errExtraInfo, err)
	}
	if e.PopTime, err = strconv.ParseInt(parts[1], 10, 64); err != nil {
		return e, fmt.Errorf("%w: pop time: %w", errExtraInfo, err)
	}
	if e.InvisibleTime, err = strconv.ParseInt(parts[2], 10, 64); err != nil {
		return e, fmt.Errorf("%w: invisible time: %w", errExtraInfo, err)
	}
	q, err := strconv.ParseInt(parts[3], 10, 32)
	if err != nil {
		return e, fmt.Errorf("%w: revive qid: %w", errExtraInfo, err)
	}
	e.ReviveQid = int32(q)
	if e.Fields > 4 {
		e.Retry = parts[4]
	}
	if e.Fields > 5 {
		e.BrokerName = parts[5]
	}
	if e.Fields > 6 {
		q, err := strconv.ParseInt(parts[6], 10, 32)
		if err != nil {
			return e, fmt.Errorf("%w: queue id: %w", errExtraInfo, err)
		}
		e.QueueID = int32(q)
	}
	if e.Fields > 7 {
		if e.QueueOffset, err = strconv.ParseInt(parts[7], 10, 64); err != nil {
			return e, fmt.Errorf("%w: queue offset: %w", errExtraInfo, err)
		}
	}
	return e, nil
}

// BuildExtraInfo is ExtraInfoUtil.buildExtraInfo with the message's queue offset: the receipt
// handle a client acks with.
func BuildExtraInfo(ckQueueOffset, popTime, invisibleTime int64, reviveQid int32, topic, brokerName string, queueID int32, msgQueueOffset int64) string {
	b := make([]byte, 0, 96)
	b = strconv.AppendInt(b, ckQueueOffset, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, popTime, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, invisibleTime, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(reviveQid), 10)
	b = append(b, ' ')
	b = append(b, retryMark(topic)...)
	b = append(b, ' ')
	b = append(b, brokerName...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(queueID), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, msgQueueOffset, 10)
	return string(b)
}

// offsetInfo builds the startOffsetInfo, msgOffsetInfo and orderCountInfo
// headers: ';' separated "retry queueId value" entries.
type offsetInfo struct{ b []byte }

func (o *offsetInfo) sep() {
	if len(o.b) > 0 {
		o.b = append(o.b, ';')
	}
}

// start is ExtraInfoUtil.buildStartOffsetInfo.
func (o *offsetInfo) start(topic string, queueID int32, startOffset int64) {
	o.sep()
	o.b = append(o.b, retryMark(topic)...)
	o.b = append(o.b, ' ')
	o.b = strconv.AppendInt(o.b, int64(queueID), 10)
	o.b = append(o.b, ' ')
	o.b = strconv.AppendInt(o.b, startOffset, 10)
}

// msgs is ExtraInfoUtil.buildMsgOffsetInfo.
func (o *offsetInfo) msgs(topic string, queueID int32, offs []int64) {
	if len(offs) > 0 {
		// Room for every offset at once: the last one has the most digits.
		var num [20]byte
		o.b = slices.Grow(o.b, 16+(1+len(strconv.AppendInt(num[:0], offs[len(offs)-1], 10)))*len(offs))
	}
	o.sep()
	o.b = append(o.b, retryMark(topic)...)
	o.b = append(o.b, ' ')
	o.b = strconv.AppendInt(o.b, int64(queueID), 10)
	o.b = append(o.b, ' ')
	for i, v := range offs {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		o.b = strconv.AppendInt(o.b, v, 10)
	}
}

// queueOrderCount is ExtraInfoUtil.buildQueueIdOrderCountInfo.
func (o *offsetInfo) queueOrderCount(topic string, queueID int32, count int) {
	o.sep()
	o.b = append(o.b, retryMark(topic)...)
	o.b = append(o.b, ' ')
	o.b = strconv.AppendInt(o.b, int64(queueID), 10)
	o.b = append(o.b, ' ')
	o.b = strconv.AppendInt(o.b, int64(count), 10)
}

// offsetOrderCount is ExtraInfoUtil.buildQueueOffsetOrderCountInfo.
func (o *offsetInfo) offsetOrderCount(topic string, queueID int32, queueOffset int64, count int) {
	o.sep()
	o.b = append(o.b, retryMark(topic)...)
	o.b = append(o.b, " qo"...)
	o.b = strconv.AppendInt(o.b, int64(queueID), 10)
	o.b = append(o.b, '%')
	o.b = strconv.AppendInt(o.b, queueOffset, 10)
	o.b = append(o.b, ' ')
	o.b = strconv.AppendInt(o.b, int64(count), 10)
}

func (o *offsetInfo) String() string { return string(o.b) }
