package compat

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWriteConfigFileCrashKeepsAFile: a kill after any step of a rewrite
// leaves path whole, holding the old or the new content, and a loader that
// falls back to .bak gets one of them too. Moving path to .bak before the
// rename left no path at all after a crash at "backup": broker.conf, which
// UPDATE_BROKER_CONFIG rewrites and the next start reads without a fallback,
// was gone.
func TestWriteConfigFileCrashKeepsAFile(t *testing.T) {
	for _, step := range []string{"tmp", "backup", "install"} {
		t.Run(step, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "broker.conf")
			require.NoError(t, WriteConfigFile(path, []byte("old=1\n")))
			require.NoError(t, writeConfigFile(path, []byte("new=2\n"), func(s string) bool { return s == step }))
			data, err := os.ReadFile(path)
			require.NoError(t, err, "path is missing after a crash at %s", step)
			require.Contains(t, []string{"old=1\n", "new=2\n"}, string(data))
			var loaded string
			require.NoError(t, LoadConfigFile(path, func(b []byte) error { loaded = string(b); return nil }))
			require.Contains(t, []string{"old=1\n", "new=2\n"}, loaded)
			// The next write after the restart completes and keeps the
			// previous content as .bak.
			require.NoError(t, WriteConfigFile(path, []byte("third=3\n")))
			data, err = os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, "third=3\n", string(data))
			bak, err := os.ReadFile(path + ".bak")
			require.NoError(t, err)
			require.Contains(t, []string{"old=1\n", "new=2\n"}, string(bak))
		})
	}
}

// TestWriteConfigFileKeepsThePreviousAsBak: .bak is the content before the
// last write (MixAll.string2File), a file of its own that the next write does
// not change through path.
func TestWriteConfigFileKeepsThePreviousAsBak(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "topics.json")
	require.NoError(t, WriteConfigFile(path, []byte("v1")))
	_, err := os.Stat(path + ".bak")
	require.ErrorIs(t, err, os.ErrNotExist, "no previous content, no .bak")
	require.NoError(t, WriteConfigFile(path, []byte("v2")))
	require.NoError(t, WriteConfigFile(path, []byte("v3")))
	for name, want := range map[string]string{path: "v3", path + ".bak": "v2"} {
		b, err := os.ReadFile(name)
		require.NoError(t, err)
		require.Equal(t, want, string(b), name)
	}
	_, err = os.Stat(path + ".tmp")
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestLoadConfigFileFallsBack: an empty, torn or missing main file gives way
// to .bak; both bad is an error (Java's load returns false and the broker
// does not start); neither present is an empty table.
func TestLoadConfigFileFallsBack(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	decode := func(got *string) func([]byte) error {
		return func(b []byte) error {
			if b[0] != '{' || b[len(b)-1] != '}' {
				return os.ErrInvalid
			}
			*got = string(b)
			return nil
		}
	}
	var got string
	require.NoError(t, LoadConfigFile(path, decode(&got)))
	require.Empty(t, got)
	require.NoError(t, os.WriteFile(path+".bak", []byte("{bak}"), 0o644))
	for _, main := range []string{"", " \n", "{torn"} {
		require.NoError(t, os.WriteFile(path, []byte(main), 0o644))
		got = ""
		require.NoError(t, LoadConfigFile(path, decode(&got)), "%q", main)
		require.Equal(t, "{bak}", got)
	}
	require.NoError(t, os.Remove(path))
	got = ""
	require.NoError(t, LoadConfigFile(path, decode(&got)))
	require.Equal(t, "{bak}", got)
	require.NoError(t, os.WriteFile(path, []byte("{torn"), 0o644))
	require.NoError(t, os.WriteFile(path+".bak", []byte("{also"), 0o644))
	require.Error(t, LoadConfigFile(path, decode(&got)))
}
