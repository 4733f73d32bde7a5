package pop

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestOrderInfoFailedWriteStaysMarked: an ordered POP's record is written by
// the 5 s flush even when the write before it failed, and a restart without a
// shutdown finds it. Before, Persist cleared the changed mark whatever the
// write did (and after taking its snapshot, so a change made meanwhile was
// unmarked too): the record reached the disk only with a later change or at
// a clean stop.
func TestOrderInfoFailedWriteStaysMarked(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := NewOrderInfo(dir, log)
	now := time.Now().UnixMilli()
	m.Update("attempt-1", false, "T", "G", 2, now, 60_000, []int64{5, 6, 7}, &offsetInfo{})

	tmp := filepath.Join(dir, "consumerOrderInfo.json.tmp")
	require.NoError(t, os.Mkdir(tmp, 0o755)) // the write cannot make its tmp file
	require.Error(t, m.PersistIfChanged())
	require.NoError(t, os.Remove(tmp))
	require.NoError(t, m.PersistIfChanged(), "the next flush writes the table")

	m2 := NewOrderInfo(dir, log) // the first is never stopped: a kill -9
	require.NoError(t, m2.Load())
	e := m2.entry("T", "G", 2)
	require.NotNil(t, e, "the ordered batch survives the restart")
	require.Equal(t, now, e.PopTime)
	require.True(t, m2.CheckBlock("attempt-2", "T", "G", 2, 60_000), "the batch still blocks the queue")

	// A commit is a change the flush writes, and an unchanged table is not
	// rewritten.
	require.EqualValues(t, -2, m.CommitAndNext("T", "G", 2, 5, now+1), "another pop's batch")
	require.EqualValues(t, 6, m.CommitAndNext("T", "G", 2, 5, now))
	require.NoError(t, m.PersistIfChanged())
	st, err := os.Stat(filepath.Join(dir, "consumerOrderInfo.json"))
	require.NoError(t, err)
	require.NoError(t, m.PersistIfChanged())
	st2, err := os.Stat(filepath.Join(dir, "consumerOrderInfo.json"))
	require.NoError(t, err)
	require.True(t, os.SameFile(st, st2))
	m3 := NewOrderInfo(dir, log)
	require.NoError(t, m3.Load())
	require.EqualValues(t, 1, m3.entry("T", "G", 2).CommitBits)
}
