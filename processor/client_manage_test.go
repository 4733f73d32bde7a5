package processor

import (
	"context"
	"encoding/json"
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

// v2Heartbeat is heartbeatReq as a 5.x client with useHeartbeatV2 sends it:
// with its fingerprint, and without the subscriptions when withoutSub.
func v2Heartbeat(t *testing.T, clientID, group string, fp int32, withoutSub bool) *codec.RemotingCommand {
	t.Helper()
	req := heartbeatReq(t, clientID, group, "TopicH")
	hb, err := codec.DecodeHeartbeatData(req.Body)
	require.NoError(t, err)
	hb.HeartbeatFingerprint, hb.WithoutSub = fp, withoutSub
	if withoutSub {
		hb.ConsumerDataSet[0].SubscriptionDataSet = nil
	}
	req.Body, err = json.Marshal(hb)
	require.NoError(t, err)
	return req
}

// TestHeartbeatV2: the broker says it takes heartbeat V2
// (IS_SUPPORT_HEART_BEAT_V2), so 5.x clients with useHeartbeatV2 send the
// subscriptions only when their fingerprint changed, and IS_SUB_CHANGE tells a
// client to send them again: always after a V1 heartbeat, when another
// fingerprint was last seen for the group, and (unlike Java, which then leaves
// the group without subscriptions until the client's fingerprint changes) when
// a heartbeat without them reaches a broker that does not know the group, as
// after a restart.
func TestHeartbeatV2(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	c1, c2 := newTestConn(10), newTestConn(11)
	beat := func(c *testConn, req *codec.RemotingCommand) (support, subChange string) {
		t.Helper()
		resp, err := b.handleHeartBeat(ctx, c, req)
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
		support, _ = resp.Ext.Get("IS_SUPPORT_HEART_BEAT_V2")
		subChange, _ = resp.Ext.Get("IS_SUB_CHANGE")
		return support, subChange
	}
	s, ch := beat(c1, heartbeatReq(t, "10.0.0.1@1", "V1", "TopicH"))
	require.Equal(t, [2]string{"true", "true"}, [2]string{s, ch}, "V1 heartbeat")

	s, ch = beat(c1, v2Heartbeat(t, "10.0.0.1@1", "CG", 5, false))
	require.Equal(t, [2]string{"true", "false"}, [2]string{s, ch}, "first full V2 heartbeat")
	s, ch = beat(c1, v2Heartbeat(t, "10.0.0.1@1", "CG", 5, true))
	require.Equal(t, [2]string{"true", "false"}, [2]string{s, ch}, "same fingerprint without subscriptions")
	g, ok := b.consumers.Group("CG")
	require.True(t, ok)
	require.Contains(t, g.Subscriptions, "TopicH", "kept from the full heartbeat")
	_, ch = beat(c2, v2Heartbeat(t, "10.0.0.1@2", "CG", 6, false))
	require.Equal(t, "true", ch, "another fingerprint for the group")

	_, ch = beat(c1, v2Heartbeat(t, "10.0.0.1@1", "Unknown", 5, true))
	require.Equal(t, "true", ch, "no subscriptions known for the group: send them")
	_, ch = beat(c1, v2Heartbeat(t, "10.0.0.1@1", "Unknown", 5, false))
	require.Equal(t, "false", ch)
}
