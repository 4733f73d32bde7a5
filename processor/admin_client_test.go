package processor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

func TestServerSideResetOffset(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	c := newTestConn(1)
	for i := 0; i < 3; i++ {
		_, err := b.handleSendMessage(ctx, c, sendReq("ResetT", 0, []byte("m"), ""))
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("ResetT", 0) == 3 }, 5*time.Second, 10*time.Millisecond)
	_, err := b.handleHeartBeat(ctx, c, heartbeatReq(t, "c1", "RG", "ResetT"))
	require.NoError(t, err)
	b.offsets.Commit("RG", "ResetT", 0, 3)

	req := codec.NewRequest(codec.ReqInvokeBrokerToResetOffset)
	req.Ext.Set("topic", "ResetT")
	req.Ext.Set("group", "RG")
	req.Ext.Set("timestamp", "0")
	req.Ext.Set("isForce", "true")
	resp, _ := b.handleInvokeBrokerToResetOffset(ctx, c, req)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Contains(t, string(resp.Body), `{"brokerName":"broker-a","queueId":0,"topic":"ResetT"}:0`)
	require.EqualValues(t, 0, b.offsets.Query("RG", "ResetT", 0))

	// The client's stale commit is ignored while the reset is pending.
	u := codec.NewRequest(codec.ReqUpdateConsumerOffset)
	for _, kv := range [][2]string{{"consumerGroup", "RG"}, {"topic", "ResetT"}, {"queueId", "0"}, {"commitOffset", "3"}} {
		u.Ext.Set(kv[0], kv[1])
	}
	b.handleUpdateConsumerOffset(ctx, c, u)
	require.EqualValues(t, 0, b.offsets.Query("RG", "ResetT", 0))

	// The next pull of the queue is told where to go, once.
	r, err := b.handlePullMessage(ctx, c, pullReq("RG", "ResetT", 0, 3, 0, 0))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespPullOffsetMoved, r.Code)
	require.Equal(t, "0", ext(t, r, "nextBeginOffset"))
	require.Equal(t, "3", ext(t, r, "maxOffset"))
	r, _ = b.handlePullMessage(ctx, c, pullReq("RG", "ResetT", 0, 3, 0, 0))
	require.EqualValues(t, codec.RespPullNotFound, r.Code)

	// A reset recorded before server-side reset is switched off is dropped by
	// the next pull, not replayed, and no longer holds commits back (Java gates
	// both on the setting).
	resp, _ = b.handleInvokeBrokerToResetOffset(ctx, c, req)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	up := codec.NewRequest(codec.ReqUpdateBrokerConfig)
	up.Body = []byte("useServerSideResetOffset=false\n")
	resp, _ = b.handleUpdateBrokerConfig(ctx, c, up)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	b.handleUpdateConsumerOffset(ctx, c, u)
	require.EqualValues(t, 3, b.offsets.Query("RG", "ResetT", 0))
	r, _ = b.handlePullMessage(ctx, c, pullReq("RG", "ResetT", 0, 3, 0, 0))
	require.EqualValues(t, codec.RespPullNotFound, r.Code, r.Remark)
	require.False(t, b.offsets.HasReset("RG", "ResetT", 0))

	req.Ext.Set("topic", "Nope")
	resp, _ = b.handleInvokeBrokerToResetOffset(ctx, c, req)
	require.EqualValues(t, codec.RespTopicNotExist, resp.Code)
}

func TestConsumerRunningInfoRelay(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	c := newTestConn(1)
	c.answer = func(req *codec.RemotingCommand) *codec.RemotingCommand {
		resp := codec.NewResponse(req, codec.RespSuccess, "")
		resp.Body = []byte(`{"properties":{}}`)
		return resp
	}
	_, err := b.handleHeartBeat(ctx, c, heartbeatReq(t, "cid-1", "RG", "T"))
	require.NoError(t, err)
	req := codec.NewRequest(codec.ReqGetConsumerRunningInfo)
	req.Opaque = 77
	req.Ext.Set("consumerGroup", "RG")
	req.Ext.Set("clientId", "cid-1")
	resp, _ := b.handleGetConsumerRunningInfo(ctx, c, req)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	require.EqualValues(t, 77, resp.Opaque)
	require.Equal(t, `{"properties":{}}`, string(resp.Body))
	req.Ext.Set("clientId", "other")
	resp, _ = b.handleGetConsumerRunningInfo(ctx, c, req)
	require.EqualValues(t, codec.RespSystemError, resp.Code)
}

// TestConsumerRelayPrefersFreshestChannel: a client that reconnected while its
// old connection lingers (half-open, until channelExpiredTimeout) is listed on
// both; GET_CONSUMER_RUNNING_INFO goes to the one that heartbeat last, not to
// whichever the table yields first (Java's findChannel), which answers nothing.
func TestConsumerRelayPrefersFreshestChannel(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	stale, fresh := newTestConn(1), newTestConn(2)
	fresh.answer = func(req *codec.RemotingCommand) *codec.RemotingCommand {
		return codec.NewResponse(req, codec.RespSuccess, "")
	}
	_, err := b.handleHeartBeat(ctx, stale, heartbeatReq(t, "cid-1", "RG", "T"))
	require.NoError(t, err)
	time.Sleep(5 * time.Millisecond)
	_, err = b.handleHeartBeat(ctx, fresh, heartbeatReq(t, "cid-1", "RG", "T"))
	require.NoError(t, err)
	req := codec.NewRequest(codec.ReqGetConsumerRunningInfo)
	req.Ext.Set("consumerGroup", "RG")
	req.Ext.Set("clientId", "cid-1")
	for range 20 {
		resp, _ := b.handleGetConsumerRunningInfo(ctx, fresh, req)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
}
