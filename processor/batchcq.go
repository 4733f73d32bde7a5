package processor

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"

	"rmqd/codec"
	"rmqd/processor/meta"
	"rmqd/remoting"
	"rmqd/store"
)

// isBatchCQ is QueueTypeUtils.isBatchCq: the topic's queue.type attribute
// (SimpleCQ when absent).
func isBatchCQ(tc TopicConfig) bool {
	return len(tc.Attributes) != 0 && tc.Attributes["queue.type"] == "BatchCQ"
}

// isBatchTopic tells the store which topics get batch consume queues.
func (b *Broker) isBatchTopic(topic string) bool {
	tc, ok := b.topics.Select(topic)
	return ok && isBatchCQ(tc)
}

// BatchCQTopics reads topics.json and tells which of its topics are
// queue.type=BatchCQ. cmd gives it to store.Open (store.Config.BatchTopics):
// recovery runs before the broker loads its tables, and must rebuild a lost
// queue of such a topic as a batch one.
func BatchCQTopics(cfg BrokerConfig) (func(topic string) bool, error) {
	m := meta.NewTopicConfigManager(cfg.metaConfig, slog.New(slog.DiscardHandler))
	if err := m.Load(); err != nil {
		return nil, fmt.Errorf("read topics for the store: %w", err)
	}
	batch := map[string]bool{}
	for name, tc := range m.Snapshot().TopicConfigTable {
		if isBatchCQ(tc) {
			batch[name] = true
		}
	}
	return func(topic string) bool { return batch[topic] }, nil
}

// batchTopicStore is the part of the store that makes batch consume queues
// (*store.DefaultStore).
type batchTopicStore interface {
	SetBatchTopics(isBatch func(topic string) bool)
}

// sendInnerBatch stores a SEND_BATCH_MESSAGE to a BatchCQ topic whose batch
// carries a UNIQ_KEY as one record: the client's batch body whole, with
// INNER_BATCH and NEED_UNWRAP set and INNER_NUM the count of its messages; the
// store gives it INNER_BASE and as many queue offsets (SendMessageProcessor
// .sendBatchMessage's inner batch). The answer carries batchUniqId, which
// tells the client it was stored as one.
func (b *Broker) sendInnerBatch(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand, a *sendAnswer,
	msg *codec.Message, queueID int32, props, uniq string) *codec.RemotingCommand {
	n := 0
	it := codec.NewBatchIterator(req.Body)
	var e codec.BatchEntry
	for it.Next(&e) {
		n++
	}
	// Java counts the messages without reading them; a body that does not
	// parse, or holds more than INNER_NUM (a short) can say, is refused here.
	if it.Err() != nil || n == 0 || n > math.MaxInt16 {
		return b.sendDone(a, msg, queueID, store.PutResult{Status: store.PutMessageIllegal})
	}
	e2 := codec.EditProperties(props)
	e2.Set(codec.PropCluster, b.conf().BrokerClusterName)
	e2.Set(codec.PropInnerNum, strconv.Itoa(n))
	e2.Delete(codec.PropInnerBase) // the store's to write
	msg.Properties = e2.String()
	msg.SysFlag |= codec.SysFlagInnerBatch | codec.SysFlagNeedUnwrap
	a.hdr.BatchUniqID = uniq
	return b.putOne(ctx, c, req.Code, a, msg, queueID)
}
