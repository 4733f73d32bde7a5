package store

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// bcqBenchFiles is how many batch consume-queue files the lookup benchmarks
// spread their queue over.
const bcqBenchFiles = 200

// openBCQBench fills topic B queue 0 with inner batches of three over
// bcqBenchFiles files of 50 units, and returns the store and the store time of
// each unit.
func openBCQBench(b *testing.B) (*DefaultStore, []int64) {
	b.Helper()
	cfg := testConfig(b.TempDir())
	const perFile = 50
	cfg.MapperFileSizeBatchConsumeQueue = perFile * bcqUnitSize
	cfg.MappedFileSizeCommitLog = 64 << 20
	cfg.BatchTopics = func(topic string) bool { return topic == "B" }
	s := openStore(b, cfg)
	b.Cleanup(func() { _ = s.Shutdown() })
	ctx := context.Background()
	times := make([]int64, 0, bcqBenchFiles*perFile)
	for i := range bcqBenchFiles * perFile {
		r := s.PutMessage(ctx, innerBatchMsg("B", 0, i*3, 3))
		require.Equal(b, PutOK, r.Status)
		times = append(times, r.StoreTimestamp)
	}
	waitDispatched(b, s, "B", 0, int64(3*len(times)))
	require.Len(b, s.findCQ("B", 0).q.snapshot(), bcqBenchFiles)
	return s, times
}

// BenchmarkBatchCQLookup finds the unit of a queue offset and the offset of a
// store time, spread over the whole queue.
func BenchmarkBatchCQLookup(b *testing.B) {
	s, times := openBCQBench(b)
	cq := s.findCQ("B", 0)
	total := int64(3 * len(times))
	b.Run("offset", func(b *testing.B) {
		b.ReportAllocs()
		i := int64(0)
		for b.Loop() {
			off := (i * 7919) % total
			i++
			if u, ok := cq.bcqUnitAt(off); !ok || u.base != off/3*3 {
				b.Fatalf("offset %d: unit %+v %v", off, u, ok)
			}
		}
	})
	b.Run("time", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			k := (i * 7919) % len(times)
			i++
			if off := s.OffsetInQueueByTime("B", 0, times[k]); off > int64(3*k) {
				b.Fatalf("time of unit %d: offset %d", k, off)
			}
		}
	})
}
