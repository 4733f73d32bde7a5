package namesrv

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// The close handler may run before a registration queued on the same
// connection: the registration must not outlive it.
func TestRegistrationOnClosedConnectionIsRefused(t *testing.T) {
	ns := newTestNameServer(t, newFakeClock(), nil)
	conn := newFakeConn()
	_ = conn.Close()
	ns.OnClose(conn) // finds nothing yet
	body := compressedRegistration(t, []string{"T", "U"})
	resp := callOn(t, ns, conn, registerReq(body, "ghost", "6.6.6.6:1"))
	require.Equal(t, codec.RespSystemError, resp.Code)
	require.Empty(t, ns.Routes().ClusterInfo().BrokerAddrTable)
	require.Empty(t, ns.Routes().ClusterInfo().ClusterAddrTable)
	require.Empty(t, ns.Routes().AllTopics())
}

func TestHeartbeatTimeoutIsClamped(t *testing.T) {
	for _, tc := range []struct {
		timeout, lives int64
	}{
		{1 << 62, MaxBrokerHeartbeatTimeoutMillis},
		{MaxBrokerHeartbeatTimeoutMillis + 1, MaxBrokerHeartbeatTimeoutMillis},
		{30_000, 30_000},
		{0, DefaultBrokerChannelExpiredMillis},
		{-5, DefaultBrokerChannelExpiredMillis},
	} {
		clock := newFakeClock()
		m := newTestManager(t, clock)
		r := registration("c", "b", 0, "a:1", topicTable(codec.DataVersion{}, map[string]int32{"T": 1, "U": 1}))
		r.HeartbeatTimeoutMillis = tc.timeout
		_, ok := m.RegisterBroker(r)
		require.True(t, ok)
		clock.Advance(time.Duration(tc.lives) * time.Millisecond)
		require.Zero(t, m.ScanNotActiveBrokers(), "timeout %d", tc.timeout)
		clock.Advance(time.Millisecond)
		require.Equal(t, 1, m.ScanNotActiveBrokers(), "timeout %d", tc.timeout)
	}
}
