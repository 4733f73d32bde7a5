package clients

import (
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// TestSubscriptionKeptUnlessNewerVersion: as Java's
// ConsumerGroupInfo.updateSubscription, a topic's subscription is replaced
// only by one with a greater subVersion. A member still on the old expression
// (a rolling upgrade, a late heartbeat) must not put its filter back over the
// newer one: the new members' pulls would be filtered by it and answered
// SUBSCRIPTION_NOT_LATEST (the stored subVersion below theirs).
func TestSubscriptionKeptUnlessNewerVersion(t *testing.T) {
	const pass, last = "CONSUME_PASSIVELY", "CONSUME_FROM_LAST_OFFSET"
	m := NewConsumerManager(quietLog())
	c1, c2 := newTestConn(1), newTestConn(2)
	newer := []codec.SubscriptionData{{Topic: "T", SubString: "a", SubVersion: 200}}
	m.Register("g", ClientChannel{Conn: c1, ClientID: "new"}, pass, "CLUSTERING", last, newer, true)

	older := []codec.SubscriptionData{{Topic: "T", SubString: "b", SubVersion: 100}}
	m.Register("g", ClientChannel{Conn: c2, ClientID: "old"}, pass, "CLUSTERING", last, older, true)
	sub, _, found, _ := m.Subscription("g", "T")
	require.True(t, found)
	require.Equal(t, "a", sub.SubString, "an older subVersion does not replace")
	require.Equal(t, int64(200), sub.SubVersion)

	same := []codec.SubscriptionData{{Topic: "T", SubString: "c", SubVersion: 200}}
	m.Register("g", ClientChannel{Conn: c2, ClientID: "old"}, pass, "CLUSTERING", last, same, true)
	sub, _, _, _ = m.Subscription("g", "T")
	require.Equal(t, "a", sub.SubString, "an equal subVersion does not replace")

	newest := []codec.SubscriptionData{{Topic: "T", SubString: "d", SubVersion: 300}}
	m.Register("g", ClientChannel{Conn: c2, ClientID: "old"}, pass, "CLUSTERING", last, newest, true)
	sub, _, _, _ = m.Subscription("g", "T")
	require.Equal(t, "d", sub.SubString, "a greater subVersion replaces")
}
