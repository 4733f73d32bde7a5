package metrics

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"rmqd/processor"
	"rmqd/processor/pop"
)

// labelsOf is a metric's labels without the ones every series carries.
func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		switch l.GetName() {
		case "cluster", "node_id", "node_type", "otel_scope_name":
			continue
		}
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// The POP and create-time figures of a snapshot come out under Java's names,
// types, label keys and buckets, and read back through Prometheus's parser.
func TestScrapeShowsPopAndCreateTimes(t *testing.T) {
	s := snap{Cluster: "C", BrokerName: "b",
		Pop: pop.Metrics{
			RevivePut:    []pop.ReviveCount{{Group: "G", Topic: "T", Type: "CK", PutStatus: "PUT_OK", N: 3}},
			ReviveGet:    []pop.ReviveCount{{Group: "G", Topic: "T", QueueID: 2, Type: "ACK", N: 4}},
			Retry:        []pop.ReviveCount{{Group: "G", Topic: "T", PutStatus: "FLUSH_DISK_TIMEOUT", N: 5}},
			ReviveQueues: []pop.ReviveQueueMetrics{{QueueID: 0}, {QueueID: 1, BehindMessages: 6, BehindMillis: 7000}},
		},
		TopicCreate: []processor.CreateTimeMetrics{{Success: true, System: false,
			Hist: processor.DurationHistogram{Counts: []uint64{2, 1, 0, 0, 0, 1}, SumMs: 6020}}},
		GroupCreate: []processor.CreateTimeMetrics{{Success: false,
			Hist: processor.DurationHistogram{Counts: []uint64{0, 0, 1, 0, 0, 0}, SumMs: 500}}},
	}
	fams := parse(t, string(New(Config{Cluster: "C", BrokerName: "b"}, s, nil, nil).render()))

	one := func(name string, typ dto.MetricType) []*dto.Metric {
		t.Helper()
		f := fams[name]
		require.NotNil(t, f, name)
		require.Equal(t, typ, f.GetType(), name)
		return f.GetMetric()
	}
	in := one("rocketmq_pop_revive_in_message_total", dto.MetricType_COUNTER)
	require.Len(t, in, 1)
	require.Equal(t, map[string]string{"consumer_group": "G", "topic": "T", "revive_message_type": "CK", "put_status": "PUT_OK"}, labelsOf(in[0]))
	require.EqualValues(t, 3, in[0].GetCounter().GetValue())
	out := one("rocketmq_pop_revive_out_message_total", dto.MetricType_COUNTER)
	require.Equal(t, map[string]string{"consumer_group": "G", "topic": "T", "queue_id": "2", "revive_message_type": "ACK"}, labelsOf(out[0]))
	require.EqualValues(t, 4, out[0].GetCounter().GetValue())
	retry := one("rocketmq_pop_revive_retry_messages_total", dto.MetricType_COUNTER)
	require.Equal(t, map[string]string{"consumer_group": "G", "topic": "T", "put_status": "FLUSH_DISK_TIMEOUT"}, labelsOf(retry[0]))
	require.EqualValues(t, 5, retry[0].GetCounter().GetValue())

	byQueue := func(ms []*dto.Metric) map[string]float64 {
		r := map[string]float64{}
		for _, m := range ms {
			require.Len(t, labelsOf(m), 1)
			r[labelsOf(m)["queue_id"]] = m.GetGauge().GetValue()
		}
		return r
	}
	require.Equal(t, map[string]float64{"0": 0, "1": 6}, byQueue(one("rocketmq_pop_revive_lag_milliseconds", dto.MetricType_GAUGE)))
	require.Equal(t, map[string]float64{"0": 0, "1": 7000}, byQueue(one("rocketmq_pop_revive_latency_milliseconds", dto.MetricType_GAUGE)))

	tc := one("rocketmq_topic_create_execution_time_milliseconds", dto.MetricType_HISTOGRAM)
	require.Len(t, tc, 1)
	require.Equal(t, map[string]string{"invocation_status": "success", "is_system": "false"}, labelsOf(tc[0]))
	h := tc[0].GetHistogram()
	require.EqualValues(t, 4, h.GetSampleCount())
	require.EqualValues(t, 6020, h.GetSampleSum())
	var bounds []float64
	var cum []uint64
	for _, b := range h.GetBucket() {
		bounds = append(bounds, b.GetUpperBound())
		cum = append(cum, b.GetCumulativeCount())
	}
	require.Equal(t, []float64{10, 100, 1000, 3000, 5000}, bounds[:5], "BrokerMetricsManager's createTimeBuckets")
	require.Equal(t, []uint64{2, 3, 3, 3, 3, 4}, cum)
	gc := one("rocketmq_consumer_group_create_execution_time_milliseconds", dto.MetricType_HISTOGRAM)
	require.Equal(t, map[string]string{"invocation_status": "failure"}, labelsOf(gc[0]))
	require.EqualValues(t, 1, gc[0].GetHistogram().GetSampleCount())
}

// Without creates or POP traffic only the revive queue gauges show, as Java's.
func TestScrapeWithoutPopTrafficHasNoCounters(t *testing.T) {
	s := snap{Cluster: "C", BrokerName: "b", Pop: pop.Metrics{ReviveQueues: []pop.ReviveQueueMetrics{{QueueID: 0}}}}
	fams := parse(t, string(New(Config{Cluster: "C", BrokerName: "b"}, s, nil, nil).render()))
	for _, name := range []string{"rocketmq_pop_revive_in_message_total", "rocketmq_pop_revive_out_message_total",
		"rocketmq_pop_revive_retry_messages_total", "rocketmq_topic_create_execution_time_milliseconds",
		"rocketmq_consumer_group_create_execution_time_milliseconds"} {
		require.Nil(t, fams[name], name)
	}
	require.NotNil(t, fams["rocketmq_pop_revive_lag_milliseconds"])
}

// The per-topic timer counts come out as DefaultStoreMetricsManager's series,
// the delay latency in seconds with its buckets.
func TestScrapeShowsTimerTopics(t *testing.T) {
	s := snap{Cluster: "C", BrokerName: "b", Timer: processor.TimerMetrics{Topics: []processor.TimerTopicMetrics{
		{Topic: "A", Timing: 2, Enqueued: 5, Dequeued: 3, Latency: [7]uint64{1, 0, 0, 0, 0, 0, 4}, LatencySumSec: 2e6},
		{Topic: "B", Timing: 1, Enqueued: 1, Latency: [7]uint64{0, 1}, LatencySumSec: 70},
	}}}
	fams := parse(t, string(New(Config{Cluster: "C", BrokerName: "b"}, s, nil, nil).render()))
	get := func(name string, typ dto.MetricType) map[string]*dto.Metric {
		t.Helper()
		f := fams[name]
		require.NotNil(t, f, name)
		require.Equal(t, typ, f.GetType(), name)
		out := map[string]*dto.Metric{}
		for _, m := range f.GetMetric() {
			l := labelsOf(m)
			require.Equal(t, "local", l["storage_type"])
			require.Equal(t, "disk", l["storage_medium"])
			require.Len(t, l, 3)
			out[l["topic"]] = m
		}
		return out
	}
	timing := get("rocketmq_timing_messages", dto.MetricType_GAUGE)
	require.EqualValues(t, 2, timing["A"].GetGauge().GetValue())
	require.EqualValues(t, 1, timing["B"].GetGauge().GetValue())
	require.EqualValues(t, 5, get("rocketmq_timer_enqueue_total", dto.MetricType_COUNTER)["A"].GetCounter().GetValue())
	deq := get("rocketmq_timer_dequeue_total", dto.MetricType_COUNTER)
	require.EqualValues(t, 3, deq["A"].GetCounter().GetValue())
	require.NotContains(t, deq, "B", "no dequeue yet: no series, as Java's counter")
	h := get("rocketmq_delay_message_latency_seconds", dto.MetricType_HISTOGRAM)["A"].GetHistogram()
	require.EqualValues(t, 5, h.GetSampleCount())
	require.EqualValues(t, 2e6, h.GetSampleSum())
	var bounds []float64
	for _, b := range h.GetBucket()[:6] {
		bounds = append(bounds, b.GetUpperBound())
	}
	require.Equal(t, []float64{60, 600, 3600, 43200, 86400, 259200}, bounds)
	require.EqualValues(t, 1, h.GetBucket()[5].GetCumulativeCount())
}
