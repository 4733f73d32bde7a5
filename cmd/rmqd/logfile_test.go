package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
