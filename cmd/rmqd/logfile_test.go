package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLogFormatSwitch(t *testing.T) {
	var buf bytes.Buffer
	o, err := parseArgs([]string{"-log-format", "json"}, &buf)
	require.NoError(t, err)
	logger, c, err := newLogger(o.log, &buf)
	require.NoError(t, err)
	defer c.Close()
	logger.Info("broker started", "name", "b1")
	var rec map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &rec), buf.String())
	require.Equal(t, "broker started", rec["msg"])
	require.Equal(t, "b1", rec["name"])

	buf.Reset()
	o, err = parseArgs(nil, &buf)
	require.NoError(t, err)
	logger, _, err = newLogger(o.log, &buf)
	require.NoError(t, err)
	logger.Info("broker started", "name", "b1")
	require.Contains(t, buf.String(), `msg="broker started" name=b1`)

	_, err = parseArgs([]string{"-log-format", "xml"}, &buf)
	require.ErrorContains(t, err, "-log-format")
	_, err = parseArgs([]string{"-log-keep", "-1"}, &buf)
	require.Error(t, err)
}

func TestLogFileRotatesAtSizeAndKeepsN(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rmqd.log")
	const max, keep = 1000, 2
	f, err := openRotatingFile(path, max, keep)
	require.NoError(t, err)
	line := []byte(strings.Repeat("x", 99) + "\n") // 100 bytes
	for i := 0; i < 10; i++ {
		_, err := f.Write(line)
		require.NoError(t, err)
	}
	// Exactly max bytes: still one file.
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.EqualValues(t, max, st.Size())
	require.NoFileExists(t, path+".1")

	// The next record would pass max: the file moves to .1, a new one starts.
	mark := []byte("second\n")
	_, err = f.Write(mark)
	require.NoError(t, err)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, mark, got)
	st, err = os.Stat(path + ".1")
	require.NoError(t, err)
	require.EqualValues(t, max, st.Size())

	// Two more rotations: .1 and .2 kept, nothing older.
	for r := 0; r < 2; r++ {
		for i := 0; i < 10; i++ {
			_, err := f.Write(line)
			require.NoError(t, err)
		}
	}
	require.NoError(t, f.Close())
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, []string{"rmqd.log", "rmqd.log.1", "rmqd.log.2"}, names)
	// .2 is the oldest kept: it begins with the "second" record.
	old, err := os.ReadFile(path + ".2")
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(old, mark), "%q", old[:20])

	// Reopening appends, counting the size already there.
	f, err = openRotatingFile(path, max, keep)
	require.NoError(t, err)
	defer f.Close()
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	_, err = f.Write([]byte("again\n"))
	require.NoError(t, err)
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, append(before, "again\n"...), after)
}

func TestLogFileFlagWritesThere(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rmqd.log")
	var buf bytes.Buffer
	o, err := parseArgs([]string{"namesrv", "-log-file", path, "-log-format", "json", "-log-max-size", "1", "-log-keep", "3"}, &buf)
	require.NoError(t, err)
	require.Equal(t, logOptions{format: "json", file: path, maxSize: 1, keep: 3}, o.log)
	logger, c, err := newLogger(o.log, &buf)
	require.NoError(t, err)
	logger.Info("name server started")
	require.NoError(t, c.Close())
	require.Zero(t, buf.Len(), "nothing on the standard stream")
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(got), `"msg":"name server started"`)
}

// TestLifecycleLogLines runs a standalone rmqd logging JSON to a file and
// checks that start, registration and stop each leave exactly one line.
func TestLifecycleLogLines(t *testing.T) {
	dir := t.TempDir()
	nsPort, brokerPort := freePort(t), freeBrokerPort(t)
	conf := fmt.Sprintf("bindAddress=127.0.0.1\nlistenPort=%d\nnamesrvListenPort=%d\nstorePathRootDir=%s\nmappedFileSizeCommitLog=4194304\n",
		brokerPort, nsPort, filepath.Join(dir, "store"))
	confPath := filepath.Join(dir, "broker.conf")
	require.NoError(t, os.WriteFile(confPath, []byte(conf), 0o644))
	logPath := filepath.Join(dir, "rmqd.log")
	logger, closer, err := newLogger(logOptions{format: "json", file: logPath, maxSize: 1, keep: 1}, io.Discard)
	require.NoError(t, err)
	defer closer.Close()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, options{mode: "standalone", configFile: confPath}, io.Discard, logger) }()
	// msgs reads the messages logged so far; bad is the first line that is not
	// JSON (a line being written while polling may be cut short).
	msgs := func() (out []string, bad string) {
		data, _ := os.ReadFile(logPath)
		for _, l := range bytes.Split(data, []byte("\n")) {
			if len(l) == 0 {
				continue
			}
			var rec struct{ Msg string }
			if err := json.Unmarshal(l, &rec); err != nil && bad == "" {
				bad = string(l)
			}
			out = append(out, rec.Msg)
		}
		return out, bad
	}
	require.Eventually(t, func() bool {
		m, _ := msgs()
		return slices.Contains(m, "broker listening") && slices.Contains(m, "registered with name server")
	}, 15*time.Second, 20*time.Millisecond)
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("rmqd did not stop within 15 s")
	}
	m, bad := msgs()
	require.Empty(t, bad, "every line is one JSON object")
	for _, want := range []string{"namesrv listening", "broker listening", "broker started", "registered with name server",
		"stopping", "unregistered from name server", "broker stopped", "namesrv stopped"} {
		n := 0
		for _, got := range m {
			if got == want {
				n++
			}
		}
		require.Equal(t, 1, n, "%q in %q", want, m)
	}
}
