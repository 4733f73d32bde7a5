package processor

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"rmqd/codec"
	"rmqd/processor/delivery"
)

// FuzzTopicAttrs: UPDATE_AND_CREATE_TOPIC's attributes header is a peer's
// string. Parsing and applying it never panics, and an accepted result
// written back as "+k=v,..." (what the header set) is accepted again, on create, to the same map.
func FuzzTopicAttrs(f *testing.F) {
	f.Add("+message.type=FIFO", "", true, false)
	f.Add("+queue.type=BatchCQ,+cleanup.policy=DELETE", "", true, false)
	f.Add(" +message.type=NORMAL , ,-reserve.time", "reserve.time=5", false, false)
	f.Add("+reserve.time=-1,+message.type=MIXED", "", true, true)
	f.Add("+message.type=NORMAL,+message.type=FIFO", "", true, false)
	f.Add("-message.type", "message.type=FIFO", false, false)
	f.Add("+a=b=c,-", "", false, false)
	f.Add("+-x=1,++message.type=FIFO", "", true, false)
	f.Add("+reserve.time=9223372036854775808", "", true, false)
	f.Fuzz(func(t *testing.T, header, current string, create, mixed bool) {
		cur := map[string]string{}
		for _, kv := range strings.Split(current, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				cur[k] = v
			}
		}
		before := maps.Clone(cur)
		mods, remark := parseAttrMods(header)
		if remark != "" {
			return
		}
		next, remark := alterTopicAttrs(create, cur, mods, mixed)
		if !maps.Equal(cur, before) {
			t.Fatalf("current changed: %v, was %v", cur, before)
		}
		if remark != "" {
			return
		}
		// Only what came in or was already there is in the result.
		for k, v := range next {
			if _, known := topicAttrs[k]; !known && before[k] != v {
				t.Fatalf("unknown %q=%q in %v", k, v, next)
			}
		}
		// What the header set, written back (what was there before may come
		// from a config file and is not the parser's to vouch for).
		set := map[string]bool{}
		for _, m := range mods {
			if m.key[0] == '+' {
				set[m.key[1:]] = true
			}
		}
		var b strings.Builder
		for _, k := range slices.Sorted(maps.Keys(set)) {
			b.WriteString("+" + k + "=" + next[k] + ",")
		}
		again, remark := parseAttrMods(b.String())
		if remark != "" {
			t.Fatalf("re-encoded %q refused: %s", b.String(), remark)
		}
		made, remark := alterTopicAttrs(true, nil, again, true)
		if remark != "" {
			t.Fatalf("re-encoded %q refused on create: %s", b.String(), remark)
		}
		if len(made) != len(set) {
			t.Fatalf("re-encoded %q gives %v, want the %d set in %v", b.String(), made, len(set), next)
		}
		for k, v := range made {
			if next[k] != v {
				t.Fatalf("re-encoded %q gives %v, want %v", b.String(), made, next)
			}
		}
	})
}

// FuzzDelayProp: the DELAY property is a producer's. delivery.DelayLevel > 0 (the send
// path's check) and the delay-level parking agree on every value.
func FuzzDelayProp(f *testing.F) {
	for _, v := range []string{"1", "18", "19", "0", "-1", "+3", " 3", "99999999999999999999", "3\x00", "٣"} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if strings.ContainsAny(v, "\x01\x02") {
			t.Skip() // not a property value the codec can carry
		}
		props := codec.FormatProperties(map[string]string{codec.PropDelay: v})
		pv := codec.ViewProperties(props)
		msg := codec.Message{Topic: "T", Properties: props}
		delivery.ParkDelay(&msg, nil, 18)
		if parked := msg.Topic == delivery.TopicSchedule; parked != (delivery.DelayLevel(&pv) > 0) {
			t.Fatalf("DELAY=%q: delay level %d, parked %v", v, delivery.DelayLevel(&pv), parked)
		}
	})
}
