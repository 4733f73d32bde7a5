package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"rmqd/integration/harness"
)

// metricsGolden holds the metric names and label keys Apache 5.3.3 exports under the same load
// (metricsExporterType=PROM). RMQD_UPDATE_GOLDEN=1 with RMQD_TARGET=apache rewrites it.
const metricsGolden = "testdata/metrics_apache533.txt"

// TestMetricsScrape starts a target with Java's metrics keys, sends and consumes a known number of
// messages with the Go client and checks that /metrics counted them; it then compares the exported names
// and label keys with Apache's (metricsGolden), allowing only the differences docs/observability.md lists.
//
//	RMQD_TARGET=rmqd go test -count=1 -run TestMetricsScrape ./integration/
func TestMetricsScrape(t *testing.T) {
	for _, kind := range targetsFromEnv(t) {
		t.Run(kind, func(t *testing.T) { metricsScrape(t, kind) })
	}
}

func metricsScrape(t *testing.T, kind string) {
	port := harness.FreePort(t)
	target := harness.Start(t, kind, harness.Options{BrokerConf: map[string]string{
		"metricsExporterType":     "PROM",
		"metricsPromExporterHost": "127.0.0.1",
		"metricsPromExporterPort": strconv.Itoa(port),
	}})
	url := fmt.Sprintf("http://%s/metrics", harness.Addr(port))
	topic := uniq("MetricsT")
	group := uniq("MetricsG")
	const n, size = 20, 200
	const sendCode = "send_message" // the Go client v2.1.2 sends with SEND_MESSAGE (10)

	before := scrape(t, url)
	harness.RunGoProduce(t, target, harness.GoProduce{Topic: topic, Count: n, Size: size})
	harness.RunGoConsume(t, target, harness.GoConsume{Topic: topic, Group: group, Count: n})

	// Java's pull counters are recorded when the pull answer is written; scrape until the consumer's
	// pulls show, bounded.
	var after map[string]*dto.MetricFamily
	var body []byte
	for i := 0; i < 30; i++ {
		after, body = scrapeBody(t, url)
		if sumMetric(after, "rocketmq_messages_out_total", map[string]string{"topic": topic}) >= n {
			break
		}
		time.Sleep(time.Second)
	}
	in := sumMetric(after, "rocketmq_messages_in_total", map[string]string{"topic": topic}) -
		sumMetric(before, "rocketmq_messages_in_total", map[string]string{"topic": topic})
	if in != n {
		t.Errorf("rocketmq_messages_in_total{topic=%s} moved by %v, want %d", topic, in, n)
	}
	bytesIn := sumMetric(after, "rocketmq_throughput_in_total", map[string]string{"topic": topic})
	if bytesIn < n*size || bytesIn > n*(size+400) {
		t.Errorf("rocketmq_throughput_in_total{topic=%s} = %v, want the stored size of %d bodies of %d bytes", topic, bytesIn, n, size)
	}
	out := sumMetric(after, "rocketmq_messages_out_total", map[string]string{"topic": topic, "consumer_group": group})
	if out < n {
		t.Errorf("rocketmq_messages_out_total{topic=%s,consumer_group=%s} = %v, want >= %d", topic, group, out, n)
	}
	if v := sumMetric(after, "rocketmq_throughput_out_total", map[string]string{"topic": topic, "consumer_group": group}); v < bytesIn {
		t.Errorf("rocketmq_throughput_out_total = %v, want >= bytes in %v", v, bytesIn)
	}
	if c := histCount(after, "rocketmq_message_size", map[string]string{"topic": topic}); c != n {
		t.Errorf("rocketmq_message_size{topic=%s} count = %d, want %d", topic, c, n)
	}
	if c := histCount(after, "rocketmq_rpc_latency_milliseconds", map[string]string{"request_code": sendCode, "response_code": "success"}); c < n {
		t.Errorf("rpc latency of %s answered success: %d observations, want >= %d", sendCode, c, n)
	}
	// Pulls are answered after their handler returned (written with the store's bytes, or held): Java times
	// them when the answer is written, so must rmqd.
	if c := histCount(after, "rocketmq_rpc_latency_milliseconds", map[string]string{"request_code": "pull_message", "response_code": "success"}); c < 1 {
		t.Errorf("rpc latency of pull_message answered success: %d observations, want >= 1", c)
	}

	if err := os.WriteFile(filepath.Join(target.LogDir, "metrics-body.txt"), body, 0o644); err != nil {
		t.Fatal(err)
	}
	got := metricShapes(after)
	dump := filepath.Join(target.LogDir, "metrics-shapes.txt")
	if err := os.WriteFile(dump, []byte(formatShapes(got)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s exports %d metric names (shapes in %s)", kind, len(got), dump)
	defer checkStoreAfterStop(t, target)
	if kind == harness.KindApache && os.Getenv("RMQD_UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(metricsGolden, []byte(formatShapes(got)), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := readShapes(t, metricsGolden)
	for _, d := range diffShapes(want, got) {
		if !justifiedMetricDiff(kind, d) {
			t.Errorf("%s: %s (not listed in docs/observability.md)", kind, d)
		}
	}
}

// checkStoreAfterStop stops the target's processes gracefully and runs `rmqd check` on the store the broker
// wrote under the test's load: it must find nothing, whichever broker wrote it.
func checkStoreAfterStop(t *testing.T, target *harness.Target) {
	if t.Failed() {
		return
	}
	for _, p := range target.Procs {
		p.TermGrace = 60 * time.Second // let the JVM finish its shutdown hook (flush, checkpoint)
		p.Stop(t)
	}
	out, err := exec.Command(harness.RmqdBinary(t), "check", target.StoreDir).CombinedOutput()
	if err != nil {
		t.Errorf("rmqd check %s on the store %s wrote: %v\n%s", target.StoreDir, target.Kind, err, out)
	}
}

// justifiedMetricDiff lists the differences docs/observability.md explains.
func justifiedMetricDiff(kind, d string) bool {
	if kind == harness.KindApache {
		// Apache's own set varies with the load (e.g. a histogram shows only once observed).
		return true
	}
	for _, p := range []string{
		"extra name go_", "extra name process_", "extra name promhttp_", // Go runtime and process metrics
		"missing name rocketmq_rocksdb_", // RocksDB-backed consume queue: not built
		// PopBufferMergeService's figures: rmqd has no POP merge buffer.
		"missing name rocketmq_pop_checkpoint_buffer_size", "missing name rocketmq_pop_offset_buffer_size",
		"missing name rocketmq_pop_buffer_scan_time_consume_",
		"missing name target_info", "missing name otel_scope_info", // OpenTelemetry resource/scope info
		"missing name rocketmq_processor_watermark", // rmqd has no per-processor thread-pool queues
		// Series that exist only while clients are registered: Apache still counted the Go consumer a
		// moment after its shutdown, rmqd drops it on UNREGISTER_CLIENT.
		"missing name rocketmq_consumer_connections", "missing name rocketmq_producer_connections",
		"extra name rocketmq_consumer_connections", "extra name rocketmq_producer_connections",
	} {
		if strings.Contains(d, p) {
			return true
		}
	}
	return false
}

func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	fams, _ := scrapeBody(t, url)
	return fams
}

// scrapeBody returns the parsed families and the raw text.
func scrapeBody(t *testing.T, url string) (map[string]*dto.MetricFamily, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var lastErr error
	for i := 0; i < 30; i++ {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && resp.StatusCode == http.StatusOK {
				p := expfmt.NewTextParser(model.UTF8Validation)
				fams, perr := p.TextToMetricFamilies(strings.NewReader(dropInfoTypes(string(body))))
				if perr != nil {
					t.Fatalf("parse %s: %v\n%s", url, perr, body)
				}
				return fams, body
			}
			lastErr = fmt.Errorf("status %d: %v", resp.StatusCode, rerr)
		} else {
			lastErr = err
		}
		if ctx.Err() != nil {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("scrape %s: %v", url, lastErr)
	return nil, nil
}

// dropInfoTypes removes the OpenMetrics "info" TYPE and HELP lines OpenTelemetry's exporter writes into its
// text output (target_info, otel_scope_info), which the Prometheus text parser refuses; their samples stay
// and parse as untyped.
func dropInfoTypes(body string) string {
	var b strings.Builder
	skip := map[string]bool{}
	for _, line := range strings.SplitAfter(body, "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" && f[3] == "info" {
			skip[f[2]] = true
			continue
		}
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "#" && f[1] == "HELP" && skip[f[2]] {
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}

func matches(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			n++
		}
	}
	return n == len(want)
}

// sumMetric adds the values of every series of a counter or gauge that carries the wanted labels.
func sumMetric(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f, ok := fams[name]
	if !ok {
		return 0
	}
	var s float64
	for _, m := range f.GetMetric() {
		if !matches(m, want) {
			continue
		}
		switch {
		case m.Counter != nil:
			s += m.GetCounter().GetValue()
		case m.Gauge != nil:
			s += m.GetGauge().GetValue()
		case m.Untyped != nil:
			s += m.GetUntyped().GetValue()
		}
	}
	return s
}

// histCount adds the observation counts of a histogram's series that carry the wanted labels. OpenTelemetry's
// exporter names a unit-suffixed histogram's TYPE line without the suffix, so its series then parse as
// untyped NAME_count samples; those count too.
func histCount(fams map[string]*dto.MetricFamily, name string, want map[string]string) uint64 {
	if _, ok := fams[name]; !ok {
		return uint64(sumMetric(fams, name+"_count", want))
	}
	f := fams[name]
	var c uint64
	for _, m := range f.GetMetric() {
		if matches(m, want) && m.Histogram != nil {
			c += m.GetHistogram().GetSampleCount()
		}
	}
	return c
}

// metricShapes maps each exposed series name to its sorted label keys (the union over its series); a
// histogram counts as its NAME_bucket (with le), NAME_count and NAME_sum series, as the exposition shows them.
func metricShapes(fams map[string]*dto.MetricFamily) map[string][]string {
	out := make(map[string][]string, len(fams))
	for name, f := range fams {
		keys := map[string]bool{}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				keys[l.GetName()] = true
			}
		}
		ks := make([]string, 0, len(keys))
		for k := range keys {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		if f.GetType() == dto.MetricType_HISTOGRAM {
			out[name+"_count"] = ks
			out[name+"_sum"] = ks
			out[name+"_bucket"] = append(append([]string(nil), ks...), "le")
			sort.Strings(out[name+"_bucket"])
			continue
		}
		out[name] = ks
	}
	return out
}

func formatShapes(s map[string][]string) string {
	names := make([]string, 0, len(s))
	for n := range s {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s %s\n", n, strings.Join(s[n], ","))
	}
	return b.String()
}

func readShapes(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("golden %s: %v (refresh with RMQD_TARGET=apache RMQD_UPDATE_GOLDEN=1)", path, err)
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, labels, _ := strings.Cut(sc.Text(), " ")
		if name == "" {
			continue
		}
		out[name] = nil
		if labels != "" {
			out[name] = strings.Split(labels, ",")
		}
	}
	return out
}

// diffShapes lists names missing from or extra in got, and label keys that differ for shared names.
func diffShapes(want, got map[string][]string) []string {
	var d []string
	for name, wl := range want {
		gl, ok := got[name]
		if !ok {
			d = append(d, "missing name "+name)
			continue
		}
		gs := map[string]bool{}
		for _, l := range gl {
			gs[l] = true
		}
		ws := map[string]bool{}
		for _, l := range wl {
			ws[l] = true
			if !gs[l] {
				d = append(d, fmt.Sprintf("%s: missing label %s", name, l))
			}
		}
		for _, l := range gl {
			if !ws[l] {
				d = append(d, fmt.Sprintf("%s: extra label %s", name, l))
			}
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			d = append(d, "extra name "+name)
		}
	}
	sort.Strings(d)
	return d
}
