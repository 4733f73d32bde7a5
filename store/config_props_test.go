package store

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Properties shows every setting under its broker.conf key, in a form
// ApplyProperties reads back to the same configuration.
func TestConfigPropertiesRoundTrip(t *testing.T) {
	c := DefaultConfig()
	c.FlushDiskType = SyncFlush
	c.MappedFileSizeCommitLog = 1 << 20
	props := c.Properties()
	require.Equal(t, "SYNC_FLUSH", props["flushDiskType"])
	require.Equal(t, "1048576", props["mappedFileSizeCommitLog"])
	back := DefaultConfig()
	require.NoError(t, back.ApplyProperties(props))
	require.Equal(t, c, back)
}

// commitLogWriteThrough: auto follows flushDiskType, true and false force it.
func TestConfigWriteThrough(t *testing.T) {
	for _, tc := range []struct {
		flush, key string
		want       bool
	}{
		{AsyncFlush, "auto", false}, {SyncFlush, "auto", true},
		{AsyncFlush, "true", true}, {SyncFlush, "false", false},
	} {
		c := DefaultConfig()
		require.NoError(t, c.ApplyProperties(map[string]string{"flushDiskType": tc.flush, "commitLogWriteThrough": tc.key}))
		require.Equal(t, tc.want, c.writeThrough(), "%s %s", tc.flush, tc.key)
	}
	c := DefaultConfig()
	require.ErrorContains(t, c.ApplyProperties(map[string]string{"commitLogWriteThrough": "yes"}), "commitLogWriteThrough")
}
