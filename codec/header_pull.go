package codec

import "strings"

// PULL_MESSAGE / LITE_PULL_MESSAGE headers (PullMessageRequestHeader,
// PullMessageResponseHeader).

// PullSysFlag bits (PullSysFlag.java).
const (
	PullFlagCommitOffset int32 = 1 << 0
	PullFlagSuspend      int32 = 1 << 1
	PullFlagSubscription int32 = 1 << 2
	PullFlagClassFilter  int32 = 1 << 3
	PullFlagLitePull     int32 = 1 << 4
)

// OptBool is a Java Boolean field that may be null (absent).
type OptBool uint8

const (
	BoolNull OptBool = iota
	BoolFalse
	BoolTrue
)

// Bool is the value with null read as false.
func (b OptBool) Bool() bool { return b == BoolTrue }

func optBool(v string) OptBool {
	if parseJavaBool(v) {
		return BoolTrue
	}
	return BoolFalse
}

func (w *ExtWriter) optBool(key string, b OptBool) {
	if b != BoolNull {
		w.Bool(key, b == BoolTrue)
	}
}

// PullMessageRequestHeader is the pull request header (spec §4.4), 5.x
// RpcRequestHeader fields included so a header round-trips.
type PullMessageRequestHeader struct {
	ConsumerGroup        string
	Topic                string
	QueueID              int32
	QueueOffset          int64
	MaxMsgNums           int32
	SysFlag              int32
	CommitOffset         int64
	SuspendTimeoutMillis int64
	Subscription         string // written when set
	SubVersion           int64
	ExpressionType       string // written when set
	MaxMsgBytes          int32
	HasMaxMsgBytes       bool
	RequestSource        int32
	HasRequestSource     bool
	ProxyForwardClientID string // wire key "proxyFrowardClientId" (sic)

	Logical    OptBool // "lo"
	Namespace  string  // "ns"
	Namespaced OptBool // "nsd"
	BrokerName string  // "bname"
	Oneway     OptBool // "oway"
}

// pullRequired are Java's @CFNotNull fields, in the order a missing one is
// reported.
var pullRequired = [...]string{"consumerGroup", "topic", "queueId", "queueOffset", "maxMsgNums", "sysFlag",
	"commitOffset", "suspendTimeoutMillis", "subVersion"}

// Decode reads the pull request; a missing @CFNotNull field is a
// *MissingFieldError, a number that does not parse a *FieldError. Strings alias
// the request frame until CloneStrings.
func (h *PullMessageRequestHeader) Decode(ext ExtFields) error {
	*h = PullMessageRequestHeader{}
	var seen uint16
	var err error
	for i := range ext {
		k, v := ext[i].Key, ext[i].Value
		switch k {
		case "consumerGroup":
			h.ConsumerGroup = v
			seen |= 1 << 0
		case "topic":
			h.Topic = v
			seen |= 1 << 1
		case "queueId":
			h.QueueID, err = parseInt32Field(k, v)
			seen |= 1 << 2
		case "queueOffset":
			h.QueueOffset, err = parseInt64Field(k, v)
			seen |= 1 << 3
		case "maxMsgNums":
			h.MaxMsgNums, err = parseInt32Field(k, v)
			seen |= 1 << 4
		case "sysFlag":
			h.SysFlag, err = parseInt32Field(k, v)
			seen |= 1 << 5
		case "commitOffset":
			h.CommitOffset, err = parseInt64Field(k, v)
			seen |= 1 << 6
		case "suspendTimeoutMillis":
			h.SuspendTimeoutMillis, err = parseInt64Field(k, v)
			seen |= 1 << 7
		case "subscription":
			h.Subscription = v
		case "subVersion":
			h.SubVersion, err = parseInt64Field(k, v)
			seen |= 1 << 8
		case "expressionType":
			h.ExpressionType = v
		case "maxMsgBytes":
			h.MaxMsgBytes, err = parseInt32Field(k, v)
			h.HasMaxMsgBytes = true
		case "requestSource":
			h.RequestSource, err = parseInt32Field(k, v)
			h.HasRequestSource = true
		case "proxyFrowardClientId":
			h.ProxyForwardClientID = v
		case "lo":
			h.Logical = optBool(v)
		case "ns":
			h.Namespace = v
		case "nsd":
			h.Namespaced = optBool(v)
		case "bname":
			h.BrokerName = v
		case "oway":
			h.Oneway = optBool(v)
		}
		if err != nil {
			return err
		}
	}
	if seen != 1<<len(pullRequired)-1 {
		for i, name := range pullRequired {
			if seen&(1<<i) == 0 {
				return &MissingFieldError{Field: name}
			}
		}
	}
	return nil
}

// stringFields are the header's string fields.
func (h *PullMessageRequestHeader) stringFields() [7]*string {
	return [7]*string{&h.ConsumerGroup, &h.Topic, &h.Subscription, &h.ExpressionType,
		&h.ProxyForwardClientID, &h.Namespace, &h.BrokerName}
}

// CloneStrings gives the header its own strings, for a pull held past its
// frame.
func (h *PullMessageRequestHeader) CloneStrings() {
	for _, s := range h.stringFields() {
		*s = strings.Clone(*s)
	}
}

// CopyOwned makes h a copy of src with strings of its own, keeping those h
// already owns where they are equal: a recycled header held for the same
// consumer's next pull copies no bytes.
func (h *PullMessageRequestHeader) CopyOwned(src *PullMessageRequestHeader) {
	old := h.stringFields()
	kept := [7]string{}
	for i, s := range old {
		kept[i] = *s
	}
	*h = *src
	for i, s := range h.stringFields() {
		if *s == kept[i] {
			*s = kept[i]
		} else {
			*s = strings.Clone(*s)
		}
	}
}

// WriteExt writes the fields in Java's FastCodesHeader order.
func (h *PullMessageRequestHeader) WriteExt(w *ExtWriter) {
	w.String("consumerGroup", h.ConsumerGroup)
	w.String("topic", h.Topic)
	w.Int32("queueId", h.QueueID)
	w.Int64("queueOffset", h.QueueOffset)
	w.Int32("maxMsgNums", h.MaxMsgNums)
	w.Int32("sysFlag", h.SysFlag)
	w.Int64("commitOffset", h.CommitOffset)
	w.Int64("suspendTimeoutMillis", h.SuspendTimeoutMillis)
	w.StringIfSet("subscription", h.Subscription)
	w.Int64("subVersion", h.SubVersion)
	w.StringIfSet("expressionType", h.ExpressionType)
	if h.HasMaxMsgBytes {
		w.Int32("maxMsgBytes", h.MaxMsgBytes)
	}
	if h.HasRequestSource {
		w.Int32("requestSource", h.RequestSource)
	}
	w.StringIfSet("proxyFrowardClientId", h.ProxyForwardClientID)
	w.optBool("lo", h.Logical)
	w.StringIfSet("ns", h.Namespace)
	w.optBool("nsd", h.Namespaced)
	w.StringIfSet("bname", h.BrokerName)
	w.optBool("oway", h.Oneway)
}

// PullMessageResponseHeader is the pull response header. WriteExt always writes
// suggestWhichBrokerId, nextBeginOffset, minOffset and maxOffset: the Java client
// unboxes all four (MQClientAPIImpl.processPullResponse) for codes 0, 19, 20, 21.
type PullMessageResponseHeader struct {
	SuggestWhichBrokerID int64
	NextBeginOffset      int64
	MinOffset            int64
	MaxOffset            int64
	OffsetDelta          int64
	HasOffsetDelta       bool
	TopicSysFlag         int32
	HasTopicSysFlag      bool
	GroupSysFlag         int32
	HasGroupSysFlag      bool
	ForbiddenType        int32
	HasForbiddenType     bool
}

// WriteExt writes the fields in Java's FastCodesHeader order.
func (h *PullMessageResponseHeader) WriteExt(w *ExtWriter) {
	w.Int64("suggestWhichBrokerId", h.SuggestWhichBrokerID)
	w.Int64("nextBeginOffset", h.NextBeginOffset)
	w.Int64("minOffset", h.MinOffset)
	w.Int64("maxOffset", h.MaxOffset)
	if h.HasOffsetDelta {
		w.Int64("offsetDelta", h.OffsetDelta)
	}
	if h.HasTopicSysFlag {
		w.Int32("topicSysFlag", h.TopicSysFlag)
	}
	if h.HasGroupSysFlag {
		w.Int32("groupSysFlag", h.GroupSysFlag)
	}
	if h.HasForbiddenType {
		w.Int32("forbiddenType", h.ForbiddenType)
	}
}

// Decode reads a pull response (client side and tests); the four offsets are
// required.
func (h *PullMessageResponseHeader) Decode(ext ExtFields) error {
	r := ExtReader{Ext: ext}
	*h = PullMessageResponseHeader{
		SuggestWhichBrokerID: r.ReqInt64("suggestWhichBrokerId"),
		NextBeginOffset:      r.ReqInt64("nextBeginOffset"),
		MinOffset:            r.ReqInt64("minOffset"),
		MaxOffset:            r.ReqInt64("maxOffset"),
	}
	h.OffsetDelta, h.HasOffsetDelta = r.OptInt64Set("offsetDelta")
	h.TopicSysFlag, h.HasTopicSysFlag = r.OptInt32Set("topicSysFlag")
	h.GroupSysFlag, h.HasGroupSysFlag = r.OptInt32Set("groupSysFlag")
	h.ForbiddenType, h.HasForbiddenType = r.OptInt32Set("forbiddenType")
	return r.Err()
}
