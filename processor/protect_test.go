package processor

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// TestProtectBrokerDisablesSlowGroup: with disableConsumeIfConsumerReadSlowly
// a group whose pull left more than consumerFallbehindThreshold commitlog
// bytes behind it is turned consumeEnable=false by the periodic protectBroker
// (Java's BrokerController.protectBroker); GET_SUBSCRIPTIONGROUP_CONFIG shows
// it, its pulls are NO_PERMISSION (forbiddenType 2) and an admin update of the
// group brings it back. A group that caught up, and any group with the key
// off, is left alone.
func TestProtectBrokerDisablesSlowGroup(t *testing.T) {
	ctx := context.Background()
	b := newTestBroker(t, func(c *BrokerConfig) { c.ConsumerFallbehindThreshold = 1000 })
	b.topics.Update(NewTopicConfig("PB"))
	for i := range 20 {
		r, err := b.handleSendMessage(ctx, newTestConn(2), sendReq("PB", 0, fmt.Appendf(nil, "m%02d-%0100d", i, 0), clientSendProps))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	}
	waitQueued(b, "PB", 20)
	pull := func(group string, offset int64) *codec.RemotingCommand {
		t.Helper()
		w := newTestConn(3)
		req := pullReq(group, "PB", 0, offset, codec.PullFlagSubscription, 0)
		req.Ext.Set("maxMsgNums", "1")
		r, err := b.handlePullMessage(ctx, w, req)
		require.NoError(t, err)
		if r == nil {
			r = waitResponse(t, w, 1)
		}
		return r
	}

	// Off (Java's default): nothing is measured, nothing disabled.
	require.EqualValues(t, codec.RespSuccess, pull("SlowG", 0).Code)
	b.protectBroker(ctx)
	require.Equal(t, true, getGroupBody(t, b, "SlowG")["consumeEnable"])

	_, _, err := b.updateConfig(map[string]string{"disableConsumeIfConsumerReadSlowly": "true"})
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, pull("SlowG", 0).Code)       // ~19 records behind
	require.EqualValues(t, codec.RespPullNotFound, pull("FastG", 20).Code) // at the end: 0 behind
	b.protectBroker(ctx)
	require.Equal(t, false, getGroupBody(t, b, "SlowG")["consumeEnable"])
	require.Equal(t, true, getGroupBody(t, b, "FastG")["consumeEnable"])
	r := pull("SlowG", 0)
	require.EqualValues(t, codec.RespNoPermission, r.Code)
	require.Equal(t, "2", ext(t, r, "forbiddenType"))

	upd := updateGroupBody(t, b, `{"groupName":"SlowG","consumeEnable":true}`)
	require.EqualValues(t, codec.RespSuccess, upd.Code, upd.Remark)
	require.EqualValues(t, codec.RespSuccess, pull("SlowG", 19).Code)
	b.protectBroker(ctx) // its last pull read the last record: not behind
	require.Equal(t, true, getGroupBody(t, b, "SlowG")["consumeEnable"])
	require.False(t, DefaultBrokerConfig().DisableConsumeIfConsumerReadSlowly, "Java's default")
	require.Contains(t, liveConfigKeys, "disableConsumeIfConsumerReadSlowly")
}
