package processor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

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
