package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/compat"
)

// Every key of Java's config classes and sample configs is bound by rmqd or
// classified in compat/javakeys.go, so a key a newer Java adds shows up here
// when testdata/java_keys.txt is refreshed, not as a silent gap.
func TestJavaKeysClassified(t *testing.T) {
	f, err := os.Open("testdata/java_keys.txt")
	require.NoError(t, err)
	defer f.Close()
	bound := boundKeys()
	var javaKeys []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k := strings.TrimSpace(sc.Text()); k != "" && !strings.HasPrefix(k, "#") {
			javaKeys = append(javaKeys, k)
		}
	}
	require.NoError(t, sc.Err())
	require.Greater(t, len(javaKeys), 400, "the list lost its keys")
	var missing []string
	for _, k := range javaKeys {
		if _, ok := compat.LookupJavaKey(k); !ok && !bound[k] {
			missing = append(missing, k)
		}
	}
	require.Empty(t, missing, "Java keys neither bound nor classified in compat/javakeys.go")

	// A classified key that is also bound would be reported wrongly; only a
	// refusal may sit on a bound key (its feature is refused, not ignored).
	for _, k := range compat.JavaKeyNames() {
		jk, _ := compat.LookupJavaKey(k)
		if bound[k] {
			require.Equal(t, compat.KeyRefused, jk.Class, "%s is bound and classified %v", k, jk.Class)
		}
	}
}

// The start-up report keeps a typo, a Java behaviour rmqd does not give and a
// Java tuning knob apart: warnings for the first two, with different
// messages, an info line for the third; a refused feature left off is no
// effect.
func TestUnboundKeysReport(t *testing.T) {
	props := map[string]string{
		"brokerName": "b", "brokerNmae": "typo", "sendMessageThreadPoolNums": "64",
		"enableCompaction": "true", "duplicationEnable": "false", "rocksdbCompressionType": "ZSTD",
	}
	u := unboundKeys(props)
	require.Equal(t, []string{"brokerNmae"}, u[compat.KeyUnknown])
	require.Equal(t, []string{"duplicationEnable", "rocksdbCompressionType", "sendMessageThreadPoolNums"}, u[compat.KeyNoEffect])
	// enableCompaction is honoured now (a store key): bound, not reported. No
	// Java key is left that rmqd takes without honouring.
	require.Empty(t, u[compat.KeyNotHonoured])
	require.Empty(t, u[compat.KeyRefused])
	require.Equal(t, []string{"brokerNmae"}, unknownKeys(props))

	var buf bytes.Buffer
	reportUnboundKeys(props, slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2)
	require.Contains(t, lines[0], "level=WARN")
	require.Contains(t, lines[0], "does not know")
	require.Contains(t, lines[0], "brokerNmae")
	require.NotContains(t, buf.String(), "enableCompaction")
	require.Contains(t, lines[1], "level=INFO")
	require.Contains(t, lines[1], "no effect in rmqd")
	require.Contains(t, lines[1], "sendMessageThreadPoolNums")
	require.NotContains(t, lines[1], "brokerNmae")
}

// A Java setting asking for a feature rmqd lacks fails the start, naming the
// key, in every mode; the same key set to its off value starts (only the
// parse is exercised here: -p prints the config and exits).
func TestRefusedSettingFailsStart(t *testing.T) {
	for _, tc := range []struct{ mode, conf string }{
		{"standalone", "duplicationEnable=true\n"},
		{"broker", "readOnlyCommitLogStorePaths=/data/old\n"},
		{"namesrv", "enableControllerInNamesrv=true\n"},
	} {
		dir := t.TempDir()
		confPath := filepath.Join(dir, "rmqd.conf")
		conf := "bindAddress=127.0.0.1\nlistenPort=0\nnamesrvListenPort=0\nstorePathRootDir=" +
			filepath.Join(dir, "store") + "\n" + tc.conf
		require.NoError(t, os.WriteFile(confPath, []byte(conf), 0o644))
		key := strings.SplitN(tc.conf, "=", 2)[0]
		err := serve(context.Background(), options{mode: tc.mode, configFile: confPath}, io.Discard,
			slog.New(slog.NewTextHandler(io.Discard, nil)))
		require.ErrorContains(t, err, key, tc.mode)
		require.ErrorContains(t, err, "refuses to start", tc.mode)
	}
}

// useTLS, NettyClientConfig's name for the client TLS switch, sets what
// tls.enable sets.
func TestUseTLSIsTLSEnable(t *testing.T) {
	c := defaultTLSConfig()
	_, err := compat.BindConfig(map[string]string{"useTLS": "true"}, &c)
	require.NoError(t, err)
	require.True(t, c.ClientEnable)
	require.Empty(t, unknownKeys(map[string]string{"useTLS": "true"}))
}
