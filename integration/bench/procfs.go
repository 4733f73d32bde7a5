package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// clockTicks is USER_HZ: 100 on every Linux this runs on (sysconf is not reachable without cgo).
const clockTicks = 100

// cpuMicros is utime+stime of pid (all its threads) in microseconds, from /proc/<pid>/stat.
func cpuMicros(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	// comm may hold spaces: fields start after the last ')'.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no comm", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	// f[0] is state (field 3), so utime (field 14) is f[11] and stime (15) is f[12].
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad times", pid)
	}
	return (ut + st) * 1e6 / clockTicks, nil
}

// rssKiB is VmRSS of pid.
func rssKiB(pid int) (int64, error) { return statusKiB(pid, "VmRSS:") }

// anonKiB is RssAnon of pid: resident memory not backed by files (VmRSS also counts the mapped commitlog
// and consume queue pages both brokers touch).
func anonKiB(pid int) (int64, error) { return statusKiB(pid, "RssAnon:") }

func statusKiB(pid int, key string) (int64, error) {
	return procKiB(fmt.Sprintf("/proc/%d/status", pid), key)
}

// procKiB is the value of the "key  n kB" line of a /proc file (status, meminfo).
func procKiB(path, key string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			if f := strings.Fields(v); len(f) > 0 {
				return strconv.ParseInt(f[0], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("%s: no %s", path, key)
}

// selfCPUMicros is this process's user+system CPU: the in-process load generator's cost.
func selfCPUMicros() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano()/1e3 + ru.Stime.Nano()/1e3
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
