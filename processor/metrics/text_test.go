package metrics

import (
	"compress/gzip"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"rmqd/processor"
)

func parse(t *testing.T, body string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err, body)
	return fams
}

// The hand-written exposition must read back, through Prometheus's own parser,
// as the values and labels put in: escaping, histogram buckets, types.
func TestTextParsesBack(t *testing.T) {
	odd := "a\"b\\c\nd"
	s := snap{Cluster: "C", BrokerName: "b",
		Topics: []processor.TopicMetrics{{Topic: odd, MessageType: "normal", Messages: 3, Bytes: 300,
			Sizes: processor.SizeHistogram{Counts: [7]uint64{1, 1, 0, 0, 0, 0, 1}, Sum: 300}}},
	}
	e := New(Config{Cluster: "C", BrokerName: "b", Labels: map[string]string{"env": "x y"}}, s, nil, nil)
	fams := parse(t, string(e.render()))

	in := fams["rocketmq_messages_in_total"]
	require.NotNil(t, in)
	require.Equal(t, dto.MetricType_COUNTER, in.GetType())
	require.Len(t, in.GetMetric(), 1)
	labels := map[string]string{}
	for _, l := range in.GetMetric()[0].GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	require.Equal(t, map[string]string{"topic": odd, "message_type": "normal", "is_system": "false",
		"cluster": "C", "node_id": "b", "node_type": "broker", "otel_scope_name": "broker-meter", "env": "x y"}, labels)
	require.EqualValues(t, 3, in.GetMetric()[0].GetCounter().GetValue())

	h := fams["rocketmq_message_size"].GetMetric()[0].GetHistogram()
	require.EqualValues(t, 3, h.GetSampleCount())
	require.EqualValues(t, 300, h.GetSampleSum())
	require.Len(t, h.GetBucket(), len(messageSizeBounds)+1) // and +Inf
	require.EqualValues(t, 3, h.GetBucket()[len(messageSizeBounds)].GetCumulativeCount())
	require.EqualValues(t, 1, h.GetBucket()[0].GetCumulativeCount())
	require.EqualValues(t, 2, h.GetBucket()[len(messageSizeBounds)-1].GetCumulativeCount())

	require.Equal(t, dto.MetricType_SUMMARY, fams["go_gc_duration_seconds"].GetType())
	require.Positive(t, fams["process_resident_memory_bytes"].GetMetric()[0].GetGauge().GetValue())
	require.Positive(t, fams["process_start_time_seconds"].GetMetric()[0].GetGauge().GetValue())
	require.Positive(t, fams["go_goroutines"].GetMetric()[0].GetGauge().GetValue())
}

// Every go_* and process_* family the Prometheus Go client exports is exported
// here too, with the same type (dashboards for Go services read them), except
// the process's network counters.
func TestRuntimeFamiliesMatchTheGoClient(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	theirs, err := reg.Gather()
	require.NoError(t, err)
	s := newSink()
	collectGo(s)
	collectProcess(s)
	ours := parse(t, string(s.appendText(nil)))
	for _, f := range theirs {
		if strings.HasPrefix(f.GetName(), "process_network_") {
			continue
		}
		o, ok := ours[f.GetName()]
		if !ok {
			t.Errorf("missing %s", f.GetName())
			continue
		}
		require.Equal(t, f.GetType(), o.GetType(), f.GetName())
	}
}

func TestScrapeGzipAndLimit(t *testing.T) {
	e := New(Config{Cluster: "C", BrokerName: "b"}, snap{}, nil, nil)
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept-Encoding", "deflate, gzip;q=1.0")
	rec := httptest.NewRecorder()
	e.Handler().ServeHTTP(rec, req)
	require.Equal(t, "gzip", rec.Header().Get("Content-Encoding"))
	zr, err := gzip.NewReader(rec.Body)
	require.NoError(t, err)
	body, err := io.ReadAll(zr)
	require.NoError(t, err)
	parse(t, string(body))

	for range maxScrapes {
		e.slots <- struct{}{}
	}
	rec = httptest.NewRecorder()
	e.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	require.Equal(t, 503, rec.Code)
}
