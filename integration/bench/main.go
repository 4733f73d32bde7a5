// Command bench runs the Apache RocketMQ broker and rmqd one after the other on this machine, drives both
// with the same load generators (integration/loadgen/lg and the official Go client), checks that every
// accepted message was stored, and writes the figures (JSON), a chart and the tables of docs/benchmarks.md.
// It exits non-zero when a broker fails or a count disagrees. Run it through `make bench`.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"rmqd/integration/loadgen/lg"
)

type env struct {
	rmqdBin    string
	apacheLib  string
	outDir     string
	storeRoot  string
	keepStores bool
	full       bool
	consumeN   int64
	javaN      int64
	warmN      int64
	perf       bool
	syncOnly   bool
	popOnly    bool
	pop        bool // POP receive+ack rows among the capability runs
	caps       bool // capability runs: TLS, signed (ACL 2.0), SYNC/ASYNC_MASTER with a slave
	capsOnly   bool
	capsRows   string            // which capability rows run: tls,signed,repl,timer,txn,bcq,lite (-caps-rows)
	rmqdConf   map[string]string // extra broker.conf keys for rmqd (-rmqd-conf)
	dur        time.Duration
	warm       time.Duration
	rates      []float64
	e2eRates   []float64
	e2eRuns    int // end-to-end runs per rate; the report shows each figure's median
	cpuRate    float64
	sizes      []int
	inflights  []int
	log        *slog.Logger
}

// SendRun is one producer run and its stored-count check.
type SendRun struct {
	Client   string        `json:"client"` // loadgen | go-client
	Flush    string        `json:"flush"`
	Size     int           `json:"size"`
	InFlight int           `json:"inFlight"`
	Rate     float64       `json:"rate,omitempty"` // open loop offered rate; 0 closed loop
	Result   lg.SendResult `json:"result"`
	Stored   int64         `json:"stored"`
	CPUUs    float64       `json:"cpuUsPerMsg,omitempty"`
	ClientUs float64       `json:"clientCpuUsPerMsg,omitempty"` // load generator (this process)
	// Replication runs: the slave's CPU per message (open loop), and how long after the last acknowledged
	// send the slave's consume queues held every stored message (-1: never within the bound).
	SlaveCPUUs float64 `json:"slaveCpuUsPerMsg,omitempty"`
	SlaveLagMs float64 `json:"slaveLagMs,omitempty"`
	Load       string  `json:"loadavg"`
}

// ConsumeRun is the catch-up read of N stored messages.
type ConsumeRun struct {
	N      int64         `json:"n"`
	Send   lg.SendResult `json:"send"`
	Result lg.PullResult `json:"result"`
	CPUUs  float64       `json:"cpuUsPerMsg"`
	Load   string        `json:"loadavg"`
}

// E2ERun is producer → long-polling consumer latency at a fixed rate.
type E2ERun struct {
	Rate   float64      `json:"rate"`
	Size   int          `json:"size"`
	Result lg.E2EResult `json:"result"`
	CPUUs  float64      `json:"cpuUsPerMsg,omitempty"` // broker CPU over the run per message sent (and consumed)
	Load   string       `json:"loadavg"`
}

// BrokerResult is everything measured on one broker kind.
type BrokerResult struct {
	Kind               string      `json:"kind"`
	StartToFirstMs     float64     `json:"startToFirstSendMs"`
	RSSIdleKiB         int64       `json:"rssIdleKiB"`
	IdleCPUsPerMin     float64     `json:"idleCpuSecondsPerMinute"` // over idleWindow, scaled
	RSSLoadKiB         int64       `json:"rssLoadKiB"`              // peak during the fixed-rate run
	AnonIdleKiB        int64       `json:"rssAnonIdleKiB"`
	AnonLoadKiB        int64       `json:"rssAnonLoadKiB"`
	RSSPeakKiB         int64       `json:"rssPeakKiB"`     // whole ASYNC_FLUSH run; grows with bytes written through mmap
	AnonPeakKiB        int64       `json:"rssAnonPeakKiB"` // same, anonymous only
	NamesrvRSSKiB      int64       `json:"namesrvRssKiB,omitempty"`
	Closed             []SendRun   `json:"closed"`
	Open               []SendRun   `json:"open"`
	Consume            *ConsumeRun `json:"consume,omitempty"`
	E2E                []E2ERun    `json:"e2e,omitempty"`
	GoClient           []SendRun   `json:"goClient"`
	Java               *JavaRun    `json:"javaProducer,omitempty"`
	Sync               []SendRun   `json:"syncFlush"`
	TLS                []SendRun   `json:"tls,omitempty"`         // 1 KiB sends over TLS (permissive port)
	Signed             []SendRun   `json:"signed,omitempty"`      // 1 KiB sends signed, ACL 2.0 on
	SyncMaster         []SendRun   `json:"syncMaster,omitempty"`  // 1 KiB sends to a SYNC_MASTER with a slave
	AsyncMaster        []SendRun   `json:"asyncMaster,omitempty"` // same, ASYNC_MASTER
	Pop                []PopRun    `json:"pop,omitempty"`         // POP receive + ack (caps.go)
	Paths              []PathRun   `json:"paths,omitempty"`       // timer, delay level, transactions, BatchCQ (paths.go)
	SyncStartToFirstMs float64     `json:"syncStartToFirstSendMs"`
	Errors             []string    `json:"errors,omitempty"`
}

// Results is the whole run.
type Results struct {
	Started  time.Time       `json:"started"`
	Finished time.Time       `json:"finished"`
	Mode     string          `json:"mode"`
	Machine  Machine         `json:"machine"`
	Settings map[string]any  `json:"settings"`
	Brokers  []*BrokerResult `json:"brokers"`
	Micro    string          `json:"micro"`
}

func main() {
	var e env
	var kinds, rates, e2eRates, sizes, inflights, mdPath string
	var consumeN int64
	var total time.Duration
	var micro bool
	flag.StringVar(&e.rmqdBin, "rmqd", "bin/rmqd", "rmqd binary")
	flag.StringVar(&e.apacheLib, "apache-lib", "integration/java/target/lib/apache", "Apache broker classpath folder (make integration-deps)")
	flag.StringVar(&e.outDir, "out", "integration/bench/.out", "results, logs, chart")
	flag.StringVar(&e.storeRoot, "store", "", "store root (default <out>/store)")
	flag.BoolVar(&e.keepStores, "keep-stores", false, "leave each broker's store behind when it stops")
	flag.BoolVar(&e.full, "full", os.Getenv("BENCH_FULL") == "1", "full matrix (BENCH_FULL=1)")
	flag.StringVar(&kinds, "brokers", "apache,rmqd", "broker kinds in order")
	flag.Int64Var(&consumeN, "n", 0, "messages for the consume catch-up (default 300000, full 1000000)")
	flag.StringVar(&rates, "rates", "", "open-loop offered rates msg/s (default 2000,5000)")
	flag.StringVar(&e2eRates, "e2e-rates", "", "end-to-end (send + long-poll consume) rates msg/s (default 2000,10000: issue 22's)")
	flag.IntVar(&e.e2eRuns, "e2e-runs", 3, "end-to-end runs per rate, interleaved; the table shows each figure's median")
	flag.StringVar(&sizes, "sizes", "128,1024,16384", "body sizes")
	flag.StringVar(&inflights, "inflight", "1,16,64", "in-flight requests (producer threads)")
	flag.StringVar(&mdPath, "md", "docs/benchmarks.md", "markdown file whose generated section is replaced ('' = none)")
	flag.DurationVar(&total, "deadline", 0, "bound of the whole run (default 22m, full 60m)")
	flag.BoolVar(&micro, "micro", true, "run the Go micro-benchmarks too")
	flag.BoolVar(&e.perf, "perf", true, "profile rmqd with perf record (when installed) after its runs")
	var rmqdConf string
	flag.StringVar(&rmqdConf, "rmqd-conf", "", "extra broker.conf keys for rmqd, k=v,k=v (to compare its own settings)")
	flag.BoolVar(&e.pop, "pop", true, "POP receive+ack rows among the capability runs (about 100 s per broker)")
	flag.BoolVar(&e.popOnly, "pop-only", false, "only the POP receive+ack runs (use with -md '')")
	flag.BoolVar(&e.syncOnly, "sync-only", false, "only the SYNC_FLUSH runs (a quick look at the flush path; use with -md '')")
	flag.BoolVar(&e.caps, "caps", true, "capability runs: TLS, POP receive+ack, signed sends (ACL 2.0), SYNC_MASTER and ASYNC_MASTER with a slave")
	flag.BoolVar(&e.capsOnly, "caps-only", false, "only the capability runs (use with -md '' for a quick look)")
	flag.StringVar(&e.capsRows, "caps-rows", "tls,signed,repl,timer,txn,bcq", "which capability rows run with -caps-only (a subset for a quick look at one): tls, signed, repl, timer (TIMER_DELAY_MS and DELAY level), txn, bcq (BatchCQ), lite (lite topics: needs -apache-lib of the 5.5 build, so never by default); without -caps-only the quick run drops the paths not named (timer, txn, bcq: about 2 min on 2 cores) and the full run has them all but lite")
	floorOnly := flag.Bool("floor-only", false, "only measure the machine's wake-up floor at the end-to-end rates and print it")
	echoAddr := flag.String("echo-server", "", "run only the bare echo server of the wake-up floor on this address (floor.go)")
	flag.Parse()
	if *echoAddr != "" {
		if err := serveEcho(*echoAddr); err != nil {
			fatal(err)
		}
		return
	}
	e.rmqdConf = map[string]string{}
	for _, kv := range strings.Split(rmqdConf, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			e.rmqdConf[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	e.log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))

	// The catch-up reads 300,000 messages in well under a second on rmqd: fewer would leave its CPU figure to a
	// handful of 10 ms clock ticks.
	e.dur, e.warm, e.consumeN, e.cpuRate, e.javaN = 4*time.Second, 1*time.Second, 300_000, 3000, 50_000
	e.warmN = 60_000
	// The quick run with the capability, POP and path rows takes about 17 min on 2 cores.
	const quickTotal = 22 * time.Minute
	if total == 0 {
		total = quickTotal
	}
	if e.full {
		e.dur, e.warm, e.consumeN, e.javaN, e.warmN = 15*time.Second, 3*time.Second, 1_000_000, 200_000, 300_000
		if total == quickTotal {
			total = 60 * time.Minute
		}
	}
	if consumeN > 0 {
		e.consumeN = consumeN
	}
	e.rates = parseFloats(rates, []float64{2000, 5000})
	e.e2eRates = parseFloats(e2eRates, []float64{2000, 10000})
	e.sizes = parseInts(sizes)
	e.inflights = parseInts(inflights)
	if e.storeRoot == "" {
		e.storeRoot = filepath.Join(e.outDir, "store")
	}
	// Servers run in their own folders: every path they get must be absolute.
	for _, p := range []*string{&e.rmqdBin, &e.apacheLib, &e.outDir, &e.storeRoot} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			fatal(err)
		}
		*p = abs
	}
	if err := os.MkdirAll(e.outDir, 0o755); err != nil {
		fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), total)
	defer cancel()

	res := &Results{Started: time.Now().UTC(), Mode: map[bool]string{false: "quick", true: "full"}[e.full]}
	res.Settings = map[string]any{
		"durationS": e.dur.Seconds(), "warmupS": e.warm.Seconds(), "warmupMessages": e.warmN, "consumeN": e.consumeN, "openRates": e.rates, "e2eRates": e.e2eRates, "e2eRuns": e.e2eRuns,
		"cpuRate": e.cpuRate, "sizes": e.sizes, "inFlight": e.inflights, "queues": 8,
		"apacheBrokerJVM": strings.Join(apacheBrokerJVM, " "), "apacheNamesrvJVM": strings.Join(apacheNamesrvJVM, " "),
	}
	if *floorOnly {
		fl, err := probeWakeFloor(ctx, e.e2eRates, 5*time.Second)
		if err != nil {
			fatal(err)
		}
		_ = json.NewEncoder(os.Stdout).Encode(fl)
		return
	}
	res.Machine = probeMachine(ctx, e.storeRoot)
	if fl, err := probeWakeFloor(ctx, e.e2eRates, 5*time.Second); err != nil {
		e.log.Warn("wake-up floor", "err", err)
	} else {
		res.Machine.WakeFloor = fl
	}
	e.log.Info("machine", "cores", res.Machine.Cores, "memMiB", res.Machine.MemMiB, "ddMBps", res.Machine.DiskWriteMBps, "load", loadAvg())

	failed := false
	for i, kind := range strings.Split(kinds, ",") {
		if i > 0 {
			settleWriteback(e.log)
		}
		br := runBroker(ctx, &e, kind)
		res.Brokers = append(res.Brokers, br)
		if len(br.Errors) > 0 {
			failed = true
			e.log.Error("broker failed", "kind", kind, "errors", br.Errors)
		}
		saveJSON(&e, res)
	}
	if micro {
		res.Micro = runMicro(ctx, &e)
	}
	res.Finished = time.Now().UTC()
	saveJSON(&e, res)
	chart := filepath.Join(e.outDir, "bench.png")
	if err := makeChart(ctx, &e, chart); err != nil {
		e.log.Warn("chart", "err", err)
	}
	if mdPath != "" {
		if err := writeMarkdown(mdPath, res, &e, chart); err != nil {
			e.log.Error("markdown", "err", err)
			failed = true
		}
	}
	printSummary(res, &e)
	if failed {
		fmt.Fprintln(os.Stderr, "bench: FAILED (see errors above and", e.outDir+"/results.json)")
		os.Exit(1)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

func saveJSON(e *env, res *Results) {
	b, _ := json.MarshalIndent(res, "", "  ")
	_ = os.WriteFile(filepath.Join(e.outDir, "results.json"), b, 0o644)
}

// rssPeak samples VmRSS of pid every 100 ms until stopped and reports the largest value.
type rssPeak struct {
	mu   sync.Mutex
	peak int64
	anon int64
	stop chan struct{}
	done chan struct{}
}

func sampleRSS(pid int) *rssPeak {
	r := &rssPeak{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			if v, err := rssKiB(pid); err == nil {
				r.mu.Lock()
				r.peak = max(r.peak, v)
				r.mu.Unlock()
			}
			if v, err := anonKiB(pid); err == nil {
				r.mu.Lock()
				r.anon = max(r.anon, v)
				r.mu.Unlock()
			}
			select {
			case <-r.stop:
				return
			case <-t.C:
			}
		}
	}()
	return r
}

func (r *rssPeak) end() (rss, anon int64) {
	close(r.stop)
	<-r.done
	return r.peak, r.anon
}

type runner struct {
	e   *env
	b   *broker
	res *BrokerResult
	seq int
	tls *tls.Config // sends over TLS (capability runs)
}

func (r *runner) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.res.Errors = append(r.res.Errors, msg)
	r.e.log.Error(msg)
}

func (r *runner) topic(what string) string {
	r.seq++
	return fmt.Sprintf("Bench_%s_%d", what, r.seq)
}

// route creates a fresh 8-queue topic and looks its route up once.
func (r *runner) route(ctx context.Context, topic string) (lg.Route, error) {
	if err := lg.CreateTopic(ctx, r.b.addr, topic, 8, r.b.opts()...); err != nil {
		return lg.Route{}, err
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return lg.WaitRoute(rctx, r.b.namesrv, topic)
}

// checkStored compares the broker's stored count (GET_MAX_OFFSET summed over the queues) with the sends it
// acknowledged.
func (r *runner) checkStored(ctx context.Context, what string, route lg.Route, topic string, sent int64) int64 {
	// Consume queues are built asynchronously on both brokers (Java's GET_MAX_OFFSET answers from wherever
	// dispatch is), so a short count right after the last acknowledgement may be dispatch still running:
	// look again for a few seconds before calling messages lost.
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, sum, err := lg.MaxOffsets(ctx, route.BrokerAddr, topic, route.Queues, r.b.opts()...)
		if err != nil {
			r.fail("%s %s: stored count: %v", r.res.Kind, what, err)
			return -1
		}
		if sum == sent {
			return sum
		}
		if sum > sent || time.Now().After(deadline) || ctx.Err() != nil {
			r.fail("%s %s: broker stored %d messages, %d sends were acknowledged", r.res.Kind, what, sum, sent)
			return sum
		}
		r.e.log.Warn("stored count short, dispatch still running?", "broker", r.res.Kind, "run", what, "stored", sum, "acked", sent)
		sleepCtx(ctx, 50*time.Millisecond)
	}
}

func (r *runner) send(ctx context.Context, flush string, size, inflight int, rate float64, d time.Duration, count int64) *SendRun {
	topic := r.topic(fmt.Sprintf("%d_%d", size, inflight))
	route, err := r.route(ctx, topic)
	if err != nil {
		r.fail("%s: %v", r.res.Kind, err)
		return nil
	}
	pid := r.b.brokerProc.pid()
	var cpu0, slave0 int64
	var res lg.SendResult
	// CPU is measured over the whole run, warm-up and measured window together, per message sent in it:
	// at a fixed rate that is the cost of the load, closed loop it is the cost at saturation.
	cpu0, _ = cpuMicros(pid)
	if r.b.slaveProc != nil {
		slave0, _ = cpuMicros(r.b.slaveProc.pid())
	}
	self0 := selfCPUMicros()
	res, err = lg.Send(ctx, lg.SendConfig{Route: route, Topic: topic, Size: size, InFlight: inflight, Duration: d,
		Warmup: r.e.warm, Rate: rate, Count: count, Full: true, TLS: r.tls, Sign: r.b.sign})
	run := &SendRun{Client: "loadgen", Flush: flush, Size: size, InFlight: inflight, Rate: rate, Result: res, Load: loadAvg()}
	if res.Sent > 0 {
		run.ClientUs = float64(selfCPUMicros()-self0) / float64(res.Sent)
	}
	cpu1, _ := cpuMicros(pid)
	if res.Sent > 0 {
		run.CPUUs = float64(cpu1-cpu0) / float64(res.Sent)
		if r.b.slaveProc != nil {
			s1, _ := cpuMicros(r.b.slaveProc.pid())
			run.SlaveCPUUs = float64(s1-slave0) / float64(res.Sent)
		}
	}
	if err != nil {
		r.fail("%s send %d B x%d: %v", r.res.Kind, size, inflight, err)
		return run
	}
	if res.Failed > 0 {
		r.fail("%s send %d B x%d rate %.0f: %d failed sends: %v", r.res.Kind, size, inflight, rate, res.Failed, res.Errors)
	}
	if res.Busy > 0 {
		r.e.log.Warn("broker flow control", "broker", r.res.Kind, "size", size, "inflight", inflight, "rate", rate, "busy", res.Busy)
	}
	run.Stored = r.checkStored(ctx, fmt.Sprintf("send %d B x%d", size, inflight), route, topic, res.Sent)
	if r.b.slaveProc != nil {
		run.SlaveLagMs = r.slaveLag(ctx, route, topic, run.Stored)
	}
	r.e.log.Info("send", "broker", r.res.Kind, "flush", flush, "size", size, "inflight", inflight, "rate", rate,
		"msg/s", int(res.MsgPerS), "lat", res.Lat.String(), "cpuUs/msg", fmt.Sprintf("%.1f", run.CPUUs),
		"clientUs/msg", fmt.Sprintf("%.1f", run.ClientUs), "load", run.Load)
	return run
}

func runBroker(ctx context.Context, e *env, kind string) *BrokerResult {
	res := &BrokerResult{Kind: kind}
	if e.syncOnly {
		(&runner{e: e, res: res}).syncFlush(ctx)
		return res
	}
	if e.popOnly {
		(&runner{e: e, res: res}).popRuns(ctx)
		return res
	}
	if e.capsOnly {
		r := &runner{e: e, res: res}
		if e.capsRow("tls") {
			r.tlsRuns(ctx)
		}
		if e.pop {
			r.popRuns(ctx)
		}
		if e.capsRow("signed") {
			r.signedRuns(ctx)
		}
		if e.capsRow("repl") {
			r.replicationRuns(ctx)
		}
		r.pathRuns(ctx)
		return res
	}
	e.log.Info("starting", "broker", kind, "flush", "ASYNC_FLUSH", "load", loadAvg())
	b, err := startBroker(ctx, e, kind, "ASYNC_FLUSH")
	if err != nil {
		res.Errors = append(res.Errors, err.Error())
		return res
	}
	r := &runner{e: e, b: b, res: res}
	res.StartToFirstMs = float64(b.startToFirstSend.Microseconds()) / 1e3
	e.log.Info("first send accepted", "broker", kind, "after", b.startToFirstSend)
	sleepCtx(ctx, 3*time.Second)
	res.RSSIdleKiB, _ = rssKiB(b.brokerProc.pid())
	res.AnonIdleKiB, _ = anonKiB(b.brokerProc.pid())
	// Idle CPU: what the broker burns with one topic, no clients and no load (timers, housekeeping).
	if c0, err := cpuMicros(b.brokerProc.pid()); err == nil {
		sleepCtx(ctx, idleWindow)
		if c1, err := cpuMicros(b.brokerProc.pid()); err == nil {
			res.IdleCPUsPerMin = float64(c1-c0) / 1e6 * float64(time.Minute) / float64(idleWindow)
		}
	}
	peak := sampleRSS(b.brokerProc.pid())

	// Warm-up (JIT, page cache, mapped files): not recorded. A fixed count, so that both brokers have written
	// the same bytes through their mapped commitlog before memory is measured.
	r.send(ctx, "ASYNC_FLUSH", 1024, 64, 0, 0, e.warmN)
	// RSS under load and CPU per message: the same offered rate (open loop, 1 KiB) on both brokers.
	fixed := sampleRSS(b.brokerProc.pid())
	if run := r.send(ctx, "ASYNC_FLUSH", 1024, 128, e.cpuRate, e.dur+2*time.Second, 0); run != nil {
		res.Open = append(res.Open, *run)
	}
	res.RSSLoadKiB, res.AnonLoadKiB = fixed.end()
	for _, size := range e.sizes {
		for _, inflight := range e.inflights {
			if run := r.send(ctx, "ASYNC_FLUSH", size, inflight, 0, e.dur, 0); run != nil {
				res.Closed = append(res.Closed, *run)
			}
			if err := b.alive(); err != nil {
				r.fail("%v", err)
				return r.finish(peak)
			}
		}
	}
	for _, rate := range e.rates {
		if rate == e.cpuRate {
			continue
		}
		if run := r.send(ctx, "ASYNC_FLUSH", 1024, 128, rate, e.dur+2*time.Second, 0); run != nil {
			res.Open = append(res.Open, *run)
		}
	}
	r.e2e(ctx)
	r.consume(ctx)
	r.goClient(ctx)
	r.javaProducer(ctx, 16, 1024, r.e.javaN)
	if e.caps {
		r.tlsRuns(ctx)
		if e.pop {
			r.popRuns(ctx)
		}
	}
	r.perfProfile(ctx)
	if err := b.alive(); err != nil {
		r.fail("%v", err)
	}
	out := r.finish(peak)
	r.syncFlush(ctx)
	if e.caps {
		r.signedRuns(ctx)
		r.replicationRuns(ctx)
		r.pathRuns(ctx)
	}
	return out
}

func (r *runner) finish(peak *rssPeak) *BrokerResult {
	r.res.RSSPeakKiB, r.res.AnonPeakKiB = peak.end()
	if r.b.nsProc != nil {
		r.res.NamesrvRSSKiB, _ = rssKiB(r.b.nsProc.pid())
	}
	r.b.stop()
	return r.res
}

// e2e runs each rate e2eRuns times, the rates interleaved and a fresh topic each: one run's CPU per message
// strays by half either way on a shared VM, so the report takes medians.
func (r *runner) e2e(ctx context.Context) {
	for range max(r.e.e2eRuns, 1) {
		for _, rate := range r.e.e2eRates {
			r.e2eAt(ctx, rate)
		}
	}
}

// e2eAt sends at a fixed rate while long-polling consumers read; the broker's CPU covers both sides.
func (r *runner) e2eAt(ctx context.Context, rate float64) {
	topic := r.topic(fmt.Sprintf("e2e%.0f", rate))
	route, err := r.route(ctx, topic)
	if err != nil {
		r.fail("%s e2e: %v", r.res.Kind, err)
		return
	}
	pid := r.b.brokerProc.pid()
	cpu0, _ := cpuMicros(pid)
	res, err := lg.EndToEnd(ctx, lg.E2EConfig{Route: route, Topic: topic, Size: 1024, Rate: rate, Duration: r.e.dur + 2*time.Second,
		InFlight: 32, Timeout: 2 * time.Minute, Full: true})
	cpu1, _ := cpuMicros(pid)
	run := E2ERun{Rate: rate, Size: 1024, Result: res, Load: loadAvg()}
	if res.Send.Sent > 0 {
		run.CPUUs = float64(cpu1-cpu0) / float64(res.Send.Sent)
	}
	r.res.E2E = append(r.res.E2E, run)
	if err != nil {
		r.fail("%s e2e @%.0f/s: %v", r.res.Kind, rate, err)
		return
	}
	r.checkStored(ctx, "e2e", route, topic, res.Send.Sent)
	r.e.log.Info("e2e", "broker", r.res.Kind, "rate", rate, "lat", res.Pull.Lat.String(),
		"cpuUs/msg", fmt.Sprintf("%.1f", run.CPUUs), "load", run.Load)
}

func (r *runner) consume(ctx context.Context) {
	topic := r.topic("consume")
	route, err := r.route(ctx, topic)
	if err != nil {
		r.fail("%s consume: %v", r.res.Kind, err)
		return
	}
	n := r.e.consumeN
	s, err := lg.Send(ctx, lg.SendConfig{Route: route, Topic: topic, Size: 1024, InFlight: 64, Count: n, Duration: 0})
	cr := &ConsumeRun{N: n, Send: s}
	r.res.Consume = cr
	if err != nil || s.Sent != n {
		r.fail("%s consume: stored %d of %d messages first (%v %v)", r.res.Kind, s.Sent, n, err, s.Errors)
		return
	}
	r.checkStored(ctx, "consume fill", route, topic, n)
	sleepCtx(ctx, 2*time.Second) // let the dispatch to consume queues finish before timing reads
	pid := r.b.brokerProc.pid()
	cpu0, _ := cpuMicros(pid)
	p, err := lg.Pull(ctx, lg.PullConfig{Route: route, Topic: topic, Expect: n, Timeout: 5 * time.Minute})
	cpu1, _ := cpuMicros(pid)
	cr.Result, cr.Load = p, loadAvg()
	if p.Consumed > 0 {
		cr.CPUUs = float64(cpu1-cpu0) / float64(p.Consumed)
	}
	if err != nil {
		r.fail("%s consume: %v", r.res.Kind, err)
		return
	}
	if p.Consumed != n {
		r.fail("%s consume: read %d messages, %d stored", r.res.Kind, p.Consumed, n)
	}
	r.e.log.Info("consume", "broker", r.res.Kind, "n", n, "msg/s", int(p.MsgPerS), "cpuUs/msg", fmt.Sprintf("%.1f", cr.CPUUs), "load", cr.Load)
}

func (r *runner) goClient(ctx context.Context) {
	topic := r.topic("goclient")
	route, err := r.route(ctx, topic)
	if err != nil {
		r.fail("%s go client: %v", r.res.Kind, err)
		return
	}
	for _, threads := range []int{16} {
		res, err := goClientSend(ctx, r.b, topic, 1024, threads, r.e.warm, r.e.dur)
		run := SendRun{Client: "go-client", Flush: "ASYNC_FLUSH", Size: 1024, InFlight: threads, Result: res, Load: loadAvg()}
		if err != nil {
			r.fail("%s go client: %v", r.res.Kind, err)
			return
		}
		if res.Failed > 0 {
			r.fail("%s go client: %d failed sends: %v", r.res.Kind, res.Failed, res.Errors)
		}
		// One topic for every thread count: the check is cumulative.
		var before int64
		for _, g := range r.res.GoClient {
			before += g.Result.Sent
		}
		run.Stored = r.checkStored(ctx, "go client", route, topic, before+res.Sent) - before
		r.res.GoClient = append(r.res.GoClient, run)
		r.e.log.Info("go client", "broker", r.res.Kind, "threads", threads, "msg/s", int(res.MsgPerS), "lat", res.Lat.String())
	}
}

// idleWindow is how long idle CPU is measured (scaled to a minute in the report).
const idleWindow = 20 * time.Second

// syncWarmN is the SYNC_FLUSH warm-up: the same bytes on both brokers.
const syncWarmN = 5000

func (r *runner) syncFlush(ctx context.Context) {
	r.e.log.Info("starting", "broker", r.res.Kind, "flush", "SYNC_FLUSH", "load", loadAvg())
	b, err := startBroker(ctx, r.e, r.res.Kind, "SYNC_FLUSH")
	if err != nil {
		r.fail("%s SYNC_FLUSH: %v", r.res.Kind, err)
		return
	}
	defer b.stop()
	r.res.SyncStartToFirstMs = float64(b.startToFirstSend.Microseconds()) / 1e3
	r.b = b
	// Warm-up by count, not time: a faster broker would otherwise write more and
	// leave the file system busier (journal, writeback of index pages) for the
	// runs that follow.
	r.send(ctx, "SYNC_FLUSH", 1024, 64, 0, 0, syncWarmN)
	for _, inflight := range []int{1, 16, 64} {
		if run := r.send(ctx, "SYNC_FLUSH", 1024, inflight, 0, r.e.dur, 0); run != nil {
			r.res.Sync = append(r.res.Sync, *run)
		}
	}
	if err := b.alive(); err != nil {
		r.fail("%v", err)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func containsF(s []float64, v float64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
