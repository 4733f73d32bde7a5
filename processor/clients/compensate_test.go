package clients

import (
	"testing"
	"time"
	"unsafe"

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

	// Expiry: nothing within the timeout; past it the subscriptions go, and the groups left without one;
	// a group that never had a subscription goes too (Java keeps it for good: a leak under group churn).
	m.ExpireCompensation(time.Now(), time.Minute)
	require.Equal(t, []string{"B", "G", "L"}, m.CompensatedGroups())
	m.ExpireCompensation(time.Now().Add(2*time.Minute), time.Minute)
	require.Empty(t, m.CompensatedGroups())
	_, ok = m.FindSubscription("L", "P")
	require.False(t, ok)
	// A renewed request brings the group back.
	m.Compensate("G", "CONSUME_POP", "CLUSTERING", sub)
	_, ok = m.FindSubscription("G", "T")
	require.True(t, ok)
}

// A pull's strings alias its request frame, recycled once the pull is answered: the table keeps copies,
// and a repeated pull only moves the entry's date.
func TestCompensateOwnsItsStrings(t *testing.T) {
	m := NewConsumerManager(quietLog())
	frame := []byte("GROUP TOPIC a || b TAG a b")
	at := func(i, j int) string { return unsafe.String(&frame[i], j-i) }
	sub := codec.SubscriptionData{Topic: at(6, 11), SubString: at(12, 18), ExpressionType: at(19, 22),
		TagsSet: []string{at(23, 24), at(25, 26)}, CodeSet: codec.CodeSet{97, 98}}
	m.CompensatePull(at(0, 5), "CONSUME_ACTIVELY", "CLUSTERING", &sub)
	first, ok := m.FindSubscription("GROUP", "TOPIC")
	require.True(t, ok)
	time.Sleep(2 * time.Millisecond)
	m.CompensatePull(at(0, 5), "CONSUME_ACTIVELY", "CLUSTERING", &sub)
	for i := range frame {
		frame[i] = 'x'
	}
	got, ok := m.FindSubscription("GROUP", "TOPIC")
	require.True(t, ok)
	require.Equal(t, codec.SubscriptionData{Topic: "TOPIC", SubString: "a || b", ExpressionType: "TAG",
		TagsSet: []string{"a", "b"}, CodeSet: codec.CodeSet{97, 98}, SubVersion: got.SubVersion}, got)
	require.Greater(t, got.SubVersion, first.SubVersion)
	require.Equal(t, []string{"GROUP"}, m.CompensatedGroups())
}
