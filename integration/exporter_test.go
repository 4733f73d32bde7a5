package integration

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"rmqd/integration/harness"
)

// exporterJar is where `make exporter-deps` puts apache/rocketmq-exporter, built from source (it is on no
// registry); RMQD_EXPORTER_JAR overrides.
func exporterJar(t *testing.T) string {
	if p := os.Getenv("RMQD_EXPORTER_JAR"); p != "" {
		return p
	}
	return filepath.Join(harness.ToolsDir(t), "rocketmq-exporter", "rocketmq-exporter.jar")
}

// TestExporterScrape runs apache/rocketmq-exporter (the 4.9.x-era Prometheus exporter, which polls the
// broker with mqadmin's admin codes) against a target under a small load: it must export the rocketmq_*
// series of the target's broker, topic and consumer group, and its log must show no ERROR or exception
// line for rmqd. Apache is the control: what its exporter log shows is listed, not failed.
//
//	make exporter-test   (builds the exporter, then RMQD_TARGET=all go test -run TestExporterScrape ./integration/)
func TestExporterScrape(t *testing.T) {
	jar := exporterJar(t)
	harness.RequireTool(t, jar, "exporter-test")
	for _, kind := range targetsFromEnv(t) {
		t.Run(kind, func(t *testing.T) { exporterScrape(t, kind, jar) })
	}
}

func exporterScrape(t *testing.T, kind, jar string) {
	target := harness.Start(t, kind, harness.Options{StartTimeout: 5 * time.Minute}) // Apache, on a loaded machine
	exp, url := startExporter(t, target, jar)

	topic := uniq("ExporterT")
	group := uniq("ExporterG")
	const n = 20
	harness.RunGoProduce(t, target, harness.GoProduce{Topic: topic, Count: n, Size: 200})
	harness.RunGoConsume(t, target, harness.GoConsume{Topic: topic, Group: group, Count: n})

	type series struct {
		name   string
		labels map[string]string
	}
	want := []series{
		{"rocketmq_brokeruntime_put_tps10", map[string]string{"cluster": target.ClusterName}},
		{"rocketmq_brokeruntime_msg_puttotal_todaymorning", map[string]string{"cluster": target.ClusterName}},
		{"rocketmq_broker_tps", map[string]string{"cluster": target.ClusterName, "broker": target.BrokerName}},
		{"rocketmq_broker_qps", map[string]string{"cluster": target.ClusterName, "broker": target.BrokerName}},
		{"rocketmq_producer_offset", map[string]string{"topic": topic, "broker": target.BrokerName}},
		{"rocketmq_producer_tps", map[string]string{"topic": topic}},
		{"rocketmq_consumer_offset", map[string]string{"topic": topic, "group": group}},
		{"rocketmq_consumer_tps", map[string]string{"topic": topic, "group": group}},
		{"rocketmq_group_diff", map[string]string{"topic": topic, "group": group}},
	}
	// The exporter's tasks run every 3 s here (Java's default: once a minute); bounded wait for all.
	var missing []string
	var body []byte
	deadline := time.Now().Add(120 * time.Second)
	for {
		var fams map[string]*dto.MetricFamily
		fams, body = scrapeBody(t, url)
		missing = missing[:0]
		for _, s := range want {
			if !hasSeries(fams, s.name, s.labels) {
				missing = append(missing, fmt.Sprintf("%s%v", s.name, s.labels))
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		if exited, err := exp.Exited(); exited {
			t.Fatalf("exporter exited (%v); see %s", err, exp.LogPath)
		}
		time.Sleep(3 * time.Second)
	}
	if err := os.WriteFile(filepath.Join(harness.LogDir(t), "exporter-metrics.txt"), body, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, m := range missing {
		t.Errorf("%s: the exporter does not export %s", kind, m)
	}
	// One more round of every task after the series showed, so the log covers collections with data.
	time.Sleep(4 * time.Second)
	bad := errorLines(t, exp.LogPath)
	switch {
	case len(bad) == 0:
		t.Logf("%s: exporter log has no ERROR or exception line", kind)
	case kind == harness.KindApache:
		t.Logf("%s (control): the exporter logged %d ERROR/exception lines:\n%s", kind, len(bad), strings.Join(bad, "\n"))
	default:
		t.Errorf("%s: the exporter logged %d ERROR/exception lines (%s):\n%s", kind, len(bad), exp.LogPath, strings.Join(bad, "\n"))
	}
}

// startExporter starts the exporter pointed at target's name server, its collection tasks every 3 s, and
// waits for its /metrics. Its fail-fast start (one GET_BROKER_CLUSTER_INFO, no retry) can time out on a
// loaded machine while its JVM warms up; then it is started once more, in a fresh log.
func startExporter(t *testing.T, target *harness.Target, jar string) (*harness.Proc, string) {
	const every = "*/3 * * * * ?"
	for attempt := 1; ; attempt++ {
		port, grpcPort := harness.FreePort(t), harness.FreePort(t)
		home := filepath.Join(harness.LogDir(t), fmt.Sprintf("exporter-home-%d", attempt))
		homeArgs, err := harness.JVMHome(home)
		if err != nil {
			t.Fatal(err)
		}
		args := append(append([]string{"java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m"}, homeArgs...),
			"-jar", jar,
			"--rocketmq.config.namesrvAddr="+target.NamesrvAddr,
			"--server.address=127.0.0.1", "--server.port="+strconv.Itoa(port),
			"--grpc.server.port="+strconv.Itoa(grpcPort))
		for _, task := range []string{"collectTopicOffset", "collectProducer", "collectConsumerOffset",
			"collectBrokerStatsTopic", "collectBrokerStats", "collectBrokerRuntimeStats"} {
			args = append(args, "--task."+task+".cron="+every)
		}
		p := harness.StartTool(t, fmt.Sprintf("exporter-%d", attempt), args...)
		url := fmt.Sprintf("http://%s/metrics", harness.Addr(port))
		if waitHTTP(p, url, 240*time.Second) {
			return p, url
		}
		exited, err := p.Exited()
		if !exited || attempt == 2 {
			t.Fatalf("exporter did not serve %s (exited: %v %v); see %s\n%s", url, exited, err, p.LogPath,
				harness.Tail(p.LogPath, 40))
		}
		t.Logf("exporter attempt %d ended during its start (%v); starting it again:\n%s", attempt, err,
			strings.Join(errorLines(t, p.LogPath), "\n"))
	}
}

var exporterHTTP = &http.Client{Timeout: 10 * time.Second}

// waitHTTP polls url until it answers 200, p exits or d passes.
func waitHTTP(p *harness.Proc, url string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if exited, _ := p.Exited(); exited {
			return false
		}
		if resp, err := exporterHTTP.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return true
			}
		}
		time.Sleep(time.Second)
	}
	return false
}

// hasSeries reports a sample of family name whose labels include want.
func hasSeries(fams map[string]*dto.MetricFamily, name string, want map[string]string) bool {
	f, ok := fams[name]
	if !ok {
		return false
	}
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			if have[k] != v {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// exceptionLine is a stack trace's head ("java.lang.IllegalStateException: ...") or "Caused by:" line.
var exceptionLine = regexp.MustCompile(`^(Caused by: )?([a-z_$][\w$]*\.)+[A-Z][\w$]*(Exception|Error)\b`)

// errorLines returns a log's ERROR lines and exception lines (a stack's "...Exception: ..." and "Caused
// by:" lines; its "at ..." frames are left out).
func errorLines(t *testing.T, path string) []string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		trim := strings.TrimSpace(l)
		if strings.HasPrefix(trim, "at ") || strings.HasPrefix(trim, "...") {
			continue
		}
		if strings.Contains(l, " ERROR ") || exceptionLine.MatchString(trim) {
			if len(l) > 400 {
				l = l[:400] + "..."
			}
			out = append(out, l)
		}
	}
	return out
}
