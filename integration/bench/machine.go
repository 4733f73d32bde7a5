package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Machine describes where the figures were taken.
type Machine struct {
	Cores         int     `json:"cores"`
	CPU           string  `json:"cpu"`
	MemMiB        int64   `json:"memMiB"`
	Kernel        string  `json:"kernel"`
	DiskWriteMBps float64 `json:"ddWriteMBps"`
	DDLine        string  `json:"dd"`
	Go            string  `json:"go"`
	Java          string  `json:"java"`
	Commit        string  `json:"rmqdCommit"`
	Load          string  `json:"loadavgAtStart"`
	// WakeFloor is a bare gnet echo server's CPU per request at the
	// end-to-end rates (floor.go).
	WakeFloor []WakeFloor `json:"wakeFloor,omitempty"`
}

func probeMachine(ctx context.Context, storeRoot string) Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version(), Load: loadAvg()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "model name"); ok {
				m.CPU = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
		_ = f.Close()
	}
	if kb, err := procKiB("/proc/meminfo", "MemTotal:"); err == nil {
		m.MemMiB = kb / 1024
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	m.Java = firstLine(cmdOut(ctx, "java", "-version"))
	m.Commit = strings.TrimSpace(cmdOut(ctx, "git", "rev-parse", "--short", "HEAD"))
	if st := strings.TrimSpace(cmdOut(ctx, "git", "status", "--porcelain", "--untracked-files=no")); st != "" {
		m.Commit += " (+ uncommitted changes)"
	}
	// dd into the folder the brokers store in: 512 MiB, fdatasync at the end so the page cache can't hide the disk.
	if err := os.MkdirAll(storeRoot, 0o755); err == nil {
		f := filepath.Join(storeRoot, "dd.tmp")
		out := cmdOut(ctx, "dd", "if=/dev/zero", "of="+f, "bs=1M", "count=512", "conv=fdatasync")
		_ = os.Remove(f)
		m.DDLine = lastLine(out)
		m.DiskWriteMBps = parseDD(m.DDLine)
	}
	return m
}

var ddRate = regexp.MustCompile(`([0-9.,]+)\s*([kMG]?B)/s`)
var ddBytesSecs = regexp.MustCompile(`^(\d+) bytes.*copied, ([0-9.,]+) s`)

func parseDD(line string) float64 {
	if m := ddBytesSecs.FindStringSubmatch(line); m != nil {
		b, _ := strconv.ParseFloat(m[1], 64)
		s, _ := strconv.ParseFloat(strings.ReplaceAll(m[2], ",", "."), 64)
		if s > 0 {
			return b / s / 1e6
		}
	}
	if m := ddRate.FindStringSubmatch(line); m != nil {
		v, _ := strconv.ParseFloat(strings.ReplaceAll(m[1], ",", "."), 64)
		switch m[2] {
		case "kB":
			v /= 1e3
		case "GB":
			v *= 1e3
		}
		return v
	}
	return 0
}

func cmdOut(ctx context.Context, name string, args ...string) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, _ := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out)
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func parseInts(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if v, err := strconv.Atoi(strings.TrimSpace(f)); err == nil {
			out = append(out, v)
		}
	}
	return out
}

func parseFloats(s string, def []float64) []float64 {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		if v, err := strconv.ParseFloat(strings.TrimSpace(f), 64); err == nil {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return def
	}
	return out
}
