package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"rmqd/integration/loadgen/lg"
)

// perfProfile records the rmqd broker with `perf record -g` while the load generator drives it, once at the
// fixed offered rate (where CPU per message is compared) and once saturated (1 KiB ×64), and keeps the
// hottest inclusive symbols in <out>/perf-rmqd-<what>.txt. rmqd has no pprof endpoint; perf needs none, and
// Go binaries keep frame pointers, so call chains are complete. Skipped when perf is not installed.
func (r *runner) perfProfile(ctx context.Context) {
	if r.res.Kind != "rmqd" || !r.e.perf {
		return
	}
	if _, err := exec.LookPath("perf"); err != nil {
		r.e.log.Info("perf not installed: no rmqd profile")
		return
	}
	for _, c := range []struct {
		what     string
		inflight int
		rate     float64
	}{{fmt.Sprintf("rate%.0f", r.e.cpuRate), 128, r.e.cpuRate}, {"saturated-1k-x64", 64, 0}} {
		topic := r.topic("perf")
		route, err := r.route(ctx, topic)
		if err != nil {
			r.e.log.Warn("perf", "err", err)
			return
		}
		data := filepath.Join(r.e.outDir, "perf-rmqd-"+c.what+".data")
		d := r.e.dur + 2*time.Second
		pctx, cancel := context.WithTimeout(ctx, d+time.Minute)
		rec := exec.CommandContext(pctx, "perf", "record", "-F", "499", "-g", "-o", data, "-p", strconv.Itoa(r.b.brokerProc.pid()),
			"--", "sleep", strconv.Itoa(int(d.Seconds())))
		if err := rec.Start(); err != nil {
			cancel()
			r.e.log.Warn("perf record", "err", err)
			return
		}
		_, _ = lg.Send(ctx, lg.SendConfig{Route: route, Topic: topic, Size: 1024, InFlight: c.inflight, Rate: c.rate, Duration: d})
		_ = rec.Wait()
		out, err := exec.CommandContext(pctx, "perf", "report", "-i", data, "--children", "--sort", "symbol", "-g", "none", "--stdio").Output()
		cancel()
		if err != nil {
			r.e.log.Warn("perf report", "err", err)
			continue
		}
		var keep []string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "%") && len(keep) < 80 {
				keep = append(keep, strings.TrimRight(l, " -"))
			}
		}
		txt := filepath.Join(r.e.outDir, "perf-rmqd-"+c.what+".txt")
		_ = os.WriteFile(txt, []byte(strings.Join(keep, "\n")+"\n"), 0o644)
		r.e.log.Info("perf profile", "file", txt)
	}
}
