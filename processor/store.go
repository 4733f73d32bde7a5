package processor

import (
	"context"

	"rmqd/codec"
	"rmqd/processor/meta"
	"rmqd/store"
)

// MessageStore is all the broker needs of the store. *store.DefaultStore
// implements it; the broker never touches files itself.
type MessageStore interface {
	// PutMessage appends one message. msg fields the store assigns (offsets, store
	// time, CRC, size, magic) are ignored on input. Under SYNC_FLUSH it returns only
	// once the record is on disk (or with PutFlushDiskTimeout).
	PutMessage(ctx context.Context, msg *codec.Message) store.PutResult
	// PutMessages appends a client batch: batchBody is the SEND_BATCH_MESSAGE body
	// (MessageDecoder.encodeMessages layout); tmpl gives topic, queue, sysflag, hosts,
	// born time and reconsume times shared by every record. fixProps is applied to
	// each inner message's properties before it is written (the broker adds
	// UNIQ_KEY when missing and CLUSTER).
	PutMessages(ctx context.Context, tmpl *codec.Message, batchBody []byte, fixProps func(props string) string) store.PutResult

	// GetMessage reads up to maxMsgNums messages (and at most maxTotalBytes) from a
	// queue starting at offset. The caller must Release the result.
	GetMessage(group, topic string, queueID int32, offset int64, maxMsgNums int32, maxTotalBytes int32, filter store.MessageFilter) *store.GetResult

	MaxOffsetInQueue(topic string, queueID int32) int64
	MinOffsetInQueue(topic string, queueID int32) int64
	// ConsumeQueueFileEnd is the queue offset just past the consume-queue file
	// holding queueOffset (QUERY_CONSUME_QUEUE answers from one file, as Java).
	ConsumeQueueFileEnd(queueOffset int64) int64
	OffsetInQueueByTime(topic string, queueID int32, timestamp int64) int64
	EarliestMessageTime(topic string, queueID int32) int64
	MessageStoreTimestamp(topic string, queueID int32, queueOffset int64) int64

	// LookMessageByOffset decodes the record at a commitlog offset (send-back,
	// END_TRANSACTION, VIEW_MESSAGE_BY_ID). Body and strings are copies.
	LookMessageByOffset(commitLogOffset int64) (*codec.Message, error)
	// ReadRecordByOffset returns the raw record bytes (a copy) at a commitlog offset.
	ReadRecordByOffset(commitLogOffset int64) ([]byte, error)
	// AppendRecord appends those bytes to dst instead (a reused buffer).
	AppendRecord(dst []byte, commitLogOffset int64) ([]byte, error)
	// QueryMessage finds records by key (KEYS or UNIQ_KEY) through the index.
	QueryMessage(topic, key string, maxNum int32, maxBytes int, begin, end int64) (body []byte, count int, lastUpdateTimestamp, lastUpdatePhyOffset int64)
	// QueryMessageByTag is QueryMessage through Java 5.4's tag entries.
	QueryMessageByTag(topic, tag string, maxNum int32, maxBytes int, begin, end int64) (body []byte, count int, lastUpdateTimestamp, lastUpdatePhyOffset int64)

	SetArrivingListener(l store.ArrivingListener)
	DeleteTopics(topics []string)

	MinPhyOffset() int64
	MaxPhyOffset() int64
	CommitLogDiskRatio() float64
	// HotCommitLogBytes is how far behind the commitlog's end a message still
	// counts as in memory (accessMessageInMemoryMaxRatio of physical memory).
	HotCommitLogBytes() int64

	Start() error
	Shutdown() error
}

// AsyncMessageStore is implemented by stores that can answer a put without
// blocking the caller while a SYNC_FLUSH group commit is pending
// (*store.DefaultStore does). done runs exactly once: inline when nothing must
// be waited for, else later from the store's flush service.
type AsyncMessageStore interface {
	// SyncFlush reports whether puts wait for the disk (flushDiskType=SYNC_FLUSH);
	// only then is the asynchronous path worth its closures.
	SyncFlush() bool
	PutMessageAsync(ctx context.Context, msg *codec.Message, done func(store.PutResult))
	PutMessagesAsync(ctx context.Context, tmpl *codec.Message, batchBody []byte, fixProps func(props string) string, done func(store.PutResult))
}

// compactingStore is a store with Java's compaction store (*store.DefaultStore):
// told which topics are cleanup.policy=COMPACTION, it keeps the newest
// message per key of their queues and serves pulls from what it kept.
type compactingStore interface {
	SetCompactionPolicy(compacted func(topic string) bool)
}

// compacted is the broker's answer to the store's question.
func (b *Broker) compacted(topic string) bool {
	tc, ok := b.topics.Select(topic)
	return ok && meta.Compacted(&tc)
}
