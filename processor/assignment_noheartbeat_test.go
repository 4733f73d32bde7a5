package processor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// TestQueryAssignmentBeforeHeartbeat pins Java's answer for a group the broker
// has no live consumer of: doLoadBalance finds no ConsumerGroupInfo (the
// compensation table a POP fills is not read there), so the assignment set is
// null, written as {} with SUCCESS: the client keeps what it has, in PULL
// and in POP mode alike. Once the client heartbeats it gets its queues.
func TestQueryAssignmentBeforeHeartbeat(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.NamesrvAddr = "127.0.0.1:1" })
	b.SetNameServerInvoker(routeInvoker{})
	ctx := context.Background()
	c1 := newTestConn(20)
	nothing := func(strategy string) {
		t.Helper()
		r, err := b.handleQueryAssignment(ctx, c1, queryAssignmentReq(t, "QT", "NG", "cid-1", strategy))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, r.Code)
		require.Equal(t, "{}", string(r.Body))
	}
	nothing("AVG")
	nothing("NOPE")

	b.topics.Update(NewTopicConfig("QT"))
	req := codec.NewRequest(codec.ReqSetMessageRequestMode)
	req.Body = []byte(`{"topic":"QT","consumerGroup":"NG","mode":"POP","popShareQueueNum":0}`)
	r, err := b.handleSetMessageRequestMode(ctx, c1, req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	nothing("AVG")
	// A POP before any heartbeat only compensates the group.
	b.consumers.Compensate("NG", "CONSUME_POP", "CLUSTERING", codec.SubscriptionData{Topic: "QT", SubString: "*"})
	nothing("AVG")

	r, err = b.handleHeartBeat(ctx, c1, heartbeatReq(t, "cid-1", "NG", "QT"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code)
	r, _ = b.handleQueryAssignment(ctx, c1, queryAssignmentReq(t, "QT", "NG", "cid-1", "AVG"))
	require.Len(t, assigned(t, r), 6)
}
