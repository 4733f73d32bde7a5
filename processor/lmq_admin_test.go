package processor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// An admin reset of an LMQ group moves its one offset (whatever queue id is
// asked) and the next pull of the LMQ is told where to go, as Java's
// LmqConsumerOffsetManager.assignResetOffset does.
func TestLMQAdminResetMovesTheGroupsOffset(t *testing.T) {
	b := newLMQBroker(t, 0)
	ctx := context.Background()
	c := newTestConn(41100)
	b.topics.Update(NewTopicConfig("Parent"))
	for i := 0; i < 2; i++ {
		resp, err := b.handleSendMessage(ctx, c, sendReq("Parent", 0, []byte("m"), lmqProps("%LMQ%a")))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
	waitQueued(b, "%LMQ%a", 2)
	b.offsets.Commit("%LMQ%g", "%LMQ%a", 0, 2)

	req := codec.NewRequest(codec.ReqInvokeBrokerToResetOffset)
	req.Ext.Set("topic", "%LMQ%a")
	req.Ext.Set("group", "%LMQ%g")
	req.Ext.Set("timestamp", "0")
	req.Ext.Set("isForce", "true")
	resp, err := b.handleInvokeBrokerToResetOffset(ctx, c, req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Contains(t, string(resp.Body), `"queueId":0,"topic":"%LMQ%a"}:0`)
	require.EqualValues(t, 0, b.offsets.Query("%LMQ%g", "%LMQ%a", 0))
	require.EqualValues(t, 0, b.offsets.Query("%LMQ%g", "%LMQ%a", 3), "an LMQ group has one offset")

	r, err := b.handlePullMessage(ctx, c, pullReq("%LMQ%g", "%LMQ%a", 0, 2, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespPullOffsetMoved, r.Code)
	require.Equal(t, "0", ext(t, r, "nextBeginOffset"))
}

// The admin listings follow Java's: QUERY_TOPICS_BY_CONSUMER and
// QUERY_TOPIC_CONSUME_BY_WHO read ConsumerOffsetManager.offsetTable only
// (LmqConsumerOffsetManager does not override whichTopicByConsumer or
// whichGroupByTopic), while GET_ALL_CONSUMER_OFFSET encodes the whole manager,
// lmqOffsetTable included.
func TestLMQGroupOffsetsInAdminListings(t *testing.T) {
	b := newLMQBroker(t, 0)
	ctx := context.Background()
	c := newTestConn(41101)
	b.offsets.Commit("%LMQ%g", "%LMQ%a", 0, 7)
	b.offsets.Commit("PlainG", "%LMQ%a", 0, 3)

	q := codec.NewRequest(codec.ReqQueryTopicsByConsumer)
	q.Ext.Set("group", "%LMQ%g")
	resp, err := b.handleQueryTopicsByConsumer(ctx, c, q)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	require.Contains(t, string(resp.Body), `"topicList":[]`)

	w := codec.NewRequest(codec.ReqQueryTopicConsumeByWho)
	w.Ext.Set("topic", "%LMQ%a")
	resp, err = b.handleQueryTopicConsumeByWho(ctx, c, w)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	require.JSONEq(t, `{"groupList":["PlainG"]}`, string(resp.Body))

	resp, err = b.handleGetAllConsumerOffset(ctx, c, codec.NewRequest(codec.ReqGetAllConsumerOffset))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	require.Contains(t, string(resp.Body), `"lmqOffsetTable":{`+"\n\t\t"+`"%LMQ%a@%LMQ%g":7`)
	require.Contains(t, string(resp.Body), `"%LMQ%a@PlainG":{0:3}`)
}
