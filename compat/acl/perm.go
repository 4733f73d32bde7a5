// Package acl is the Java world of RocketMQ's ACL 1.0 (the acl/ module of
// Apache RocketMQ 4.9.x-5.3.1): request signatures as AclClientRPCHook makes
// them, the plain_acl.yml model, remote-address patterns and the decision rules
// of PlainPermissionManager.validate. It knows nothing of sockets or frames, so
// that the broker and the name server can share it.
package acl

import "strings"

// Permission bits as Java's Permission has them.
const (
	Deny byte = 1
	Any  byte = 1 << 1
	Pub  byte = 1 << 2
	Sub  byte = 1 << 3
)

// Ext field names the clients sign with (SessionCredentials).
const (
	FieldAccessKey     = "AccessKey"
	FieldSecretKey     = "SecretKey"
	FieldSignature     = "Signature"
	FieldSecurityToken = "SecurityToken"
	// FieldUniqueKeyQuery is MixAll.UNIQUE_MSG_QUERY_FLAG: clients up to 4.9.3
	// add it after signing, so the server leaves it out of their content.
	FieldUniqueKeyQuery = "_UNIQUE_KEY_QUERY"
	// VersionV4_9_3 is MQVersion.Version.V4_9_3.ordinal().
	VersionV4_9_3 = 399
)

// RetryPrefix marks a group resource: groups are checked as their retry topic.
const RetryPrefix = "%RETRY%"

// TraceTopic is TopicValidator.RMQ_SYS_TRACE_TOPIC: a PUB on it alone is let
// through once the signature is right (message traces of any account).
const TraceTopic = "RMQ_SYS_TRACE_TOPIC"

// ParsePerm is Permission.parsePermFromString: anything unknown is DENY.
func ParsePerm(s string) byte {
	switch strings.TrimSpace(s) {
	case "PUB":
		return Pub
	case "SUB":
		return Sub
	case "PUB|SUB", "SUB|PUB":
		return Pub | Sub
	default:
		return Deny
	}
}

// PermString is the yml spelling of a permission.
func PermString(p byte) string {
	switch {
	case p&Deny != 0:
		return "DENY"
	case p&(Pub|Sub) == Pub|Sub:
		return "PUB|SUB"
	case p&Pub != 0:
		return "PUB"
	case p&Sub != 0:
		return "SUB"
	}
	return "DENY"
}

// CheckPermission is Permission.checkPermission: DENY wins, ANY wants PUB or SUB.
func CheckPermission(needed, owned byte) bool {
	if owned&Deny != 0 {
		return false
	}
	if needed&Any != 0 {
		return owned&(Pub|Sub) != 0
	}
	return needed&owned != 0
}

// adminCodes are the request codes of Permission.ADMIN_CODE (5.x), and more:
// Java leaves UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, GET_BROKER_CLUSTER_ACL_CONFIG
// (which shows every secret key), the *_LIST create codes, the store
// clean-ups and the commitlog read mode open to any account; rmqd asks admin
// for them too.
var adminCodes = [...]int32{
	17,   // UPDATE_AND_CREATE_TOPIC
	25,   // UPDATE_BROKER_CONFIG
	215,  // DELETE_TOPIC_IN_BROKER
	200,  // UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
	207,  // DELETE_SUBSCRIPTIONGROUP
	513,  // UPDATE_AND_CREATE_STATIC_TOPIC
	50,   // UPDATE_AND_CREATE_ACL_CONFIG
	51,   // DELETE_ACL_CONFIG
	52,   // GET_BROKER_CLUSTER_ACL_INFO
	53,   // UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (not in Java's set)
	54,   // GET_BROKER_CLUSTER_ACL_CONFIG (not in Java's set)
	18,   // UPDATE_AND_CREATE_TOPIC_LIST (not in Java's set)
	225,  // UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST (not in Java's set)
	329,  // DELETE_EXPIRED_COMMITLOG (not in Java's set)
	306,  // CLEAN_EXPIRED_CONSUMEQUEUE (not in Java's set)
	316,  // CLEAN_UNUSED_TOPIC (not in Java's set)
	2004, // SET_COMMITLOG_READ_MODE (not in Java's set; UPDATE_BROKER_CONFIG of its key is)
	5001, // SWITCH_TIMER_ENGINE (Java 5.5, not in its set; UPDATE_BROKER_CONFIG of timerStopEnqueue is)
}

// NeedAdmin reports whether code is one only an admin account may send.
func NeedAdmin(code int32) bool {
	for _, c := range adminCodes {
		if c == code {
			return true
		}
	}
	return false
}

// RetryTopic is MixAll.getRetryTopic: the resource name of a group.
func RetryTopic(group string) string { return RetryPrefix + group }

// IsGroup reports whether a resource name stands for a group.
func IsGroup(resource string) bool { return strings.HasPrefix(resource, RetryPrefix) }

// printResource is PlainAccessResource.printStr.
func printResource(resource string) string {
	if IsGroup(resource) {
		return "group:" + strings.TrimPrefix(resource, RetryPrefix)
	}
	return "topic:" + resource
}

// IsRetryTopicOf reports whether topic is group's own retry topic: the plain
// one (%RETRY%group) or a pop retry topic (KeyBuilder's %RETRY%group+topic,
// or %RETRY%group_topic before retry v2), which clients send back in acks.
func IsRetryTopicOf(topic, group string) bool {
	rest, ok := strings.CutPrefix(topic, RetryPrefix)
	if !ok {
		return false
	}
	rest, ok = strings.CutPrefix(rest, group)
	return ok && (rest == "" || rest[0] == '+' || rest[0] == '_')
}
