package ha

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/store"
)

// The text Java's CheckpointFile writes for [1-0, 2-1234]: count, crc32 of the
// entry lines with the sign bit cleared (zlib.crc32(b"1-0\n2-1234\n") & 0x7fffffff),
// then the lines.
const javaEpochFile = "2\n944649189\n1-0\n2-1234\n"

func TestEpochFileMatchesJava(t *testing.T) {
	es := []EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 1234}}
	require.Equal(t, javaEpochFile, string(FormatEpochFile(es)))
	got, err := ParseEpochFile([]byte(javaEpochFile))
	require.NoError(t, err)
	require.Equal(t, es, got)
	// crc 0 is not checked (NOT_CHECK_CRC_MAGIC_CODE); a wrong one is refused.
	_, err = ParseEpochFile([]byte("2\n0\n1-0\n2-1234\n"))
	require.NoError(t, err)
	_, err = ParseEpochFile([]byte("2\n5\n1-0\n2-1234\n"))
	require.Error(t, err)
	_, err = ParseEpochFile([]byte("3\n944649189\n1-0\n2-1234\n"))
	require.Error(t, err, "count mismatch")
}

func TestEpochCacheOperations(t *testing.T) {
	dir := t.TempDir()
	path := EpochFilePath(dir)
	c, err := OpenEpochCache(path)
	require.NoError(t, err)
	require.EqualValues(t, -1, c.LastEpoch())
	require.NoError(t, c.Append(EpochEntry{Epoch: 1, StartOffset: 0}))
	require.NoError(t, c.Append(EpochEntry{Epoch: 2, StartOffset: 100}))
	require.NoError(t, c.Append(EpochEntry{Epoch: 4, StartOffset: 250}))
	require.ErrorIs(t, c.Append(EpochEntry{Epoch: 4, StartOffset: 300}), ErrEpochOrder)
	require.ErrorIs(t, c.Append(EpochEntry{Epoch: 5, StartOffset: 250}), ErrEpochOrder)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(FormatEpochFile(c.Entries())), string(b))

	e, ok := c.FindByOffset(120)
	require.True(t, ok)
	require.Equal(t, EpochEntry{Epoch: 2, StartOffset: 100, EndOffset: 250}, e)
	e, ok = c.FindByOffset(1 << 40)
	require.True(t, ok)
	require.EqualValues(t, 4, e.Epoch)
	require.EqualValues(t, math.MaxInt64, e.EndOffset)
	n, ok := c.NextEntry(2)
	require.True(t, ok)
	require.EqualValues(t, 4, n.Epoch)

	// Reopened from disk: same entries and ends.
	c2, err := OpenEpochCache(path)
	require.NoError(t, err)
	require.Equal(t, c.Entries(), c2.Entries())

	// Consistent point: the newest common epoch with the same start, up to the lesser end.
	other := NewEpochCache([]EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 100}, {Epoch: 3, StartOffset: 200}})
	other.SetLastEndOffset(400)
	mine := NewEpochCache(c.Entries())
	mine.SetLastEndOffset(300)
	require.EqualValues(t, 200, mine.FindConsistentPoint(other))
	require.EqualValues(t, -1, NewEpochCache([]EpochEntry{{Epoch: 7, StartOffset: 0}}).FindConsistentPoint(other))

	require.NoError(t, c.TruncateSuffixByOffset(200))
	require.Equal(t, []EpochEntry{{1, 0, 100}, {2, 100, math.MaxInt64}}, c.Entries())
	require.NoError(t, c.TruncatePrefixByOffset(100))
	require.Equal(t, []EpochEntry{{2, 100, math.MaxInt64}}, c.Entries())
	require.NoError(t, c.TruncateSuffixByEpoch(2))
	require.Zero(t, c.Len())
	// Emptied: Java would keep the old file (it writes nothing for no
	// entries); rmqd's empty file stays empty at reopen.
	c3, err := OpenEpochCache(path)
	require.NoError(t, err)
	require.Zero(t, c3.Len())
}

func TestEpochFileFallsBackToBak(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, EpochFileName)
	require.NoError(t, os.WriteFile(path+".bak", []byte(javaEpochFile), 0o644))
	require.NoError(t, os.WriteFile(path, []byte("2\n12\n1-0\n"), 0o644)) // torn
	c, err := OpenEpochCache(path)
	require.NoError(t, err)
	require.Equal(t, []EpochEntry{{1, 0, 1234}, {2, 1234, math.MaxInt64}}, c.Entries())
	// A write leaves the previous file as .bak (MixAll.string2File).
	require.NoError(t, c.Append(EpochEntry{Epoch: 3, StartOffset: 2000}))
	b, err := os.ReadFile(path + ".bak")
	require.NoError(t, err)
	require.Equal(t, "2\n12\n1-0\n", string(b))
	_, err = os.Stat(path + ".tmp")
	require.True(t, os.IsNotExist(err), "no tmp file left")
}

func FuzzParseEpochFile(f *testing.F) {
	f.Add([]byte(javaEpochFile))
	f.Add([]byte("0\n0\n"))
	f.Add([]byte("1\n0\n-1-5\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := ParseEpochFile(b)
		if err != nil {
			return
		}
		// What parses formats and parses again to the same entries.
		again, err := ParseEpochFile(FormatEpochFile(es))
		require.NoError(t, err)
		require.Equal(t, es, again)
	})
}

// The store's epoch file is ha's default unless storePathEpochFile moves it.
func TestEpochFileFromStoreConfig(t *testing.T) {
	c := store.DefaultConfig()
	require.NoError(t, c.ApplyProperties(map[string]string{"storePathRootDir": "/data/store"}))
	require.Equal(t, EpochFilePath("/data/store"), c.EpochFile())
	require.NoError(t, c.ApplyProperties(map[string]string{"storePathEpochFile": "/data/epoch"}))
	require.Equal(t, "/data/epoch", c.EpochFile())
	require.Equal(t, "/data/epoch", c.Properties()["storePathEpochFile"])
}
