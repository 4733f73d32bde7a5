package processor

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

func recallReq(topic, handle string) *codec.RemotingCommand {
	req := codec.NewRequest(codec.ReqRecallMessage)
	req.Ext.Set("producerGroup", "PG")
	req.Ext.Set("topic", topic)
	req.Ext.Set("recallHandle", handle)
	return req
}

func TestRecallHandleFormat(t *testing.T) {
	// Java: Base64.getUrlEncoder() of "v1 topic brokerName timestamp messageId".
	h := buildRecallHandle("T", "broker-a", "1700000000001", "AC1100")
	raw, err := base64.URLEncoding.DecodeString(h)
	require.NoError(t, err)
	require.Equal(t, "v1 T broker-a 1700000000001 AC1100", string(raw))
	got, ok := decodeRecallHandle(h)
	require.True(t, ok)
	require.Equal(t, recallHandle{topic: "T", brokerName: "broker-a", timestamp: "1700000000001", msgID: "AC1100"}, got)
	for _, bad := range []string{"", "!!!", base64.URLEncoding.EncodeToString([]byte("v2 T b 1 id")),
		base64.URLEncoding.EncodeToString([]byte("v1 T b 1"))} {
		_, ok := decodeRecallHandle(bad)
		require.False(t, ok, bad)
	}
}

func TestRecallMessage(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.RecallMessageEnable = true })
	ctx := context.Background()
	c := newTestConn(1)
	// Two timer messages due in the same second; the first is recalled.
	at := i64s(time.Now().Add(2500 * time.Millisecond).UnixMilli())
	var handles []string
	for _, id := range []string{"UNIQ-RECALLED", "UNIQ-KEPT"} {
		r, err := b.handleSendMessage(ctx, c, sendReq("RecallT", 0, []byte(id),
			"TIMER_DELIVER_MS\x01"+at+"\x02UNIQ_KEY\x01"+id+"\x02"))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
		hdr, ok := r.CustomHeader.(*codec.SendMessageResponseHeader)
		require.True(t, ok)
		require.NotEmpty(t, hdr.RecallHandle)
		handles = append(handles, hdr.RecallHandle)
	}
	rh, ok := decodeRecallHandle(handles[0])
	require.True(t, ok)
	require.Equal(t, "RecallT", rh.topic)
	require.Equal(t, "UNIQ-RECALLED", rh.msgID)

	// Java's refusals, in its order.
	r, _ := b.handleRecallMessage(ctx, c, recallReq("Other", handles[0]))
	require.EqualValues(t, codec.RespTopicNotExist, r.Code)
	r, _ = b.handleRecallMessage(ctx, c, recallReq("RecallT", "garbage"))
	require.EqualValues(t, codec.RespIllegalOperation, r.Code)
	require.Equal(t, "recall handle is invalid", r.Remark)
	r, _ = b.handleRecallMessage(ctx, c, recallReq("RecallT", buildRecallHandle("RecallX", rh.brokerName, rh.timestamp, rh.msgID)))
	require.Equal(t, "recall failed, topic not match", r.Remark)
	r, _ = b.handleRecallMessage(ctx, c, recallReq("RecallT", buildRecallHandle("RecallT", "other-broker", rh.timestamp, rh.msgID)))
	require.EqualValues(t, codec.RespIllegalOperation, r.Code)
	r, _ = b.handleRecallMessage(ctx, c, recallReq("RecallT", buildRecallHandle("RecallT", rh.brokerName, "1000", rh.msgID)))
	require.Equal(t, "recall failed, timestamp invalid", r.Remark)

	r, err := b.handleRecallMessage(ctx, c, recallReq("RecallT", handles[0]))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	id, _ := r.Ext.Get("msgId")
	require.Equal(t, "UNIQ-RECALLED", id)

	// The kept one comes; the recalled one, due in the same slot and before it, never does.
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("RecallT", 0) >= 1 }, 8*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { return b.offsets.Query(timerSysGroup, TopicTimer, 0) == 3 }, 5*time.Second, 20*time.Millisecond)
	msgs := pullAll(t, b, "RecallT", 0)
	require.Len(t, msgs, 1)
	require.Equal(t, "UNIQ-KEPT", string(msgs[0].Body))
	require.Zero(t, b.timer.Recalled())
}

func TestRecallMessageDisabled(t *testing.T) {
	b := newTestBroker(t, nil)
	r, err := b.handleRecallMessage(context.Background(), newTestConn(1), recallReq("T", buildRecallHandle("T", "broker-a", "1", "x")))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespNoPermission, r.Code)
	require.Equal(t, "recall failed, operation is forbidden", r.Remark)
}
