package processor

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// pullAll pulls queue q of topic from offset 0 with an explicit subscription
// and returns the decoded messages.
func pullAll(t *testing.T, b *testBroker, topic string, q int32) []codec.Message {
	t.Helper()
	c := newTestConn(99)
	r, err := b.handlePullMessage(context.Background(), c, pullReq("G_check", topic, q, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	if r != nil {
		require.Contains(t, []int32{codec.RespPullNotFound, codec.RespPullOffsetMoved}, r.Code, r.Remark)
		return nil
	}
	return decodeBody(t, waitResponse(t, c, 1).Body)
}

func TestDelayedMessageIsDeliveredLater(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.Store.MessageDelayLevel = "1s 2s" })
	ctx := context.Background()
	c := newTestConn(1)
	start := time.Now()
	// Level 5 is capped to the last level (2 s).
	resp, err := b.handleSendMessage(ctx, c, sendReq("DelayT", 0, []byte("later"), "DELAY\x015\x02TAGS\x01x\x02"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Equal(t, "0", ext(t, resp, "queueId"))
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue(TopicSchedule, 1) == 1 }, 5*time.Second, 10*time.Millisecond)
	require.EqualValues(t, 0, b.st.MaxOffsetInQueue("DelayT", 0))

	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("DelayT", 0) == 1 }, 10*time.Second, 20*time.Millisecond)
	require.GreaterOrEqual(t, time.Since(start), 1900*time.Millisecond)
	msgs := pullAll(t, b, "DelayT", 0)
	require.Len(t, msgs, 1)
	require.Equal(t, "later", string(msgs[0].Body))
	// Kept as Apache 5.3.3 delivers it (the properties string is built before DELAY is cleared).
	dl, _ := codec.PropertyValue(msgs[0].Properties, codec.PropDelay)
	require.Equal(t, "2", dl)
	rt, _ := codec.PropertyValue(msgs[0].Properties, codec.PropRealTopic)
	require.Equal(t, "DelayT", rt)
	require.NoError(t, b.schedule.Persist())
	require.EqualValues(t, 1, b.schedule.Offset(2))
}

func sendBackReq(offset int64, group string, delay int32, max int32) *codec.RemotingCommand {
	req := codec.NewRequest(codec.ReqConsumerSendMsgBack)
	req.Version = 317
	req.Ext.Set("offset", fmt.Sprint(offset))
	req.Ext.Set("group", group)
	req.Ext.Set("delayLevel", fmt.Sprint(delay))
	req.Ext.Set("maxReconsumeTimes", fmt.Sprint(max))
	return req
}

func TestConsumerSendMsgBack(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.Store.MessageDelayLevel = "1s 1s 1s 1s" })
	ctx := context.Background()
	c := newTestConn(1)
	resp, err := b.handleSendMessage(ctx, c, sendReq("BackT", 0, []byte("fail-me"), "TAGS\x01x\x02"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("BackT", 0) == 1 }, 5*time.Second, 10*time.Millisecond)
	orig := pullAll(t, b, "BackT", 0)[0]

	// delayLevel 0 → 3 + reconsumeTimes, capped to the last level.
	resp, err = b.handleConsumerSendMsgBack(ctx, c, sendBackReq(orig.CommitLogOffset, "CG", 0, 16))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	_, ok := b.topics.Select("%RETRY%CG")
	require.True(t, ok)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("%RETRY%CG", 0) == 1 }, 10*time.Second, 20*time.Millisecond)
	retry := pullAll(t, b, "%RETRY%CG", 0)
	require.Len(t, retry, 1)
	require.Equal(t, "fail-me", string(retry[0].Body))
	require.EqualValues(t, 1, retry[0].ReconsumeTimes)
	rt, _ := codec.PropertyValue(retry[0].Properties, codec.PropRetryTopic)
	require.Equal(t, "BackT", rt)
	_, ok = codec.PropertyValue(retry[0].Properties, codec.PropOriginMessageID)
	require.True(t, ok)

	// Exhausted → DLQ at once.
	resp, err = b.handleConsumerSendMsgBack(ctx, c, sendBackReq(retry[0].CommitLogOffset, "CG", 0, 1))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("%DLQ%CG", 0) == 1 }, 5*time.Second, 10*time.Millisecond)
	dlq := pullAll(t, b, "%DLQ%CG", 0)
	require.Len(t, dlq, 1)
	require.EqualValues(t, 2, dlq[0].ReconsumeTimes)
	// Java's setDelayTimeLevel(0) leaves DELAY=0 on a DLQ message; the origin id stays the first one.
	d, _ := codec.PropertyValue(dlq[0].Properties, codec.PropDelay)
	require.Equal(t, "0", d)
	o1, _ := codec.PropertyValue(retry[0].Properties, codec.PropOriginMessageID)
	o2, _ := codec.PropertyValue(dlq[0].Properties, codec.PropOriginMessageID)
	require.Equal(t, o1, o2)

	// Unknown offset.
	resp, _ = b.handleConsumerSendMsgBack(ctx, c, sendBackReq(1<<40, "CG", 0, 16))
	require.EqualValues(t, codec.RespSystemError, resp.Code)
}
