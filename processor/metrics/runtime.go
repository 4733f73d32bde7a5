package metrics

import (
	"os"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The go_* and process_* series under the names and types the Prometheus Go
// client gives them, so dashboards written for Go services read them unchanged.

var goMemstats = []struct {
	d *desc
	v func(*runtime.MemStats) float64
}{
	{newDesc("go_memstats_alloc_bytes", "Number of bytes allocated in heap and currently in use.", typeGauge), func(m *runtime.MemStats) float64 { return float64(m.Alloc) }},
	{newDesc("go_memstats_alloc_bytes_total", "Total number of bytes allocated in heap until now, even if released already.", typeCounter), func(m *runtime.MemStats) float64 { return float64(m.TotalAlloc) }},
	{newDesc("go_memstats_buck_hash_sys_bytes", "Number of bytes used by the profiling bucket hash table.", typeGauge), func(m *runtime.MemStats) float64 { return float64(m.BuckHashSys) }},
	{newDesc("go_memstats_frees_total", "Total number of heap objects frees.", typeCounter), func(m *runtime.MemStats) float64 { return float64(m.Frees) }},
	{newDesc("go_memstats_gc_sys_bytes", "Number of bytes used for garbage collection system metadata.", typeGauge), func(m *runtime.MemStats) float64 { return float64(m.GCSys) }},
	{newDesc("go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and currently in use.", typeGauge), func(m *runtime.MemStats) float64 { return float64(m.HeapAlloc) }},
	{newDesc("go_memstats_heap_idle_bytes", "Number of heap bytes waiting to be used.", typeGauge), func(m *runtime.MemStats) float64 { return float64(m.HeapIdle) }},
	{newDesc("go_memstats_heap_inuse_bytes", "Number of heap bytes that are in use.", typeGauge), func(m *runtime.MemStats) float64 { return float64(m.HeapInuse) }},
	{newDesc("go_memstats_heap_objects", "Number of currently allocated objects.", typeGauge), func(m *runtime.MemStats) float64 { return float64(m.HeapObjects) }},
	{newDesc("go_memstats_heap_released_bytes", "Number of heap bytes released to OS.", typeGauge), func(m *runtime.MemStats) float64 { return float64(m.HeapReleased) }},
	{newDesc("go_memstats_heap_sys_bytes", "Number of heap bytes obtained from system.", typeGauge), func(m *runtime.MemStats) float64 { return float64(m.HeapSys) }},
	{newDesc("go_memstats_last_gc_time_seconds", "Number of seconds since 1970 of last garbage collection.", typeGauge), func(m *runtime.MemStats) float64 { return float64(m.LastGC) / 1e9 }},
	{newDesc("go_memstats_mallocs_total", "Total number of heap objects allocated.", typeCounter), func(m *runtime.MemStats) float64 { return float64(m.Mallocs) }},
	{newDesc("go_memstats_mcache_inuse_bytes", "Number of bytes in use by mcache structures.", typeGauge), func(m *runtime.MemStats) float64 { return float64(m.MCacheInuse) }},
	{newDesc("go_memstats_mcache_sys_bytes", "Number of bytes used for mcache structures obtained from system.", typeGauge), func(m *runtime.MemStats) float64 { return float64(m.MCacheSys) }},
	{newDesc("go_memstats_mspan_inuse_bytes", "Number of bytes in use by mspan structures.", typeGauge), func(m *runtime.MemStats) float64 { return float64(m.MSpanInuse) }},
	{newDesc("go_memstats_mspan_sys_bytes", "Number of bytes used for mspan structures obtained from system.", typeGauge), func(m *runtime.MemStats) float64 { return float64(m.MSpanSys) }},
	{newDesc("go_memstats_next_gc_bytes", "Number of heap bytes when next garbage collection will take place.", typeGauge), func(m *runtime.MemStats) float64 { return float64(m.NextGC) }},
	{newDesc("go_memstats_other_sys_bytes", "Number of bytes used for other system allocations.", typeGauge), func(m *runtime.MemStats) float64 { return float64(m.OtherSys) }},
	{newDesc("go_memstats_stack_inuse_bytes", "Number of bytes obtained from system for stack allocator.", typeGauge), func(m *runtime.MemStats) float64 { return float64(m.StackInuse) }},
	{newDesc("go_memstats_stack_sys_bytes", "Number of bytes obtained from system for stack allocator.", typeGauge), func(m *runtime.MemStats) float64 { return float64(m.StackSys) }},
	{newDesc("go_memstats_sys_bytes", "Number of bytes obtained from system.", typeGauge), func(m *runtime.MemStats) float64 { return float64(m.Sys) }},
}

var (
	descGoroutines  = newDesc("go_goroutines", "Number of goroutines that currently exist.", typeGauge)
	descThreads     = newDesc("go_threads", "Number of OS threads created.", typeGauge)
	descGoInfo      = newDesc("go_info", "Information about the Go environment.", typeGauge, "version")
	descGoMaxProcs  = newDesc("go_sched_gomaxprocs_threads", "The current runtime.GOMAXPROCS setting.", typeGauge)
	descGCDuration  = newDesc("go_gc_duration_seconds", "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.", typeSummary)
	descGOGC        = newDesc("go_gc_gogc_percent", "Heap size target percentage configured by the user, otherwise 100.", typeGauge)
	descGoMemLimit  = newDesc("go_gc_gomemlimit_bytes", "Go runtime memory limit configured by the user, otherwise math.MaxInt64.", typeGauge)
	descCPUSeconds  = newDesc("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", typeCounter)
	descOpenFDs     = newDesc("process_open_fds", "Number of open file descriptors.", typeGauge)
	descMaxFDs      = newDesc("process_max_fds", "Maximum number of open file descriptors.", typeGauge)
	descVirtualMem  = newDesc("process_virtual_memory_bytes", "Virtual memory size in bytes.", typeGauge)
	descVirtualMax  = newDesc("process_virtual_memory_max_bytes", "Maximum amount of virtual memory available in bytes.", typeGauge)
	descResidentMem = newDesc("process_resident_memory_bytes", "Resident memory size in bytes.", typeGauge)
	descStartTime   = newDesc("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", typeGauge)
)

var gcQuantiles = []float64{0, 0.25, 0.5, 0.75, 1}

// collectGo adds the Go runtime's series. ReadMemStats stops the world for a
// moment; a scrape does it at most once per gatherTTL.
func collectGo(s *sink) {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	for _, g := range goMemstats {
		s.gauge(g.d, g.v(&m))
	}
	s.gauge(descGoroutines, float64(runtime.NumGoroutine()))
	s.gauge(descThreads, float64(pprof.Lookup("threadcreate").Count()))
	s.gauge(descGoInfo, 1, runtime.Version())
	s.gauge(descGoMaxProcs, float64(runtime.GOMAXPROCS(0)))
	rm := []rtmetrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	rtmetrics.Read(rm)
	if rm[0].Value.Kind() == rtmetrics.KindUint64 {
		s.gauge(descGOGC, float64(rm[0].Value.Uint64()))
	}
	if rm[1].Value.Kind() == rtmetrics.KindUint64 {
		s.gauge(descGoMemLimit, float64(rm[1].Value.Uint64()))
	}

	st := debug.GCStats{PauseQuantiles: make([]time.Duration, len(gcQuantiles))}
	debug.ReadGCStats(&st)
	q := make([]float64, len(gcQuantiles))
	for i := range q {
		q[i] = st.PauseQuantiles[i].Seconds()
	}
	s.summary(descGCDuration, gcQuantiles, q, uint64(st.NumGC), st.PauseTotal.Seconds())
}

// collectProcess adds the process series from /proc/self (Linux only; on a
// system without it they are left out).
func collectProcess(s *sink) {
	if cpu, vsize, rss, start, ok := readProcStat(); ok {
		s.counter(descCPUSeconds, cpu)
		s.gauge(descVirtualMem, vsize)
		s.gauge(descResidentMem, rss)
		s.gauge(descStartTime, start)
	}
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		s.gauge(descOpenFDs, float64(len(ents)))
	}
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) == nil {
		s.gauge(descMaxFDs, float64(rl.Cur))
	}
	if unix.Getrlimit(unix.RLIMIT_AS, &rl) == nil {
		s.gauge(descVirtualMax, float64(rl.Cur))
	}
}

// userHZ is the clock tick /proc/<pid>/stat counts in; Linux fixes it at 100
// for user space whatever the kernel's HZ.
const userHZ = 100

// readProcStat reads CPU seconds, virtual and resident bytes and the start
// time (seconds since the epoch) from /proc/self/stat and /proc/stat.
func readProcStat() (cpu, vsize, rss, start float64, ok bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, 0, 0, false
	}
	// The command name may hold spaces and parentheses: fields start after the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0, 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): utime is field 14, stime 15, starttime 22, vsize 23, rss 24.
	if len(f) < 22 {
		return 0, 0, 0, 0, false
	}
	num := func(k int) float64 { v, _ := strconv.ParseUint(f[k-3], 10, 64); return float64(v) }
	cpu = (num(14) + num(15)) / userHZ
	vsize = num(23)
	rss = num(24) * float64(os.Getpagesize())
	start = num(22) / userHZ
	if bt, err := bootTime(); err == nil {
		start += bt
	}
	return cpu, vsize, rss, start, true
}

func bootTime() (float64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, os.ErrNotExist
}
