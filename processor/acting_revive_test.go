package processor

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/store"
)

// actingReviveQueue is the queue of broker-b's revive topic (4 in actingNS's
// route) an acting slave's POP records go to: Java's
// floorMod(hash(topic+storeHost), queues).
func actingReviveQueue(b *Broker) string {
	h := int64(compat.JavaStringHash(acceptReviveTopic + "/" + b.storeHost.String()))
	return strconv.FormatInt(((h%4)+4)%4, 10)
}

func reviveSends(ns *actingNS) []*codec.RemotingCommand {
	var out []*codec.RemotingCommand
	for _, r := range ns.requests(codec.ReqSendMessage) {
		if topic, _ := r.Ext.Get("topic"); topic == acceptReviveTopic {
			out = append(out, r)
		}
	}
	return out
}

// A revive record its master parked (born at the master's address, where it
// was stored) that the acting slave's timer delivers goes, as Java's
// EscapeBridge sends it, to another group's master's revive topic, signed
// with the inner credentials; due already, it keeps its timer properties.
// The timer's progress passes it.
func TestActingSlaveEscapesDueReviveRecords(t *testing.T) {
	ns := &actingNS{t: t, members: map[int64]string{1: "127.0.0.1:10911"}}
	b := actingBroker(t, 1, ns, func(c *BrokerConfig) {
		c.EnableRemoteEscape = true
		c.InnerClientAuthenticationCredentials = innerCreds
	}, func(st *store.DefaultStore) {
		parkedReviveAt(t, st, netip.MustParseAddrPort("127.0.0.2:10911"))
		parkedTimer(t, st)
	})
	require.Eventually(t, func() bool { return len(reviveSends(ns)) == 1 }, 10*time.Second, 50*time.Millisecond)
	s := reviveSends(ns)[0]
	require.Equal(t, "b:10911", s.Remark)
	require.Equal(t, actingReviveQueue(b), ext(t, s, "queueId"))
	require.Equal(t, "inner", ext(t, s, "AccessKey"))
	props := ext(t, s, "properties")
	tag, _ := codec.PropertyValue(props, codec.PropTags)
	require.Equal(t, "ck", tag)
	_, rolled := codec.PropertyValue(props, codec.PropTimerOutMs)
	require.True(t, rolled, "due: the remote does not park it again")
	require.Eventually(t, func() bool { p, _ := b.timer.ProgressNow(); return p.QueueOffset == 2 }, 5*time.Second,
		50*time.Millisecond, "both records delivered")
}

// The POP checkpoints and acks an acting slave writes go to another group's
// master's revive topic (EscapeBridge.putMessageToSpecificQueue), all to one
// queue, parked there until due. With no other group they are not written
// (the POP returns nothing), never to the slave's store.
func TestActingSlavePopRecordsEscape(t *testing.T) {
	ns := &actingNS{t: t, members: map[int64]string{1: "127.0.0.1:10911"}}
	b := actingBroker(t, 1, ns, func(c *BrokerConfig) { c.EnableRemoteEscape = true }, nil)
	require.Eventually(t, b.acting.reviveRemote.Load, 5*time.Second, 20*time.Millisecond)
	put := func(tag string, q int32) store.PutResult {
		at := time.Now().Add(time.Minute).UnixMilli()
		m := &codec.Message{Topic: acceptReviveTopic, QueueID: q, Body: []byte(validCk), BornTimestamp: time.Now().UnixMilli(),
			BornHost: b.storeHost, StoreHost: b.storeHost,
			Properties: "TAGS\x01" + tag + "\x02TIMER_DELIVER_MS\x01" + fmt.Sprint(at) + "\x02"}
		return popHost{b}.PutMessage(context.Background(), m)
	}
	require.True(t, put("ck", 0).Status.Written())
	require.True(t, put("ack", 1).Status.Written())
	sends := reviveSends(ns)
	require.Len(t, sends, 2)
	for i, s := range sends {
		require.Equal(t, "b:10911", s.Remark)
		require.Equal(t, actingReviveQueue(b), ext(t, s, "queueId"), "a checkpoint meets its acks")
		props := ext(t, s, "properties")
		tag, _ := codec.PropertyValue(props, codec.PropTags)
		require.Equal(t, []string{"ck", "ack"}[i], tag)
		at, _ := codec.PropertyValue(props, codec.PropTimerDeliverMs)
		require.NotEmpty(t, at, "parked by the remote")
		for _, p := range []string{codec.PropRealTopic, codec.PropTimerOutMs} {
			_, has := codec.PropertyValue(props, p)
			require.False(t, has, p)
		}
	}
	require.EqualValues(t, 0, b.store.MaxOffsetInQueue(acceptReviveTopic, 0))

	ns.mu.Lock()
	ns.reviveSolo = true
	ns.mu.Unlock()
	require.Eventually(t, func() bool { return !b.acting.reviveRemote.Load() }, 5*time.Second, 20*time.Millisecond)
	require.False(t, put("ck", 0).Status.Written(), "no other master: the checkpoint is not written")
	require.Len(t, reviveSends(ns), 2)
}
