package metrics

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"rmqd/processor"
)

// The DLQ and transaction series come out under BrokerMetricsManager's names,
// types and label keys.
func TestScrapeShowsDLQAndTransactions(t *testing.T) {
	s := snap{Cluster: "C", BrokerName: "b",
		DLQ:           []processor.DLQMetrics{{Group: "G", Topic: "T", N: 2}, {Group: "CID_RMQ_SYS_X", Topic: "T", System: true, N: 1}},
		Commits:       []processor.TopicCount{{Topic: "T", N: 3}},
		Rollbacks:     []processor.TopicCount{{Topic: "T", N: 4}},
		HalfMessages:  []processor.TopicCount{{Topic: "T", N: 5}},
		FinishLatency: []processor.FinishLatencyMetrics{{Topic: "T", Counts: [7]uint64{2, 0, 1, 0, 0, 0, 1}, SumSec: 100500}},
	}
	fams := parse(t, string(New(Config{Cluster: "C", BrokerName: "b"}, s, nil, nil).render()))
	one := func(name string, typ dto.MetricType) []*dto.Metric {
		t.Helper()
		f := fams[name]
		require.NotNil(t, f, name)
		require.Equal(t, typ, f.GetType(), name)
		return f.GetMetric()
	}
	dlq := one("rocketmq_send_to_dlq_messages_total", dto.MetricType_COUNTER)
	require.Len(t, dlq, 2)
	byGroup := map[string]*dto.Metric{}
	for _, m := range dlq {
		byGroup[labelsOf(m)["consumer_group"]] = m
	}
	require.Equal(t, map[string]string{"consumer_group": "G", "topic": "T", "is_system": "false"}, labelsOf(byGroup["G"]))
	require.EqualValues(t, 2, byGroup["G"].GetCounter().GetValue())
	require.Equal(t, "true", labelsOf(byGroup["CID_RMQ_SYS_X"])["is_system"])
	for name, want := range map[string]float64{"rocketmq_commit_messages_total": 3, "rocketmq_rollback_messages_total": 4} {
		m := one(name, dto.MetricType_COUNTER)
		require.Len(t, m, 1)
		require.Equal(t, map[string]string{"topic": "T"}, labelsOf(m[0]))
		require.Equal(t, want, m[0].GetCounter().GetValue(), name)
	}
	half := one("rocketmq_half_messages", dto.MetricType_GAUGE)
	require.Equal(t, map[string]string{"topic": "T"}, labelsOf(half[0]))
	require.EqualValues(t, 5, half[0].GetGauge().GetValue())
	fl := one("rocketmq_finish_message_latency_milliseconds", dto.MetricType_HISTOGRAM)
	require.Equal(t, map[string]string{"topic": "T"}, labelsOf(fl[0]))
	h := fl[0].GetHistogram()
	require.EqualValues(t, 4, h.GetSampleCount())
	require.EqualValues(t, 100500, h.GetSampleSum())
	var bounds []float64
	var cum []uint64
	for _, b := range h.GetBucket() {
		bounds = append(bounds, b.GetUpperBound())
		cum = append(cum, b.GetCumulativeCount())
	}
	require.Equal(t, []float64{5, 60, 600, 3600, 43200, 86400}, bounds[:6], "commitLatencyBuckets")
	require.Equal(t, []uint64{2, 2, 3, 3, 3, 3}, cum[:6])
}
