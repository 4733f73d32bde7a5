package processor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/compat"
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

// replyReq is a SEND_REPLY_MESSAGE to the test cluster's reply topic for
// requester clientID.
func replyReq(clientID string) *codec.RemotingCommand {
	req := sendReq("DefaultCluster_REPLY_TOPIC", 0, []byte("pong"),
		"REPLY_TO_CLIENT\x01"+clientID+"\x02CORRELATION_ID\x01c1\x02MSG_TYPE\x01reply\x02")
	req.Code = codec.ReqSendReplyMessage
	return req
}

// registerRequester heartbeats a requester whose pushes are answered SUCCESS.
func registerRequester(t *testing.T, b *testBroker, clientID string) {
	t.Helper()
	requester := newTestConn(11)
	requester.answer = func(req *codec.RemotingCommand) *codec.RemotingCommand {
		return codec.NewResponse(req, codec.RespSuccess, "")
	}
	_, err := b.handleHeartBeat(context.Background(), requester, heartbeatReq(t, clientID, "CG"))
	require.NoError(t, err)
}

// TestSendReplyMessageCountsPut: a stored reply counts in the topic's put
// statistics (statsAll, brokerStatus), as ReplyMessageProcessor's
// handlePutMessageResult does.
func TestSendReplyMessageCountsPut(t *testing.T) {
	b := newTestBroker(t, nil)
	b.admin.stats.SetManual(true)
	registerRequester(t, b, "req-1")
	resp, err := b.handleSendReplyMessage(context.Background(), newTestConn(12), replyReq("req-1"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	b.admin.stats.Sample(time.Now().Add(time.Hour))
	d := viewStats(t, b, "TOPIC_PUT_NUMS", "DefaultCluster_REPLY_TOPIC")
	require.EqualValues(t, 1, d.Minute.Sum)
}

// TestSendReplyMessageNotStored: with storeReplyMessageEnable=false the reply
// is only pushed, and the answer carries Java's placeholder id "0". Java reads
// the key at every reply, so UPDATE_BROKER_CONFIG turns it on and off live.
func TestSendReplyMessageNotStored(t *testing.T) {
	var cfg BrokerConfig
	b := newTestBroker(t, func(c *BrokerConfig) {
		_, err := c.ApplyProperties(map[string]string{"storeReplyMessageEnable": "false"})
		require.NoError(t, err)
		cfg = *c
	})
	require.Equal(t, "false", cfg.Properties()["storeReplyMessageEnable"])
	registerRequester(t, b, "req-1")
	reply := func() *codec.RemotingCommand {
		resp, err := b.handleSendReplyMessage(context.Background(), newTestConn(12), replyReq("req-1"))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
		return resp
	}
	resp := reply()
	require.Equal(t, "0", ext(t, resp, "msgId"))
	require.Equal(t, "0", ext(t, resp, "queueOffset"))
	require.Zero(t, b.st.MaxOffsetInQueue("DefaultCluster_REPLY_TOPIC", 0), "nothing stored")

	up, _ := b.handleUpdateBrokerConfig(context.Background(), newTestConn(13), updateConfigReq("storeReplyMessageEnable=true\n"))
	require.EqualValues(t, codec.RespSuccess, up.Code, up.Remark)
	require.Len(t, ext(t, reply(), "msgId"), 32, "stored once the key is back on")
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("DefaultCluster_REPLY_TOPIC", 0) == 1 },
		5*time.Second, 5*time.Millisecond)
}

// TestSendReplyMessageProperties: the reply pushed and the reply stored carry
// the properties ReplyMessageProcessor gives them: the replier's, plus
// MSG_REGION and TRACE_ON (buildMsgContext) and the PUSH_REPLY_TIME of the
// push; the broker adds no CLUSTER and no UNIQ_KEY of its own.
func TestSendReplyMessageProperties(t *testing.T) {
	b := newTestBroker(t, nil)
	requester := newTestConn(11)
	var pushed []*codec.RemotingCommand
	requester.answer = func(req *codec.RemotingCommand) *codec.RemotingCommand {
		pushed = append(pushed, req)
		return codec.NewResponse(req, codec.RespSuccess, "")
	}
	_, err := b.handleHeartBeat(context.Background(), requester, heartbeatReq(t, "req-1", "CG"))
	require.NoError(t, err)
	resp, err := b.handleSendReplyMessage(context.Background(), newTestConn(12), replyReq("req-1"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Len(t, pushed, 1)
	pushedProps, _ := pushed[0].Ext.Get("properties")
	_, clOff, err := compat.DecodeOffsetMsgID(ext(t, resp, "msgId"))
	require.NoError(t, err)
	stored, err := b.st.LookMessageByOffset(clOff)
	require.NoError(t, err)

	pushTime, ok := codec.PropertyValue(pushedProps, codec.PropPushReplyTime)
	require.True(t, ok)
	for name, props := range map[string]string{"pushed": pushedProps, "stored": stored.Properties} {
		for k, want := range map[string]string{codec.PropMsgRegion: "DefaultRegion", codec.PropTraceSwitch: "true",
			codec.PropPushReplyTime: pushTime, "CORRELATION_ID": "c1", "REPLY_TO_CLIENT": "req-1", "MSG_TYPE": "reply"} {
			got, _ := codec.PropertyValue(props, k)
			require.Equal(t, want, got, "%s %s", name, k)
		}
		for _, k := range []string{codec.PropCluster, codec.PropUniqKey} {
			_, ok := codec.PropertyValue(props, k)
			require.False(t, ok, "%s %s", name, k)
		}
	}
}

// TestSendReplyMessageKeepsSysFlag: a compressed reply is stored flagged as
// compressed (a deliberate difference: Java stores sysFlag 0,
// docs/compatibility.md).
func TestSendReplyMessageKeepsSysFlag(t *testing.T) {
	b := newTestBroker(t, nil)
	registerRequester(t, b, "req-1")
	req := replyReq("req-1")
	req.Ext.Set("sysFlag", "1")
	resp, err := b.handleSendReplyMessage(context.Background(), newTestConn(12), req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	_, clOff, err := compat.DecodeOffsetMsgID(ext(t, resp, "msgId"))
	require.NoError(t, err)
	stored, err := b.st.LookMessageByOffset(clOff)
	require.NoError(t, err)
	require.EqualValues(t, 1, stored.SysFlag&1)
}
