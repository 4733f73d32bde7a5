package processor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// batchSendReq is SEND_BATCH_MESSAGE (V2 short keys) of n messages numbered
// from first, the batch's own properties props.
func batchSendReq(topic string, queueID int32, first, n int, props string) *codec.RemotingCommand {
	var body []byte
	for i := range n {
		body = codec.AppendBatchEntry(body, 0, []byte(fmt.Sprint("m", first+i)),
			fmt.Sprintf("UNIQ_KEY\x01I%d\x02KEYS\x01k%d\x02", first+i, first+i))
	}
	req := codec.NewRequest(codec.ReqSendBatchMessage)
	for _, kv := range [][2]string{{"a", "PG"}, {"b", topic}, {"c", TopicAutoCreate}, {"d", "4"},
		{"e", fmt.Sprint(queueID)}, {"f", "0"}, {"g", fmt.Sprint(time.Now().UnixMilli())}, {"h", "0"},
		{"i", props}, {"j", "0"}, {"k", "false"}, {"m", "true"}} {
		req.Ext.Set(kv[0], kv[1])
	}
	req.Body = body
	return req
}

// TestInnerBatchToBatchCQ: a batch carrying a UNIQ_KEY sent to a
// queue.type=BatchCQ topic is stored as one record (SendMessageProcessor's
// inner batch): one queue offset per inner message, batchUniqId in the answer,
// and a pull at any offset inside it returns the record, which the client
// unwraps (INNER_BATCH and NEED_UNWRAP set) and numbers from its queue offset
// (MessageDecoder.decodeMessage: base+i), the next offset past the batch.
func TestInnerBatchToBatchCQ(t *testing.T) {
	b := newTestBroker(t, nil)
	c := newTestConn(3)
	ctx := context.Background()
	resp := updateTopicAttrs(t, b, "BCQ", "+queue.type=BatchCQ")
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)

	for i, w := range []struct{ first, n int }{{0, 3}, {3, 2}} {
		resp, err := b.handleSendMessage(ctx, c, batchSendReq("BCQ", 1, w.first, w.n, fmt.Sprintf("UNIQ_KEY\x01B%d\x02", i)))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
		require.Equal(t, fmt.Sprint(w.first), ext(t, resp, "queueOffset"))
		require.Equal(t, fmt.Sprint("B", i), ext(t, resp, "batchUniqId"))
		require.Len(t, ext(t, resp, "msgId"), 32, "one record, one offset message id")
	}
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("BCQ", 1) == 5 }, 5*time.Second, 5*time.Millisecond)
	_, err := os.Stat(filepath.Join(b.conf().Store.StorePathRootDir, "batchconsumequeue", "BCQ", "1", "00000000000000000000"))
	require.NoError(t, err, "Java's path for a batch consume queue")
	_, err = os.Stat(filepath.Join(b.conf().Store.StorePathRootDir, "consumequeue", "BCQ"))
	require.True(t, os.IsNotExist(err), "no simple queue prepared for a BatchCQ topic")

	for off, want := range map[int64]struct{ base, n int }{0: {0, 3}, 2: {0, 3}, 3: {3, 2}, 4: {3, 2}} {
		req := pullReq("G", "BCQ", 1, off, codec.PullFlagSubscription, 0)
		req.Ext.Set("maxMsgNums", "1")
		pc := newTestConn(4)
		r, err := b.handlePullMessage(ctx, pc, req)
		require.NoError(t, err)
		require.Nil(t, r)
		pr := waitResponse(t, pc, 1)
		require.EqualValues(t, codec.RespSuccess, pr.Code, "offset %d", off)
		require.Equal(t, fmt.Sprint(want.base+want.n), ext(t, pr, "nextBeginOffset"), "offset %d", off)
		require.Equal(t, "5", ext(t, pr, "maxOffset"))
		msgs := decodeBody(t, pr.Body)
		require.Len(t, msgs, 1)
		m := msgs[0]
		require.Equal(t, codec.SysFlagInnerBatch|codec.SysFlagNeedUnwrap, m.SysFlag&(codec.SysFlagInnerBatch|codec.SysFlagNeedUnwrap))
		require.EqualValues(t, want.base, m.QueueOffset)
		props := codec.ParseProperties(m.Properties)
		require.Equal(t, fmt.Sprint(want.n), props[codec.PropInnerNum])
		require.Equal(t, fmt.Sprint(want.base), props[codec.PropInnerBase])
		require.Equal(t, "DefaultCluster", props[codec.PropCluster])
		// The client's unwrap: the batch body's messages, numbered base+i.
		it := codec.NewBatchIterator(m.Body)
		var e codec.BatchEntry
		i := 0
		for ; it.Next(&e); i++ {
			require.Equal(t, fmt.Sprint("m", want.base+i), string(e.Body))
			require.Equal(t, fmt.Sprint("I", want.base+i), codec.ParseProperties(e.Properties)[codec.PropUniqKey])
		}
		require.NoError(t, it.Err())
		require.Equal(t, want.n, i)
	}

	// Without a UNIQ_KEY on the batch, Java stores its messages one by one,
	// each its own unit of one.
	resp, err = b.handleSendMessage(ctx, c, batchSendReq("BCQ", 1, 5, 2, ""))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Equal(t, "5", ext(t, resp, "queueOffset"))
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("BCQ", 1) == 7 }, 5*time.Second, 5*time.Millisecond)
	r := b.st.GetMessage("G", "BCQ", 1, 6, 32, 1<<20, nil)
	require.Len(t, r.Records, 1)
	require.EqualValues(t, 7, r.NextBeginOffset)
	r.Release()

	// queryCq lists each unit once: 4 records hold the 7 offsets.
	q := codec.NewRequest(codec.ReqQueryConsumeQueue)
	for _, kv := range [][2]string{{"topic", "BCQ"}, {"queueId", "1"}, {"index", "0"}, {"count", "10"}, {"consumerGroup", "G"}} {
		q.Ext.Set(kv[0], kv[1])
	}
	qr, err := b.handleQueryConsumeQueue(ctx, c, q)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, qr.Code)
	require.Equal(t, 4, strings.Count(string(qr.Body), `"physicOffset"`), string(qr.Body))

	// HookUtils.checkInnerBatch: INNER_NUM without the flag, or the flag on a
	// topic that is not BatchCQ, is illegal.
	resp, err = b.handleSendMessage(ctx, c, sendReq("BCQ", 1, []byte("x"), "INNER_NUM\x013\x02"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespMessageIllegal, resp.Code)
	req := sendReq("PlainT", 0, []byte("x"), "")
	req.Ext.Set("sysFlag", fmt.Sprint(codec.SysFlagInnerBatch))
	resp, err = b.handleSendMessage(ctx, c, req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespMessageIllegal, resp.Code)
}

// TestBatchCQTopicsFromFile: what cmd gives store.Open, read from topics.json
// before the broker exists.
func TestBatchCQTopicsFromFile(t *testing.T) {
	cfg := testConfig(t)
	require.NoError(t, os.MkdirAll(cfg.ConfigDir(), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cfg.ConfigDir(), "topics.json"), []byte(`{"topicConfigTable":{`+
		`"BatchT":{"topicName":"BatchT","readQueueNums":4,"writeQueueNums":4,"perm":6,"attributes":{"queue.type":"BatchCQ"}},`+
		`"PlainT":{"topicName":"PlainT","readQueueNums":4,"writeQueueNums":4,"perm":6,"attributes":{"queue.type":"SimpleCQ"}}}}`), 0o644))
	isBatch, err := BatchCQTopics(cfg)
	require.NoError(t, err)
	require.True(t, isBatch("BatchT"))
	require.False(t, isBatch("PlainT"))
	require.False(t, isBatch("Unknown"))
}

// TestBatchCQGetStatsCountMessages: GROUP_GET_NUMS counts the messages a pull
// of inner batches returned (GetMessageResult.messageCount adds each unit's
// batchSize), not its records.
func TestBatchCQGetStatsCountMessages(t *testing.T) {
	b := newTestBroker(t, nil)
	b.admin.stats.SetManual(true)
	ctx := context.Background()
	c := newTestConn(7)
	require.EqualValues(t, codec.RespSuccess, updateTopicAttrs(t, b, "BStat", "+queue.type=BatchCQ").Code)
	for i, n := range []int{3, 2} {
		resp, err := b.handleSendMessage(ctx, c, batchSendReq("BStat", 0, i*3, n, fmt.Sprintf("UNIQ_KEY\x01S%d\x02", i)))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("BStat", 0) == 5 }, 5*time.Second, 5*time.Millisecond)
	_, err := b.handleHeartBeat(ctx, c, heartbeatReq(t, "cid-b", "BStatG", "BStat"))
	require.NoError(t, err)
	_, err = b.handlePullMessage(ctx, c, pullReq("BStatG", "BStat", 0, 0, 0, 0))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		c, _ := b.admin.stats.Counter("GROUP_GET_NUMS", "BStat@BStatG")
		return c != nil && c.Nums() == 5
	}, 5*time.Second, 5*time.Millisecond)
}
