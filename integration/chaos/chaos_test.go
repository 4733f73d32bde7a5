package chaos

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"rmqd/integration/harness"
	"rmqd/store"
)

// plan is one fault under one flush mode, with its cycle counts in the short run (inside make test: rmqd
// only, about a minute) and in the full one (make chaos: RMQD_CHAOS=full, both targets).
type plan struct {
	name           string
	fault          Fault
	flush          string
	short          int // cycles in the short run (0: not in it)
	full, fullJava int // cycles against rmqd and against Apache in the full run (0: not run)
	load           time.Duration
	hold           time.Duration
	consumeEvery   int  // Config.ConsumeEvery in the short run and in runs of 20 cycles and more
	shortJava      bool // the Java clients take part in the short run too (they always do in the full one)
}

var plans = []plan{
	{name: "broker-kill-sync", fault: BrokerKill, flush: "SYNC_FLUSH", short: 3, full: 100, fullJava: 10, load: 1500 * time.Millisecond, consumeEvery: 10, shortJava: true},
	{name: "broker-kill-async", fault: BrokerKill, flush: "ASYNC_FLUSH", full: 10, fullJava: 5, load: 1500 * time.Millisecond},
	{name: "namesrv-kill", fault: NamesrvKill, flush: "ASYNC_FLUSH", short: 1, full: 10, fullJava: 5, load: 2 * time.Second, hold: time.Second},
	// 5 s stopped: longer than the clients' 3 s send timeout.
	{name: "broker-pause", fault: BrokerPause, flush: "ASYNC_FLUSH", short: 1, full: 5, fullJava: 3, load: 2 * time.Second, hold: 5 * time.Second},
	// Every flush 1 s late for 6 s: SYNC_FLUSH sends wait on it (below the 5 s syncFlushTimeout).
	{name: "slow-disk-sync", fault: SlowDisk, flush: "SYNC_FLUSH", short: 1, full: 5, load: 2 * time.Second, hold: 6 * time.Second},
	// The store on a 128 MiB tmpfs, filled to ENOSPC for 12 s (Apache looks at its disk every 10 s), freed.
	// No packet between the clients and the broker for 10 s (longer than the 3 s send timeout), then healed.
	{name: "partition", fault: Partition, flush: "ASYNC_FLUSH", full: 5, fullJava: 3, load: 3 * time.Second, hold: 10 * time.Second},
	// A SYNC_MASTER and its slave: the master killed for 40 s (longer than the clients' 30 s route poll, so
	// consumers turn to the slave meanwhile), or the slave killed for 5 s (a SYNC_MASTER answers
	// SLAVE_NOT_AVAILABLE while it is gone), restarted.
	{name: "master-kill", fault: MasterKill, flush: "ASYNC_FLUSH", full: 5, fullJava: 3, load: 3 * time.Second, hold: 40 * time.Second},
	{name: "slave-kill", fault: SlaveKill, flush: "ASYNC_FLUSH", full: 5, fullJava: 3, load: 3 * time.Second, hold: 5 * time.Second},
	{name: "disk-full", fault: DiskFull, flush: "ASYNC_FLUSH", full: 5, fullJava: 3, load: 3 * time.Second, hold: 12 * time.Second},
}

// The short run (inside make test) is rmqd only, about a minute. RMQD_CHAOS=full is make chaos: both
// targets (RMQD_TARGET narrows it), side by side. RMQD_CHAOS_CYCLES=n runs every plan n times (a smoke run).
func fullRun() bool { return os.Getenv("RMQD_CHAOS") == "full" }

func overrideCycles(t *testing.T) int {
	v := os.Getenv("RMQD_CHAOS_CYCLES")
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("RMQD_CHAOS_CYCLES=%q: want a positive count", v)
	}
	return n
}

func kinds(t *testing.T) []string {
	if !fullRun() && overrideCycles(t) == 0 {
		return []string{harness.KindRmqd} // Apache's start-up alone would blow the short run's budget
	}
	switch v := strings.TrimSpace(os.Getenv("RMQD_TARGET")); v {
	case "", "all":
		return []string{harness.KindRmqd, harness.KindApache}
	case harness.KindApache, harness.KindRmqd:
		return []string{v}
	default:
		t.Fatalf("RMQD_TARGET=%q: want apache, rmqd or all", v)
		return nil
	}
}

// TestChaos runs every plan against the selected targets (the two targets in parallel, each plan on a
// fresh target), asserts that rmqd loses no acknowledged message and leaves a consistent store, and writes
// the figures to integration/.logs/TestChaos/results.md (docs/reliability.md is made from a full run's).
//
//	go test -count=1 -v -run TestChaos ./integration/chaos                       # short: rmqd, ~1 min
//	RMQD_CHAOS=full go test -count=1 -v -timeout 80m -run TestChaos ./integration/chaos   # = make chaos
func TestChaos(t *testing.T) {
	var (
		mu      sync.Mutex
		results []Result
	)
	t.Run("targets", func(t *testing.T) {
		for _, kind := range kinds(t) {
			t.Run(kind, func(t *testing.T) {
				t.Parallel()
				for _, p := range plans {
					cycles := p.short
					if fullRun() {
						cycles = p.full
						if kind == harness.KindApache {
							cycles = p.fullJava
						}
					}
					if n := overrideCycles(t); n > 0 && (p.full > 0 && kind == harness.KindRmqd || p.fullJava > 0) {
						cycles = n
					}
					if cycles == 0 {
						continue
					}
					t.Run(p.name, func(t *testing.T) {
						r := runPlan(t, kind, p, cycles)
						mu.Lock()
						results = append(results, r)
						mu.Unlock()
					})
				}
			})
		}
	})
	slices.SortStableFunc(results, func(a, b Result) int {
		if d := planIndex(a.Fault) - planIndex(b.Fault); d != 0 {
			return d
		}
		return strings.Compare(b.Target, a.Target) // rmqd, then apache
	})
	writeReport(t, results)
}

func planIndex(name string) int {
	for i, p := range plans {
		if p.name == name {
			return i
		}
	}
	return len(plans)
}

func runPlan(t *testing.T, kind string, p plan, cycles int) Result {
	if kind == harness.KindApache {
		harness.RequireJars(t, "apache")
	}
	if p.fault == Partition {
		if why := partitionUsable(); why != "" {
			t.Skipf("skipping partition: %s", why)
		}
	}
	conf := map[string]string{"flushDiskType": p.flush}
	var diskDir string
	var warmup time.Duration
	if p.fault == DiskFull {
		diskDir = smallDisk(t, conf)
		if kind == harness.KindApache {
			// Apache marks a full disk only from its clean-up service, which runs first a minute after start.
			warmup = 65 * time.Second
		}
	}
	pair := p.fault == MasterKill || p.fault == SlaveKill
	if pair {
		maps.Copy(conf, haConf("SYNC_MASTER", "0"))
	}
	tg := harness.Start(t, kind, harness.Options{
		Split:      true,
		Failpoints: kind == harness.KindRmqd,
		BrokerConf: conf,
	})
	if diskDir != "" {
		tg.StoreDir = conf["storePathRootDir"]
	}
	topic := "CHAOS_" + strings.ReplaceAll(p.name, "-", "_")
	warmups := 2
	var slave *harness.Target
	if pair {
		// The topics exist before the slave starts: a Java slave copies the master's topics at start, then
		// only once a minute.
		for _, tp := range []string{topic, topic + "_ORD"} {
			harness.RunGoProduce(t, tg, harness.GoProduce{Topic: tp, Count: 1, BodyPrefix: "warm-up"})
			tg.WaitRoute(t, tp, 60*time.Second)
		}
		warmups += 2
		sc := haConf("SLAVE", "1")
		sc["flushDiskType"] = p.flush
		slave = harness.StartBroker(t, kind, tg.NamesrvAddr, harness.Options{BrokerConf: sc})
	}
	consumeEvery := 1
	if cycles >= 20 || !fullRun() { // the short run awaits the consumers once, on its last cycle
		consumeEvery = p.consumeEvery
	}
	// Broker kills: the store is also checked after every 10th recovery (every 2nd in short runs).
	checkEvery := 10
	if cycles < 20 {
		checkEvery = 2
	}
	r := Run(t, Config{Target: tg, Fault: p.fault, Cycles: cycles, Load: p.load, Hold: p.hold,
		SlowDiskDelay: "1s", Topic: topic, ConsumeEvery: consumeEvery, CheckEvery: checkEvery, DiskDir: diskDir, Warmup: warmup, Slave: slave,
		Java: fullRun() || p.shortJava})
	r.Fault, r.Flush = p.name, p.flush

	// A graceful stop, then the store as the last recovery and the run left it.
	tg.Procs[len(tg.Procs)-1].Stop(t)
	st := store.Inspect(tg.StoreDir)
	r.StoreCheck = checkSummary(st)
	if r.MidChecks > 0 {
		r.StoreCheck += fmt.Sprintf("; %d more checks after recoveries: %d failed", r.MidChecks, len(r.MidProblems))
	}
	r.Stored = st.PerTopic[topic] + st.PerTopic[topic+"_ORD"] - warmups // less the warm-up messages
	if slave != nil {
		slave.Procs[len(slave.Procs)-1].Stop(t)
		sst := store.Inspect(slave.StoreDir)
		r.StoreCheck += "; slave: " + checkSummary(sst)
		if kind == harness.KindRmqd && len(sst.Problems) != 0 {
			t.Errorf("slave store check: %s", checkSummary(sst))
		}
	}
	t.Logf("%s", row(r))
	if kind == harness.KindRmqd {
		if r.Lost != 0 {
			t.Errorf("%d acknowledged messages never consumed (first: %v); by queue: %s", r.Lost, r.LostIDs, r.LostByQueue)
			lossClues(t, tg)
		} else if r.Stalled != 0 {
			// Stored and reachable through the broker's offsets, so not lost; why the first consumers
			// stopped is worth knowing (a client's stall or a broker's unanswered pulls), so say it all.
			t.Logf("%d acknowledged messages reached only the restarted consumers; by queue: %s", r.Stalled, r.LostByQueue)
			lossClues(t, tg)
		}
		if len(st.Problems) != 0 {
			t.Errorf("store check: %s", checkSummary(st))
		}
		for _, p := range r.MidProblems {
			t.Errorf("store check %s", p)
		}
	}
	if p.fault == SlowDisk && r.SlowestAck < time.Second {
		// Under SYNC_FLUSH every acknowledgement waits for a flush, which the failpoint delays by 1 s.
		t.Errorf("slowest acknowledged send took %v: the flush-delay failpoint did not act", r.SlowestAck)
	}
	if r.Acked == 0 {
		t.Errorf("no send was acknowledged")
	}
	return r
}

// haConf is a broker of a master/slave pair (as integration/ha_test.go runs them): consumers may read from
// the slave while the master is gone, and quick HA heartbeats notice a dead peer within seconds.
func haConf(role, id string) map[string]string {
	return map[string]string{"brokerRole": role, "brokerId": id, "slaveReadEnable": "true",
		"haSendHeartbeatInterval": "1000", "haHousekeepingInterval": "5000"}
}

// smallDisk mounts a 128 MiB tmpfs for the store and points conf at it, with files small enough for it
// (4 MiB commitlog files, 3000-unit consume-queue files, a small index). Skips when mounting is not
// allowed (not root).
func smallDisk(t *testing.T, conf map[string]string) string {
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=128m"); err != nil {
		t.Skipf("skipping disk-full: cannot mount a tmpfs for the store (needs root / CAP_SYS_ADMIN): %v", err)
	}
	// Registered before the target starts: cleanups run last in, first out, so this runs after its stop.
	t.Cleanup(func() { _ = syscall.Unmount(mnt, syscall.MNT_DETACH) })
	st := filepath.Join(mnt, "store")
	conf["storePathRootDir"] = st
	conf["storePathCommitLog"] = filepath.Join(st, "commitlog")
	conf["mappedFileSizeCommitLog"] = strconv.Itoa(4 << 20)
	conf["mappedFileSizeConsumeQueue"] = strconv.Itoa(3000 * 20)
	conf["maxHashSlotNum"] = "10000"
	conf["maxIndexNum"] = "40000"
	return mnt
}

func ms(d time.Duration) string {
	if d < 0 {
		return "—"
	}
	if d == notMeasured {
		return "not awaited"
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

func row(r Result) string {
	sm, sx, smiss := summary(r.RecoverSend)
	cm, cx, cmiss := summary(r.RecoverConsume)
	miss := ""
	if smiss+cmiss > 0 {
		miss = fmt.Sprintf(" (%d/%d cycles without send/consume within 60 s)", smiss, cmiss)
	}
	reord := strconv.Itoa(r.Reordered)
	if r.Reordered > 0 {
		reord += fmt.Sprintf(" (%d unacknowledged)", r.ReorderedUnacked)
	}
	lost := strconv.Itoa(r.Lost)
	if r.Stalled > 0 {
		lost += fmt.Sprintf(" (%d more only after the consumers restarted)", r.Stalled)
	}
	return fmt.Sprintf("| %s | %s | %d | %d | %d | %d | %s | %d | %s | %d of %d | %d | %d / %d | %d | %s | %s / %s | %s / %s%s | %s |",
		r.Target, r.Flush, r.Cycles, r.Sent, r.Acked, r.Consumed, lost, r.Duplicated, reord, r.UnackedStored, r.Unacked, r.Stored,
		r.JavaAcked, r.JavaConsumed, r.ConsumedInFault, ms(r.SlowestAck), ms(sm), ms(sx), ms(cm), ms(cx), miss, r.StoreCheck)
}

func writeReport(t *testing.T, results []Result) {
	var b strings.Builder
	mode := "short (inside make test)"
	if fullRun() {
		mode = "full (make chaos)"
	}
	fmt.Fprintf(&b, "<!-- %s run, %s -->\n", mode, time.Now().UTC().Format(time.RFC3339))
	last := ""
	for _, r := range results {
		if r.Fault != last {
			last = r.Fault
			fmt.Fprintf(&b, "\n### %s\n\n", r.Fault)
			b.WriteString("| target | flush | runs | sent | acknowledged | consumed | lost | duplicated | reordered | unacknowledged but stored | stored | Java: acked / deliveries | deliveries during faults | slowest ack | recovery: send median / max | recovery: consume median / max | store check |\n")
			b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		}
		b.WriteString(row(r) + "\n")
	}
	path := filepath.Join(harness.LogDir(t), "results.md")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Errorf("report: %v", err)
	}
	t.Logf("figures in %s:\n%s", path, b.String())
}

// TestFailpointsCompiledOut: the normal build of the store takes the empty failpoints, the tagged one the
// real ones, so production binaries carry no fault hook.
func TestFailpointsCompiledOut(t *testing.T) {
	for tags, want := range map[string]string{"": "failpoint_off.go", "failpoint": "failpoint.go"} {
		out, err := exec.Command("go", "list", "-tags", tags, "-f", "{{join .GoFiles \" \"}}", "rmqd/store").CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		files := strings.Fields(string(out))
		other := map[string]string{"failpoint_off.go": "failpoint.go", "failpoint.go": "failpoint_off.go"}[want]
		if !contains(files, want) || contains(files, other) {
			t.Errorf("-tags %q builds %v; want %s and not %s", tags, files, want, other)
		}
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// lossClues logs what tells a consumer's skip from a store's hole when messages were lost: the offsets
// the broker holds for the run's groups, and the clients' lines about offsets and queue ownership (CI
// keeps only the test's output).
func lossClues(t *testing.T, tg *harness.Target) {
	if b, err := os.ReadFile(filepath.Join(tg.StoreDir, "config", "consumerOffset.json")); err == nil {
		t.Logf("consumerOffset.json at the end:\n%s", b)
	}
	clue := []string{"offset illegal", "fix the pull request offset", "ConsumerId not in cidAll", "remove unnecessary",
		"flow control", "do balance done", "OFFSET_MOVED", "correction offset", "doRebalance", "drop", "add a new mq", "[BUG]"}
	_ = filepath.WalkDir(filepath.Dir(tg.LogDir), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".log") || strings.HasSuffix(path, "namesrv.log") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		var hits []string
		for _, line := range strings.Split(string(b), "\n") {
			for _, c := range clue {
				if strings.Contains(line, c) {
					hits = append(hits, line)
					break
				}
			}
		}
		if len(hits) > 80 {
			hits = append(hits[:40], append([]string{"..."}, hits[len(hits)-40:]...)...)
		}
		if len(hits) > 0 {
			t.Logf("%s, lines about offsets and queues:\n%s", path, strings.Join(hits, "\n"))
		}
		return nil
	})
}
