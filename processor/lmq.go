package processor

// lmqExceededRemark is Java's SendMessageProcessor remark for
// LMQ_CONSUME_QUEUE_NUM_EXCEEDED (answered SYSTEM_ERROR).
const lmqExceededRemark = "[LMQ_CONSUME_QUEUE_NUM_EXCEEDED]broker config enableLmq and enableMultiDispatch, " +
	"lmq consumeQueue num exceed maxLmqConsumeQueueNum config num, default limit 2w."

// lmqQuotaRemark is Java 5.5's remark for the same status, answered
// LMQ_QUOTA_EXCEEDED when enableLmqQuota is on (HookUtils.handleLmqQuota);
// its proxy turns that code into gRPC's LITE_TOPIC_QUOTA_EXCEEDED.
const lmqQuotaRemark = "[LMQ_CONSUME_QUEUE_NUM_EXCEEDED]lmq consume queue num exceeded."
