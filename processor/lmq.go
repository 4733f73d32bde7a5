package processor

// lmqExceededRemark is Java's SendMessageProcessor remark for
// LMQ_CONSUME_QUEUE_NUM_EXCEEDED (answered SYSTEM_ERROR).
const lmqExceededRemark = "[LMQ_CONSUME_QUEUE_NUM_EXCEEDED]broker config enableLmq and enableMultiDispatch, " +
	"lmq consumeQueue num exceed maxLmqConsumeQueueNum config num, default limit 2w."
