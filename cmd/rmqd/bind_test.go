package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/processor"
	"rmqd/remoting"
)

func TestStandaloneBind(t *testing.T) {
	for _, c := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{}, "127.0.0.1"},
		{map[string]string{"brokerIP1": "127.0.0.1"}, "127.0.0.1"},
		{map[string]string{"brokerIP1": "10.1.2.3"}, "0.0.0.0"},
		{map[string]string{"brokerIP1": "::1"}, "::1"},
		{map[string]string{"brokerIP1": "[::1]"}, "::1"},
		{map[string]string{"brokerIP1": "2001:db8::1"}, "0.0.0.0"},
		{map[string]string{"brokerIP1": "broker.example"}, "0.0.0.0"},
		{map[string]string{"bindAddress": "0.0.0.0"}, "0.0.0.0"},
		{map[string]string{"bindAddress": "127.0.0.5", "brokerIP1": "10.1.2.3"}, "127.0.0.5"},
	} {
		require.Equal(t, c.want, standaloneBind(c.props), "%v", c.props)
	}
}

// syncBuffer is a log sink safe for the servers' goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startMode runs rmqd in mode with conf (ports and store filled in) until the
// test ends, and returns the ports and the log.
func startMode(t *testing.T, mode, conf string) (nsPort, brokerPort int, log *syncBuffer) {
	t.Helper()
	dir := t.TempDir()
	nsPort, brokerPort = freePort(t), freeBrokerPort(t)
	port := brokerPort
	if mode == "namesrv" {
		port = nsPort
	}
	conf += fmt.Sprintf("listenPort=%d\nnamesrvListenPort=%d\nstorePathRootDir=%s\nmappedFileSizeCommitLog=4194304\nkvConfigPath=%s\n",
		port, nsPort, filepath.Join(dir, "store"), filepath.Join(dir, "kv.json"))
	confPath := filepath.Join(dir, "rmqd.conf")
	require.NoError(t, os.WriteFile(confPath, []byte(conf), 0o644))
	log = &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(log, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, options{mode: mode, configFile: confPath}, io.Discard, logger) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			// A dial may succeed before the event loop reports ready, so a
			// short test can cancel serve while it still waits in start.
			if !errors.Is(err, context.Canceled) {
				require.NoError(t, err)
			}
		case <-time.After(15 * time.Second):
			t.Error("rmqd did not stop within 15 s")
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		require.True(t, time.Now().Before(deadline), "not listening on %s: %v", addr, err)
		time.Sleep(20 * time.Millisecond)
	}
	return nsPort, brokerPort, log
}

// reachable dials host:port; 127.0.0.2 reaches a wildcard listener but not one
// bound to 127.0.0.1, which tells the two apart without leaving loopback.
func reachable(host string, port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort(host, fmt.Sprint(port)), 2*time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// Standalone with no bindAddress serves on 127.0.0.1 only (name server, broker
// and its VIP port) and says so in its log.
func TestStandaloneListensOnLoopbackOnly(t *testing.T) {
	nsPort, brokerPort, log := startMode(t, "standalone", "")
	for _, p := range []int{nsPort, brokerPort, brokerPort - 2} {
		require.True(t, reachable("127.0.0.1", p), "port %d on 127.0.0.1", p)
		require.False(t, reachable("127.0.0.2", p), "port %d must not be served beyond 127.0.0.1", p)
	}
	require.Contains(t, log.String(), "loopback only")
	for _, line := range []string{fmt.Sprintf("msg=\"broker listening\" addr=127.0.0.1:%d", brokerPort),
		fmt.Sprintf("msg=\"namesrv listening\" addr=127.0.0.1:%d", nsPort)} {
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(log.String(), line) {
			require.True(t, time.Now().Before(deadline), "log lacks %q:\n%s", line, log.String())
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// bindAddress=0.0.0.0 opens standalone to every interface, as Java does.
func TestStandaloneBindAddressWildcard(t *testing.T) {
	nsPort, brokerPort, _ := startMode(t, "standalone", "bindAddress=0.0.0.0\n")
	require.True(t, reachable("127.0.0.2", nsPort))
	require.True(t, reachable("127.0.0.2", brokerPort))
}

// rmqd namesrv keeps Java's wildcard default.
func TestNamesrvModeKeepsWildcard(t *testing.T) {
	nsPort, _, log := startMode(t, "namesrv", "")
	require.True(t, reachable("127.0.0.2", nsPort))
	if ln, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		ln.Close()
		// Java binds 0.0.0.0 on a dual-stack socket: IPv6 clients reach it too.
		require.True(t, reachable("::1", nsPort), "the wildcard listener takes IPv6 clients")
	}
	require.NotContains(t, log.String(), "loopback only")
}

// The limit keys reach the server configuration; 0 in rmqd's own keys means no
// limit, and Java's 0 water marks mean the defaults.
func TestLimitsFromConfig(t *testing.T) {
	var cfg remoting.ServerConfig
	shown, err := limits(map[string]string{"serverMaxConnections": "5", "writeBufferHighWaterMark": "65536",
		"serverMaxRequestsPerConnection": "0", "serverWriteStallTimeoutSeconds": "7", "serverSelectorThreads": "1"}, &cfg)
	require.NoError(t, err)
	require.Equal(t, 1, cfg.NumEventLoop)
	require.Equal(t, "1", shown["serverSelectorThreads"])
	require.Equal(t, 5, cfg.MaxConns)
	require.Equal(t, 65536, cfg.WriteBufferHighWaterMark)
	require.Equal(t, 0, cfg.WriteBufferLowWaterMark, "the server derives it")
	require.Equal(t, "32768", shown["writeBufferLowWaterMark"])
	require.Equal(t, -1, cfg.MaxRequestsPerConn)
	require.Equal(t, 7*time.Second, cfg.WriteStallTimeout)
	require.EqualValues(t, remoting.DefaultMaxQueuedRequestBytes, cfg.MaxQueuedRequestBytes)

	_, err = limits(map[string]string{"serverMaxConnections": "many"}, &cfg)
	require.ErrorContains(t, err, "serverMaxConnections")
	_, err = limits(map[string]string{"serverSelectorThreads": "-1"}, &cfg)
	require.ErrorContains(t, err, "serverSelectorThreads")
}

// rmqd broker keeps Java's wildcard default too.
func TestBrokerModeKeepsWildcard(t *testing.T) {
	_, brokerPort, log := startMode(t, "broker", "brokerIP1=127.0.0.1\n")
	require.True(t, reachable("127.0.0.2", brokerPort))
	require.True(t, reachable("127.0.0.2", brokerPort-2))
	require.NotContains(t, log.String(), "loopback only")
}

// The Prometheus exporter listens on brokerIP1 by default; Java's default for an
// IPv6 host is bracketed ("[fd00::2]"), which must not be bracketed twice.
func TestMetricsHostFromBracketedBrokerIP(t *testing.T) {
	bcfg := processor.DefaultBrokerConfig()
	bcfg.BrokerIP1, bcfg.MetricsExporterType, bcfg.MetricsPromExporterPort = "[::1]", "PROM", 5557
	_, addr, err := metricsSetup(bcfg, nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	require.Equal(t, "[::1]:5557", addr)
}
