package metrics

import "rmqd/processor"

// DefaultStoreMetricsManager's per-topic timer series.
var (
	labelsTimerTopic   = []string{"storage_type", "storage_medium", "topic"}
	descTimingMessages = newDesc("rocketmq_timing_messages", "Current message number in timing", typeGauge, labelsTimerTopic...)
	descTimerEnqTotal  = newDesc("rocketmq_timer_enqueue_total", "Total number of timer enqueue", typeCounter, labelsTimerTopic...)
	descTimerDeqTotal  = newDesc("rocketmq_timer_dequeue_total", "Total number of timer dequeue", typeCounter, labelsTimerTopic...)
	descDelayLatency   = newDesc("rocketmq_delay_message_latency_seconds", "Timer message set latency distribution",
		typeHistogram, labelsTimerTopic...)
)

var delayLatencyBounds = func() []float64 {
	b := make([]float64, len(processor.DelayLatencyBoundsSec))
	for i, v := range processor.DelayLatencyBoundsSec {
		b[i] = float64(v)
	}
	return b
}()

func collectTimerTopics(out *sink, s *processor.MetricsSnapshot) {
	for _, m := range s.Timer.Topics {
		lv := []string{"local", "disk", m.Topic}
		out.gauge(descTimingMessages, float64(m.Timing), lv...)
		out.counter(descTimerEnqTotal, float64(m.Enqueued), lv...)
		if m.Dequeued > 0 { // Java's counter shows once it counted
			out.counter(descTimerDeqTotal, float64(m.Dequeued), lv...)
		}
		cum, n := cumulative(m.Latency[:])
		out.histogram(descDelayLatency, delayLatencyBounds, cum, n, float64(m.LatencySumSec), lv...)
	}
}
