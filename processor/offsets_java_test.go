package processor

import (
	"context"
	"strings"
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

// GET_CONSUME_STATS' pullOffset is where the group's last pull of the queue
// left it, never below the committed offset (ConsumerOffsetManager's
// pullOffsetTable, AdminBrokerProcessor.getConsumeStats): mqadmin 5.x's
// consumerProgress prints pullOffset - consumerOffset as #Inflight, the
// messages pulled and not yet committed.
func TestConsumeStatsPullOffsetIsLastPull(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	c := newTestConn(1)
	for range 5 {
		_, err := b.handleSendMessage(ctx, c, sendReq("InflT", 0, []byte("m"), ""))
		require.NoError(t, err)
	}
	_, err := b.handleHeartBeat(ctx, c, heartbeatReq(t, "c1", "InflG", "InflT"))
	require.NoError(t, err)
	b.offsets.Commit("InflG", "InflT", 0, 1)

	stat := func() string {
		t.Helper()
		cs := codec.NewRequest(codec.ReqGetConsumeStats)
		cs.Ext.Set("consumerGroup", "InflG")
		cs.Ext.Set("topic", "InflT")
		r, _ := b.handleGetConsumeStats(ctx, c, cs)
		require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
		return string(r.Body)
	}
	require.Contains(t, stat(), `"consumerOffset":1,`)
	require.Contains(t, stat(), `"pullOffset":1}`, "no pull yet: the committed offset")

	n := len(c.responses())
	r, err := b.handlePullMessage(ctx, c, pullReq("InflG", "InflT", 0, 1, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	if r == nil {
		r = waitResponse(t, c, n+1)
	}
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	require.Equal(t, "5", ext(t, r, "nextBeginOffset"))
	require.Contains(t, stat(), `"consumerOffset":1,`)
	require.Contains(t, stat(), `"pullOffset":5}`, "4 messages in flight")
	bs := codec.NewRequest(codec.ReqGetBrokerConsumeStats)
	bs.Ext.Set("isOrder", "false")
	r, _ = b.handleGetBrokerConsumeStats(ctx, c, bs)
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	require.True(t, strings.HasSuffix(string(r.Body), `,"totalInflightDiff":4}`), string(r.Body))

	// A commit past the last pull shows no negative in-flight count.
	b.offsets.Commit("InflG", "InflT", 0, 5)
	require.Contains(t, stat(), `"pullOffset":5}`)

	// Deleting the group forgets its pulls, as removeOffset does.
	b.offsets.DeleteGroup("InflG")
	b.offsets.Commit("InflG", "InflT", 0, 2)
	require.Contains(t, stat(), `"pullOffset":2}`)
}

// An admin reset forgets where the group's pulls had got to: a group reset
// back while offline would otherwise show everything between the reset point
// and its last pull as in flight until it pulls again (Java keeps the old
// pull offset unless popConsumerKVServiceEnable).
func TestResetForgetsPullOffset(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	c := newTestConn(1)
	for range 3 {
		_, err := b.handleSendMessage(ctx, c, sendReq("RstPT", 0, []byte("m"), ""))
		require.NoError(t, err)
	}
	_, err := b.handleHeartBeat(ctx, c, heartbeatReq(t, "c1", "RstPG", "RstPT"))
	require.NoError(t, err)
	b.offsets.Commit("RstPG", "RstPT", 0, 3)
	b.offsets.CommitPull("RstPG", "RstPT", 0, 3)

	req := codec.NewRequest(codec.ReqInvokeBrokerToResetOffset)
	req.Ext.Set("topic", "RstPT")
	req.Ext.Set("group", "RstPG")
	req.Ext.Set("timestamp", "0")
	req.Ext.Set("isForce", "true")
	resp, _ := b.handleInvokeBrokerToResetOffset(ctx, c, req)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.EqualValues(t, 0, b.offsets.QueryPull("RstPG", "RstPT", 0))
}
