package compat

import "strings"

// Topic and group names as the Java broker 5.3.x accepts them (TopicValidator,
// client Validators.checkGroup). These are the only names rmqd lets in from the
// wire: the charset has no '.', '/', '\\' or NUL, so a valid name is also a
// single safe path element.

const (
	// TopicMaxLength is TopicValidator.TOPIC_MAX_LENGTH (5.3.x; the record's
	// one-byte topic length before message version 2).
	TopicMaxLength = 127
	// GroupMaxLength is Validators.CHARACTER_MAX_LENGTH, the limit Java's
	// SubscriptionGroupManager applies before auto-creating a group.
	GroupMaxLength = 255
	// MaxQueueNums bounds a topic's read and write queue counts wherever they
	// come in from the wire. Java takes any int, and a route of 2^31 queues
	// is one every client and every per-queue loop expands.
	MaxQueueNums = 65535
)

// ClampQueueNums brings a queue count from the wire (or from a file a Java
// broker wrote) into 0..MaxQueueNums.
func ClampQueueNums(n int32) int32 { return min(max(n, 0), MaxQueueNums) }

// validNameChar is TopicValidator.VALID_CHAR_BIT_MAP: ^[%|a-zA-Z0-9_-]+$.
var validNameChar = func() (m [256]bool) {
	for c := '0'; c <= '9'; c++ {
		m[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		m[c] = true
		m[c-'a'+'A'] = true
	}
	m['%'], m['|'], m['_'], m['-'] = true, true, true, true
	return m
}()

// NameHasIllegalChar is TopicValidator.isTopicOrGroupIllegal: a byte outside
// ^[%|a-zA-Z0-9_-]$. Bytes of a multi-byte UTF-8 rune are all >= 0x80, so they
// are refused as Java refuses chars >= 128.
func NameHasIllegalChar(s string) bool {
	for i := 0; i < len(s); i++ {
		if !validNameChar[s[i]] {
			return true
		}
	}
	return false
}

// isBlank is UtilAll.isBlank: empty or only whitespace.
func isBlank(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r', '\f', '\v':
		default:
			return false
		}
	}
	return true
}

// ValidateTopic is TopicValidator.validateTopic (5.3.3), with its remarks. ok
// is false for a blank, over-long or ill-charactered name.
func ValidateTopic(topic string) (remark string, ok bool) {
	if isBlank(topic) {
		return "The specified topic is blank.", false
	}
	if NameHasIllegalChar(topic) {
		return "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$", false
	}
	if len(topic) > TopicMaxLength {
		return "The specified topic is longer than topic max length.", false
	}
	return "", true
}

// ValidateGroup checks a consumer or producer group as Java's client does
// (Validators.checkGroup) and its broker does before creating a group; the
// remarks follow TopicValidator.validateGroup of later Java versions.
func ValidateGroup(group string) (remark string, ok bool) {
	if isBlank(group) {
		return "The specified group is blank.", false
	}
	if NameHasIllegalChar(group) {
		return "The specified group contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$", false
	}
	if len(group) > GroupMaxLength {
		return "The specified group is longer than group max length 255.", false
	}
	return "", true
}

// System topics every Java broker knows (TopicValidator's SYSTEM_TOPIC_SET
// before the broker adds its cluster, broker and trace topics).
const (
	SysTopicAutoCreate    = "TBW102"
	SysTopicSchedule      = "SCHEDULE_TOPIC_XXXX"
	SysTopicBenchmark     = "BenchmarkTest"
	SysTopicTransHalf     = "RMQ_SYS_TRANS_HALF_TOPIC"
	SysTopicTrace         = "RMQ_SYS_TRACE_TOPIC"
	SysTopicTransOpHalf   = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
	SysTopicTransCheckMax = "TRANS_CHECK_MAX_TIME_TOPIC"
	SysTopicSelfTest      = "SELF_TEST_TOPIC"
	SysTopicOffsetMoved   = "OFFSET_MOVED_EVENT"
	SysTopicRocksDBOffset = "CHECKPOINT_TOPIC"
	// Java 5.4's half and op topics of transactions kept in RocksDB: rmqd
	// keeps none there, but a producer may no more write them than in Java.
	SysTopicRocksDBTransHalf   = "RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC"
	SysTopicRocksDBTransOpHalf = "RMQ_SYS_ROCKSDB_TRANS_OP_HALF_TOPIC"
	SystemTopicPrefix          = "rmq_sys_"
	// SysTopicRevivePrefix + cluster is PopAckConstants' revive topic: POP
	// checkpoints and acks.
	SysTopicRevivePrefix = "rmq_sys_REVIVE_LOG_"
	SysTopicTimer        = "rmq_sys_wheel_timer" // TimerMessageStore.TIMER_TOPIC
)

// IsSystemTopic is TopicValidator.isSystemTopic over the static set; a broker
// adds its own cluster, broker name, reply and trace topics.
func IsSystemTopic(topic string) bool {
	switch topic {
	case SysTopicAutoCreate, SysTopicSchedule, SysTopicBenchmark, SysTopicTransHalf, SysTopicTrace,
		SysTopicTransOpHalf, SysTopicTransCheckMax, SysTopicSelfTest, SysTopicOffsetMoved, SysTopicRocksDBOffset,
		SysTopicRocksDBTransHalf, SysTopicRocksDBTransOpHalf:
		return true
	}
	return len(topic) >= len(SystemTopicPrefix) && topic[:len(SystemTopicPrefix)] == SystemTopicPrefix
}

// IsNotAllowedSendTopic is TopicValidator.isNotAllowedSendTopic: topics only the
// broker itself writes.
func IsNotAllowedSendTopic(topic string) bool {
	switch topic {
	case SysTopicSchedule, SysTopicTransHalf, SysTopicTransOpHalf, SysTopicTransCheckMax, SysTopicSelfTest,
		SysTopicOffsetMoved, SysTopicRocksDBTransHalf, SysTopicRocksDBTransOpHalf:
		return true
	}
	return false
}

// IsBrokerOnlyTopic is IsNotAllowedSendTopic and the two topics whose records
// the broker trusts as its own although Java lets clients send to them: a
// forged POP checkpoint in a revive topic copied any message a hundred times
// per send, and a timer record due in a million years held the timer's
// progress, so that every restart delivered its messages again.
func IsBrokerOnlyTopic(topic string) bool {
	return IsNotAllowedSendTopic(topic) || topic == SysTopicTimer ||
		len(topic) >= len(SysTopicRevivePrefix) && topic[:len(SysTopicRevivePrefix)] == SysTopicRevivePrefix
}

// LMQPrefix marks a light message queue or an LMQ consumer group (MixAll.LMQ_PREFIX).
const LMQPrefix = "%LMQ%"

// IsLMQ is MixAll.isLmq.
func IsLMQ(name string) bool { return strings.HasPrefix(name, LMQPrefix) }

// LiteLMQPrefix starts the queue of a lite topic (Java 5.5's LiteUtil):
// %LMQ%$parent$lite. '$' is in no topic name Java accepts, so a lite queue
// cannot be taken for another LMQ.
const LiteLMQPrefix = LMQPrefix + "$"

// LiteLMQ is LiteUtil.toLmqName: the queue holding lite topic lite of parent,
// "" when either is empty.
func LiteLMQ(parent, lite string) string {
	if parent == "" || lite == "" {
		return ""
	}
	return LiteLMQPrefix + parent + "$" + lite
}

// SplitLiteLMQ is LiteUtil.getParentTopic and getLiteTopic: ok only for
// %LMQ%$parent$lite with both parts non-empty and no third '$'.
func SplitLiteLMQ(lmq string) (parent, lite string, ok bool) {
	rest, found := strings.CutPrefix(lmq, LiteLMQPrefix)
	if !found {
		return "", "", false
	}
	parent, lite, found = strings.Cut(rest, "$")
	if !found || parent == "" || lite == "" || strings.Contains(lite, "$") {
		return "", "", false
	}
	return parent, lite, true
}
