package clients

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testConn records the oneway requests sent to a client.
type testConn struct {
	id     uint64
	mu     sync.Mutex
	oneway []*codec.RemotingCommand
}

func newTestConn(id uint64) *testConn { return &testConn{id: id} }

func (c *testConn) ID() uint64 { return c.id }
func (c *testConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: int(c.id)}
}
func (c *testConn) LocalAddr() net.Addr                        { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 10911} }
func (c *testConn) WriteResponse(*codec.RemotingCommand) error { return nil }
func (c *testConn) Close() error                               { return nil }
func (c *testConn) Closed() bool                               { return false }
func (c *testConn) Invoke(context.Context, *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	return nil, errors.New("not supported")
}
func (c *testConn) InvokeOneway(req *codec.RemotingCommand) error {
	c.mu.Lock()
	c.oneway = append(c.oneway, req)
	c.mu.Unlock()
	return nil
}
func (c *testConn) onewayCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.oneway)
}

func TestRebalanceLockManager(t *testing.T) {
	m := NewRebalanceLockManager(time.Minute)
	now := time.Unix(1000, 0)
	m.now = func() time.Time { return now }
	mq := []codec.MessageQueue{{Topic: "T", BrokerName: "b", QueueID: 0}, {Topic: "T", BrokerName: "b", QueueID: 1}}
	require.Len(t, m.TryLockBatch("g", mq, "c1"), 2)
	require.Empty(t, m.TryLockBatch("g", mq, "c2"))
	require.Len(t, m.TryLockBatch("g", mq[:1], "c1"), 1, "renewal by the owner")
	now = now.Add(61 * time.Second)
	require.Len(t, m.TryLockBatch("g", mq, "c2"), 2, "expired locks are taken over")
	m.UnlockBatch("g", mq, "c1") // not the owner: no effect
	require.True(t, m.IsLocked("g", mq[0], "c2"))
	m.UnlockBatch("g", mq, "c2")
	require.False(t, m.IsLocked("g", mq[0], "c2"))
}

// A group counts as consuming orderly while any of its locks is live.
func TestRebalanceLockManagerLockAllExpired(t *testing.T) {
	m := NewRebalanceLockManager(time.Minute)
	now := time.Unix(1000, 0)
	m.now = func() time.Time { return now }
	require.True(t, m.IsLockAllExpired("g"), "no locks")
	mq := []codec.MessageQueue{{Topic: "T", BrokerName: "b", QueueID: 0}, {Topic: "T", BrokerName: "b", QueueID: 1}}
	require.Len(t, m.TryLockBatch("g", mq[:1], "c1"), 1)
	now = now.Add(40 * time.Second)
	require.Len(t, m.TryLockBatch("g", mq[1:], "c1"), 1)
	require.False(t, m.IsLockAllExpired("g"))
	require.True(t, m.IsLockAllExpired("other"))
	now = now.Add(30 * time.Second)
	require.False(t, m.IsLockAllExpired("g"), "the second lock is still live")
	now = now.Add(31 * time.Second)
	require.True(t, m.IsLockAllExpired("g"))
}

func TestConsumerManagerNotifiesGroup(t *testing.T) {
	m := NewConsumerManager(quietLog())
	c1, c2 := newTestConn(1), newTestConn(2)
	subs := []codec.SubscriptionData{{Topic: "T", SubString: "*", SubVersion: 1}}
	require.True(t, m.Register("g", ClientChannel{Conn: c1, ClientID: "a"}, "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET", subs, true))
	require.False(t, m.Register("g", ClientChannel{Conn: c1, ClientID: "a"}, "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET", subs, true))
	require.True(t, m.Register("g", ClientChannel{Conn: c2, ClientID: "b"}, "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET", subs, true))
	require.Equal(t, []string{"a", "b"}, m.ClientIDs("g"))
	require.Equal(t, 2, c1.onewayCount())
	require.Equal(t, 1, c2.onewayCount())
	require.Equal(t, codec.ReqNotifyConsumerIdsChanged, c1.oneway[0].Code)
	v, _ := c1.oneway[0].Ext.Get("consumerGroup")
	require.Equal(t, "g", v)

	m.RemoveConn(c2, true)
	require.Equal(t, []string{"a"}, m.ClientIDs("g"))
	require.Equal(t, 3, c1.onewayCount())
	m.RemoveConn(c1, true)
	require.Empty(t, m.ClientIDs("g"))
	_, ok := m.Group("g")
	require.False(t, ok)
}

// TestConsumerManagerNotifyRules: Java's registerConsumer, unregisterConsumer and
// doChannelCloseEvent tell a group's members of a new member and of a topic the
// group started or stopped subscribing, but never a BROADCASTING group (each of
// its members consumes every queue), and a close only when the broker allows.
func TestConsumerManagerNotifyRules(t *testing.T) {
	const pass, last = "CONSUME_PASSIVELY", "CONSUME_FROM_LAST_OFFSET"
	m := NewConsumerManager(quietLog())
	t1 := []codec.SubscriptionData{{Topic: "T1", SubString: "*", SubVersion: 1}}
	t12 := append(t1[:1:1], codec.SubscriptionData{Topic: "T2", SubString: "*", SubVersion: 1})

	b1, b2 := newTestConn(1), newTestConn(2)
	m.Register("b", ClientChannel{Conn: b1, ClientID: "a"}, pass, "BROADCASTING", last, t1, true)
	m.Register("b", ClientChannel{Conn: b2, ClientID: "b"}, pass, "BROADCASTING", last, t1, true)
	m.Unregister("b", b2, true)
	require.Zero(t, b1.onewayCount()+b2.onewayCount(), "a broadcasting group is not told")

	c1, c2 := newTestConn(3), newTestConn(4)
	m.Register("g", ClientChannel{Conn: c1, ClientID: "a"}, pass, "CLUSTERING", last, t1, true)
	m.Register("g", ClientChannel{Conn: c2, ClientID: "b"}, pass, "CLUSTERING", last, t1, true)
	require.Equal(t, 2, c1.onewayCount())
	require.True(t, m.Register("g", ClientChannel{Conn: c2, ClientID: "b"}, pass, "CLUSTERING", last, t12, true),
		"a topic added is a change")
	require.Equal(t, 3, c1.onewayCount(), "told of the added topic")
	require.False(t, m.Register("g", ClientChannel{Conn: c2, ClientID: "b"}, pass, "CLUSTERING", last, t12, true))
	t12v2 := append([]codec.SubscriptionData(nil), t12...)
	t12v2[1].SubString, t12v2[1].SubVersion = "x", 2
	require.False(t, m.Register("g", ClientChannel{Conn: c2, ClientID: "b"}, pass, "CLUSTERING", last, t12v2, true),
		"a new expression of a subscribed topic is no membership change")
	require.Equal(t, 3, c1.onewayCount())
	m.Register("g", ClientChannel{Conn: c2, ClientID: "b"}, pass, "CLUSTERING", last, t1, true)
	require.Equal(t, 4, c1.onewayCount(), "told of the removed topic")
	m.Register("g", ClientChannel{Conn: c2, ClientID: "b"}, pass, "CLUSTERING", last, t12, false)
	require.Equal(t, 4, c1.onewayCount(), "the group's flag off")

	m.RemoveConn(c2, false)
	require.Equal(t, []string{"a"}, m.ClientIDs("g"))
	require.Equal(t, 4, c1.onewayCount(), "the broker's flag off")
}
