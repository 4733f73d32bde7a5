package processor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/processor/pop"
)

// clearRetryTopicWhenDeleteTopic=false keeps the groups' POP retry topics
// when their topic is deleted (AdminBrokerProcessor.deleteTopic).
func TestDeleteTopicKeepsPopRetryWhenNotClearing(t *testing.T) {
	for _, clear := range []bool{true, false} {
		b := newTestBroker(t, func(c *BrokerConfig) { c.ClearRetryTopicWhenDeleteTopic = clear })
		topic, group := "FlagT", "FlagG"
		b.offsets.Commit(group, topic, 0, 1)
		retry := pop.RetryTopics(topic, group)[1]
		b.topics.Update(NewTopicConfig(topic))
		b.topics.Update(NewTopicConfig(retry))
		d := codec.NewRequest(codec.ReqDeleteTopicInBroker)
		d.Ext.Set("topic", topic)
		resp, err := b.handleDeleteTopicInBroker(context.Background(), newTestConn(1), d)
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
		require.False(t, b.topics.Exists(topic))
		require.Equal(t, !clear, b.topics.Exists(retry), "clearRetryTopicWhenDeleteTopic=%v", clear)
	}
}
