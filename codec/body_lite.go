package codec

import "fmt"

// LiteSubscriptionCtlBody is LiteSubscriptionCtlRequestBody (Java 5.5): what a
// proxy adds to or removes from its clients' lite subscriptions.
type LiteSubscriptionCtlBody struct {
	SubscriptionSet []LiteSubscriptionDTO
}

// LiteSubscriptionDTO is one change: Action is PARTIAL_ADD, PARTIAL_REMOVE,
// COMPLETE_ADD or COMPLETE_REMOVE; LiteTopicSet holds lite topic names (the
// queue is %LMQ%$Topic$name); OffsetOption, when set, moves the group's
// offset in the lite topics added.
type LiteSubscriptionDTO struct {
	Action       string
	ClientID     string
	Group        string
	Topic        string
	LiteTopicSet []string
	OffsetOption *LiteOffsetOption
	Version      int64
}

// LiteOffsetOption is OffsetOption: Type POLICY (Value 0 last, 1 min, 2 max),
// OFFSET, TAIL_N or TIMESTAMP.
type LiteOffsetOption struct {
	Type  string
	Value int64
}

// The policies of an OffsetOption of type POLICY.
const (
	LitePolicyLast = 0
	LitePolicyMin  = 1
	LitePolicyMax  = 2
)

// MaxLiteCtlEntries bounds the changes of one LITE_SUBSCRIPTION_CTL and
// MaxLiteCtlTopics the lite topics they name together: a proxy sends one
// client's subscription (Java's default quota is 2,000 lite topics a client).
const (
	MaxLiteCtlEntries = 1024
	MaxLiteCtlTopics  = 1 << 16
)

var (
	liteActionNames     = []string{"PARTIAL_ADD", "PARTIAL_REMOVE", "COMPLETE_ADD", "COMPLETE_REMOVE"}
	liteOffsetTypeNames = []string{"POLICY", "OFFSET", "TAIL_N", "TIMESTAMP"}
)

type liteActionJSON string

func (e *liteActionJSON) UnmarshalJSON(b []byte) error {
	s, err := javaEnum(b, "action", liteActionNames)
	*e = liteActionJSON(s)
	return err
}

type liteOffsetTypeJSON string

func (e *liteOffsetTypeJSON) UnmarshalJSON(b []byte) error {
	s, err := javaEnum(b, "type", liteOffsetTypeNames)
	*e = liteOffsetTypeJSON(s)
	return err
}

type liteOffsetOptionJSON struct {
	Type  liteOffsetTypeJSON `json:"type"`
	Value jsonInt64          `json:"value"`
}

type liteSubscriptionJSON struct {
	Action       liteActionJSON        `json:"action"`
	ClientID     jsonString            `json:"clientId"`
	Group        jsonString            `json:"group"`
	Topic        jsonString            `json:"topic"`
	LiteTopicSet []jsonString          `json:"liteTopicSet"`
	OffsetOption *liteOffsetOptionJSON `json:"offsetOption"`
	Version      jsonInt64             `json:"version"`
}

// DecodeLiteSubscriptionCtlBody parses a LITE_SUBSCRIPTION_CTL body, within
// MaxLiteCtlEntries changes and MaxLiteCtlTopics lite topics; an entry
// without an action is refused (Java's switch would throw on it).
func DecodeLiteSubscriptionCtlBody(b []byte) (LiteSubscriptionCtlBody, error) {
	var j struct {
		SubscriptionSet []RawJSON `json:"subscriptionSet"`
	}
	if err := decodeBodyJSON(b, &j, "LiteSubscriptionCtlRequestBody"); err != nil {
		return LiteSubscriptionCtlBody{}, err
	}
	if len(j.SubscriptionSet) > MaxLiteCtlEntries {
		return LiteSubscriptionCtlBody{}, fmt.Errorf("LiteSubscriptionCtlRequestBody: more than %d entries", MaxLiteCtlEntries)
	}
	out := LiteSubscriptionCtlBody{SubscriptionSet: make([]LiteSubscriptionDTO, 0, len(j.SubscriptionSet))}
	topics := 0
	for _, raw := range j.SubscriptionSet {
		var e *liteSubscriptionJSON
		if err := UnmarshalBody(raw, &e); err != nil {
			return LiteSubscriptionCtlBody{}, fmt.Errorf("LiteSubscriptionCtlRequestBody: %w", err)
		}
		if e == nil {
			continue
		}
		if e.Action == "" {
			return LiteSubscriptionCtlBody{}, fmt.Errorf("LiteSubscriptionCtlRequestBody: an entry has no action")
		}
		if topics += len(e.LiteTopicSet); topics > MaxLiteCtlTopics {
			return LiteSubscriptionCtlBody{}, fmt.Errorf("LiteSubscriptionCtlRequestBody: more than %d lite topics", MaxLiteCtlTopics)
		}
		d := LiteSubscriptionDTO{Action: string(e.Action), ClientID: string(e.ClientID), Group: string(e.Group),
			Topic: string(e.Topic), Version: int64(e.Version)}
		if len(e.LiteTopicSet) > 0 {
			d.LiteTopicSet = make([]string, len(e.LiteTopicSet))
			for i, t := range e.LiteTopicSet {
				d.LiteTopicSet[i] = string(t)
			}
		}
		if e.OffsetOption != nil && e.OffsetOption.Type != "" {
			d.OffsetOption = &LiteOffsetOption{Type: string(e.OffsetOption.Type), Value: int64(e.OffsetOption.Value)}
		}
		out.SubscriptionSet = append(out.SubscriptionSet, d)
	}
	return out, nil
}
