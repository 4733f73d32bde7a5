package compat

import (
	"strings"
	"testing"
)

// The cases are those of Java's TopicValidatorTest plus the path attacks the
// gate exists for; every refused name must also be refused as a group.
func TestValidateTopicJavaTable(t *testing.T) {
	cases := []struct {
		name   string
		ok     bool
		remark string
	}{
		{"TopicTest", true, ""},
		{"%RETRY%group_1", true, ""},
		{"%DLQ%CID-x|y", true, ""},
		{"rmq_sys_REVIVE_LOG_DefaultCluster", true, ""},
		{"a", true, ""},
		{strings.Repeat("t", 127), true, ""},
		{"", false, "The specified topic is blank."},
		{"   ", false, "The specified topic is blank."},
		{"\t", false, "The specified topic is blank."},
		{strings.Repeat("t", 128), false, "The specified topic is longer than topic max length."},
		{"%RETRY%" + strings.Repeat("g", 121), false, "The specified topic is longer than topic max length."},
		{"my.topic", false, illegalTopic},
		{"..", false, illegalTopic},
		{".", false, illegalTopic},
		{"../x", false, illegalTopic},
		{"../../victim.txt", false, illegalTopic},
		{"../checkpoint", false, illegalTopic},
		{"/tmp/x", false, illegalTopic},
		{"x/../../y", false, illegalTopic},
		{`x\y`, false, illegalTopic},
		{"x\x00y", false, illegalTopic},
		{"top ic", false, illegalTopic},
		{"topic:1", false, illegalTopic},
		{"tópico", false, illegalTopic},
		{strings.Repeat("/", 300), false, illegalTopic},
	}
	for _, c := range cases {
		remark, ok := ValidateTopic(c.name)
		if ok != c.ok || remark != c.remark {
			t.Errorf("ValidateTopic(%q) = %q, %v; want %q, %v", c.name, remark, ok, c.remark, c.ok)
		}
		if !c.ok && c.name != strings.Repeat("t", 128) && !strings.HasPrefix(c.name, "%RETRY%") {
			if _, gok := ValidateGroup(c.name); gok {
				t.Errorf("ValidateGroup(%q) accepted a name refused as a topic", c.name)
			}
		}
	}
}

const illegalTopic = "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"

func TestValidateGroup(t *testing.T) {
	for _, g := range []string{"CID_x", "please_rename_unique_group_name", "TOOLS_CONSUMER", "ns%grp", "a|b-c",
		strings.Repeat("g", 255)} {
		if remark, ok := ValidateGroup(g); !ok {
			t.Errorf("ValidateGroup(%q) refused: %s", g, remark)
		}
	}
	for g, want := range map[string]string{
		"":                        "The specified group is blank.",
		strings.Repeat("g", 256):  "The specified group is longer than group max length 255.",
		"x/../../../grp_escape":   "The specified group contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$",
		"..":                      "The specified group contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$",
		"grp\x00":                 "The specified group contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$",
		"group.with.dots":         "The specified group contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$",
		"/abs":                    "The specified group contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$",
		strings.Repeat("/", 1000): "The specified group contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$",
	} {
		if remark, ok := ValidateGroup(g); ok || remark != want {
			t.Errorf("ValidateGroup(%.40q) = %q, %v; want %q", g, remark, ok, want)
		}
	}
}

func TestSystemTopics(t *testing.T) {
	for _, s := range []string{"TBW102", "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "rmq_sys_wheel_timer",
		"CHECKPOINT_TOPIC", "RMQ_SYS_TRACE_TOPIC"} {
		if !IsSystemTopic(s) {
			t.Errorf("IsSystemTopic(%q) = false", s)
		}
	}
	if IsSystemTopic("TopicTest") || IsSystemTopic("rmq_sy") {
		t.Error("ordinary topic taken for a system topic")
	}
	for _, s := range []string{"SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC",
		"TRANS_CHECK_MAX_TIME_TOPIC", "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT", "RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC",
		"RMQ_SYS_ROCKSDB_TRANS_OP_HALF_TOPIC"} {
		if !IsNotAllowedSendTopic(s) {
			t.Errorf("IsNotAllowedSendTopic(%q) = false", s)
		}
	}
	if IsNotAllowedSendTopic("TBW102") || IsNotAllowedSendTopic("TopicTest") {
		t.Error("sendable topic refused")
	}
}

func BenchmarkValidateTopic(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, ok := ValidateTopic("BenchmarkTopic_0123456789"); !ok {
			b.Fatal("refused")
		}
	}
}
