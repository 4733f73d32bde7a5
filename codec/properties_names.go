package codec

// Message property names the broker and store read or write (MessageConst,
// TransactionalMessageUtil). Every package names them from here.
const (
	PropKeys              = "KEYS"
	PropTags              = "TAGS"
	PropWait              = "WAIT"
	PropDelay             = "DELAY"
	PropRetryTopic        = "RETRY_TOPIC"
	PropRealTopic         = "REAL_TOPIC"
	PropRealQueueID       = "REAL_QID"
	PropTranMsg           = "TRAN_MSG"
	PropProducerGroup     = "PGROUP"
	PropOriginMessageID   = "ORIGIN_MESSAGE_ID"
	PropReconsumeTime     = "RECONSUME_TIME"
	PropMsgRegion         = "MSG_REGION"
	PropTraceSwitch       = "TRACE_ON"
	PropUniqKey           = "UNIQ_KEY"
	PropMaxReconsumeTimes = "MAX_RECONSUME_TIMES"
	PropCheckImmunity     = "CHECK_IMMUNITY_TIME_IN_SECONDS"
	PropTranPreparedQOff  = "TRAN_PREPARED_QUEUE_OFFSET"
	PropTransactionID     = "__transactionId__"
	PropTranCheckTimes    = "TRANSACTION_CHECK_TIMES"
	PropCorrelationID     = "CORRELATION_ID"
	PropReplyToClient     = "REPLY_TO_CLIENT"
	PropPushReplyTime     = "PUSH_REPLY_TIME"
	PropCluster           = "CLUSTER"
	PropTimerDelaySec     = "TIMER_DELAY_SEC"
	PropTimerDeliverMs    = "TIMER_DELIVER_MS"
	PropTimerOutMs        = "TIMER_OUT_MS"
	PropTimerDelayMs      = "TIMER_DELAY_MS"
	PropPopCK             = "POP_CK"
	// PropPriority is a message's priority (Java 5.4, Message.setPriority);
	// PropShardingKey marks a FIFO message of the 5.x gRPC clients.
	PropPriority    = "_SYS_MSG_PRIORITY_"
	PropShardingKey = "__SHARDINGKEY"
	// PropLiteTopic names the lite topic of a message sent to a LITE topic
	// (Java 5.5): the broker dispatches it to %LMQ%$topic$lite.
	PropLiteTopic = "__LITE_TOPIC"
	// PropInnerMultiDispatch lists the light message queues a message is also
	// dispatched to; PropInnerMultiQueueOffset is the broker's answer, each
	// queue's offset, both joined by LMQDispatchSeparator.
	PropInnerMultiDispatch    = "INNER_MULTI_DISPATCH"
	PropInnerMultiQueueOffset = "INNER_MULTI_QUEUE_OFFSET"
	// PropInnerNum and PropInnerBase mark an inner batch stored as one record
	// in a BatchCQ topic: how many messages its body holds, and the queue
	// offset of the first (MessageConst.PROPERTY_INNER_NUM / _BASE).
	PropInnerNum  = "INNER_NUM"
	PropInnerBase = "INNER_BASE"
	// PropCRC32 is the record CRC property enabledAppendPropCRC appends.
	PropCRC32 = "__CRC32#"
)

// LMQDispatchSeparator joins the INNER_MULTI_* values (MixAll.LMQ_DISPATCH_SEPARATOR).
const LMQDispatchSeparator = ","

// PropCRCReservedLen is the length of the CRC property with its separators
// (CommitLog.CRC32_RESERVED_LEN): name, 0x01, ten digits, 0x02.
const PropCRCReservedLen = len(PropCRC32) + 1 + 10 + 1
