package processor

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// groupsHeartbeat is a heartbeat of producer groups P<i> and consumer groups
// C<i> for i in [from, to) of each kind asked for.
func groupsHeartbeat(t *testing.T, producers, consumers [2]int) *codec.RemotingCommand {
	hb := codec.HeartbeatData{ClientID: "10.0.0.7@1"}
	for i := producers[0]; i < producers[1]; i++ {
		hb.ProducerDataSet = append(hb.ProducerDataSet, codec.ProducerData{GroupName: fmt.Sprintf("P%d", i)})
	}
	for i := consumers[0]; i < consumers[1]; i++ {
		hb.ConsumerDataSet = append(hb.ConsumerDataSet, codec.ConsumerData{GroupName: fmt.Sprintf("C%d", i),
			ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET"})
	}
	body, err := json.Marshal(hb)
	require.NoError(t, err)
	req := codec.NewRequest(codec.ReqHeartBeat)
	req.Body = body
	return req
}

func producerGroupCount(b *testBroker) int {
	n := 0
	b.producers.Each(func(string, *ClientChannel) { n++ })
	return n
}

func consumerGroupCount(b *testBroker) int {
	n := 0
	b.consumers.EachGroup(func(*ConsumerGroupInfo) { n++ })
	return n
}

// A heartbeat carrying more producer or consumer groups than the bound is
// refused INVALID_PARAMETER and registers (or creates) nothing; one at the
// bound is served.
func TestHeartbeatGroupsPerRequestBound(t *testing.T) {
	const limit = DefaultMaxClientGroups
	b := newTestBroker(t, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		name                 string
		producers, consumers [2]int
	}{
		{"producers", [2]int{0, limit + 1}, [2]int{0, 1}},
		{"consumers", [2]int{0, 1}, [2]int{0, limit + 1}},
	} {
		resp, err := b.handleHeartBeat(ctx, newTestConn(20), groupsHeartbeat(t, tc.producers, tc.consumers))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespInvalidParameter, resp.Code, tc.name)
		require.Contains(t, resp.Remark, "more than the 1000", tc.name)
		require.Zero(t, producerGroupCount(b), tc.name)
		require.Zero(t, consumerGroupCount(b), tc.name)
		_, ok := b.groups.Get("C0")
		require.False(t, ok, "%s: subscription group created", tc.name)
		require.False(t, b.topics.Exists(RetryGroupTopicPrefix+"C0"), tc.name)
	}

	resp, err := b.handleHeartBeat(ctx, newTestConn(21), groupsHeartbeat(t, [2]int{0, limit}, [2]int{0, limit}))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Equal(t, limit, producerGroupCount(b))
	require.Equal(t, limit, consumerGroupCount(b))
}

// A connection holds at most the bound of distinct groups of each kind over
// all its heartbeats; a refused heartbeat registers nothing, renewals and
// other connections are unaffected, and unregistering or closing frees room.
func TestHeartbeatGroupsPerConnectionBound(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.MaxClientGroups = 10 })
	ctx := context.Background()
	conn := newTestConn(30)
	beat := func(c *testConn, producers, consumers [2]int) *codec.RemotingCommand {
		t.Helper()
		resp, err := b.handleHeartBeat(ctx, c, groupsHeartbeat(t, producers, consumers))
		require.NoError(t, err)
		return resp
	}
	require.EqualValues(t, codec.RespSuccess, beat(conn, [2]int{0, 6}, [2]int{0, 6}).Code)
	require.EqualValues(t, codec.RespSuccess, beat(conn, [2]int{4, 10}, [2]int{4, 10}).Code)
	require.Equal(t, 10, producerGroupCount(b))
	require.Equal(t, 10, consumerGroupCount(b))

	for _, tc := range []struct {
		name                 string
		producers, consumers [2]int
	}{
		{"producers", [2]int{9, 11}, [2]int{0, 1}},
		{"consumers", [2]int{0, 1}, [2]int{9, 11}},
		{"both", [2]int{10, 12}, [2]int{10, 12}},
	} {
		resp := beat(conn, tc.producers, tc.consumers)
		require.EqualValues(t, codec.RespInvalidParameter, resp.Code, tc.name)
		require.Contains(t, resp.Remark, "a connection may hold 10", tc.name)
		require.Equal(t, 10, producerGroupCount(b), tc.name)
		require.Equal(t, 10, consumerGroupCount(b), tc.name)
		_, ok := b.groups.Get("C10")
		require.False(t, ok, "%s: subscription group created", tc.name)
	}

	// Renewing what it holds is fine, and another connection has its own room.
	require.EqualValues(t, codec.RespSuccess, beat(conn, [2]int{0, 10}, [2]int{0, 10}).Code)
	other := newTestConn(31)
	require.EqualValues(t, codec.RespSuccess, beat(other, [2]int{10, 20}, [2]int{10, 20}).Code)

	unreg := codec.NewRequest(codec.ReqUnregisterClient)
	unreg.Ext.Set("producerGroup", "P0")
	unreg.Ext.Set("consumerGroup", "C0")
	resp, err := b.handleUnregisterClient(ctx, conn, unreg)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	require.EqualValues(t, codec.RespSuccess, beat(conn, [2]int{20, 21}, [2]int{20, 21}).Code)

	b.OnClose(conn)
	require.Len(t, b.producers.Channels("P20"), 0)
	require.Empty(t, b.consumers.ClientIDs("C20"))
	require.Len(t, b.producers.Channels("P10"), 1)
	require.EqualValues(t, codec.RespSuccess, beat(newTestConn(32), [2]int{0, 10}, [2]int{0, 10}).Code)
}

// One heartbeat carries at most subscriptionsPerGroup subscriptions per group
// it may carry, in whatever groups: a single group of 750,000 held some 300 MB.
func TestHeartbeatSubscriptionsBound(t *testing.T) {
	b := newTestBroker(t, nil)
	limit := DefaultMaxClientGroups * subscriptionsPerGroup
	hb := func(n int) *codec.RemotingCommand {
		cd := codec.ConsumerData{GroupName: "SubG", ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING",
			ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET"}
		for i := 0; i < n; i++ {
			cd.SubscriptionDataSet = append(cd.SubscriptionDataSet, codec.SubscriptionData{Topic: fmt.Sprintf("T%d", i),
				SubString: "*", ExpressionType: "TAG"})
		}
		body, err := json.Marshal(codec.HeartbeatData{ClientID: "10.0.0.7@1", ConsumerDataSet: []codec.ConsumerData{cd}})
		require.NoError(t, err)
		req := codec.NewRequest(codec.ReqHeartBeat)
		req.Body = body
		return req
	}
	resp, err := b.handleHeartBeat(context.Background(), newTestConn(21), hb(limit+1))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespInvalidParameter, resp.Code)
	require.Zero(t, consumerGroupCount(b))
	resp, err = b.handleHeartBeat(context.Background(), newTestConn(21), hb(limit))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Equal(t, 1, consumerGroupCount(b))
}
