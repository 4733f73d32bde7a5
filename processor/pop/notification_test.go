package pop

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

func notificationCmd(topic, group string, q int32, poll int64) *codec.RemotingCommand {
	req := codec.NewRequest(codec.ReqNotification)
	req.Ext.Set("consumerGroup", group)
	req.Ext.Set("topic", topic)
	req.Ext.Set("queueId", fmt.Sprint(q))
	req.Ext.Set("pollTime", fmt.Sprint(poll))
	req.Ext.Set("bornTime", fmt.Sprint(time.Now().UnixMilli()))
	return req
}

func pollingInfo(t *testing.T, s *Service, topic, group string, q int32) int32 {
	t.Helper()
	req := codec.NewRequest(codec.ReqPollingInfo)
	req.Ext = codec.ExtFields{{Key: "consumerGroup", Value: group}, {Key: "topic", Value: topic}, {Key: "queueId", Value: fmt.Sprint(q)}}
	resp, err := s.handlePollingInfo(context.Background(), newConn(), req)
	require.NoError(t, err)
	require.Equal(t, codec.RespSuccess, resp.Code)
	return resp.CustomHeader.(*PollingInfoResponseHeader).PollingNum
}

// Java holds NOTIFICATIONs in NotificationProcessor's own PopLongPollingService:
// POLLING_INFO counts only held POPs, and an arriving message wakes one held POP
// and one held NOTIFICATION of the key, not one of either.
func TestNotificationHeldApartFromPop(t *testing.T) {
	h := newTestHost(t)
	h.topics["T"] = Topic{ReadQueueNums: 1, Perm: 6}
	s := startService(t, h)

	nc := newConn()
	resp, err := s.handleNotification(context.Background(), nc, notificationCmd("T", "G", 0, 10000))
	require.NoError(t, err)
	require.Nil(t, resp, "notification held")
	pc := newConn()
	resp, _, _ = s.doPop(t, pc, popReq{topic: "T", group: "G", queue: 0, max: 4, invisible: 60000, poll: 10000})
	require.Nil(t, resp, "pop held")

	require.Equal(t, int32(1), pollingInfo(t, s, "T", "G", 0), "POLLING_INFO counts held POPs only")

	// The notification was held first; the POP must be woken all the same
	// (whether the notification then still sees the message is a race, as in Java).
	h.send(t, "T", 0, "m", "a")
	p := pc.first(t, 3*time.Second)
	require.Equal(t, codec.RespSuccess, p.Code)
	require.Equal(t, "m", string(decodeBody(t, p.Body)[0].m.Body))
}

// An ordered NOTIFICATION held on a queue locked by an unacked batch is
// answered once the batch's invisible time passes (Java's lock-free notice
// wakes NotificationProcessor's held requests too), not at its poll time.
func TestOrderedNotificationWokenWhenQueueUnlocks(t *testing.T) {
	h := newTestHost(t)
	h.topics["T"] = Topic{ReadQueueNums: 1, Perm: 6}
	s := startService(t, h)
	h.send(t, "T", 0, "o0", "a")
	c := newConn()
	_, _, ms := s.doPop(t, c, popReq{topic: "T", group: "G", queue: 0, max: 4, invisible: 500, order: true})
	require.Len(t, ms, 1)

	nc := newConn()
	req := notificationCmd("T", "G", 0, 15000)
	req.Ext.Set("order", "true")
	resp, err := s.handleNotification(context.Background(), nc, req)
	require.NoError(t, err)
	require.Nil(t, resp, "held while the batch is invisible")
	n := nc.first(t, 5*time.Second)
	require.Equal(t, codec.RespSuccess, n.Code)
	require.True(t, n.CustomHeader.(*NotificationResponseHeader).HasMsg)
}
