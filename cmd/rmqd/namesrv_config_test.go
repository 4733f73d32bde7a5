package main

import (
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// The name server's configuration, which GET_NAMESRV_CONFIG answers, carries
// the NettyServerConfig keys rmqd binds apart, as Java's lists them with its
// NamesrvConfig; rmqd's own limit keys stay out of it.
func TestNamesrvConfigShowsNettyKeys(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{"listenPort": "0", "kvConfigPath": filepath.Join(dir, "kv.json"),
		"configStorePath": filepath.Join(dir, "ns.conf"), "serverSelectorThreads": "2", "writeBufferHighWaterMark": "65536"}
	_, shown, err := newNamesrv(props, options{mode: "namesrv"}, "127.0.0.1", slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	require.Equal(t, "2", shown["serverSelectorThreads"])
	require.Equal(t, "65536", shown["writeBufferHighWaterMark"])
	require.Equal(t, "32768", shown["writeBufferLowWaterMark"])
	require.Equal(t, "120", shown["serverChannelMaxIdleTimeSeconds"])
	require.NotContains(t, shown, "serverMaxConnections")
}

// The broker's GET_BROKER_CONFIG carries the same NettyServerConfig keys plus
// bindAddress and NettyClientConfig's useTLS, with the values in force.
func TestBrokerNetKeys(t *testing.T) {
	lim := map[string]string{"writeBufferHighWaterMark": "65536", "writeBufferLowWaterMark": "32768",
		"serverSelectorThreads": "2", "serverChannelMaxIdleTimeSeconds": "120", "serverMaxConnections": "10"}
	st, err := tlsSettings(map[string]string{"tls.enable": "true"})
	require.NoError(t, err)
	got := brokerNetKeys(lim, "0.0.0.0", st)
	require.Equal(t, map[string]string{"writeBufferHighWaterMark": "65536", "writeBufferLowWaterMark": "32768",
		"serverSelectorThreads": "2", "serverChannelMaxIdleTimeSeconds": "120", "bindAddress": "0.0.0.0",
		"useTLS": "true", "clientCallbackExecutorThreads": strconv.Itoa(runtime.NumCPU())}, got)
}

// A standalone name server keeps what it writes under the store: the KV table
// and the file UPDATE_NAMESRV_CONFIG persists into (Java's default is
// user.home/namesrv, outside any store).
func TestStandaloneNamesrvFilesInStore(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{"listenPort": "0", keyNamesrvListenPort: "0", "storePathRootDir": dir}
	_, shown, err := newNamesrv(props, options{mode: "standalone"}, "127.0.0.1", slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "namesrv", "namesrv.properties"), shown["configStorePath"])
	require.Equal(t, filepath.Join(dir, "namesrv", "kvConfig.json"), shown["kvConfigPath"])
}
