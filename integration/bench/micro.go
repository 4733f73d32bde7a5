package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// microPackages are the packages whose testing.B benchmarks the report includes.
var microPackages = []string{"./codec", "./remoting", "./store", "./processor/filter", "./namesrv"}

// runMicro runs `go test -run '^$' -bench . -benchmem` on microPackages and returns the benchmark lines
// (plus any failure output).
func runMicro(ctx context.Context, e *env) string {
	ctx, cancel := context.WithTimeout(ctx, 8*time.Minute)
	defer cancel()
	e.log.Info("micro-benchmarks", "packages", microPackages, "load", loadAvg())
	args := append([]string{"test", "-run", "^$", "-bench", ".", "-benchmem", "-count=1"}, microPackages...)
	out, err := exec.CommandContext(ctx, "go", args...).CombinedOutput()
	_ = os.WriteFile(filepath.Join(e.outDir, "micro.txt"), out, 0o644)
	var keep []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "Benchmark") || strings.HasPrefix(l, "ok") || strings.HasPrefix(l, "pkg:") ||
			strings.HasPrefix(l, "FAIL") || strings.HasPrefix(l, "---") || strings.HasPrefix(l, "cpu:") {
			keep = append(keep, l)
		}
	}
	if err != nil {
		keep = append(keep, "go test: "+err.Error())
	}
	return strings.Join(keep, "\n")
}
