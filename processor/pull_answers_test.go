package processor

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/store"
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

// Every NO_PERMISSION pull answer carries Java's forbiddenType: broker (1),
// group (2), topic (3), broadcast disabled (4).
func TestPullForbiddenType(t *testing.T) {
	ctx := context.Background()
	b := newTestBroker(t, func(c *BrokerConfig) { c.BrokerPermission = PermWrite })
	b.topics.Update(NewTopicConfig("FT"))
	r, err := b.handlePullMessage(ctx, newTestConn(1), pullReq("G", "FT", 0, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespNoPermission, r.Code)
	require.Equal(t, "1", ext(t, r, "forbiddenType"))

	b = newTestBroker(t, nil)
	off := NewSubscriptionGroupConfig("Off")
	off.ConsumeEnable = false
	noBC := NewSubscriptionGroupConfig("NoBC")
	noBC.ConsumeBroadcastEnable = false
	require.NoError(t, b.groups.Update(off, noBC))
	wo := NewTopicConfig("WO")
	wo.Perm = PermWrite
	b.topics.Update(NewTopicConfig("FT"), wo)
	hb := heartbeatReq(t, "c1", "NoBC", "FT")
	hb.Body = bytes.Replace(hb.Body, []byte(`"CLUSTERING"`), []byte(`"BROADCASTING"`), 1)
	c := newTestConn(2)
	resp, err := b.handleHeartBeat(ctx, c, hb)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	for _, tc := range []struct {
		group, topic string
		flag         int32
		want         string
	}{{"Off", "FT", codec.PullFlagSubscription, "2"}, {"G", "WO", codec.PullFlagSubscription, "3"}, {"NoBC", "FT", 0, "4"}} {
		r, err := b.handlePullMessage(ctx, c, pullReq(tc.group, tc.topic, 0, 0, tc.flag, 0))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespNoPermission, r.Code, "%s %s: %s", tc.group, tc.topic, r.Remark)
		require.Equal(t, tc.want, ext(t, r, "forbiddenType"), "%s %s", tc.group, tc.topic)
	}
}

// A pull without maxMsgBytes is bounded by the store's transfer limits alone:
// raising maxTransferBytesOnMessageInMemory lets it return more than 256 KiB,
// as Java's broker does (it passes no byte bound of its own).
func TestPullBytesFollowStoreLimit(t *testing.T) {
	b := newTestBrokerWith(t, nil, func(s *store.Config) { s.MaxTransferBytesOnMessageInMemory = 1 << 20 }, nil)
	b.topics.Update(NewTopicConfig("Big"))
	ctx := context.Background()
	body := bytes.Repeat([]byte("x"), 100<<10)
	for i := 0; i < 5; i++ {
		r, err := b.handleSendMessage(ctx, newTestConn(1), sendReq("Big", 0, body, ""))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, r.Code)
	}
	waitQueued(b, "Big", 5)
	c := newTestConn(2)
	r, err := b.handlePullMessage(ctx, c, pullReq("G", "Big", 0, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.Nil(t, r, "written by the handler")
	pr := waitResponse(t, c, 1)
	require.EqualValues(t, codec.RespSuccess, pr.Code)
	require.Equal(t, 5, len(decodeBody(t, pr.Body)))
	require.Equal(t, "5", ext(t, pr, "nextBeginOffset"))
}

// With slaveReadEnable, a consumer behind the hot end of the commitlog is
// sent to whichBrokerWhenConsumeSlowly whatever the pull found: also when
// its filter matched none of the cold messages it scanned
// (GetMessageResult.suggestPullingFromSlave is set by the scan, not by what
// was returned).
func TestPullSuggestsSlaveWhenColdAndUnmatched(t *testing.T) {
	b := newTestBrokerWith(t, func(c *BrokerConfig) { c.SlaveReadEnable = true },
		func(s *store.Config) { s.AccessMessageInMemoryMaxRatio = 0 }, nil)
	ctx := context.Background()
	g := NewSubscriptionGroupConfig("GC")
	g.WhichBrokerWhenConsumeSlowly = 1
	require.NoError(t, b.groups.Update(g))
	b.topics.Update(NewTopicConfig("Cold"))
	for i := 0; i < 3; i++ {
		r, err := b.handleSendMessage(ctx, newTestConn(1), sendReq("Cold", 0, []byte("x"), "TAGS\x01a\x02"))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, r.Code)
	}
	waitQueued(b, "Cold", 3)
	req := pullReq("GC", "Cold", 0, 0, codec.PullFlagSubscription, 0)
	req.Ext.Set("subscription", "b")
	r, err := b.handlePullMessage(ctx, newTestConn(2), req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespPullRetryImmediately, r.Code, r.Remark)
	require.Equal(t, "3", ext(t, r, "nextBeginOffset"))
	require.Equal(t, "1", ext(t, r, "suggestWhichBrokerId"))
}

// The PULL_OFFSET_MOVED of a server-side reset suggests a broker as any pull
// answer does: with slaveReadEnable, the group's brokerId.
func TestPullResetSuggestsGroupBroker(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.SlaveReadEnable, c.UseServerSideResetOffset = true, true })
	g := NewSubscriptionGroupConfig("GR")
	g.BrokerID = 1
	require.NoError(t, b.groups.Update(g))
	b.topics.Update(NewTopicConfig("RT"))
	b.offsets.AssignReset("GR", "RT", 0, 0)
	r, err := b.handlePullMessage(context.Background(), newTestConn(1), pullReq("GR", "RT", 0, 5, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespPullOffsetMoved, r.Code)
	require.Equal(t, "0", ext(t, r, "nextBeginOffset"))
	require.Equal(t, "1", ext(t, r, "suggestWhichBrokerId"))
}

// A held pull that reads the group's subscription from its heartbeats (no
// subscription flag, the Java push consumer's default) is re-run with the
// subscription the group has when it wakes, as Java re-runs the whole
// request: a consumer that re-subscribed meanwhile gets the message its new
// subscription wants, not a PULL_RETRY_IMMEDIATELY past it.
func TestHeldPullUsesCurrentSubscription(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	b.topics.Update(func() TopicConfig { tc := NewTopicConfig("RS"); tc.ReadQueueNums, tc.WriteQueueNums = 1, 1; return tc }())
	c := newTestConn(5)
	subscribe := func(tag string, version int64) {
		hb := codec.HeartbeatData{ClientID: "c1", ConsumerDataSet: []codec.ConsumerData{{GroupName: "GRS",
			ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_FIRST_OFFSET",
			SubscriptionDataSet: []codec.SubscriptionData{{Topic: "RS", SubString: tag, ExpressionType: "TAG",
				SubVersion: version, CodeSet: codec.CodeSet{}, TagsSet: []string{tag}}}}}}
		body, err := json.Marshal(hb)
		require.NoError(t, err)
		req := codec.NewRequest(codec.ReqHeartBeat)
		req.Body = body
		r, err := b.handleHeartBeat(ctx, c, req)
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, r.Code)
	}
	subscribe("a", 1)
	pr := pullReq("GRS", "RS", 0, 0, codec.PullFlagSuspend, 400)
	pr.Ext.Set("subVersion", "1")
	r, err := b.handlePullMessage(ctx, c, pr)
	require.NoError(t, err)
	require.Nil(t, r, "held")
	subscribe("b", 2)
	resp, err := b.handleSendMessage(ctx, newTestConn(6), sendReq("RS", 0, []byte("for b"), "TAGS\x01b\x02"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	got := waitResponse(t, c, 1)
	require.EqualValues(t, codec.RespSuccess, got.Code, "%s next %s", got.Remark, ext(t, got, "nextBeginOffset"))
	require.Equal(t, "for b", string(decodeBody(t, got.Body)[0].Body))
}
