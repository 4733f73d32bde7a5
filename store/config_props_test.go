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
