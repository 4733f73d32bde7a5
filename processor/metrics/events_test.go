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
		DLQ:          []processor.DLQMetrics{{Group: "G", Topic: "T", N: 2}, {Group: "CID_RMQ_SYS_X", Topic: "T", System: true, N: 1}},
		Commits:      []processor.TopicCount{{Topic: "T", N: 3}},
		Rollbacks:    []processor.TopicCount{{Topic: "T", N: 4}},
		HalfMessages: []processor.TopicCount{{Topic: "T", N: 5}},
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
}
