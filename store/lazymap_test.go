package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"rmqd/codec"
)

// mapCount is the number of memory areas the process has mapped (the figure
// vm.max_map_count limits).
func mapCount(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	require.NoError(t, err)
	return bytes.Count(b, []byte("\n"))
}

// 20,000 queues with a message each keep at most about the budget of
// consume-queue files mapped, and every message still reads back.
func TestManyQueuesBoundedMappings(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 20,000 queues")
	}
	topics, queues := 200, int32(100)
	if raceEnabled {
		topics = 20 // the race detector makes 20,000 queues take minutes
	}
	budget := 1000
	// RMQD_MANY_QUEUES_TOPICS=1000 RMQD_MANY_QUEUES_BUDGET=16384 measures
	// 100,000 queues at the default budget (minutes).
	if v, err := strconv.Atoi(os.Getenv("RMQD_MANY_QUEUES_TOPICS")); err == nil && v > 0 {
		topics = v
	}
	if v, err := strconv.Atoi(os.Getenv("RMQD_MANY_QUEUES_BUDGET")); err == nil && v > 0 {
		budget = v
	}
	cfg := testConfig(t.TempDir())
	cfg.MappedConsumeQueueFilesMax = budget
	cfg.MessageIndexEnable = false
	s := openStore(t, cfg)
	defer s.Shutdown()
	base := mapCount(t)
	peak, peakFiles := 0, int64(0)
	sample := func() {
		peak = max(peak, mapCount(t)-base)
		peakFiles = max(peakFiles, s.MappedConsumeQueueFiles())
	}
	start := time.Now()
	for i := 0; i < topics; i++ {
		for q := int32(0); q < queues; q++ {
			res := s.PutMessage(context.Background(), newMsg(fmt.Sprintf("MQ%03d", i), q, fmt.Sprintf("m-%d-%d", i, q), nil))
			require.Equal(t, PutOK, res.Status)
		}
		waitDispatched(t, s, fmt.Sprintf("MQ%03d", i), queues-1, 1)
		sample()
	}
	t.Logf("written in %v", time.Since(start))
	t.Logf("after writing %d queues: peak %d more map areas than before, peak %d queue files mapped, now %d",
		topics*int(queues), peak, peakFiles, s.MappedConsumeQueueFiles())
	for i := 0; i < topics; i++ {
		for q := int32(0); q < queues; q++ {
			topic := fmt.Sprintf("MQ%03d", i)
			r := s.GetMessage("g", topic, q, 0, 32, 1<<20, nil)
			require.Equal(t, GetFound, r.Status, "%s/%d", topic, q)
			require.Len(t, r.Records, 1)
			require.Equal(t, fmt.Sprintf("m-%d-%d", i, q), string(recordBodyOf(t, r.Records[0])))
			r.Release()
		}
		sample()
	}
	t.Logf("read in %v", time.Since(start))
	t.Logf("after reading them back: peak %d more map areas than before, peak %d queue files mapped, now %d",
		peak, peakFiles, s.MappedConsumeQueueFiles())
	// The sweeper is woken past the budget and trims to three quarters; a
	// mapper past twice the budget trims itself, so a burst cannot outrun it.
	require.Less(t, peak, 3*budget, "map areas stay bounded by the budget, not the queue count")
	require.LessOrEqual(t, peakFiles, int64(2*budget+16), "past twice the budget the mapper trims")

	// A restart does not map every queue either.
	require.NoError(t, s.Shutdown())
	base = mapCount(t)
	s2, err := Open(cfg, testLogger())
	require.NoError(t, err)
	defer s2.Shutdown()
	require.LessOrEqual(t, s2.MappedConsumeQueueFiles(), int64(1), "recovery unmaps each queue after it")
	t.Logf("after reopening: %d more map areas than before the store was opened", mapCount(t)-base)
	require.Less(t, mapCount(t)-base, budget)
	require.Equal(t, int64(1), s2.MaxOffsetInQueue(fmt.Sprintf("MQ%03d", topics-1), queues-1))
}

func recordBodyOf(t *testing.T, rec []byte) []byte {
	t.Helper()
	var m codec.Message
	_, err := codec.DecodeRecord(rec, &m)
	require.NoError(t, err)
	return m.Body
}

// Readers and the writer never see a file unmapped under them while the
// sweeper unmaps everything it can as fast as it can.
func TestLazyUnmapRacesReaders(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MappedConsumeQueueFilesMax = 16
	s := openStore(t, cfg)
	defer s.Shutdown()
	const queues = 8
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // an impatient sweeper
		defer wg.Done()
		for !stop.Load() {
			s.lazy.now.Add(1000) // everything looks idle
			s.lazy.sweep()
		}
	}()
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				for q := int32(0); q < queues; q++ {
					res := s.GetMessage("g", "LZ", q, 0, 32, 1<<20, nil)
					for _, rec := range res.Records {
						_ = recordBodyOf(t, rec)
					}
					res.Release()
				}
			}
		}()
	}
	for i := 0; i < 2000; i++ {
		require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("LZ", int32(i%queues), fmt.Sprint(i), nil)).Status)
	}
	waitDispatched(t, s, "LZ", queues-1, 2000/queues)
	stop.Store(true)
	wg.Wait()
	for q := int32(0); q < queues; q++ {
		require.Len(t, readAll(t, s, "LZ", q), 2000/queues)
	}
}

// A burst of new lazy files, or of holds that map old ones again, never maps
// much past twice the budget though no sweeper runs: the mapper trims itself.
func TestMapperTrimsPastTwiceTheBudget(t *testing.T) {
	r := newLazyMaps(16)
	dir := t.TempDir()
	files := make([]*mappedFile, 100)
	for i := range files {
		f, err := newLazyMappedFile(fmt.Sprintf("%s/%020d", dir, i*4096), int64(i*4096), 4096, true, r)
		require.NoError(t, err)
		files[i] = f
		require.LessOrEqual(t, r.count.Load(), 2*r.budget+1)
	}
	for _, f := range files {
		f.unmapIfIdle(1 << 62)
	}
	require.Zero(t, r.count.Load())
	for round := 0; round < 2; round++ {
		for i, f := range files {
			require.True(t, f.hold())
			f.data[0] = byte(i)
			f.release()
			require.LessOrEqual(t, r.count.Load(), 2*r.budget+1)
		}
	}
	for i, f := range files {
		require.True(t, f.hold())
		require.Equal(t, byte(i), f.data[0], "a trimmed file maps again with its bytes")
		f.release()
		require.NoError(t, f.destroy())
	}
	require.Zero(t, r.count.Load())
}

// A consume-queue file is made sparse and written a unit at a time: the
// first write must bring in the pages written, not the kernel's read-ahead
// window of zeros around them (5.4 of the 5.7 MiB of every new queue's file
// on this machine before the unwritten part got MADV_RANDOM).
func TestNewConsumeQueueFileStaysSparseInMemory(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MappedFileSizeConsumeQueue = 300000 * cqUnitSize // Java's default, 5.7 MiB
	s := openStore(t, cfg)
	defer s.Shutdown()
	putN(t, s, "Sparse", 4, 4)
	for q := range int32(4) {
		waitDispatched(t, s, "Sparse", q, 1)
	}
	page := unix.Getpagesize()
	for q := range 4 {
		path := filepath.Join(cfg.StorePathRootDir, "consumequeue", "Sparse", strconv.Itoa(q), "00000000000000000000")
		f, err := os.Open(path)
		require.NoError(t, err)
		st, err := f.Stat()
		require.NoError(t, err)
		data, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
		f.Close()
		require.NoError(t, err)
		vec := make([]byte, (len(data)+page-1)/page)
		_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&data[0])), uintptr(len(data)), uintptr(unsafe.Pointer(&vec[0])))
		require.Zero(t, errno)
		require.NoError(t, unix.Munmap(data))
		resident := 0
		for _, v := range vec {
			resident += int(v & 1)
		}
		require.LessOrEqual(t, resident, 4, "queue %d: %d of %d pages in memory after a few units", q, resident, len(vec))
	}
}
