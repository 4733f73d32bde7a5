package codec

import (
	"reflect"
	"strings"
	"testing"
)

// adminGoldenCase is one frame of testdata/golden/admin_* (written by Java
// 5.3.3's RemotingCommand with the real *RequestHeader class, see
// gen/AdminGen.java), the struct the server decodes it into (with the
// defaults the processor sets first) and what it must hold.
type adminGoldenCase struct {
	name string
	dst  func() any
	want any
	// full: Java set every field the struct reads, so each ext tag must name a
	// key in Java's frame (a misspelt tag fails here, not only by value).
	full bool
}

func i32p(v int32) *int32 { return &v }
func boolp(v bool) *bool  { return &v }

var adminGoldenCases = []adminGoldenCase{
	{"pop", func() any { return &PopMessageRequestHeader{} }, &PopMessageRequestHeader{
		ConsumerGroup: "CG", Topic: "T", QueueID: -1, MaxMsgNums: 32, InvisibleTime: 60000, PollTime: 15000,
		BornTime: 1700000000123, InitMode: 1, ExpType: "TAG", Exp: "tagA || tagB", Order: true, AttemptID: "attempt-1"}, true},
	{"notification", func() any { return &NotificationRequestHeader{} }, &NotificationRequestHeader{
		ConsumerGroup: "CG", Topic: "T", QueueID: 2, PollTime: 20000, BornTime: 1700000000456, Order: true,
		AttemptID: "attempt-2"}, true},
	{"peek", func() any { return &PeekMessageRequestHeader{} }, &PeekMessageRequestHeader{
		Topic: "T", QueueID: 3, MaxMsgNums: 16, ConsumerGroup: "CG"}, true},
	{"ack", func() any { return &AckMessageRequestHeader{} }, &AckMessageRequestHeader{
		ConsumerGroup: "CG", Topic: "T", QueueID: 1, ExtraInfo: "0 1700000000123 60000 0 1 broker-a 1 17", Offset: 17}, true},
	{"create_topic", func() any { return &CreateTopicRequestHeader{} }, &CreateTopicRequestHeader{
		Topic: "NewTopic", ReadQueueNums: 8, WriteQueueNums: 6, Perm: 6, TopicFilterType: "SINGLE_TAG", TopicSysFlag: 2,
		Order: true, Attributes: "+message.type=FIFO"}, true},
	{"send_back", func() any { return &ConsumerSendMsgBackRequestHeader{} }, &ConsumerSendMsgBackRequestHeader{
		Offset: 123456789, Group: "CG", DelayLevel: 3, OriginMsgID: "AC110001000018B4AAC2123456780000", OriginTopic: "T",
		UnitMode: true, MaxReconsumeTimes: i32p(5)}, true},
	{"reset_offset", func() any { return &ResetOffsetRequestHeader{QueueID: -1, Offset: -1} }, &ResetOffsetRequestHeader{
		Topic: "T", Group: "CG", Timestamp: 1700000000789, IsForce: true, QueueID: 4, Offset: 99}, true},
	// mqadmin's form: Java leaves offset null and sends its queueId default -1.
	{"reset_offset_nulls", func() any { return &ResetOffsetRequestHeader{QueueID: -1, Offset: -1} }, &ResetOffsetRequestHeader{
		Topic: "T", Group: "CG", Timestamp: 1700000000789, QueueID: -1, Offset: -1}, false},
	{"query_consume_queue", func() any { return &QueryConsumeQueueRequestHeader{} }, &QueryConsumeQueueRequestHeader{
		Topic: "T", QueueID: 5, Index: 1234567890123, Count: 10, ConsumerGroup: "CG"}, true},
	{"query_message", func() any { return &QueryMessageRequestHeader{} }, &QueryMessageRequestHeader{
		Topic: "T", Key: "k1", MaxNum: 64, BeginTimestamp: 1700000000000, EndTimestamp: 1700000099999}, true},
	{"end_transaction", func() any { return &EndTransactionRequestHeader{} }, &EndTransactionRequestHeader{
		ProducerGroup: "PG", TranStateTableOffset: 42, CommitLogOffset: 9876543210, CommitOrRollback: 8,
		FromTransactionCheck: true, MsgID: "C0A8000100002A9F0000000000000C2E",
		TransactionID: "AC110001000018B4AAC2123456780000"}, true},
	{"update_consumer_offset", func() any { return &UpdateConsumerOffsetRequestHeader{} }, &UpdateConsumerOffsetRequestHeader{
		ConsumerGroup: "CG", Topic: "T", QueueID: 6, CommitOffset: 5555}, true},
	{"query_consumer_offset", func() any { return &QueryConsumerOffsetRequestHeader{} }, &QueryConsumerOffsetRequestHeader{
		ConsumerGroup: "CG", Topic: "T", QueueID: 7, SetZeroIfNotFound: boolp(false)}, true},
	// A 4.x client never sends setZeroIfNotFound: it must stay nil (Java's null).
	{"query_consumer_offset_null", func() any { return &QueryConsumerOffsetRequestHeader{} }, &QueryConsumerOffsetRequestHeader{
		ConsumerGroup: "CG", Topic: "T", QueueID: 0}, false},
	{"recall", func() any { return &RecallMessageRequestHeader{} }, &RecallMessageRequestHeader{
		ProducerGroup: "PG", Topic: "T", RecallHandle: "djAgVCBicm9rZXItYSAxNzAwMDAwMDAwMTIzIEFDMTE="}, true},
	{"view_message", func() any { return &ViewMessageRequestHeader{} }, &ViewMessageRequestHeader{Offset: 3141592653}, true},
	{"get_max_offset", func() any { return &QueueRequestHeader{} }, &QueueRequestHeader{Topic: "T", QueueID: 2}, true},
	{"get_min_offset", func() any { return &QueueRequestHeader{} }, &QueueRequestHeader{Topic: "T", QueueID: 3}, true},
	{"get_earliest_msg_storetime", func() any { return &QueueRequestHeader{} }, &QueueRequestHeader{Topic: "T", QueueID: 4}, true},
	{"search_offset", func() any { return &SearchOffsetRequestHeader{} }, &SearchOffsetRequestHeader{
		Topic: "T", QueueID: 5, Timestamp: 1700000000321, BoundaryType: "UPPER"}, true},
	{"notify_broker_role_changed", func() any { return &NotifyBrokerRoleChangedRequestHeader{MasterBrokerID: -1} },
		&NotifyBrokerRoleChangedRequestHeader{MasterAddress: "127.0.0.1:10911", MasterEpoch: 3, SyncStateSetEpoch: 4,
			MasterBrokerID: 1}, true},
}

// javaNewerKeys are header fields Java added after 5.3.3, whose frames the
// golden files hold: 5.5's lite topic of an ack or change of invisible time.
var javaNewerKeys = map[string]bool{"liteTopic": true, "suspend": true}

// TestAdminHeadersJavaGolden decodes Java's frame of every admin header, in
// both serialize types, with DecodeCommand and DecodeHeader into the struct
// the processor uses, and checks every field.
func TestAdminHeadersJavaGolden(t *testing.T) {
	for _, gc := range adminGoldenCases {
		for st, stName := range map[SerializeType]string{SerializeJSON: "json", SerializeRocketMQ: "rocketmq"} {
			t.Run(gc.name+"/"+stName, func(t *testing.T) {
				cmd := decodeFrame(t, readGolden(t, "admin_"+gc.name, st))
				dst := gc.dst()
				if err := DecodeHeader(cmd.Ext, dst); err != nil {
					t.Fatalf("DecodeHeader: %v", err)
				}
				if !reflect.DeepEqual(dst, gc.want) {
					t.Fatalf("decoded\n %+v\nwant\n %+v", dst, gc.want)
				}
				if !gc.full {
					return
				}
				typ := reflect.TypeOf(dst).Elem()
				for i := range typ.NumField() {
					key, _, _ := strings.Cut(typ.Field(i).Tag.Get("ext"), ",")
					if javaNewerKeys[key] {
						continue
					}
					if _, ok := cmd.Ext.Get(key); !ok {
						t.Errorf("field %s: Java's frame has no ext key %q", typ.Field(i).Name, key)
					}
				}
			})
		}
	}
}
