package processor

import (
	"context"
	"testing"
	"time"

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

// validateSystemTopicWhenUpdateTopic=false lets the admin codes create,
// update and delete system topics, as Java's AdminBrokerProcessor does.
func TestSystemTopicsUpdatableWhenNotValidated(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.ValidateSystemTopicWhenUpdateTopic = false })
	h := b.Handlers()
	do := func(req *codec.RemotingCommand) *codec.RemotingCommand {
		resp, err := h[req.Code].ProcessRequest(context.Background(), newTestConn(1), req)
		require.NoError(t, err)
		return resp
	}
	const topic = "rmq_sys_flag_test"
	create := codec.NewRequest(codec.ReqUpdateAndCreateTopic)
	for k, v := range map[string]string{"topic": topic, "readQueueNums": "2", "writeQueueNums": "2", "perm": "6"} {
		create.Ext.Set(k, v)
	}
	resp := do(create)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	tc, ok := b.topics.Select(topic)
	require.True(t, ok)
	require.EqualValues(t, 2, tc.ReadQueueNums)

	list := codec.NewRequest(codec.ReqUpdateAndCreateTopicList)
	list.Body = []byte(`{"topicConfigList":[{"topicName":"` + TopicSchedule + `","readQueueNums":4,"writeQueueNums":4,"perm":6}]}`)
	resp = do(list)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)

	del := codec.NewRequest(codec.ReqDeleteTopicInBroker)
	del.Ext.Set("topic", topic)
	resp = do(del)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.False(t, b.topics.Exists(topic))
}

// enableRegisterProducer=false with rejectTransactionMessage=true registers
// no new producer from a heartbeat, and keeps the ones already known
// (ProducerManager.registerProducer); either key alone changes nothing.
func TestHeartbeatRegistersNoProducerWhenDisabled(t *testing.T) {
	for _, tc := range []struct {
		reject, enable bool
		want           int
	}{{true, false, 0}, {false, false, 2}, {true, true, 2}} {
		b := newTestBroker(t, func(c *BrokerConfig) {
			c.RejectTransactionMessage, c.EnableRegisterProducer = tc.reject, tc.enable
		})
		resp, err := b.handleHeartBeat(context.Background(), newTestConn(1), groupsHeartbeat(t, [2]int{0, 2}, [2]int{}))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
		require.Equal(t, tc.want, producerGroupCount(b), "reject=%v enable=%v", tc.reject, tc.enable)
	}
	// Known producers stay registered and are renewed.
	b := newTestBroker(t, func(c *BrokerConfig) { c.RejectTransactionMessage = true })
	conn := newTestConn(2)
	_, err := b.handleHeartBeat(context.Background(), conn, groupsHeartbeat(t, [2]int{0, 1}, [2]int{}))
	require.NoError(t, err)
	_, _, err = b.updateConfig(map[string]string{"enableRegisterProducer": "false"})
	require.NoError(t, err)
	_, err = b.handleHeartBeat(context.Background(), conn, groupsHeartbeat(t, [2]int{0, 2}, [2]int{}))
	require.NoError(t, err)
	require.Equal(t, 1, producerGroupCount(b))
}

// enableCreateSysGroup (default true) auto-creates a CID_RMQ_SYS_ group with
// autoCreateSubscriptionGroup off (SubscriptionGroupManager.findSubscriptionGroupConfig).
func TestSysGroupAutoCreatedWithoutAutoCreate(t *testing.T) {
	for _, enable := range []bool{true, false} {
		b := newTestBroker(t, func(c *BrokerConfig) {
			c.AutoCreateSubscriptionGroup, c.EnableCreateSysGroup = false, enable
		})
		_, ok := b.groups.Find("CID_RMQ_SYS_FLAG")
		require.Equal(t, enable, ok, "enableCreateSysGroup=%v", enable)
		_, ok = b.groups.Find("GID_FLAG")
		require.False(t, ok)
		_, ok = b.groups.Find("cid_rmq_sys_lower") // Java's startsWith is case-sensitive
		require.False(t, ok)
	}
}

// A heartbeat makes its group's retry topic order when the group subscribes
// an order topic, and sets the flag on an existing one as the subscriptions
// change (ClientManageProcessor.heartBeat: hasOrderTopicSub).
func TestHeartbeatRetryTopicFollowsOrderSubscription(t *testing.T) {
	b := newTestBroker(t, nil)
	ord := NewTopicConfig("FlagOrderT")
	ord.Order = true
	b.topics.Update(ord, NewTopicConfig("FlagPlainT"))
	conn := newTestConn(3)
	beat := func(topics ...string) TopicConfig {
		resp, err := b.handleHeartBeat(context.Background(), conn, heartbeatReq(t, "10.0.0.9@1", "FlagOrderG", topics...))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
		tc, ok := b.topics.Select("%RETRY%FlagOrderG")
		require.True(t, ok)
		return tc
	}
	tc := beat("FlagPlainT", "FlagOrderT")
	require.True(t, tc.Order)
	require.Equal(t, "SINGLE_TAG", tc.TopicFilterType)
	require.Empty(t, tc.Attributes)
	require.False(t, beat("FlagPlainT").Order)
	require.True(t, beat("FlagOrderT").Order)
}

// deadlineConn records the deadline the broker gives a call to the client.
type deadlineConn struct {
	*testConn
	left time.Duration
}

func (c *deadlineConn) Invoke(ctx context.Context, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	if d, ok := ctx.Deadline(); ok {
		c.left = time.Until(d)
	}
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// The push of a reply waits 10 s for the requester, as Java's
// Broker2Client.callClient (invokeSync 10000).
func TestReplyPushWaitsTenSeconds(t *testing.T) {
	b := newTestBroker(t, nil)
	requester := &deadlineConn{testConn: newTestConn(12)}
	_, err := b.handleHeartBeat(context.Background(), requester, heartbeatReq(t, "req-10s", "CG"))
	require.NoError(t, err)
	resp, err := b.handleSendReplyMessage(context.Background(), newTestConn(13), replyReq("req-10s"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Greater(t, requester.left, 9*time.Second)
	require.LessOrEqual(t, requester.left, 10*time.Second)
}
