package processor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/processor/meta"
)

// UPDATE_CONSUMER_OFFSET for a group the broker does not know is refused and
// creates nothing, as Java 5.x's containsSubscriptionGroup check does: an
// offset commit is no way to make a subscription group, even with
// autoCreateSubscriptionGroup on (that is the heartbeat's job).
func TestUpdateConsumerOffsetUnknownGroupNotCreated(t *testing.T) {
	b := newTestBroker(t, nil)
	require.True(t, b.conf().AutoCreateSubscriptionGroup)
	ctx := context.Background()
	c := newTestConn(1)
	_, err := b.handleSendMessage(ctx, c, sendReq("UpdT", 0, []byte("m"), ""))
	require.NoError(t, err)

	u := codec.NewRequest(codec.ReqUpdateConsumerOffset)
	for _, kv := range [][2]string{{"consumerGroup", "NoSuchG"}, {"topic", "UpdT"}, {"queueId", "0"}, {"commitOffset", "1"}} {
		u.Ext.Set(kv[0], kv[1])
	}
	resp, _ := b.handleUpdateConsumerOffset(ctx, c, u)
	require.EqualValues(t, codec.RespSubscriptionGroupNotExist, resp.Code, resp.Remark)
	require.Equal(t, "Group NoSuchG not exist!", resp.Remark)
	_, made := b.groups.Get("NoSuchG")
	require.False(t, made, "an offset commit created the group")
	require.EqualValues(t, -1, b.offsets.Query("NoSuchG", "UpdT", 0))

	u.Ext.Set("consumerGroup", "NoSuchG")
	u.Ext.Set("topic", "NoSuchT")
	require.NoError(t, b.groups.Update(meta.NewSubscriptionGroupConfig("NoSuchG")))
	resp, _ = b.handleUpdateConsumerOffset(ctx, c, u)
	require.EqualValues(t, codec.RespTopicNotExist, resp.Code, resp.Remark)
	require.Equal(t, "Topic NoSuchT not exist!", resp.Remark)
}

// A server-side reset is refused by a slave (AdminBrokerProcessor.resetOffsetInner):
// its offsets are the master's copy, overwritten by the next sync, and a
// reset pending there would move a consumer that pulls from it for nothing.
func TestServerSideResetOffsetRefusedOnSlave(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	c := newTestConn(1)
	_, err := b.handleSendMessage(ctx, c, sendReq("SlaveResetT", 0, []byte("m"), ""))
	require.NoError(t, err)
	_, err = b.handleHeartBeat(ctx, c, heartbeatReq(t, "c1", "SRG", "SlaveResetT"))
	require.NoError(t, err)
	b.setRole(RoleSlave, 1)

	req := codec.NewRequest(codec.ReqInvokeBrokerToResetOffset)
	req.Ext.Set("topic", "SlaveResetT")
	req.Ext.Set("group", "SRG")
	req.Ext.Set("timestamp", "0")
	req.Ext.Set("isForce", "true")
	resp, _ := b.handleInvokeBrokerToResetOffset(ctx, c, req)
	require.EqualValues(t, codec.RespSystemError, resp.Code, resp.Remark)
	require.Equal(t, "Can not reset offset in slave broker", resp.Remark)
	require.False(t, b.offsets.HasReset("SRG", "SlaveResetT", 0))
}
