package namesrv

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"rmqd/codec"
)

// fakeClock is a settable clock for liveness tests.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.UnixMilli(1_700_000_000_000)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testConfig is the default config with the KV store in a temp dir and the clock.
func testConfig(t testing.TB, clock *fakeClock) Config {
	cfg := DefaultConfig()
	dir := t.TempDir()
	cfg.KvConfigPath = dir + "/kvConfig.json"
	cfg.ConfigStorePath = dir + "/namesrv.properties"
	if clock != nil {
		cfg.Now = clock.Now
	}
	return cfg
}

func newTestManager(t testing.TB, clock *fakeClock) *RouteInfoManager {
	cfg := testConfig(t, clock)
	return NewRouteInfoManager(func() *Config { return &cfg }, quietLogger())
}

// fakeConn is a remoting.Conn that records Close.
type fakeConn struct {
	id     uint64
	closed atomic.Bool
}

var fakeConnIDs atomic.Uint64

func newFakeConn() *fakeConn { return &fakeConn{id: fakeConnIDs.Add(1)} }

func (c *fakeConn) ID() uint64 { return c.id }
func (c *fakeConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (c *fakeConn) LocalAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9876} }
func (c *fakeConn) WriteResponse(*codec.RemotingCommand) error {
	return nil
}
func (c *fakeConn) Invoke(context.Context, *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	return nil, io.EOF
}
func (c *fakeConn) InvokeOneway(*codec.RemotingCommand) error { return nil }
func (c *fakeConn) Close() error                              { c.closed.Store(true); return nil }
func (c *fakeConn) Closed() bool                              { return c.closed.Load() }

// topicTable builds a wrapper with the given topics, each with queues read = write = n.
func topicTable(dv codec.DataVersion, queues map[string]int32) *codec.TopicConfigSerializeWrapper {
	w := &codec.TopicConfigSerializeWrapper{DataVersion: dv, TopicConfigTable: map[string]*codec.TopicConfig{}}
	for name, n := range queues {
		tc := codec.NewTopicConfig(name)
		tc.ReadQueueNums, tc.WriteQueueNums = n, n
		w.TopicConfigTable[name] = &tc
	}
	return w
}

func registration(cluster, name string, id int64, addr string, topics *codec.TopicConfigSerializeWrapper) *BrokerRegistration {
	return &BrokerRegistration{ClusterName: cluster, BrokerName: name, BrokerID: id, BrokerAddr: addr,
		HaServerAddr: addr + "-ha", Topics: topics}
}
