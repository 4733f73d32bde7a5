package processor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// TestHeartbeatOfUnknownGroupWithoutAutoCreate: with autoCreateSubscriptionGroup
// off, a consumer of a group the broker does not know is not registered (Java's
// heartBeat skips a group findSubscriptionGroupConfig cannot find): no retry
// topic, not listed to its peers or to mqadmin; its producer groups still are.
func TestHeartbeatOfUnknownGroupWithoutAutoCreate(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.AutoCreateSubscriptionGroup = false })
	ctx := context.Background()
	c := newTestConn(10)
	resp, err := b.handleHeartBeat(ctx, c, heartbeatReq(t, "10.0.0.1@1", "CG", "TopicH"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	_, ok := b.topics.Select("%RETRY%CG")
	require.False(t, ok, "retry topic of an unknown group")
	require.Empty(t, b.consumers.ClientIDs("CG"))
	require.Zero(t, c.onewayCount(), "told of a group it is not in")

	req := codec.NewRequest(codec.ReqGetConsumerListByGroup)
	req.Ext.Set("consumerGroup", "CG")
	resp, err = b.handleGetConsumerListByGroup(ctx, c, req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSystemError, resp.Code)
	require.Equal(t, "no consumer for this group, CG", resp.Remark)

	req = codec.NewRequest(codec.ReqGetConsumerConnectionList)
	req.Ext.Set("consumerGroup", "CG")
	resp, err = b.handleGetConsumerConnectionList(ctx, c, req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespConsumerNotOnline, resp.Code)

	require.Len(t, b.producers.Channels("PG"), 1, "producer groups need no subscription group")

	// Once the group is created, the next heartbeat registers the consumer.
	require.NoError(t, b.groups.Update(NewSubscriptionGroupConfig("CG")))
	resp, err = b.handleHeartBeat(ctx, c, heartbeatReq(t, "10.0.0.1@1", "CG", "TopicH"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Equal(t, []string{"10.0.0.1@1"}, b.consumers.ClientIDs("CG"))
	_, ok = b.topics.Select("%RETRY%CG")
	require.True(t, ok)
}

// TestCloseNotifiesOnlyWhenBrokerAllows: notifyConsumerIdsChangedEnable=false
// in the broker's config silences NOTIFY_CONSUMER_IDS_CHANGED on a connection's
// close too, not only on heartbeats and unregisters (Java's listener checks it
// for every change event).
func TestCloseNotifiesOnlyWhenBrokerAllows(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.NotifyConsumerIdsChanged = false })
	ctx := context.Background()
	c1, c2 := newTestConn(10), newTestConn(11)
	for i, c := range []*testConn{c1, c2} {
		resp, err := b.handleHeartBeat(ctx, c, heartbeatReq(t, "10.0.0.1@"+string(rune('1'+i)), "CG", "TopicH"))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
	b.OnClose(c2)
	require.Equal(t, []string{"10.0.0.1@1"}, b.consumers.ClientIDs("CG"))
	require.Zero(t, c1.onewayCount())
}
