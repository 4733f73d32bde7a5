package processor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

func TestSendReplyMessage(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	requester := newTestConn(1)
	var pushed []*codec.RemotingCommand
	requester.answer = func(req *codec.RemotingCommand) *codec.RemotingCommand {
		pushed = append(pushed, req)
		return codec.NewResponse(req, codec.RespSuccess, "")
	}
	_, err := b.handleHeartBeat(ctx, requester, heartbeatReq(t, "req-1", "CG"))
	require.NoError(t, err)

	replier := newTestConn(2)
	req := sendReq("DefaultCluster_REPLY_TOPIC", -1, []byte("pong"), "REPLY_TO_CLIENT\x01req-1\x02CORRELATION_ID\x01c1\x02MSG_TYPE\x01reply\x02")
	req.Code = codec.ReqSendReplyMessage
	resp, err := b.handleSendReplyMessage(ctx, replier, req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Len(t, ext(t, resp, "msgId"), 32, "stored as well")
	require.Len(t, pushed, 1)
	p := pushed[0]
	require.Equal(t, codec.ReqPushReplyMessageToClient, p.Code)
	require.Equal(t, "pong", string(p.Body))
	props, _ := p.Ext.Get("properties")
	cid, _ := codec.PropertyValue(props, "CORRELATION_ID")
	require.Equal(t, "c1", cid)
	_, ok := codec.PropertyValue(props, codec.PropPushReplyTime)
	require.True(t, ok)
	topic, _ := p.Ext.Get("topic")
	require.Equal(t, "DefaultCluster_REPLY_TOPIC", topic)

	// Unknown requester: SYSTEM_ERROR with the two unconditional fields.
	req2 := sendReq("DefaultCluster_REPLY_TOPIC", -1, []byte("pong"), "REPLY_TO_CLIENT\x01gone\x02")
	req2.Code = codec.ReqSendReplyMessage
	resp, err = b.handleSendReplyMessage(ctx, replier, req2)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSystemError, resp.Code)
	ext(t, resp, codec.PropMsgRegion)
}

// storeReplyMessageEnable=false: the reply is pushed to its requester and not
// stored; the answer carries msgId "0" (ReplyMessageProcessor).
func TestSendReplyMessageNotStored(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.StoreReplyMessageEnable = false })
	ctx := context.Background()
	requester := newTestConn(1)
	pushed := 0
	requester.answer = func(req *codec.RemotingCommand) *codec.RemotingCommand {
		pushed++
		return codec.NewResponse(req, codec.RespSuccess, "")
	}
	_, err := b.handleHeartBeat(ctx, requester, heartbeatReq(t, "req-1", "CG"))
	require.NoError(t, err)
	req := sendReq("DefaultCluster_REPLY_TOPIC", 0, []byte("pong"), "REPLY_TO_CLIENT\x01req-1\x02CORRELATION_ID\x01c1\x02")
	req.Code = codec.ReqSendReplyMessage
	resp, err := b.handleSendReplyMessage(ctx, newTestConn(2), req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Equal(t, "0", ext(t, resp, "msgId"))
	require.Equal(t, 1, pushed)
	require.Zero(t, b.st.MaxPhyOffset(), "nothing stored")
}
