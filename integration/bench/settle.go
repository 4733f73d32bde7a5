package main

import (
	"log/slog"
	"syscall"
	"time"
)

// settleWriteback syncs (Linux's sync waits for the writeback it starts), so
// that one broker's dirty pages are never written back during the next
// broker's rows; the log line keeps how long that took.
func settleWriteback(log *slog.Logger) {
	start := time.Now()
	syscall.Sync()
	log.Info("writeback settled", "took", time.Since(start).Round(time.Millisecond), "load", loadAvg())
}
