package processor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// A pull of a queue id past the topic's read queues is INVALID_PARAMETER, as
// 5.x PullMessageProcessor answers it (4.x said SYSTEM_ERROR); the client
// surfaces the code in its MQBrokerException.
func TestPullIllegalQueueIDIsInvalidParameter(t *testing.T) {
	b := newTestBroker(t, nil)
	b.topics.Update(func() TopicConfig { tc := NewTopicConfig("QI"); tc.ReadQueueNums, tc.WriteQueueNums = 2, 2; return tc }())
	for _, q := range []int32{-1, 2} {
		r, err := b.handlePullMessage(context.Background(), newTestConn(1), pullReq("G", "QI", q, 0, codec.PullFlagSubscription, 0))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespInvalidParameter, r.Code, "queue %d", q)
		require.Contains(t, r.Remark, "is illegal, topic:[QI] topicConfig.readQueueNums:[2]")
	}
}

// litePullMessageEnable=false refuses LITE_PULL_MESSAGE (NO_PERMISSION,
// forbiddenType BROKER_FORBIDDEN) and leaves PULL_MESSAGE served, as Java's
// PullMessageProcessor; it is read at each request, so updateBrokerConfig
// switches it at once.
func TestLitePullMessageEnable(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.LitePullMessageEnable = false })
	b.topics.Update(NewTopicConfig("LP"))
	lite := pullReq("G", "LP", 0, 0, codec.PullFlagSubscription, 0)
	lite.Code = codec.ReqLitePullMessage
	r, err := b.handlePullMessage(context.Background(), newTestConn(1), lite)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespNoPermission, r.Code)
	require.Contains(t, r.Remark, "for lite pull consumer is forbidden")
	require.Equal(t, "1", ext(t, r, "forbiddenType"))

	r, err = b.handlePullMessage(context.Background(), newTestConn(1), pullReq("G", "LP", 0, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespPullNotFound, r.Code)

	require.Contains(t, liveConfigKeys, "litePullMessageEnable")
	conf := DefaultBrokerConfig()
	require.True(t, conf.LitePullMessageEnable, "Java's default")
	_, err = conf.ApplyProperties(map[string]string{"litePullMessageEnable": "false"})
	require.NoError(t, err)
	require.False(t, conf.LitePullMessageEnable)
}
