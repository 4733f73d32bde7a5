package integration

import (
	"fmt"
	"sort"
	"strings"

	"rmqd/integration/harness"
)

// expectDelivered checks that every sent message arrived (at least once) and nothing else did, and that
// what arrived is what was sent: body digest and size, topic, tags, keys, the given user properties byte
// for byte, UNIQ_KEY, and the queue/offset the send result named (when the sender knew it).
// Messages are matched by msgId (UNIQ_KEY); a sent message without one (the Go client's batch members)
// is matched by its offsetMsgId, which is then also the consumer's msgId. Such a message stored twice by a
// client retry (the first answer lost to a timeout on a loaded machine) has two offsetMsgIds; a copy whose
// offsetMsgId the send result does not name is matched by its keys instead, and its position is not checked.
func expectDelivered(tb harness.TB, sent, received []harness.Msg, userProps []string) {
	tb.Helper()
	byID := map[string][]harness.Msg{}
	for _, r := range received {
		byID[r.MsgID] = append(byID[r.MsgID], r)
	}
	retried := map[string]harness.Msg{} // offsetMsgId of a batch member's retried copy -> what was sent
	for _, s := range sent {
		if s.MsgID != "" || len(s.Keys) == 0 {
			continue
		}
		for _, r := range received {
			if r.MsgID != s.OffsetMsgID && r.Keys == s.Keys && r.Topic == s.Topic && r.Properties["UNIQ_KEY"] == "" {
				retried[r.MsgID] = s
			}
		}
	}
	var problems []string
	seen := map[string]bool{}
	for _, s := range sent {
		id := s.MsgID
		if id == "" {
			id = s.OffsetMsgID
		}
		if id == "" {
			problems = append(problems, fmt.Sprintf("sent #%d has no msgId nor offsetMsgId (status %q, error %q)", s.Index, s.Status, s.Error))
			continue
		}
		seen[id] = true
		got, ok := byID[id]
		for rid, rs := range retried {
			if rs.Index == s.Index && rs.OffsetMsgID == s.OffsetMsgID {
				seen[rid] = true
				copySent := s
				copySent.Status = "" // another copy: the send result's queue and offset are not its own
				for _, r := range byID[rid] {
					problems = append(problems, diffMsg(copySent, r, userProps)...)
				}
				ok = ok || len(byID[rid]) > 0
			}
		}
		if !ok {
			problems = append(problems, fmt.Sprintf("sent #%d %s (queue %d offset %d) never received", s.Index, id, s.QueueID, s.QueueOffset))
			continue
		}
		for _, r := range got {
			problems = append(problems, diffMsg(s, r, userProps)...)
		}
	}
	var extra []string
	for id := range byID {
		if !seen[id] {
			extra = append(extra, id)
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		problems = append(problems, fmt.Sprintf("%d unexpected messages received: %v", len(extra), extra))
	}
	if len(problems) > 0 {
		if len(problems) > 20 {
			problems = append(problems[:20], fmt.Sprintf("... and %d more", len(problems)-20))
		}
		tb.Fatalf("sent %d, received %d deliveries; mismatches:\n  %s", len(sent), len(received), strings.Join(problems, "\n  "))
	}
	tb.Logf("compare: %d sent, %d deliveries (%d distinct), all fields equal", len(sent), len(received), len(byID))
}

func diffMsg(s, r harness.Msg, userProps []string) []string {
	var p []string
	add := func(field string, want, got any) {
		if want != got {
			p = append(p, fmt.Sprintf("%s #%d: %s sent %q, received %q", s.MsgID, s.Index, field, fmt.Sprint(want), fmt.Sprint(got)))
		}
	}
	add("topic", s.Topic, r.Topic)
	add("bodySize", s.BodySize, r.BodySize)
	add("bodySha256", s.BodySha256, r.BodySha256)
	add("tags", s.Tags, r.Tags)
	add("keys", s.Keys, r.Keys)
	for _, k := range append([]string{"UNIQ_KEY", "KEYS", "TAGS"}, userProps...) {
		sv, sok := s.Properties[k]
		rv, rok := r.Properties[k]
		if sok != rok || sv != rv {
			p = append(p, fmt.Sprintf("%s #%d: property %q sent %q (present %v), received %q (present %v)", s.MsgID, s.Index, k, sv, sok, rv, rok))
		}
	}
	// A redelivery through %RETRY%<group> comes from another queue and offset; so does a committed
	// transactional message (the send result names its half message).
	if s.Status != "" && s.Status != "ONEWAY" && r.ReconsumeTimes == 0 && s.Properties["TRAN_MSG"] != "true" {
		add("brokerName", s.BrokerName, r.BrokerName)
		add("queueId", s.QueueID, r.QueueID)
		add("queueOffset", s.QueueOffset, r.QueueOffset)
		if s.OffsetMsgID != "" {
			add("offsetMsgId", s.OffsetMsgID, r.OffsetMsgID)
		}
	}
	return p
}

// onlyOK fails the test unless every send reported SEND_OK.
func onlyOK(tb harness.TB, sent []harness.Msg) {
	tb.Helper()
	for _, s := range sent {
		if s.Status != "SEND_OK" {
			tb.Fatalf("send #%d: status %q error %q", s.Index, s.Status, s.Error)
		}
	}
}
