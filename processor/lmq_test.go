package processor

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/store"
)

// newLMQBroker runs a broker with enableLmq and enableMultiDispatch (and no
// group auto-creation, so LMQ groups are known only as LMQ groups).
func newLMQBroker(t *testing.T, maxLMQ int) *testBroker {
	return newTestBrokerWith(t, func(c *BrokerConfig) {
		c.Store.EnableLmq, c.Store.EnableMultiDispatch = true, true
		c.AutoCreateSubscriptionGroup = false
	}, func(s *store.Config) {
		s.EnableLmq, s.EnableMultiDispatch = true, true
		if maxLMQ > 0 {
			s.MaxLmqConsumeQueueNum = maxLMQ
		}
	}, nil)
}

func lmqProps(list string) string {
	return "TAGS\x01t\x02WAIT\x01true\x02" + codec.PropInnerMultiDispatch + "\x01" + list + "\x02"
}

// A send naming LMQs in INNER_MULTI_DISPATCH is pulled from each LMQ (queue
// 0, no topic config) by an LMQ group (no group config), as rocketmq-mqtt does.
func TestLMQSendThenPull(t *testing.T) {
	b := newLMQBroker(t, 0)
	ctx := context.Background()
	c := newTestConn(41000)
	b.topics.Update(NewTopicConfig("Parent"))
	for i, list := range []string{"%LMQ%a,%LMQ%b", "%LMQ%a"} {
		resp, err := b.handleSendMessage(ctx, c, sendReq("Parent", 2, []byte{'m', byte('0' + i)}, lmqProps(list)))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
	waitQueued(b, "%LMQ%a", 2)

	r, err := b.handlePullMessage(ctx, c, pullReq("%LMQ%g", "%LMQ%a", 0, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.Nil(t, r)
	pr := waitResponse(t, c, 1)
	require.EqualValues(t, codec.RespSuccess, pr.Code, pr.Remark)
	require.Equal(t, "2", ext(t, pr, "nextBeginOffset"))
	msgs := decodeBody(t, pr.Body)
	require.Len(t, msgs, 2)
	require.Equal(t, "m0", string(msgs[0].Body))
	require.Equal(t, "Parent", msgs[0].Topic)
	// What the Java client reads to rewrite the queue offset (MQClientAPIImpl).
	off, _ := codec.PropertyValue(msgs[1].Properties, codec.PropInnerMultiQueueOffset)
	require.Equal(t, "1", off)
	_, hasWait := codec.PropertyValue(msgs[1].Properties, codec.PropWait)
	require.False(t, hasWait)

	// The LMQ has one queue; an unknown LMQ is an empty queue, not an unknown topic.
	r, err = b.handlePullMessage(ctx, c, pullReq("%LMQ%g", "%LMQ%a", 1, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespInvalidParameter, r.Code)
	r, err = b.handlePullMessage(ctx, c, pullReq("%LMQ%g", "%LMQ%none", 0, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespPullNotFound, r.Code)
	// A plain group still needs its config.
	r, err = b.handlePullMessage(ctx, c, pullReq("NoGroup", "%LMQ%a", 0, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSubscriptionGroupNotExist, r.Code)

	// QUERY/UPDATE_CONSUMER_OFFSET on the LMQ, kept in lmqConsumerOffset.json.
	u := codec.NewRequest(codec.ReqUpdateConsumerOffset)
	for _, kv := range [][2]string{{"consumerGroup", "%LMQ%g"}, {"topic", "%LMQ%a"}, {"queueId", "0"}, {"commitOffset", "2"}} {
		u.Ext.Set(kv[0], kv[1])
	}
	resp, _ := b.handleUpdateConsumerOffset(ctx, c, u)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	q := codec.NewRequest(codec.ReqQueryConsumerOffset)
	q.Ext.Set("consumerGroup", "%LMQ%g")
	q.Ext.Set("topic", "%LMQ%a")
	q.Ext.Set("queueId", "0")
	resp, _ = b.handleQueryConsumerOffset(ctx, c, q)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	require.Equal(t, "2", ext(t, resp, "offset"))
	require.NoError(t, b.offsets.Persist())
	data, err := os.ReadFile(filepath.Join(b.conf().ConfigDir(), "lmqConsumerOffset.json"))
	require.NoError(t, err)
	require.Contains(t, string(data), `"%LMQ%a@%LMQ%g":2`)

	// QUERY_ASSIGNMENT: the LMQ's one queue on this broker.
	hb, err := b.handleHeartBeat(ctx, c, heartbeatReq(t, "cid-1", "%LMQ%g", "%LMQ%a"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, hb.Code)
	ar, _ := b.handleQueryAssignment(ctx, c, queryAssignmentReq(t, "%LMQ%a", "%LMQ%g", "cid-1", "AVG"))
	require.Equal(t, []queueAssignment{{MessageQueue: assignedQueue{BrokerName: b.conf().BrokerName, QueueID: 0, Topic: "%LMQ%a"}, Mode: "PULL"}},
		assigned(t, ar))
}

// A pull held on an LMQ is answered when a message dispatched to it arrives
// (LmqPullRequestHoldService).
func TestLMQHeldPullWokenByArrival(t *testing.T) {
	b := newLMQBroker(t, 0)
	ctx := context.Background()
	c := newTestConn(41001)
	b.topics.Update(NewTopicConfig("Parent"))
	r, err := b.handlePullMessage(ctx, c, pullReq("%LMQ%g", "%LMQ%w", 0, 0, codec.PullFlagSubscription|codec.PullFlagSuspend, 20000))
	require.NoError(t, err)
	require.Nil(t, r)
	time.Sleep(50 * time.Millisecond)
	require.Empty(t, c.responses())
	resp, err := b.handleSendMessage(ctx, newTestConn(41002), sendReq("Parent", 0, []byte("wake"), lmqProps("%LMQ%w")))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	pr := waitResponse(t, c, 1)
	require.EqualValues(t, codec.RespSuccess, pr.Code)
	require.Equal(t, "wake", string(decodeBody(t, pr.Body)[0].Body))
}

// Past maxLmqConsumeQueueNum a send making a new LMQ is refused with Java's
// answer for LMQ_CONSUME_QUEUE_NUM_EXCEEDED; an unsafe LMQ name is illegal.
func TestLMQSendRefusals(t *testing.T) {
	b := newLMQBroker(t, 1)
	ctx := context.Background()
	c := newTestConn(41003)
	b.topics.Update(NewTopicConfig("Parent"))
	resp, err := b.handleSendMessage(ctx, c, sendReq("Parent", 0, []byte("x"), lmqProps("%LMQ%one")))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	resp, err = b.handleSendMessage(ctx, c, sendReq("Parent", 0, []byte("x"), lmqProps("%LMQ%two")))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSystemError, resp.Code)
	require.Equal(t, lmqExceededRemark, resp.Remark)
	resp, err = b.handleSendMessage(ctx, c, sendReq("Parent", 0, []byte("x"), lmqProps("%LMQ%one/../../etc")))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespMessageIllegal, resp.Code)
}

// With Java 5.5's enableLmqQuota the same refusal is answered as 5.5 does:
// LMQ_QUOTA_EXCEEDED (2017), which its proxy maps to LITE_TOPIC_QUOTA_EXCEEDED;
// an existing LMQ still takes messages, and nothing of the refused put lands.
func TestLMQQuotaAnswer(t *testing.T) {
	b := newTestBrokerWith(t, func(c *BrokerConfig) {
		c.Store.EnableLmq, c.Store.EnableMultiDispatch, c.Store.EnableLmqQuota = true, true, true
		c.AutoCreateSubscriptionGroup = false
	}, func(s *store.Config) {
		s.EnableLmq, s.EnableMultiDispatch, s.MaxLmqConsumeQueueNum = true, true, 1
	}, nil)
	ctx := context.Background()
	c := newTestConn(41004)
	b.topics.Update(NewTopicConfig("Parent"))
	send := func(lmq string) *codec.RemotingCommand {
		resp, err := b.handleSendMessage(ctx, c, sendReq("Parent", 0, []byte("x"), lmqProps(lmq)))
		require.NoError(t, err)
		return resp
	}
	require.EqualValues(t, codec.RespSuccess, send("%LMQ%one").Code)
	resp := send("%LMQ%two")
	require.EqualValues(t, codec.RespLMQQuotaExceeded, resp.Code)
	require.Equal(t, lmqQuotaRemark, resp.Remark)
	require.EqualValues(t, codec.RespSuccess, send("%LMQ%one").Code)
	require.EqualValues(t, 2, b.store.MaxOffsetInQueue("Parent", 0))
}
