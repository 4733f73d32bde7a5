package processor

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/processor/pop"
	"rmqd/processor/stats"
)

// statsCounters is how many topic and topic@group counters the stats keep.
func (b *Broker) statsCounters() (topics, groups int) {
	b.admin.stats.EachTopic(func(string, *stats.Counter) { topics++ })
	b.admin.stats.EachGroup(func(string, string, *stats.Counter) { groups++ })
	return topics, groups
}

// 200 topics are made by a send, pulled, given offsets, an admin reset and a
// POP retry topic, then deleted with their groups, as an admin tool does:
// the broker's tables are back to what they held before.
func TestTopicAndGroupChurnLeavesNothing(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	c := newTestConn(40001)
	baseTopics := len(b.topics.TopicNames())
	baseQueues := len(b.st.QueueTopics())
	baseStatT, baseStatG := b.statsCounters()
	const n = 200
	for i := range n {
		topic, group := fmt.Sprintf("ChurnT%d", i), fmt.Sprintf("ChurnG%d", i)
		resp, err := b.handleSendMessage(ctx, c, sendReq(topic, 0, []byte("x"), ""))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
		b.countGet(group, topic, 1, 1) // what the pull of it counts
		b.offsets.Commit(group, topic, 0, 1)
		b.offsets.AssignReset(group, topic, 1, 0)
		retry := pop.RetryTopics(topic, group)[1]
		b.topics.Update(NewTopicConfig(retry))
		b.offsets.Commit(group, retry, 0, 0)

		d := codec.NewRequest(codec.ReqDeleteTopicInBroker)
		d.Ext.Set("topic", topic)
		resp, err = b.handleDeleteTopicInBroker(ctx, c, d)
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
		g := codec.NewRequest(codec.ReqDeleteSubscriptiongroup)
		g.Ext.Set("groupName", group)
		g.Ext.Set("cleanOffset", "true")
		resp, err = b.handleDeleteSubscriptionGroup(ctx, c, g)
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)

		require.False(t, b.offsets.HasReset(group, topic, 1), "a reset outlived its topic")
		require.False(t, b.topics.Exists(retry), "the POP retry topic outlived its topic")
	}
	require.Len(t, b.topics.TopicNames(), baseTopics)
	require.Len(t, b.st.QueueTopics(), baseQueues)
	require.Empty(t, b.offsets.TopicsOfGroup("ChurnG7"))
	statT, statG := b.statsCounters()
	require.Equal(t, [2]int{baseStatT, baseStatG}, [2]int{statT, statG}, "stats counters (topics, topic@groups)")
}
