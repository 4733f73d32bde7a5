package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"

	"rmqd/integration/harness"
	"rmqd/integration/loadgen/lg"
)

// JavaRun is one run of the official Java benchmark Producer (org.apache.rocketmq.example.benchmark).
type JavaRun struct {
	Version    string  `json:"version"`
	Threads    int     `json:"threads"`
	Size       int     `json:"size"`
	Quantity   int64   `json:"quantity"`
	Total      int64   `json:"total"`
	SendFailed int64   `json:"sendFailed"`
	RespFailed int64   `json:"responseFailed"`
	TPS        float64 `json:"tps"`     // last 1 s-report window before completion (steady state)
	AvgRTMs    float64 `json:"avgRtMs"` // same window
	MaxRTMs    float64 `json:"maxRtMs"` // whole run
	Stored     int64   `json:"stored"`
	ElapsedS   float64 `json:"elapsedS"`
	Load       string  `json:"loadavg"`
}

const exampleVersion = "5.5.0" // integration/bench/java/pom.xml

var (
	javaReport   = regexp.MustCompile(`^Current Time: .*\| Send TPS: (\d+) \| Max RT\(ms\): (\d+) \| Average RT\(ms\):\s*([0-9.]+)`)
	javaComplete = regexp.MustCompile(`^\[Complete\] Send Total: (\d+).*?(?:Send TPS: (\d+) \| Max RT\(ms\): (\d+) \| Average RT\(ms\):\s*([0-9.]+).*?)?Send Failed: (\d+)[ |]*Response Failed: (\d+)`)
)

// javaProducer runs the Java benchmark Producer for quantity messages and checks the stored count.
func (r *runner) javaProducer(ctx context.Context, threads, size int, quantity int64) {
	lib := filepath.Join(r.e.outDir, "lib", "example")
	if _, err := os.Stat(filepath.Join(lib, "rocketmq-example-"+exampleVersion+".jar")); err != nil {
		r.e.log.Warn("java benchmark producer skipped: no jars (mvn -f integration/bench/java/pom.xml package)", "lib", lib)
		return
	}
	topic := r.topic("java")
	route, err := r.route(ctx, topic)
	if err != nil {
		r.fail("%s java producer: %v", r.res.Kind, err)
		return
	}
	home := filepath.Join(r.b.logDir, "java-client")
	homeArgs, err := harness.JVMHome(home)
	if err != nil {
		r.fail("%s java producer: %v", r.res.Kind, err)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	argv := append(append([]string{"-Xms256m", "-Xmx256m", "-XX:+UseG1GC"}, homeArgs...),
		"-Drocketmq.client.logRoot="+home, "-Djava.net.preferIPv4Stack=true", "-cp", filepath.Join(lib, "*"),
		"org.apache.rocketmq.example.benchmark.Producer", "-n", r.b.namesrv, "-t", topic, "-w", strconv.Itoa(threads),
		"-s", strconv.Itoa(size), "-q", strconv.FormatInt(quantity, 10), "-ri", "1000")
	cmd := exec.CommandContext(ctx, "java", argv...)
	cmd.Dir = home
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	start := time.Now()
	out, err := cmd.CombinedOutput()
	_ = os.WriteFile(filepath.Join(home, "producer.log"), out, 0o644)
	run := JavaRun{Version: exampleVersion, Threads: threads, Size: size, Quantity: quantity, ElapsedS: time.Since(start).Seconds(), Load: loadAvg()}
	sc := bufio.NewScanner(bytes.NewReader(out))
	complete := false
	for sc.Scan() {
		line := sc.Text()
		if m := javaReport.FindStringSubmatch(line); m != nil {
			run.TPS, _ = strconv.ParseFloat(m[1], 64)
			run.AvgRTMs, _ = strconv.ParseFloat(m[3], 64)
		}
		if m := javaComplete.FindStringSubmatch(line); m != nil {
			complete = true
			run.Total, _ = strconv.ParseInt(m[1], 10, 64)
			if run.TPS == 0 { // finished before the first report: the completion line's window
				run.TPS, _ = strconv.ParseFloat(m[2], 64)
				run.AvgRTMs, _ = strconv.ParseFloat(m[4], 64)
			}
			run.MaxRTMs, _ = strconv.ParseFloat(m[3], 64)
			run.SendFailed, _ = strconv.ParseInt(m[5], 10, 64)
			run.RespFailed, _ = strconv.ParseInt(m[6], 10, 64)
		}
	}
	r.res.Java = &run
	if !complete {
		r.fail("%s java producer: no completion line (%v); output in %s", r.res.Kind, err, filepath.Join(home, "producer.log"))
		return
	}
	_, stored, serr := lg.MaxOffsets(ctx, route.BrokerAddr, topic, route.Queues)
	run.Stored = stored
	r.res.Java = &run
	if serr != nil {
		r.fail("%s java producer: stored count: %v", r.res.Kind, serr)
	} else if want := run.Total - run.SendFailed; stored != want {
		r.fail("%s java producer: broker stored %d, producer counted %d sent (%d failed)", r.res.Kind, stored, want, run.SendFailed)
	}
	r.e.log.Info("java producer", "broker", r.res.Kind, "threads", threads, "tps", run.TPS, "avgRtMs", run.AvgRTMs,
		"total", run.Total, "failed", fmt.Sprint(run.SendFailed, "/", run.RespFailed), "load", run.Load)
}
