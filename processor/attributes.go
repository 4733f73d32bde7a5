package processor

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// attrSpec is one of Java's TopicAttributes: an enum (values), a long range,
// a boolean or any string.
type attrSpec struct {
	changeable bool     // may be added, changed or removed after the topic is made
	boolean    bool     // BooleanAttribute: true or false in any case
	str        bool     // StringAttribute: any value
	values     []string // the enum's universe; nil for a long
	min, max   int64    // the long's range
}

// topicAttrs is TopicAttributes.ALL (5.5.0). Enum values are listed as
// Java's HashSet prints them in the refusal. lite.topic.expiration is the
// minutes an idle lite topic lives (lite_ttl.go).
var topicAttrs = map[string]attrSpec{
	"queue.type":     {values: []string{"BatchCQ", "SimpleCQ"}},
	"cleanup.policy": {values: []string{"DELETE", "COMPACTION"}},
	attrMessageType: {changeable: true,
		values: []string{"UNSPECIFIED", "MIXED", "TRANSACTION", "PRIORITY", "FIFO", "DELAY", "LITE", "NORMAL"}},
	attrLiteExpiration: {changeable: true, min: -1, max: 30 * 24 * 60},
	// Only tiered storage reads it; Java's default store keeps it and ignores it,
	// as rmqd does.
	"reserve.time": {changeable: true, min: -1, max: math.MaxInt64},
}

// attrMod is one entry of an attributes modification: key is signed ("+k" or
// "-k").
type attrMod struct{ key, value string }

// parseAttrMods parses UPDATE_AND_CREATE_TOPIC's attributes header,
// "+k1=v1,+k2=v2,-k3", as Java's AttributeParser.parseToMap does; spaces
// around an entry and empty entries are tolerated, and a value holding '='
// is refused (Java keeps what precedes it and drops the rest).
func parseAttrMods(s string) ([]attrMod, string) {
	var mods []attrMod
	seen := map[string]bool{}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		var m attrMod
		if k, v, ok := strings.Cut(kv, "="); ok {
			if !strings.HasPrefix(k, "+") || v == "" || strings.Contains(v, "=") {
				return nil, fmt.Sprintf("add/alter attribute format is wrong: %s", kv)
			}
			m = attrMod{key: k, value: v}
		} else {
			if !strings.HasPrefix(kv, "-") {
				return nil, fmt.Sprintf("delete attribute format is wrong: %s", kv)
			}
			m = attrMod{key: kv}
		}
		if seen[m.key] {
			return nil, fmt.Sprintf("key duplication: %s", m.key)
		}
		seen[m.key] = true
		mods = append(mods, m)
	}
	return mods, ""
}

// attrModsOf is the list form's modification (TopicConfig.attributes keyed
// "+k"/"-k"), in key order so that the first error is always the same.
func attrModsOf(m map[string]string) []attrMod {
	mods := make([]attrMod, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		mods = append(mods, attrMod{key: k, value: m[k]})
	}
	return mods
}

// groupAttrs is SubscriptionGroupAttributes.ALL (5.5.0): priority.factor, the
// percentage of a group's POPs of a priority topic read in priority order
// (default 100), and the lite ones. rmqd acts on lite.bind.topic (the lite
// parent topic the group consumes), lite.sub.model, the two resets and
// lite.sub.wildcard; the
// proxy reads lite.sub.client.quota; the rest are kept as given (docs/lite.md).
var groupAttrs = map[string]attrSpec{
	attrPriorityFactor:              {changeable: true, min: 0, max: 100},
	attrLiteBindTopic:               {changeable: true, str: true},
	attrLiteSubModel:                {changeable: true, values: []string{liteSubExclusive, "Shared"}},
	attrLiteResetExclusive:          {changeable: true, boolean: true},
	attrLiteResetUnsubscribe:        {changeable: true, boolean: true},
	"lite.sub.client.quota":         {changeable: true, min: -1, max: math.MaxInt64},
	"lite.sub.client.max.event.cnt": {changeable: true, min: 10, max: math.MaxInt64},
	attrLiteWildcard:                {changeable: true, str: true},
}

const (
	attrPriorityFactor    = "priority.factor"
	defaultPriorityFactor = 100
	messageTypePriority   = "PRIORITY"
	messageTypeLite       = "LITE"
	attrMessageType       = "message.type"
	attrLiteBindTopic     = "lite.bind.topic"
	// The lite attributes rmqd acts on besides lite.bind.topic (docs/lite.md).
	attrLiteExpiration       = "lite.topic.expiration"
	attrLiteSubModel         = "lite.sub.model"
	liteSubExclusive         = "Exclusive"
	attrLiteResetExclusive   = "lite.sub.reset.offset.exclusive"
	attrLiteResetUnsubscribe = "lite.sub.reset.offset.unsubscribe"
	attrLiteWildcard         = "lite.sub.wildcard"
)

// isLiteTopic reports a message.type=LITE topic (Java 5.5): the parent of lite topics.
func isLiteTopic(tc TopicConfig) bool {
	return len(tc.Attributes) != 0 && tc.Attributes[attrMessageType] == messageTypeLite
}

// isPriorityTopic reports a message.type=PRIORITY topic (Java 5.5).
func isPriorityTopic(tc TopicConfig) bool {
	return len(tc.Attributes) != 0 && tc.Attributes[attrMessageType] == messageTypePriority
}

// priorityFactor is SubscriptionGroupConfig.getPriorityFactor: the attribute,
// or its default when absent or not a number.
func priorityFactor(g SubscriptionGroupConfig) int {
	if v, ok := g.Attributes[attrPriorityFactor]; ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return int(max(0, min(n, 100)))
		}
	}
	return defaultPriorityFactor
}

// alterTopicAttrs is alterAttrs for a topic, after AdminBrokerProcessor's
// MIXED check.
func alterTopicAttrs(create bool, current map[string]string, mods []attrMod, mixedAllowed bool) (map[string]string, string) {
	for _, m := range mods {
		if m.key == "+message.type" && m.value == "MIXED" && !mixedAllowed {
			return nil, "MIXED message type is not supported."
		}
	}
	return alterAttrs(topicAttrs, create, current, mods)
}

// alterAttrs applies mods to current (nil or empty on create) and returns
// the new attributes, or the remark refusing them, in Java's words
// (AttributeUtil.alterCurrentAttributes against all). current is not changed.
func alterAttrs(all map[string]attrSpec, create bool, current map[string]string, mods []attrMod) (map[string]string, string) {
	next := maps.Clone(current)
	if next == nil {
		next = map[string]string{}
	}
	seen := map[string]bool{}
	for _, m := range mods {
		if len(m.key) < 2 {
			return nil, "kv string format wrong."
		}
		sign, key := m.key[0], m.key[1:]
		if strings.ContainsAny(key, "+-") {
			return nil, "kv string format wrong."
		}
		if seen[key] {
			return nil, fmt.Sprintf("alter duplication key. key: %s", key)
		}
		seen[key] = true
		_, present := current[key]
		switch {
		case create && sign != '+':
			return nil, fmt.Sprintf("only add attribute is supported while creating topic. key: %s", key)
		case sign == '-' && !present:
			return nil, fmt.Sprintf("attempt to delete a nonexistent key: %s", key)
		case sign != '+' && sign != '-':
			return nil, fmt.Sprintf("wrong format key: %s", key)
		}
		attr, ok := all[key]
		if !ok {
			return nil, fmt.Sprintf("unsupported key: %s", key)
		}
		if !create && !attr.changeable {
			return nil, fmt.Sprintf("attempt to update an unchangeable attribute. key: %s", key)
		}
		if sign == '-' {
			delete(next, key)
			continue
		}
		if remark := attr.verify(key, m.value); remark != "" {
			return nil, remark
		}
		// The header's strings alias the request frame, which the event loop
		// reuses once the request is handled: the stored map owns copies.
		next[strings.Clone(key)] = strings.Clone(m.value)
	}
	return next, ""
}

// verify is EnumAttribute.verify / LongRangeAttribute.verify, plus the values
// rmqd cannot honour.
func (a attrSpec) verify(key, v string) string {
	switch {
	case a.str:
		return ""
	case a.boolean:
		if !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
			return "boolean attribute format is wrong."
		}
		return ""
	}
	if a.values == nil {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Sprintf("For input string: %q", v)
		}
		if n < a.min || n > a.max {
			return fmt.Sprintf("value is not in range(%d, %d)", a.min, a.max)
		}
		return ""
	}
	if !slices.Contains(a.values, v) {
		return fmt.Sprintf("value is not in set: [%s]", strings.Join(a.values, ", "))
	}
	return ""
}
