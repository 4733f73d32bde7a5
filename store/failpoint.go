//go:build failpoint

package store

import (
	"os"
	"strings"
	"time"
)

// Failpoints exist only in binaries built with -tags failpoint (the chaos harness builds rmqd so); the
// normal build compiles failpoint_off.go instead, whose empty functions inline to nothing.
//
// The file named by RMQD_FAILPOINTS lists active failpoints, one "name=value" a line; it is read on every
// call, so a test turns a fault on and off by rewriting it while the broker runs. No state is kept here.
//
//	flush-delay=300ms   every commitlog/consume-queue flush (msync/fdatasync) first sleeps 300 ms: a slow disk

func failpointDelay(name string) {
	path := os.Getenv("RMQD_FAILPOINTS")
	if path == "" {
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || k != name {
			continue
		}
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			time.Sleep(d)
		}
		return
	}
}
