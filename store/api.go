// Package store is the byte-compatible RocketMQ message store: commitlog, consume
// queues, index, checkpoint, recovery, flush and retention. No network code.
package store

// PutStatus mirrors Java's PutMessageStatus.
type PutStatus int

const (
	PutOK PutStatus = iota
	PutFlushDiskTimeout
	PutFlushSlaveTimeout
	PutSlaveNotAvailable
	PutServiceNotAvailable
	PutCreateMappedFileFailed
	PutMessageIllegal
	PutPropertiesSizeExceeded
	PutOSPageCacheBusy
	PutUnknownError
	// PutLMQConsumeQueueNumExceeded: a message would make more light message
	// queues than maxLmqConsumeQueueNum.
	PutLMQConsumeQueueNumExceeded
)

var putStatusNames = [...]string{"PUT_OK", "FLUSH_DISK_TIMEOUT", "FLUSH_SLAVE_TIMEOUT", "SLAVE_NOT_AVAILABLE",
	"SERVICE_NOT_AVAILABLE", "CREATE_MAPEDFILE_FAILED", "MESSAGE_ILLEGAL", "PROPERTIES_SIZE_EXCEEDED",
	"OS_PAGE_CACHE_BUSY", "UNKNOWN_ERROR", "LMQ_CONSUME_QUEUE_NUM_EXCEEDED"}

// String is the Java PutMessageStatus name.
func (s PutStatus) String() string {
	if int(s) >= 0 && int(s) < len(putStatusNames) {
		return putStatusNames[s]
	}
	return "UNKNOWN_ERROR"
}

// Written reports a put that wrote its message, whether or not the disk or a
// slave confirmed it in time: Java answers these as sent (SendMessageProcessor,
// EndTransactionProcessor), so a SYNC_MASTER whose slave is away still serves
// send-backs, transactions and delayed deliveries.
func (s PutStatus) Written() bool {
	switch s {
	case PutOK, PutFlushDiskTimeout, PutFlushSlaveTimeout, PutSlaveNotAvailable:
		return true
	}
	return false
}

// PutResult is the outcome of an append.
type PutResult struct {
	Status PutStatus
	// WroteOffset is the commitlog offset of the first record written.
	WroteOffset int64
	WroteBytes  int32
	// QueueOffset is the consume-queue offset of the first message.
	QueueOffset int64
	// MsgNum is how many records were written (a batch writes one per message).
	MsgNum         int32
	StoreTimestamp int64
	// Offsets of every record written, for batch message ids. Nil for single puts.
	RecordOffsets []int64
}

// GetStatus mirrors Java's GetMessageStatus.
type GetStatus int

const (
	GetFound GetStatus = iota
	GetNoMatchedMessage
	GetMessageWasRemoving
	GetOffsetFoundNull
	GetOffsetOverflowBadly
	GetOffsetOverflowOne
	GetOffsetTooSmall
	GetNoMatchedLogicQueue
	GetNoMessageInQueue
	GetOffsetReset
)

func (s GetStatus) String() string {
	return [...]string{"FOUND", "NO_MATCHED_MESSAGE", "MESSAGE_WAS_REMOVING", "OFFSET_FOUND_NULL",
		"OFFSET_OVERFLOW_BADLY", "OFFSET_OVERFLOW_ONE", "OFFSET_TOO_SMALL", "NO_MATCHED_LOGIC_QUEUE",
		"NO_MESSAGE_IN_QUEUE", "OFFSET_RESET"}[s]
}

// MessageFilter decides which messages a pull returns (tag hash first, then the
// record itself for exact tag and SQL92 checks).
type MessageFilter interface {
	// MatchTagsCode is asked with the consume-queue unit's tags code.
	MatchTagsCode(tagsCode int64) bool
	// MatchRecord is asked with the whole commitlog record bytes; it may return true
	// without looking when the filter has nothing beyond the tag hash.
	MatchRecord(record []byte) bool
}

// GetResult carries records referenced in place in mapped files. The caller must
// call Release once the bytes are written out; until then the files they point to
// are neither unmapped nor deleted.
type GetResult struct {
	Status          GetStatus
	NextBeginOffset int64
	MinOffset       int64
	MaxOffset       int64
	// Records holds each whole commitlog record, aliasing the mapping.
	Records         [][]byte
	BufferTotalSize int
	// InnerMessages is how many messages Records hold past one per record: a
	// batch queue's unit counts its batchSize (GetMessageResult.messageCount).
	InnerMessages int
	// SuggestPullingFromSlave: the last unit the read scanned lies further
	// behind the commitlog's end than HotCommitLogBytes (Java's flag of the
	// same name; set for any read within the queue's offsets).
	SuggestPullingFromSlave bool
	// FallBehind is how many commitlog bytes lie past the last unit the read
	// scanned (Java's recordDiskFallBehindSize figure); 0 when none was.
	FallBehind int64
	// ColdDataSum is the bytes of the records read that were cold (Java's
	// getColdDataSum; coldread.go); 0 unless cold-data flow control is on.
	ColdDataSum int64
	// files are the mapped commitlog files Records point into, each held once.
	files []*mappedFile
	// touched keeps touchPages' reads from being optimised away.
	touched byte
	// The usual few records and files live here, in the result's own
	// allocation: a caught-up pull reads one record from one file.
	recSlots  [4][]byte
	fileSlots [2]*mappedFile
}

// Release drops the references that keep Records valid. Safe to call twice.
func (r *GetResult) Release() {
	for _, f := range r.files {
		f.release()
	}
	r.files = nil
	r.Records = nil
	clear(r.recSlots[:])
	clear(r.fileSlots[:])
}

// ArrivingListener is told, after dispatch, of every message that reached a consume
// queue (the broker wakes long-polling pulls with it). It may run on the goroutine
// that appended the message (a gnet event loop, one holding no store lock): it
// must not block, nor take a lock held around a put.
type ArrivingListener func(topic string, queueID int32, logicOffset int64, tagsCode int64, storeTimestamp int64, properties string)
