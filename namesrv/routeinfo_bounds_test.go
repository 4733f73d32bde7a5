package namesrv

import (
	"bytes"
	"log/slog"
	"strconv"
	"strings"
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

// fillBrokers registers n broker names on conn, each with two topics of its own
// and one shared topic.
func fillBrokers(t *testing.T, m *RouteInfoManager, n int, conn *fakeConn, timeout int64) {
	t.Helper()
	for i := 0; i < n; i++ {
		s := strconv.Itoa(i)
		r := registration("c", "b"+s, 0, "10.0.0.1:"+s,
			topicTable(codec.DataVersion{Counter: 1}, map[string]int32{"T" + s: 1, "U" + s: 1, "Shared": 1}))
		r.Conn = conn
		r.EnableActingMaster = new(bool)
		r.HeartbeatTimeoutMillis = timeout
		_, ok := m.RegisterBroker(r)
		require.True(t, ok)
	}
}

// checkBatches makes m assert, after each unregistration batch, that the lock
// is free (a route read and a heartbeat's registration can get it) and that the
// batch removed unregisterBatchSize of the n brokers (one more, "legit", stays);
// it returns the batch count.
func checkBatches(t *testing.T, m *RouteInfoManager, n int) *int {
	batches := 0
	m.afterUnregisterBatch = func() {
		batches++
		require.True(t, m.mu.TryLock(), "write lock released between batches")
		left := len(m.brokerLiveTable)
		m.mu.Unlock()
		require.Equal(t, 1+max(0, n-batches*unregisterBatchSize), left, "the legit broker and those not removed yet")
		_, ok := m.TopicRouteData("Legit")
		require.True(t, ok)
	}
	return &batches
}

func TestConnCloseUnregistersInBatches(t *testing.T) {
	const n = 2*unregisterBatchSize + 500
	m := newTestManager(t, newFakeClock())
	_, _ = m.RegisterBroker(registration("c", "legit", 0, "l:1",
		topicTable(codec.DataVersion{}, map[string]int32{"Legit": 1, "Shared": 1})))
	conn := newFakeConn()
	fillBrokers(t, m, n, conn, 0)
	batches := checkBatches(t, m, n)
	walks := m.topicWalks

	require.Equal(t, n, m.OnConnClosed(conn.ID()))
	require.Equal(t, 3, *batches)
	require.Equal(t, 3, m.topicWalks-walks, "one walk over the topic table per batch")
	require.Equal(t, []string{"Legit", "Shared"}, m.AllTopics())
	require.Len(t, m.ClusterInfo().BrokerAddrTable, 1)
	require.Len(t, route(t, m, "Shared").QueueDatas, 1)
}

func TestExpiryUnregistersInBatches(t *testing.T) {
	const n = unregisterBatchSize + 1
	clock := newFakeClock()
	m := newTestManager(t, clock)
	_, _ = m.RegisterBroker(registration("c", "legit", 0, "l:1",
		topicTable(codec.DataVersion{}, map[string]int32{"Legit": 1, "Shared": 1})))
	conn := newFakeConn()
	fillBrokers(t, m, n, conn, 1)
	batches := checkBatches(t, m, n)
	walks := m.topicWalks
	clock.Advance(time.Second)
	_, _ = m.RegisterBroker(registration("c", "legit", 0, "l:1",
		topicTable(codec.DataVersion{}, map[string]int32{"Legit": 1, "Shared": 1}))) // a fresh heartbeat

	require.Equal(t, n, m.ScanNotActiveBrokers())
	require.Equal(t, 2, *batches)
	require.Equal(t, 2, m.topicWalks-walks)
	require.True(t, conn.Closed())
	require.Equal(t, []string{"Legit", "Shared"}, m.AllTopics())
}

func TestUnregisterUnknownBrokerNameWalksNothing(t *testing.T) {
	m := newTestManager(t, newFakeClock())
	_, _ = m.RegisterBroker(registration("c", "a", 0, "a:1", topicTable(codec.DataVersion{}, map[string]int32{"T": 1, "U": 1})))
	walks := m.topicWalks
	for i := 0; i < 100; i++ {
		m.UnregisterBrokers(UnregisterRequest{ClusterName: "c", BrokerAddr: "x:" + strconv.Itoa(i), BrokerName: "x" + strconv.Itoa(i)})
	}
	// A known name at an address it does not have: nothing to walk either.
	m.UnregisterBrokers(UnregisterRequest{ClusterName: "c", BrokerAddr: "zz:1", BrokerName: "a"})
	require.Equal(t, walks, m.topicWalks)
	require.Equal(t, []string{"T", "U"}, m.AllTopics())
}

func TestRegistrationLogsOneSummaryLine(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		var buf bytes.Buffer
		cfg := testConfig(t, newFakeClock())
		m := NewRouteInfoManager(func() *Config { return &cfg }, slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level})))
		topics := map[string]int32{}
		for i := 0; i < 500; i++ {
			topics["T"+strconv.Itoa(i)] = 1
		}
		_, _ = m.RegisterBroker(registration("c", "b", 0, "a:1", topicTable(codec.DataVersion{Counter: 1}, topics)))
		for name := range topics {
			topics[name] = 2
		}
		_, _ = m.RegisterBroker(registration("c", "b", 0, "a:1", topicTable(codec.DataVersion{Counter: 2}, topics)))
		out := buf.String()
		lines := strings.Count(out, "\n")
		if level == slog.LevelInfo {
			// "new broker registered" and one summary per registration.
			require.Equal(t, 3, lines, out)
			require.Contains(t, out, "new=500 changed=0")
			require.Contains(t, out, "new=0 changed=500")
		} else {
			require.GreaterOrEqual(t, lines, 1000)
		}
	}
}
