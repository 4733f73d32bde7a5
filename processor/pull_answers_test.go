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
