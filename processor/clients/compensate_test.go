package clients

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// TestCompensate follows Java's ConsumerManager: a group that only pops (no heartbeat) is known by its
// compensated subscription, found after the live groups' and never as a connection; the entry expires
// subscriptionExpiredTimeout after its last request.
func TestCompensate(t *testing.T) {
	m := NewConsumerManager(quietLog())
	sub := codec.SubscriptionData{Topic: "T", SubString: "a || b", ExpressionType: "TAG", TagsSet: []string{"a", "b"}}
	retry := codec.SubscriptionData{Topic: "%RETRY%G_T", SubString: "*", ExpressionType: "TAG"}
	before := time.Now().UnixMilli()
	m.Compensate("G", "CONSUME_POP", "CLUSTERING", sub, retry)

	got, ok := m.FindSubscription("G", "T")
	require.True(t, ok)
	require.Equal(t, "a || b", got.SubString)
	require.GreaterOrEqual(t, got.SubVersion, before, "subVersion is the request's time, as FilterAPI.build")
	_, ok = m.FindSubscription("G", "%RETRY%G_T")
	require.True(t, ok)
	_, ok = m.FindSubscription("G", "other")
	require.False(t, ok)

	ct, mm, topics, ok := m.CompensatedGroup("G")
	require.True(t, ok)
	require.Equal(t, []any{"CONSUME_POP", "CLUSTERING", []string{"%RETRY%G_T", "T"}}, []any{ct, mm, topics})
	// Not a live group: no connection, no client id, no rebalance member.
	_, live := m.Group("G")
	require.False(t, live)
	require.Empty(t, m.ClientIDs("G"))

	// A live group's own subscription comes first; the compensated one fills a topic it lacks.
	m.Register("G", ClientChannel{Conn: newTestConn(1), ClientID: "c1"}, "CONSUME_PASSIVELY", "CLUSTERING", "",
		[]codec.SubscriptionData{{Topic: "T", SubString: "*", ExpressionType: "TAG"}}, false)
	got, _ = m.FindSubscription("G", "T")
	require.Equal(t, "*", got.SubString)
	_, ok = m.FindSubscription("G", "%RETRY%G_T")
	require.True(t, ok)

	// Pulls of a live group leave the table alone; those of an unknown group fill it.
	m.CompensatePull("G", "CONSUME_PASSIVELY", "CLUSTERING", &codec.SubscriptionData{Topic: "P"})
	_, ok = m.FindSubscription("G", "P")
	require.False(t, ok)
	m.CompensatePull("L", "CONSUME_ACTIVELY", "CLUSTERING", &codec.SubscriptionData{Topic: "P", SubString: "*"})
	_, ok = m.FindSubscription("L", "P")
	require.True(t, ok)
	m.CompensatePull("B", "CONSUME_PASSIVELY", "BROADCASTING", nil)
	ct, mm, topics, ok = m.CompensatedGroup("B")
	require.True(t, ok)
	require.Equal(t, []any{"CONSUME_PASSIVELY", "BROADCASTING", []string(nil)}, []any{ct, mm, topics})
	require.Equal(t, []string{"B", "G", "L"}, m.CompensatedGroups())

	// Expiry: nothing within the timeout; past it the subscriptions go, and the groups left without one,
	// but a group that never had a subscription stays (Java removes only on a removed topic).
	m.ExpireCompensation(time.Now(), time.Minute)
	require.Equal(t, []string{"B", "G", "L"}, m.CompensatedGroups())
	m.ExpireCompensation(time.Now().Add(2*time.Minute), time.Minute)
	require.Equal(t, []string{"B"}, m.CompensatedGroups())
	_, ok = m.FindSubscription("L", "P")
	require.False(t, ok)
	// A renewed request brings the group back.
	m.Compensate("G", "CONSUME_POP", "CLUSTERING", sub)
	_, ok = m.FindSubscription("G", "T")
	require.True(t, ok)
}
