package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/store"
)

// TestCheckSubcommand runs `rmqd check` on a store written by rmqd's store: a
// clean one exits 0 silently, one with a broken config file exits 1 with one
// line naming it.
func TestCheckSubcommand(t *testing.T) {
	dir := t.TempDir()
	cfg := store.DefaultConfig()
	cfg.StorePathRootDir = dir
	cfg.MappedFileSizeCommitLog = 1 << 20
	cfg.MappedFileSizeConsumeQueue = 20 * 100
	st, err := store.Open(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	require.NoError(t, st.Start())
	for i := 0; i < 5; i++ {
		m := &codec.Message{Topic: "CT", Body: []byte("hello"), Properties: codec.FormatProperties(map[string]string{"KEYS": "k"})}
		require.Equal(t, store.PutOK, st.PutMessage(context.Background(), m).Status)
	}
	require.NoError(t, st.Shutdown())

	var out, errBuf bytes.Buffer
	require.Equal(t, 0, run([]string{"check", dir}, &out, &errBuf), "%s%s", out.String(), errBuf.String())
	require.Empty(t, out.String())

	require.NoError(t, os.MkdirAll(filepath.Join(dir, "config"), 0o755))
	bad := filepath.Join(dir, "config", "topics.json")
	require.NoError(t, os.WriteFile(bad, []byte("{oops"), 0o644))
	out.Reset()
	require.Equal(t, 1, run([]string{"check", "-repair", dir}, &out, &errBuf))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 1, out.String())
	require.True(t, strings.HasPrefix(lines[0], bad+": not JSON"), lines[0])
	_, err = os.Stat(bad)
	require.NoError(t, err, "-repair leaves what is not a torn tail alone")

	require.Equal(t, 2, run([]string{"check"}, &out, &errBuf), "no directory is a usage error")
}
