package processor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/processor/meta"
)

// A pull held for long polling and woken by a message is re-run whole, as
// Java's PullMessageProcessor re-runs processRequest: a ban that came while it
// was held (UPDATE_AND_GET_GROUP_FORBIDDEN, consumeEnable turned off by
// disableConsumeIfConsumerReadSlowly, rejectPullConsumerEnable) answers it as
// it would a new pull, whether its subscription came with the request or from
// the group's heartbeat. A woken pull with its own subscription kept its
// filter and skipped the forbidden check, so it read the banned topic.
func TestWokenPullRechecksGroupBans(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sysFlag int32
		ban     func(b *testBroker)
		code    int32
		remark  string
		lite    bool // no heartbeat: a lite pull consumer
	}{
		{"forbidden, own subscription", codec.PullFlagSubscription, func(b *testBroker) {
			require.NoError(t, b.groups.UpdateForbidden("WG", "WT", meta.IndexPermRead, true))
		}, codec.RespNoPermission, "the consumer group[WG] is forbidden for topic[WT]", false},
		{"forbidden, heartbeat subscription", 0, func(b *testBroker) {
			require.NoError(t, b.groups.UpdateForbidden("WG", "WT", meta.IndexPermRead, true))
		}, codec.RespNoPermission, "the consumer group[WG] is forbidden for topic[WT]", false},
		{"consume disabled, own subscription", codec.PullFlagSubscription, func(b *testBroker) {
			_, err := b.groups.DisableConsume("WG")
			require.NoError(t, err)
		}, codec.RespNoPermission, "subscription group no permission, WG", false},
		{"pull consumer rejected, own subscription", codec.PullFlagSubscription, func(b *testBroker) {
			_, _, err := b.updateConfig(map[string]string{"rejectPullConsumerEnable": "true"})
			require.NoError(t, err)
		}, codec.RespSubscriptionNotExist, rejectPullConsumerRemark, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTestBroker(t, nil)
			ctx := context.Background()
			b.topics.Update(func() TopicConfig { c := NewTopicConfig("WT"); c.ReadQueueNums, c.WriteQueueNums = 1, 1; return c }())
			c := newTestConn(1)
			if !tc.lite {
				_, err := b.handleHeartBeat(ctx, newTestConn(2), heartbeatReq(t, "10.0.0.1@1", "WG", "WT"))
				require.NoError(t, err)
			}
			r, err := b.handlePullMessage(ctx, c, pullReq("WG", "WT", 0, 0, tc.sysFlag|codec.PullFlagSuspend, 20000))
			require.NoError(t, err)
			require.Nil(t, r, "held")
			require.Equal(t, 1, b.HeldPulls())

			tc.ban(b)
			sendOK(t, b, sendReq("WT", 0, []byte("wake"), ""))
			pr := waitResponse(t, c, 1)
			require.Equal(t, tc.code, pr.Code, pr.Remark)
			require.Equal(t, tc.remark, pr.Remark)
		})
	}
}
