package metrics

import "rmqd/processor"

// BrokerMetricsManager's DLQ and transaction series. Java's halfMessages is an
// observable gauge without a unit, so the exporter adds no suffix.
var (
	descSendToDLQ = newDesc("rocketmq_send_to_dlq_messages_total", "Consumer send to DLQ messages",
		typeCounter, "consumer_group", "topic", "is_system")
	descCommitMessages   = newDesc("rocketmq_commit_messages_total", "Total number of commit messages", typeCounter, "topic")
	descRollbackMessages = newDesc("rocketmq_rollback_messages_total", "Total number of rollback messages", typeCounter, "topic")
	descHalfMessages     = newDesc("rocketmq_half_messages", "Half messages of all topics", typeGauge, "topic")
	// Java records whole seconds under a milliseconds unit, with buckets in
	// seconds; rmqd keeps both, so Java's dashboards read it alike.
	descFinishLatency = newDesc("rocketmq_finish_message_latency_milliseconds", "Transaction finish latency",
		typeHistogram, "topic")
)

var finishLatencyBounds = func() []float64 {
	b := make([]float64, len(processor.FinishLatencyBoundsSec))
	for i, v := range processor.FinishLatencyBoundsSec {
		b[i] = float64(v)
	}
	return b
}()

func collectEvents(out *sink, s *processor.MetricsSnapshot) {
	for _, d := range s.DLQ {
		out.counter(descSendToDLQ, float64(d.N), d.Group, d.Topic, bools(d.System))
	}
	for _, c := range s.Commits {
		out.counter(descCommitMessages, float64(c.N), c.Topic)
	}
	for _, c := range s.Rollbacks {
		out.counter(descRollbackMessages, float64(c.N), c.Topic)
	}
	for _, c := range s.HalfMessages {
		out.gauge(descHalfMessages, float64(c.N), c.Topic)
	}
	for _, m := range s.FinishLatency {
		cum, n := cumulative(m.Counts[:])
		out.histogram(descFinishLatency, finishLatencyBounds, cum, n, float64(m.SumSec), m.Topic)
	}
}
