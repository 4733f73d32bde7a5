package processor

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// TestRejectPullConsumerEnable: with rejectPullConsumerEnable a lite pull
// consumer's heartbeat registers nothing for its group, and its pulls are
// SUBSCRIPTION_NOT_EXIST with Java's remark; a push consumer's connection and
// the system groups still pull; off, the pull consumer is served (Java's
// ClientManageProcessor.heartBeat and PullMessageProcessor).
func TestRejectPullConsumerEnable(t *testing.T) {
	ctx := context.Background()
	b := newTestBroker(t, func(c *BrokerConfig) { c.RejectPullConsumerEnable = true })
	b.topics.Update(NewTopicConfig("RP"))

	lite, push := newTestConn(1), newTestConn(2)
	hb := heartbeatReq(t, "10.0.0.1@lite", "LiteG", "RP")
	var data codec.HeartbeatData
	require.NoError(t, json.Unmarshal(hb.Body, &data))
	data.ConsumerDataSet[0].ConsumeType = consumeActively
	body, err := json.Marshal(data)
	require.NoError(t, err)
	hb.Body = body
	r, err := b.handleHeartBeat(ctx, lite, hb)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code)
	require.Empty(t, b.consumers.ClientIDs("LiteG"), "a pull consumer is not registered")
	_, ok := b.topics.Select("%RETRY%LiteG")
	require.False(t, ok, "no retry topic for a rejected pull consumer")

	r, err = b.handlePullMessage(ctx, lite, pullReq("LiteG", "RP", 0, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSubscriptionNotExist, r.Code)
	require.Equal(t, rejectPullConsumerRemark, r.Remark)

	r, err = b.handleHeartBeat(ctx, push, heartbeatReq(t, "10.0.0.1@push", "PushG", "RP"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code)
	r, err = b.handlePullMessage(ctx, push, pullReq("PushG", "RP", 0, 0, 0, 0))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespPullNotFound, r.Code, r.Remark)

	r, err = b.handlePullMessage(ctx, lite, pullReq("TOOLS_CONSUMER", "RP", 0, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespPullNotFound, r.Code, r.Remark)

	// Read at each request: switched off, the same pull is served.
	_, _, err = b.updateConfig(map[string]string{"rejectPullConsumerEnable": "false"})
	require.NoError(t, err)
	r, err = b.handlePullMessage(ctx, lite, pullReq("LiteG", "RP", 0, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespPullNotFound, r.Code, r.Remark)
	require.Contains(t, liveConfigKeys, "rejectPullConsumerEnable")
	require.False(t, DefaultBrokerConfig().RejectPullConsumerEnable, "Java's default")
}
