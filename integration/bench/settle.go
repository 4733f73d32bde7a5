package main

import (
	"context"
	"log/slog"
	"syscall"
	"time"
)

// settleWriteback syncs and waits (bounded) until the page cache holds little
// dirty data, so that one broker's writeback never overlaps the next broker's
// rows; the log line says how long that took. (rmqd's saturation row of a full
// run, after Apache's, read 12.4 µs per message where the same binary alone
// read 8.7; whether writeback is part of that is what the line will tell.)
func settleWriteback(ctx context.Context, log *slog.Logger, bound time.Duration) {
	start := time.Now()
	done := make(chan struct{})
	go func() { syscall.Sync(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return
	case <-time.After(bound):
		log.Warn("writeback did not settle", "after", bound)
		return
	}
	for time.Since(start) < bound {
		dirty, err1 := meminfoKiB("Dirty:")
		wb, err2 := meminfoKiB("Writeback:")
		if err1 != nil || err2 != nil || dirty+wb < 32<<10 {
			break
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
	log.Info("writeback settled", "took", time.Since(start).Round(time.Millisecond), "load", loadAvg())
}
