package store

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A pull of messages further behind the commitlog's end than
// accessMessageInMemoryMaxRatio of memory (on disk) is bounded by the on-disk
// limits (maxTransferCountOnMessageInDisk 8, maxTransferBytesOnMessageInDisk
// 64 KiB), one of hot messages by the in-memory ones (32, 256 KiB); the first
// message is always returned (DefaultMessageStore.isTheBatchFull).
func TestGetMessageDiskTransferLimits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ratio int
		bytes int // maxTransferBytesOnMessageInDisk, 0: default
		want  int
	}{
		{"hot", 40, 0, 20},
		{"cold count", 0, 0, 8},
		{"cold bytes", 0, 1, 1}, // smaller than one record: still one
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			cfg.AccessMessageInMemoryMaxRatio = tc.ratio
			if tc.bytes > 0 {
				cfg.MaxTransferBytesOnMessageInDisk = tc.bytes
			}
			s := openStore(t, cfg)
			t.Cleanup(func() { require.NoError(t, s.Shutdown()) })
			putN(t, s, "D", 1, 20)
			waitDispatched(t, s, "D", 0, 20)
			r := s.GetMessage("g", "D", 0, 0, 32, 1<<20, nil)
			defer r.Release()
			require.Equal(t, GetFound, r.Status)
			require.Len(t, r.Records, tc.want)
			require.EqualValues(t, tc.want, r.NextBeginOffset)
		})
	}
	require.EqualValues(t, 8, DefaultConfig().MaxTransferCountOnMessageInDisk)
	require.EqualValues(t, 64<<10, DefaultConfig().MaxTransferBytesOnMessageInDisk)
	require.EqualValues(t, 40, DefaultConfig().AccessMessageInMemoryMaxRatio)
	s := openStore(t, testConfig(t.TempDir()))
	defer func() { require.NoError(t, s.Shutdown()) }()
	require.Positive(t, s.HotCommitLogBytes())
}

// maxFilterMessageSize bounds the consume-queue bytes one read scans for a
// filtered pull (at least maxMsgNums units), as Java's key of that name:
// the read stops there with NO_MATCHED_MESSAGE and the offset it reached.
func TestGetMessageMaxFilterMessageSize(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MaxFilterMessageSize = 2 * cqUnitSize
	s := openStore(t, cfg)
	t.Cleanup(func() { require.NoError(t, s.Shutdown()) })
	putN(t, s, "F", 1, 5)
	waitDispatched(t, s, "F", 0, 5)
	r := s.GetMessage("g", "F", 0, 0, 1, 0, tagFilter{code: 12345})
	defer r.Release()
	require.Equal(t, GetNoMatchedMessage, r.Status)
	require.EqualValues(t, 2, r.NextBeginOffset)
	require.Equal(t, 16000, DefaultConfig().MaxFilterMessageSize)
}
