package codec

// Request headers of the admin, offset, transaction and POP codes, one struct
// per Java *RequestHeader, read by DecodeHeader. Only the fields the broker
// reads are here. Java's nullable Integer/Boolean that the broker reads as
// 0/false are plain values; a pointer keeps null where null means something.
// testdata/golden/admin_* hold Java 5.3.3's frames of each (AdminGen.java).

// PopMessageRequestHeader is POP_MESSAGE's header. bornTime is @CFNotNull in
// Java, but the processor fills a missing or zero one with now: optional here.
type PopMessageRequestHeader struct {
	ConsumerGroup string `ext:"consumerGroup,required"`
	Topic         string `ext:"topic,required"`
	QueueID       int32  `ext:"queueId,required"`
	MaxMsgNums    int32  `ext:"maxMsgNums,required"`
	InvisibleTime int64  `ext:"invisibleTime,required"`
	PollTime      int64  `ext:"pollTime,required"`
	BornTime      int64  `ext:"bornTime"`
	InitMode      int32  `ext:"initMode,required"`
	ExpType       string `ext:"expType"`
	Exp           string `ext:"exp"`
	Order         bool   `ext:"order"`
	AttemptID     string `ext:"attemptId"`
}

// NotificationRequestHeader is NOTIFICATION's header (bornTime as in POP).
type NotificationRequestHeader struct {
	ConsumerGroup string `ext:"consumerGroup,required"`
	Topic         string `ext:"topic,required"`
	QueueID       int32  `ext:"queueId,required"`
	PollTime      int64  `ext:"pollTime,required"`
	BornTime      int64  `ext:"bornTime"`
	Order         bool   `ext:"order"`
	AttemptID     string `ext:"attemptId"`
}

// PeekMessageRequestHeader is PEEK_MESSAGE's header.
type PeekMessageRequestHeader struct {
	Topic         string `ext:"topic,required"`
	QueueID       int32  `ext:"queueId,required"`
	MaxMsgNums    int32  `ext:"maxMsgNums,required"`
	ConsumerGroup string `ext:"consumerGroup,required"`
}

// AckMessageRequestHeader is ACK_MESSAGE's header.
type AckMessageRequestHeader struct {
	ConsumerGroup string `ext:"consumerGroup,required"`
	Topic         string `ext:"topic,required"`
	QueueID       int32  `ext:"queueId,required"`
	ExtraInfo     string `ext:"extraInfo,required"`
	Offset        int64  `ext:"offset,required"`
	// LiteTopic (Java 5.5) acks a message of a lite topic: Topic is its parent.
	LiteTopic string `ext:"liteTopic"`
}

// ChangeInvisibleTimeRequestHeader is CHANGE_MESSAGE_INVISIBLETIME's header:
// ACK_MESSAGE's fields and the new invisibleTime.
type ChangeInvisibleTimeRequestHeader struct {
	ConsumerGroup string `ext:"consumerGroup,required"`
	Topic         string `ext:"topic,required"`
	QueueID       int32  `ext:"queueId,required"`
	ExtraInfo     string `ext:"extraInfo,required"`
	Offset        int64  `ext:"offset,required"`
	InvisibleTime int64  `ext:"invisibleTime,required"`
	// LiteTopic and Suspend (Java 5.5): a lite topic's message; Suspend
	// holds its whole queue back until the new time.
	LiteTopic string `ext:"liteTopic"`
	Suspend   bool   `ext:"suspend"`
}

// LiteInfoRequestHeader holds the fields of Java 5.5's lite admin headers
// (GetParentTopicInfo: topic; GetLiteTopicInfo: parentTopic, liteTopic;
// GetLiteClientInfo: parentTopic, group, clientId, maxCount (1000);
// GetLiteGroupInfo: group, liteTopic, topK; TriggerLiteDispatch: group,
// clientId). None is required on the wire but GetLiteGroupInfo's and
// TriggerLiteDispatch's group, which the handlers check.
type LiteInfoRequestHeader struct {
	Topic       string `ext:"topic"`
	ParentTopic string `ext:"parentTopic"`
	LiteTopic   string `ext:"liteTopic"`
	Group       string `ext:"group"`
	ClientID    string `ext:"clientId"`
	MaxCount    int32  `ext:"maxCount"`
	TopK        int32  `ext:"topK"`
}

// PopLiteMessageRequestHeader is POP_LITE_MESSAGE's header (Java 5.5): a POP
// over the lite topics of Topic the client (ClientID) subscribed to.
type PopLiteMessageRequestHeader struct {
	ClientID      string `ext:"clientId,required"`
	ConsumerGroup string `ext:"consumerGroup,required"`
	Topic         string `ext:"topic,required"`
	MaxMsgNum     int32  `ext:"maxMsgNum,required"`
	InvisibleTime int64  `ext:"invisibleTime,required"`
	PollTime      int64  `ext:"pollTime,required"`
	BornTime      int64  `ext:"bornTime,required"`
	AttemptID     string `ext:"attemptId"`
}

// PollingInfoRequestHeader is POLLING_INFO's header.
type PollingInfoRequestHeader struct {
	ConsumerGroup string `ext:"consumerGroup,required"`
	Topic         string `ext:"topic,required"`
	QueueID       int32  `ext:"queueId,required"`
}

// CreateTopicRequestHeader is UPDATE_AND_CREATE_TOPIC's header.
type CreateTopicRequestHeader struct {
	Topic           string `ext:"topic,required"`
	ReadQueueNums   int32  `ext:"readQueueNums,required"`
	WriteQueueNums  int32  `ext:"writeQueueNums,required"`
	Perm            int32  `ext:"perm,required"`
	TopicFilterType string `ext:"topicFilterType"`
	TopicSysFlag    int32  `ext:"topicSysFlag"`
	Order           bool   `ext:"order"`
	// Attributes is "+key=value,-key" (5.x).
	Attributes string `ext:"attributes"`
}

// ConsumerSendMsgBackRequestHeader is CONSUMER_SEND_MSG_BACK's header; a null
// maxReconsumeTimes means the group's retry setting.
type ConsumerSendMsgBackRequestHeader struct {
	Offset            int64  `ext:"offset,required"`
	Group             string `ext:"group,required"`
	DelayLevel        int32  `ext:"delayLevel,required"`
	OriginMsgID       string `ext:"originMsgId"`
	OriginTopic       string `ext:"originTopic"`
	UnitMode          bool   `ext:"unitMode"`
	MaxReconsumeTimes *int32 `ext:"maxReconsumeTimes"`
}

// ResetOffsetRequestHeader is INVOKE_BROKER_TO_RESET_OFFSET's header. Set
// QueueID and Offset to -1 before decoding: absent means every queue, by time.
type ResetOffsetRequestHeader struct {
	Topic     string `ext:"topic,required"`
	Group     string `ext:"group,required"`
	Timestamp int64  `ext:"timestamp,required"`
	IsForce   bool   `ext:"isForce"`
	QueueID   int32  `ext:"queueId"`
	Offset    int64  `ext:"offset"`
}

// QueryConsumeQueueRequestHeader is QUERY_CONSUME_QUEUE's header.
type QueryConsumeQueueRequestHeader struct {
	Topic         string `ext:"topic,required"`
	QueueID       int32  `ext:"queueId,required"`
	Index         int64  `ext:"index,required"`
	Count         int32  `ext:"count,required"`
	ConsumerGroup string `ext:"consumerGroup"`
}

// QueryMessageRequestHeader is QUERY_MESSAGE's header.
type QueryMessageRequestHeader struct {
	Topic          string `ext:"topic,required"`
	Key            string `ext:"key,required"`
	MaxNum         int32  `ext:"maxNum,required"`
	BeginTimestamp int64  `ext:"beginTimestamp,required"`
	EndTimestamp   int64  `ext:"endTimestamp,required"`
}

// EndTransactionRequestHeader is END_TRANSACTION's header.
type EndTransactionRequestHeader struct {
	ProducerGroup        string `ext:"producerGroup,required"`
	TranStateTableOffset int64  `ext:"tranStateTableOffset,required"`
	CommitLogOffset      int64  `ext:"commitLogOffset,required"`
	CommitOrRollback     int32  `ext:"commitOrRollback,required"`
	FromTransactionCheck bool   `ext:"fromTransactionCheck"`
	MsgID                string `ext:"msgId"`
	TransactionID        string `ext:"transactionId"`
}

// UpdateConsumerOffsetRequestHeader is UPDATE_CONSUMER_OFFSET's header.
type UpdateConsumerOffsetRequestHeader struct {
	ConsumerGroup string `ext:"consumerGroup,required"`
	Topic         string `ext:"topic,required"`
	QueueID       int32  `ext:"queueId,required"`
	CommitOffset  int64  `ext:"commitOffset,required"`
}

// QueryConsumerOffsetRequestHeader is QUERY_CONSUMER_OFFSET's header; 5.x
// clients may send setZeroIfNotFound=false to turn the offset-0 rule off.
type QueryConsumerOffsetRequestHeader struct {
	ConsumerGroup     string `ext:"consumerGroup,required"`
	Topic             string `ext:"topic,required"`
	QueueID           int32  `ext:"queueId,required"`
	SetZeroIfNotFound *bool  `ext:"setZeroIfNotFound"`
}

// RecallMessageRequestHeader is RECALL_MESSAGE's header.
type RecallMessageRequestHeader struct {
	ProducerGroup string `ext:"producerGroup"`
	Topic         string `ext:"topic,required"`
	RecallHandle  string `ext:"recallHandle,required"`
}

// ViewMessageRequestHeader is VIEW_MESSAGE_BY_ID's header: a commitlog offset.
type ViewMessageRequestHeader struct {
	Offset int64 `ext:"offset,required"`
}

// QueueRequestHeader is the topic+queue header of GET_MAX_OFFSET,
// GET_MIN_OFFSET and GET_EARLIEST_MSG_STORETIME (Java's GetMaxOffset-,
// GetMinOffset- and GetEarliestMsgStoretimeRequestHeader). GET_MAX_OFFSET's
// committed flag is not read: the broker has no uncommitted tail to hide.
type QueueRequestHeader struct {
	Topic   string `ext:"topic,required"`
	QueueID int32  `ext:"queueId,required"`
}

// SearchOffsetRequestHeader is SEARCH_OFFSET_BY_TIMESTAMP's header;
// boundaryType is Java's BoundaryType name, LOWER when absent.
type SearchOffsetRequestHeader struct {
	Topic        string `ext:"topic,required"`
	QueueID      int32  `ext:"queueId,required"`
	Timestamp    int64  `ext:"timestamp,required"`
	BoundaryType string `ext:"boundaryType"`
}

// NotifyBrokerRoleChangedRequestHeader is the controller's
// NOTIFY_BROKER_ROLE_CHANGED header. Set MasterBrokerID to -1 before decoding:
// absent means no master was elected.
type NotifyBrokerRoleChangedRequestHeader struct {
	MasterAddress     string `ext:"masterAddress"`
	MasterEpoch       int32  `ext:"masterEpoch"`
	SyncStateSetEpoch int32  `ext:"syncStateSetEpoch"`
	MasterBrokerID    int64  `ext:"masterBrokerId"`
}

// QueryTopicsByConsumerRequestHeader is QUERY_TOPICS_BY_CONSUMER's header.
type QueryTopicsByConsumerRequestHeader struct {
	Group string `ext:"group,required"`
}

// QueryConsumeTimeSpanRequestHeader is QUERY_CONSUME_TIME_SPAN's header.
type QueryConsumeTimeSpanRequestHeader struct {
	Topic string `ext:"topic,required"`
	Group string `ext:"group,required"`
}

// CloneGroupOffsetRequestHeader is CLONE_GROUP_OFFSET's header; an empty topic
// means every topic srcGroup has offsets on.
type CloneGroupOffsetRequestHeader struct {
	SrcGroup  string `ext:"srcGroup,required"`
	DestGroup string `ext:"destGroup,required"`
	Topic     string `ext:"topic"`
	Offline   bool   `ext:"offline"`
}

// GetConsumeStatsInBrokerHeader is GET_BROKER_CONSUME_STATS's header (the
// Java field, and so the key, is isOrder).
type GetConsumeStatsInBrokerHeader struct {
	IsOrder bool `ext:"isOrder,required"`
}

// GetConsumerStatusRequestHeader is INVOKE_BROKER_TO_GET_CONSUMER_STATUS's
// header; clientAddr, when set, is the one client id to ask.
type GetConsumerStatusRequestHeader struct {
	Topic      string `ext:"topic,required"`
	Group      string `ext:"group,required"`
	ClientAddr string `ext:"clientAddr"`
}

// ResetMasterFlushOffsetRequestHeader is RESET_MASTER_FLUSH_OFFSET's header
// (ResetMasterFlushOffsetHeader; @CFNotNull).
type ResetMasterFlushOffsetRequestHeader struct {
	MasterFlushOffset int64 `ext:"masterFlushOffset,required"`
}

// QueryCorrectionOffsetRequestHeader is QUERY_CORRECTION_OFFSET's header
// (QueryCorrectionOffsetHeader); filterGroups is comma-separated.
type QueryCorrectionOffsetRequestHeader struct {
	Topic        string `ext:"topic,required"`
	CompareGroup string `ext:"compareGroup,required"`
	FilterGroups string `ext:"filterGroups"`
}

// ResumeCheckHalfMessageRequestHeader is RESUME_CHECK_HALF_MESSAGE's header:
// msgId is the half message's offset message id, topic the one it was viewed
// in. Both are nullable in Java.
type ResumeCheckHalfMessageRequestHeader struct {
	Topic string `ext:"topic"`
	MsgID string `ext:"msgId"`
}

// CheckRocksdbCqWriteProgressRequestHeader is CHECK_ROCKSDB_CQ_WRITE_PROGRESS's
// header (an empty topic means every topic).
type CheckRocksdbCqWriteProgressRequestHeader struct {
	Topic          string `ext:"topic,required"`
	CheckStoreTime int64  `ext:"checkStoreTime"`
}

// ExportRocksDBConfigToJSONRequestHeader is EXPORT_ROCKSDB_CONFIG_TO_JSON's
// header: configType lists topics, subscriptionGroups and consumerOffsets,
// each followed by ";".
type ExportRocksDBConfigToJSONRequestHeader struct {
	ConfigType string `ext:"configType,required"`
}
