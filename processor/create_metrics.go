package processor

import (
	"sync/atomic"
	"time"

	"rmqd/codec"
	"rmqd/processor/stats"
)

// CreateTimeBoundsMs are the buckets of rocketmq_topic_create_execution_time
// and rocketmq_consumer_group_create_execution_time (BrokerMetricsManager's
// createTimeBuckets).
var CreateTimeBoundsMs = []int64{10, 100, 1000, 3000, 5000}

// DurationHistogram is a histogram of whole milliseconds: Counts[i] is the
// number of observations in bucket i (not cumulative; the last is +Inf).
type DurationHistogram struct {
	Counts []uint64
	SumMs  int64
}

// Total is the number of observations.
func (h DurationHistogram) Total() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// CreateTimeMetrics is one series of a create-time histogram; System is
// labelled on the topic one only.
type CreateTimeMetrics struct {
	Success, System bool
	Hist            DurationHistogram
}

type msHist struct {
	counts [6]atomic.Uint64 // len(CreateTimeBoundsMs)+1
	sum    atomic.Int64
}

func (h *msHist) observe(ms int64) {
	h.counts[stats.BucketIndex(CreateTimeBoundsMs, ms)].Add(1)
	h.sum.Add(ms)
}

func (h *msHist) snapshot() DurationHistogram {
	d := DurationHistogram{Counts: make([]uint64, len(h.counts)), SumMs: h.sum.Load()}
	for i := range h.counts {
		d.Counts[i] = h.counts[i].Load()
	}
	return d
}

// createTimes times the admin creates of topics and subscription groups, as
// AdminBrokerProcessor records them: by invocation status, and for topics by
// whether the topic is a system one.
type createTimes struct {
	topic [2][2]msHist // [success][system]
	group [2]msHist    // [success]
}

func idx(b bool) int {
	if b {
		return 1
	}
	return 0
}

// since is Java's whole milliseconds from start.
func since(start time.Time) int64 { return time.Since(start).Milliseconds() }

func (t *createTimes) topicDone(start time.Time, resp *codec.RemotingCommand, system bool) {
	t.topic[idx(resp != nil && resp.Code == codec.RespSuccess)][idx(system)].observe(since(start))
}

func (t *createTimes) groupDone(start time.Time, success bool) {
	t.group[idx(success)].observe(since(start))
}

// metrics lists the series that have observations (OpenTelemetry shows a
// histogram's series only once recorded).
func (t *createTimes) metrics() (topics, groups []CreateTimeMetrics) {
	for s := range 2 {
		for sys := range 2 {
			if h := t.topic[s][sys].snapshot(); h.Total() > 0 {
				topics = append(topics, CreateTimeMetrics{Success: s == 1, System: sys == 1, Hist: h})
			}
		}
		if h := t.group[s].snapshot(); h.Total() > 0 {
			groups = append(groups, CreateTimeMetrics{Success: s == 1, Hist: h})
		}
	}
	return topics, groups
}
