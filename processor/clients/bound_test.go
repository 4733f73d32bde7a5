package clients

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// RegisterAll is all or nothing against the connection's bound; duplicates
// and groups already held take no room.
func TestProducerRegisterAllBound(t *testing.T) {
	m := NewProducerManager()
	c1, c2 := newTestConn(1), newTestConn(2)
	ch := ClientChannel{Conn: c1, ClientID: "a"}
	require.True(t, m.RegisterAll([]string{"A", "B", "B"}, ch, 3))
	require.False(t, m.RegisterAll([]string{"A", "C", "D"}, ch, 3))
	require.Empty(t, m.Channels("C"))
	require.True(t, m.RegisterAll([]string{"A", "B", "C"}, ch, 3))
	require.True(t, m.RegisterAll([]string{"B", "D"}, ClientChannel{Conn: c2, ClientID: "b"}, 3))

	m.RemoveConn(c1)
	require.Empty(t, m.Channels("A"))
	require.Len(t, m.Channels("B"), 1)
	require.True(t, m.RegisterAll([]string{"X", "Y", "Z"}, ch, 3), "closing freed the connection's room")
}

// RegisterWithin refuses a new group at the bound even when each call
// passed Fits, as two heartbeats racing on one connection would.
func TestConsumerRegisterWithinBound(t *testing.T) {
	m := NewConsumerManager(quietLog())
	c1, c2 := newTestConn(1), newTestConn(2)
	reg := func(c *testConn, group string) bool {
		_, ok := m.RegisterWithin(2, group, ClientChannel{Conn: c, ClientID: "a"}, "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET", nil, false)
		return ok
	}
	require.True(t, m.Fits(c1, []string{"A", "B"}, 2))
	require.True(t, reg(c1, "A"))
	require.True(t, reg(c1, "B"))
	require.False(t, m.Fits(c1, []string{"C"}, 2))
	require.False(t, reg(c1, "C"))
	_, ok := m.Group("C")
	require.False(t, ok)
	require.True(t, reg(c1, "A"), "renewal")
	require.True(t, reg(c2, "B"))

	m.RemoveConn(c1, true)
	_, ok = m.Group("A")
	require.False(t, ok)
	require.Len(t, m.ClientIDs("B"), 1)
	require.True(t, m.Fits(c1, []string{"C", "D"}, 2))
}

// TestProducerFindByClientIDPrefersFreshest: a producer that reconnected while
// its old connection lingers is found on the new one (Java's clientChannelTable
// keeps the channel registered last), so replies (reply.go) reach it.
func TestProducerFindByClientIDPrefersFreshest(t *testing.T) {
	m := NewProducerManager()
	stale, fresh := newTestConn(1), newTestConn(2)
	m.Register("P", ClientChannel{Conn: stale, ClientID: "a"})
	time.Sleep(5 * time.Millisecond)
	m.Register("P", ClientChannel{Conn: fresh, ClientID: "a"})
	for range 20 {
		ch, ok := m.FindByClientID("a")
		require.True(t, ok)
		require.Equal(t, fresh.ID(), ch.Conn.ID())
	}
}
