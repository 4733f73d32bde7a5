package pop

import (
	"strings"
	"sync/atomic"
	"time"

	"rmqd/processor/stats"
	"rmqd/store"
)

// Revive record kinds (PopReviveMessageType); batch acks count as ACK.
const (
	kindCK uint8 = iota
	kindACK
)

var kindNames = [...]string{"CK", "ACK"}

// countKey labels one PopMetricsManager counter series. Fields a counter does
// not label are left zero.
type countKey struct {
	group, topic string
	queue        int32
	kind         uint8
	status       store.PutStatus
}

// counters are one PopMetricsManager counter's series: a record of a known
// key adds without a lock or an allocation (stats.COWMap).
type counters struct {
	m stats.COWMap[countKey, atomic.Int64]
}

func (c *counters) add(k countKey) { c.m.Get(k, cloneCountKey, newCount).Add(1) }

func newCount() *atomic.Int64 { return new(atomic.Int64) }

// cloneCountKey copies the names, which may alias a request's buffer.
func cloneCountKey(k countKey) countKey {
	k.group, k.topic = strings.Clone(k.group), strings.Clone(k.topic)
	return k
}

// forget drops the series drop matches (a deleted topic or group).
func (c *counters) forget(drop func(countKey) bool) { c.m.Drop(drop) }

// list copies the counts; typed and put say whether the counter labels the
// record kind and the put status.
func (c *counters) list(typed, put bool) []ReviveCount {
	if c.m.Len() == 0 {
		return nil
	}
	out := make([]ReviveCount, 0, c.m.Len())
	c.m.Range(func(k countKey, v *atomic.Int64) {
		rc := ReviveCount{Group: k.group, Topic: k.topic, QueueID: k.queue, N: v.Load()}
		if typed {
			rc.Type = kindNames[k.kind]
		}
		if put {
			rc.PutStatus = k.status.String()
		}
		out = append(out, rc)
	})
	return out
}

// popCounts are PopMetricsManager's counters.
type popCounts struct {
	revivePut counters // checkpoints and acks written to the revive topic, by put status
	reviveGet counters // checkpoints and acks read back by the revive service, by revive queue
	retry     counters // messages revived to the retry topic, by put status
}

func (p *popCounts) forget(drop func(countKey) bool) {
	p.revivePut.forget(drop)
	p.reviveGet.forget(drop)
	p.retry.forget(drop)
}

// ReviveCount is one series of a POP counter: the fields its Java counter
// does not label are empty (QueueID labels only the revive reads, PutStatus
// only the puts).
type ReviveCount struct {
	Group, Topic string
	QueueID      int32
	Type         string // "CK" or "ACK"
	PutStatus    string // PutMessageStatus name
	N            int64
}

// ReviveQueueMetrics is one revive queue's backlog (PopReviveService's
// getReviveBehindMessages and getReviveBehindMillis).
type ReviveQueueMetrics struct {
	QueueID                      int32
	BehindMessages, BehindMillis int64
}

// Metrics is what the metrics exporter reads of POP at scrape time.
type Metrics struct {
	RevivePut, ReviveGet, Retry []ReviveCount
	ReviveQueues                []ReviveQueueMetrics
}

// Metrics copies the POP counters and measures each revive queue's backlog.
// A queue whose reviver has not finished a round (a slave's, or before the
// first round) reports 0, as Java's does before its first round.
func (s *Service) Metrics(now time.Time) Metrics {
	m := Metrics{RevivePut: s.counts.revivePut.list(true, true), ReviveGet: s.counts.reviveGet.list(true, false),
		Retry: s.counts.retry.list(false, true)}
	cfg := s.h.Conf()
	var rs []*reviver
	if p := s.revivers.Load(); p != nil {
		rs = *p
	}
	topic := s.reviveTopicNow(cfg.ClusterName)
	for q := int32(0); q < cfg.ReviveQueueNum; q++ {
		qm := ReviveQueueMetrics{QueueID: q}
		if int(q) < len(rs) {
			if ts := rs[q].lastReviveTime.Load(); ts > 0 {
				// The next record to read is the committed offset + 1.
				behind := s.h.MaxOffset(topic, q) - s.h.QueryOffset(reviveGroup, topic, q) - 1
				qm.BehindMessages = max(0, behind)
				if behind > 0 {
					qm.BehindMillis = max(0, now.UnixMilli()-ts)
				}
			}
		}
		m.ReviveQueues = append(m.ReviveQueues, qm)
	}
	return m
}
