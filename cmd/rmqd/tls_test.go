package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/remoting"
)

// tls.config.file overrides the -c keys, as TlsHelper's file overrides the
// system properties; a missing file is skipped.
func TestTLSSettingsConfigFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tls.properties")
	if err := os.WriteFile(file, []byte("tls.server.mode=enforcing\ntls.server.need.client.auth=require\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := tlsSettings(map[string]string{"tls.server.mode": "disabled", "tls.enable": "true", "tls.config.file": file})
	if err != nil {
		t.Fatal(err)
	}
	if st.ServerMode != remoting.TLSEnforcing || st.ServerNeedClientAuth != "require" || !st.ClientEnable {
		t.Fatalf("settings %+v", st)
	}
	st, err = tlsSettings(map[string]string{"tls.server.mode": "disabled", "tls.config.file": filepath.Join(dir, "none")})
	if err != nil || st.ServerMode != remoting.TLSDisabled {
		t.Fatalf("missing file: %+v %v", st, err)
	}
	if _, err := tlsSettings(map[string]string{"tls.server.mode": "maybe"}); err == nil {
		t.Fatal("bad mode accepted")
	}
}

// The tls.* keys over Java's defaults; booleans follow Boolean.parseBoolean
// as every other key does.
func TestTLSSettingsDefaultsAndKeys(t *testing.T) {
	st, err := tlsSettings(map[string]string{"tls.config.file": ""})
	require.NoError(t, err)
	require.Equal(t, remoting.TLSPermissive, st.ServerMode)
	require.True(t, st.TestMode)
	require.Equal(t, "none", st.ServerNeedClientAuth)

	st, err = tlsSettings(map[string]string{"tls.server.mode": "Enforcing", "tls.test.mode.enable": "false",
		"tls.server.need.client.auth": "optional", "tls.enable": "TRUE", "tls.config.file": "",
		"tls.server.keyPassword": "pw"})
	require.NoError(t, err)
	require.Equal(t, remoting.TLSEnforcing, st.ServerMode)
	require.False(t, st.TestMode)
	require.True(t, st.ClientEnable)
	require.Equal(t, "optional", st.ServerNeedClientAuth)
	require.Equal(t, "pw", st.ServerKeyPassword)

	_, err = tlsSettings(map[string]string{"tls.server.mode": "sometimes", "tls.config.file": ""})
	require.Error(t, err)
}

// tls.* keys are bound like any other: none is warned about as unknown.
func TestUnknownKeysKnowsTLS(t *testing.T) {
	u := unknownKeys(map[string]string{"tls.server.mode": "enforcing", "tls.enable": "true",
		"tls.client.trustCertPath": "/x", "tls.bogus": "1"})
	require.Equal(t, []string{"tls.bogus"}, u)
}

// Standalone with tls.server.mode=enforcing and tls.enable=true: the broker
// registers with its name server over TLS (a plain registration would be
// closed), and a TLS client reads the route while a plain one is refused.
func TestStandaloneEnforcingTLS(t *testing.T) {
	dir := t.TempDir()
	nsPort, brokerPort := freePort(t), freeBrokerPort(t)
	conf := fmt.Sprintf("bindAddress=127.0.0.1\nlistenPort=%d\nnamesrvListenPort=%d\nstorePathRootDir=%s\n"+
		"mappedFileSizeCommitLog=4194304\ntls.server.mode=enforcing\ntls.enable=true\ntls.config.file=%s\n",
		brokerPort, nsPort, filepath.Join(dir, "store"), filepath.Join(dir, "none.properties"))
	confPath := filepath.Join(dir, "broker.conf")
	require.NoError(t, os.WriteFile(confPath, []byte(conf), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, options{mode: "standalone", configFile: confPath}, io.Discard, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(15 * time.Second):
			t.Error("rmqd did not stop within 15 s")
		}
	})
	nsAddr := fmt.Sprintf("127.0.0.1:%d", nsPort)
	route := func(c *remoting.Client) (*codec.RemotingCommand, error) {
		rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer rcancel()
		req := codec.NewRequest(codec.ReqGetRouteinfoByTopic)
		req.Ext.Set("topic", "TBW102")
		return c.InvokeSync(rctx, nsAddr, req)
	}
	tc := remoting.NewClient(remoting.ClientConfig{TLS: &tls.Config{InsecureSkipVerify: true}})
	defer tc.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := route(tc)
		if err == nil && resp.Code == codec.RespSuccess {
			break
		}
		require.True(t, time.Now().Before(deadline), "broker route never served over TLS: %v %v", err, resp)
		tc.CloseConn(nsAddr)
		time.Sleep(50 * time.Millisecond)
	}
	pc := remoting.NewClient(remoting.ClientConfig{})
	defer pc.Close()
	_, err := route(pc)
	require.Error(t, err, "plain client served under enforcing")
}
