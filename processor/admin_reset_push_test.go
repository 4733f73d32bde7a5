package processor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

func resetReq(topic, group string, ts int64, force bool) *codec.RemotingCommand {
	req := codec.NewRequest(codec.ReqInvokeBrokerToResetOffset)
	req.Ext.Set("topic", topic)
	req.Ext.Set("group", group)
	req.Ext.Set("timestamp", i64s(ts))
	if force {
		req.Ext.Set("isForce", "true")
	} else {
		req.Ext.Set("isForce", "false")
	}
	return req
}

func (c *testConn) onewayOf(code int32) []*codec.RemotingCommand {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*codec.RemotingCommand
	for _, r := range c.oneway {
		if r.Code == code {
			out = append(out, r)
		}
	}
	return out
}

// With useServerSideResetOffset=false the reset goes to the clients, as
// Broker2Client.resetOffset does: RESET_CONSUMER_CLIENT_OFFSET to each one.
func TestResetOffsetPushedToClients(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.UseServerSideResetOffset = false })
	ctx := context.Background()
	prod := newTestConn(20)
	for range 3 {
		resp, _ := b.handleSendMessage(ctx, prod, sendReq("PushT", 0, []byte("x"), "TAGS\x01a\x02"))
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("PushT", 0) == 3 }, 5*time.Second, 10*time.Millisecond)
	tc, ok := b.topics.Select("PushT")
	require.True(t, ok)

	// No offsets yet: Java's message, typo included.
	resp, _ := b.handleInvokeBrokerToResetOffset(ctx, prod, resetReq("PushT", "PushG", 0, true))
	require.EqualValues(t, codec.RespSystemError, resp.Code)
	require.Equal(t, "THe consumer group <PushG> not exist", resp.Remark)

	for q := int32(0); q < tc.WriteQueueNums; q++ {
		b.offsets.Commit("PushG", "PushT", q, b.st.MaxOffsetInQueue("PushT", q))
	}
	resp, _ = b.handleInvokeBrokerToResetOffset(ctx, prod, resetReq("PushT", "PushG", 0, true))
	require.EqualValues(t, codec.RespConsumerNotOnline, resp.Code)
	require.Contains(t, resp.Remark, "Consumer not online, so can not reset offset, Group: PushG Topic: PushT")

	c1, c2 := newTestConn(21), newTestConn(22)
	for i, c := range []*testConn{c1, c2} {
		_, err := b.handleHeartBeat(ctx, c, heartbeatReq(t, "cid-"+i64s(int64(i)), "PushG", "PushT"))
		require.NoError(t, err)
	}
	resp, _ = b.handleInvokeBrokerToResetOffset(ctx, prod, resetReq("PushT", "PushG", 0, true))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	want := `{"brokerName":"broker-a","queueId":0,"topic":"PushT"}:0`
	require.Contains(t, string(resp.Body), want)
	for _, c := range []*testConn{c1, c2} {
		pushed := c.onewayOf(codec.ReqResetConsumerClientOffset)
		require.Len(t, pushed, 1)
		p := pushed[0]
		for k, v := range map[string]string{"topic": "PushT", "group": "PushG", "timestamp": "0", "isForce": "false"} {
			got, _ := p.Ext.Get(k)
			require.Equal(t, v, got, k)
		}
		require.Equal(t, string(resp.Body), string(p.Body))
	}
	// The broker keeps nothing: the clients commit the new offsets themselves.
	require.EqualValues(t, 3, b.offsets.Query("PushG", "PushT", 0))
	require.False(t, b.offsets.HasReset("PushG", "PushT", 0))

	// Not forced, a later time does not move a consumer back... nor forward past its offset.
	resp, _ = b.handleInvokeBrokerToResetOffset(ctx, prod, resetReq("PushT", "PushG", -1, false))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Contains(t, string(resp.Body), `{"brokerName":"broker-a","queueId":0,"topic":"PushT"}:3`)

	// C++ clients get the list form.
	cpp := resetReq("PushT", "PushG", 0, true)
	cpp.Language = codec.LangCPP
	resp, _ = b.handleInvokeBrokerToResetOffset(ctx, prod, cpp)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	pushed := c1.onewayOf(codec.ReqResetConsumerClientOffset)
	require.Len(t, pushed, 3)
	require.Contains(t, string(pushed[2].Body), `{"offsetTable":[{"brokerName":"broker-a","offset":0,"queueId":0,"topic":"PushT"},`)

	resp, _ = b.handleInvokeBrokerToResetOffset(ctx, prod, resetReq("Nope", "PushG", 0, true))
	require.EqualValues(t, codec.RespTopicNotExist, resp.Code)

	// Switched back at run time: the server-side reset, no push.
	up := codec.NewRequest(codec.ReqUpdateBrokerConfig)
	up.Body = []byte("useServerSideResetOffset=true\n")
	resp, _ = b.handleUpdateBrokerConfig(ctx, prod, up)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	resp, _ = b.handleInvokeBrokerToResetOffset(ctx, prod, resetReq("PushT", "PushG", 0, true))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Len(t, c1.onewayOf(codec.ReqResetConsumerClientOffset), 3)
	require.True(t, b.offsets.HasReset("PushG", "PushT", 0))
	require.EqualValues(t, 0, b.offsets.Query("PushG", "PushT", 0))
}
