package metrics

import (
	"strconv"

	"rmqd/processor"
)

// PopMetricsManager's series (names as the OpenTelemetry Prometheus exporter
// gives them). Java's rocketmq_pop_revive_lag carries a milliseconds unit but
// records a count of messages; rmqd keeps both the name and the value.
var (
	descPopReviveIn = newDesc("rocketmq_pop_revive_in_message_total", "Total number of put message to revive topic",
		typeCounter, "consumer_group", "topic", "revive_message_type", "put_status")
	descPopReviveOut = newDesc("rocketmq_pop_revive_out_message_total", "Total number of get message from revive topic",
		typeCounter, "consumer_group", "topic", "queue_id", "revive_message_type")
	descPopReviveRetry = newDesc("rocketmq_pop_revive_retry_messages_total", "Total number of put message to pop retry topic",
		typeCounter, "consumer_group", "topic", "put_status")
	descPopReviveLag     = newDesc("rocketmq_pop_revive_lag_milliseconds", "The processing lag of revive topic", typeGauge, "queue_id")
	descPopReviveLatency = newDesc("rocketmq_pop_revive_latency_milliseconds", "The processing latency of revive topic", typeGauge, "queue_id")

	descTopicCreate = newDesc("rocketmq_topic_create_execution_time_milliseconds", "The distribution of create topic time",
		typeHistogram, "invocation_status", "is_system")
	descGroupCreate = newDesc("rocketmq_consumer_group_create_execution_time_milliseconds", "The distribution of create subscription time",
		typeHistogram, "invocation_status")
)

var createTimeBounds = func() []float64 {
	b := make([]float64, len(processor.CreateTimeBoundsMs))
	for i, v := range processor.CreateTimeBoundsMs {
		b[i] = float64(v)
	}
	return b
}()

func collectPop(out *sink, s *processor.MetricsSnapshot) {
	p := &s.Pop
	for _, c := range p.RevivePut {
		out.counter(descPopReviveIn, float64(c.N), c.Group, c.Topic, c.Type, c.PutStatus)
	}
	for _, c := range p.ReviveGet {
		out.counter(descPopReviveOut, float64(c.N), c.Group, c.Topic, strconv.Itoa(int(c.QueueID)), c.Type)
	}
	for _, c := range p.Retry {
		out.counter(descPopReviveRetry, float64(c.N), c.Group, c.Topic, c.PutStatus)
	}
	for _, q := range p.ReviveQueues {
		id := strconv.Itoa(int(q.QueueID))
		out.gauge(descPopReviveLag, float64(q.BehindMessages), id)
		out.gauge(descPopReviveLatency, float64(q.BehindMillis), id)
	}
}

func collectCreateTimes(out *sink, s *processor.MetricsSnapshot) {
	for _, m := range s.TopicCreate {
		cum, n := cumulative(m.Hist.Counts)
		out.histogram(descTopicCreate, createTimeBounds, cum, n, float64(m.Hist.SumMs), invocationStatus(m.Success), bools(m.System))
	}
	for _, m := range s.GroupCreate {
		cum, n := cumulative(m.Hist.Counts)
		out.histogram(descGroupCreate, createTimeBounds, cum, n, float64(m.Hist.SumMs), invocationStatus(m.Success))
	}
}

// cumulative turns per-bucket counts (the last one +Inf) into the cumulative
// counts of the finite bounds and the total.
func cumulative(counts []uint64) ([]uint64, uint64) {
	if len(counts) == 0 {
		return nil, 0
	}
	cum := make([]uint64, len(counts)-1)
	var n uint64
	for i := range cum {
		n += counts[i]
		cum[i] = n
	}
	return cum, n + counts[len(counts)-1]
}

// invocationStatus is InvocationStatus.getName.
func invocationStatus(ok bool) string {
	if ok {
		return "success"
	}
	return "failure"
}
