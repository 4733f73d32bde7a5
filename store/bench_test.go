package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAppendAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	for _, flush := range []string{AsyncFlush, SyncFlush} {
		t.Run(flush, func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			cfg.MappedFileSizeCommitLog = 64 << 20
			cfg.FlushDiskType = flush
			s := openStore(t, cfg)
			defer s.Shutdown()
			m := newMsg("Alloc", 0, string(make([]byte, 128)), map[string]string{"TAGS": "a", "KEYS": "k1 k2", "UNIQ_KEY": "u"})
			ctx := context.Background()
			for i := 0; i < 100; i++ { // warm up: files, queue, pools
				s.PutMessage(ctx, m)
			}
			waitDispatched(t, s, "Alloc", 0, 100)
			allocs := testing.AllocsPerRun(500, func() {
				if r := s.PutMessage(ctx, m); r.Status != PutOK {
					t.Fatal(r.Status)
				}
			})
			// AllocsPerRun counts every goroutine; the dispatcher and flusher run
			// alongside, so allow a stray allocation but no per-message cost.
			require.Less(t, allocs, 0.1, "allocs per append")
		})
	}
}

func benchAppend(b *testing.B, flush string, size int) {
	cfg := testConfig(b.TempDir())
	cfg.MappedFileSizeCommitLog = 256 << 20
	cfg.MappedFileSizeConsumeQueue = 300000 * 20
	cfg.FlushDiskType = flush
	cfg.FlushIntervalCommitLog = 500 // the Java defaults, not the eager test values
	cfg.FlushIntervalConsumeQueue = 1000
	cfg.MaxHashSlotNum = 500000
	cfg.MaxIndexNum = 2000000
	s := openStore(b, cfg)
	defer s.Shutdown()
	m := newMsg("Bench", 0, string(make([]byte, size)), map[string]string{"TAGS": "TagA", "KEYS": "key", "UNIQ_KEY": "0A0B0C0D0E0F"})
	ctx := context.Background()
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	if flush == SyncFlush {
		// Group commit pays off with concurrent producers, as on a broker.
		b.SetParallelism(16)
		b.RunParallel(func(pb *testing.PB) {
			mm := *m
			for pb.Next() {
				if r := s.PutMessage(ctx, &mm); r.Status != PutOK {
					b.Error(r.Status)
					return
				}
			}
		})
		return
	}
	for i := 0; i < b.N; i++ {
		if r := s.PutMessage(ctx, m); r.Status != PutOK {
			b.Fatal(r.Status)
		}
	}
}

func BenchmarkAppend(b *testing.B) {
	for _, flush := range []string{AsyncFlush, SyncFlush} {
		for _, size := range []int{128, 1024, 16384} {
			b.Run(fmt.Sprintf("%s/%d", flush, size), func(b *testing.B) { benchAppend(b, flush, size) })
		}
	}
}

func BenchmarkGetMessage(b *testing.B) {
	cfg := testConfig(b.TempDir())
	cfg.MappedFileSizeCommitLog = 64 << 20
	cfg.MappedFileSizeConsumeQueue = 300000 * 20
	s := openStore(b, cfg)
	defer s.Shutdown()
	const n = 50000
	m := newMsg("Read", 0, string(make([]byte, 1024)), map[string]string{"TAGS": "TagA"})
	for i := 0; i < n; i++ {
		s.PutMessage(context.Background(), m)
	}
	waitDispatched(b, s, "Read", 0, n)
	b.ReportAllocs()
	b.ResetTimer()
	var bytes int64
	off := int64(0)
	for i := 0; i < b.N; i++ {
		r := s.GetMessage("g", "Read", 0, off, 32, 1<<20, nil)
		if r.Status != GetFound {
			b.Fatal(r.Status)
		}
		bytes += int64(r.BufferTotalSize)
		off = r.NextBeginOffset
		if off >= n {
			off = 0
		}
		r.Release()
	}
	b.StopTimer()
	b.ReportMetric(float64(bytes)/float64(b.N), "bytes/op")
	b.SetBytes(bytes / int64(b.N))
}
