// Package stats is the broker's runtime statistics: Java's BrokerStatsManager,
// BrokerStats and StoreStatsService. The send and pull paths add to atomics; a
// sampler snapshots them into the minute, hour and day windows that
// GET_BROKER_RUNTIME_INFO, VIEW_BROKER_STATS_DATA and the GET_*_STATS answers
// read. It knows no connection, request or store.
package stats

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Broker keeps what Java's BrokerStatsManager, BrokerStats and
// StoreStatsService report to admin tools: message counts per topic and per
// topic@group, broker totals (system topics left out, as
// getBrokerPutNumsWithoutSystemTopic does) and TPS over 10 s, 1 min and 10 min.
//
// The send and pull paths only add to atomics: per-topic counters live in a
// copy-on-write map read through an atomic pointer, so a message costs one map
// lookup and two atomic adds, no lock and no allocation once its topic is known.
// A sampler goroutine snapshots the totals once a second.
type Broker struct {
	putNums atomic.Int64 // messages stored, user topics
	getNums atomic.Int64 // messages handed to pullers, user topics

	topics atomic.Pointer[map[string]*Counter]     // TOPIC_PUT_NUMS / TOPIC_PUT_SIZE
	groups atomic.Pointer[map[topicGroup]*Counter] // GROUP_GET_NUMS / GROUP_GET_SIZE
	grow   sync.Mutex                              // serializes copy-on-write inserts
	// broker holds the BROKER_PUT_NUMS, BROKER_GET_NUMS and their
	// _WITHOUT_SYSTEM_TOPIC counters (keyed by cluster name in Java), summed
	// from the topic and group counters by the sampler: nothing on the hot
	// path. Each is made at the first sample with a call, as Java makes its
	// StatsItem at the first put or get.
	broker [4]atomic.Pointer[Counter]
	// retired keeps the counts of deleted topics and groups in the totals.
	retired retired

	mu            sync.Mutex
	puts, gets    sampleRing // broker totals, one sample a second
	todayMorning  [2]int64   // put, get totals at the last midnight (BrokerStats.record)
	yesterdayMorn [2]int64
	lastRecordDay int
	lastAt        int64 // unix ms of the last sample
	// manual stops the once-a-second sampler: tests drive sample themselves.
	manual atomic.Bool
	nap    napper // the sampler sleeps while no count moves (idle.go)
}

// Counter counts messages and bytes of one topic or topic@group.
type Counter struct {
	nums atomic.Int64
	size atomic.Int64
	// times counts pulls (StatsItem.times) for a group; a topic's puts are
	// the observations of its size histogram, so a put adds no atomic for it.
	times atomic.Int64
	// system marks a system topic, left out of the broker totals; decided once
	// when the counter is made.
	system bool
	// win are StatsItem's csListMinute, csListHour and csListDay: snapshots
	// every 10 s, 10 min and 1 h, guarded by Broker.mu.
	win   [3]statWindow
	sizes sizeHist // rocketmq_message_size, topics only
}

// Window indexes of Counter.win, and their sampling period and length
// (StatsItem.samplingInSeconds/InMinutes/InHour).
const (
	WinMinute = iota
	WinHour
	WinDay
)

var windowSpecs = [3]struct {
	periodMs int64
	keep     int
}{{10_000, 7}, {600_000, 7}, {3_600_000, 25}}

// statWindow is a ring of the last keep snapshots, made by the sampler on
// first use (39 snapshots, 1.2 KB, a counter in all).
type statWindow struct {
	s    []counterSample
	held int
	next int
}

type counterSample struct{ atMs, times, nums, size int64 }

func (w *statWindow) add(keep int, c counterSample) {
	if w.s == nil {
		w.s = make([]counterSample, keep)
	}
	w.s[w.next] = c
	w.next = (w.next + 1) % keep
	w.held = min(w.held+1, keep)
}

// total is how many observations the histogram holds: a topic's put calls.
func (h *sizeHist) total() int64 {
	var n int64
	for i := range h.counts {
		n += h.counts[i].Load()
	}
	return n
}

// Snapshot is StatsSnapshot: what was added between the oldest and newest
// snapshot of a window, its rate per second and its average per call.
type Snapshot struct {
	Sum   int64
	Tps   float64
	Avgpt float64
}

func (c *Counter) stats(win int, size bool) Snapshot {
	w, keep := &c.win[win], windowSpecs[win].keep
	if w.held == 0 {
		return Snapshot{}
	}
	last := w.s[(w.next+keep-1)%keep]
	first := w.s[(w.next+keep-w.held)%keep]
	var r Snapshot
	r.Sum = last.nums - first.nums
	if size {
		r.Sum = last.size - first.size
	}
	if dt := last.atMs - first.atMs; dt > 0 {
		r.Tps = float64(r.Sum) * 1000 / float64(dt)
	}
	if dn := last.times - first.times; dn > 0 {
		r.Avgpt = float64(r.Sum) / float64(dn)
	}
	return r
}

// minuteStats is StatsItem.getStatsDataInMinute's sum and tps.
func (c *Counter) minuteStats(size bool) (int64, float64) {
	r := c.stats(WinMinute, size)
	return r.Sum, r.Tps
}

// sampleDue takes the snapshots that are due at atMs. As StatsItem.init
// schedules with no delay, a window's first snapshot comes at the first tick
// after the counter is made, preceded by a zero one a period back (Java's
// seed), so the first window holds all counted so far.
func (c *Counter) sampleDue(atMs int64) {
	var cur counterSample
	for i := range c.win {
		w, spec := &c.win[i], windowSpecs[i]
		if w.held > 0 {
			lastAt := w.s[(w.next+spec.keep-1)%spec.keep].atMs
			// A tick late or early still counts, as the fixed-rate schedule would.
			if atMs-lastAt < spec.periodMs-500 {
				continue
			}
		}
		if cur.atMs == 0 {
			// One of the two call counts is always zero (see times).
			cur = counterSample{atMs, c.times.Load() + c.sizes.total(), c.nums.Load(), c.size.Load()}
		}
		if w.held == 0 {
			w.add(spec.keep, counterSample{atMs: atMs - spec.periodMs})
		}
		w.add(spec.keep, cur)
	}
}

// statsWindow is how many one-second samples are kept: 10 min plus one.
const statsWindow = 601

// sampleRing holds (time, total) samples, oldest overwritten.
type sampleRing struct {
	at    [statsWindow]int64 // unix ms
	total [statsWindow]int64
	n     int // samples held
	next  int
}

func (r *sampleRing) add(atMs, total int64) {
	r.at[r.next], r.total[r.next] = atMs, total
	r.next = (r.next + 1) % statsWindow
	r.n = min(r.n+1, statsWindow)
}

// tps over the last secs seconds, "" when fewer samples exist (as Java's
// StoreStatsService prints nothing then).
func (r *sampleRing) tps(secs int) string {
	if r.n <= secs {
		return ""
	}
	last := (r.next - 1 + statsWindow) % statsWindow
	first := (r.next - 1 - secs + 2*statsWindow) % statsWindow
	dt := r.at[last] - r.at[first]
	if dt <= 0 {
		return "0.0"
	}
	return JavaDouble(float64(r.total[last]-r.total[first]) / float64(dt) * 1000)
}

// tps3 is StoreStatsService's "10s 60s 600s" triple.
func (r *sampleRing) tps3() string {
	return r.tps(10) + " " + r.tps(60) + " " + r.tps(600)
}

// JavaDouble formats like Java's Double.toString for the magnitudes TPS takes
// (always a decimal point).
func JavaDouble(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

func (s *Broker) topicCounter(topic string, isSystem func(string) bool) *Counter {
	return counterOf(&s.topics, &s.grow, topic, strings.Clone, topic, isSystem)
}

func (s *Broker) groupCounter(topic, group string, isSystem func(string) bool) *Counter {
	return counterOf(&s.groups, &s.grow, topicGroup{topic, group}, cloneTopicGroup, topic, isSystem)
}

func cloneTopicGroup(k topicGroup) topicGroup {
	return topicGroup{strings.Clone(k.topic), strings.Clone(k.group)}
}

// counterOf returns k's counter in the copy-on-write map p (cowGet), made
// with its topic's system flag the first time.
func counterOf[K comparable](p *atomic.Pointer[map[K]*Counter], grow *sync.Mutex, k K, clone func(K) K,
	topic string, isSystem func(string) bool) *Counter {
	return cowGet(p, grow, k, clone, func() *Counter { return &Counter{system: isSystem != nil && isSystem(topic)} })
}

// CountPut records n stored messages of size bytes in topic (incTopicPutNums,
// incTopicPutSize, incBrokerPutNums).
func (s *Broker) CountPut(topic string, n int32, size int32, isSystem func(string) bool) {
	c := s.topicCounter(topic, isSystem)
	c.nums.Add(int64(n))
	c.size.Add(int64(size))
	if n > 0 {
		c.sizes.observe(int64(size / n)) // one observation per put, as Java records
	}
	if !c.system {
		s.putNums.Add(int64(n))
	}
	s.nap.kick()
}

// CountGet records n messages of size bytes pulled by group from topic
// (incGroupGetNums, incGroupGetSize, incBrokerGetNums).
func (s *Broker) CountGet(group, topic string, n int, size int, isSystem func(string) bool) {
	c := s.groupCounter(topic, group, isSystem)
	c.nums.Add(int64(n))
	c.size.Add(int64(size))
	c.times.Add(1)
	if !c.system {
		s.getNums.Add(int64(n))
	}
	s.nap.kick()
}

// Sample takes the once-a-second snapshot and, past midnight, moves the
// day counters as BrokerStats.record does.
func (s *Broker) Sample(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sampleLocked(now)
}

func (s *Broker) sampleLocked(now time.Time) {
	put, get := s.putNums.Load(), s.getNums.Load()
	ms := now.UnixMilli()
	s.lastAt = ms
	s.puts.add(ms, put)
	s.gets.add(ms, get)
	if m := s.topics.Load(); m != nil {
		for _, c := range *m {
			c.sampleDue(ms)
		}
	}
	if m := s.groups.Load(); m != nil {
		for _, c := range *m {
			c.sampleDue(ms)
		}
	}
	s.sampleBroker(ms)
	if day := now.YearDay(); s.lastRecordDay == 0 {
		s.lastRecordDay = day
	} else if day != s.lastRecordDay {
		s.lastRecordDay = day
		s.yesterdayMorn = s.todayMorning
		s.todayMorning = [2]int64{put, get}
	}
}

// Run samples once a second while counts move, and sleeps while none does.
func (s *Broker) Run(ctx context.Context) {
	s.nap.run(ctx, &s.manual, s.Sample, s.activity, func(now time.Time) {
		s.mu.Lock()
		s.catchUpLocked(now)
		s.nap.sleeping.Store(false)
		s.mu.Unlock()
	})
}

// catchUpLocked fills the samples a sleeping sampler skipped (s.mu held);
// every reader of the samples calls it first.
func (s *Broker) catchUpLocked(now time.Time) {
	if !s.nap.sleeping.Load() {
		return
	}
	gapSamples(s.lastAt, now.UnixMilli(), statsWindow, func(atMs int64) { s.sampleLocked(time.UnixMilli(atMs)) })
}

// activity changes whenever any count does, or a counter is made.
func (s *Broker) activity() int64 {
	a := s.putNums.Load() + s.getNums.Load()
	if m := s.topics.Load(); m != nil {
		a += int64(len(*m))
		for _, c := range *m {
			a += c.nums.Load() + c.size.Load() + c.sizes.total()
		}
	}
	if m := s.groups.Load(); m != nil {
		a += int64(len(*m))
		for _, c := range *m {
			a += c.nums.Load() + c.size.Load() + c.times.Load()
		}
	}
	return a
}

// Runtime fills the counter keys of GET_BROKER_RUNTIME_INFO.
func (s *Broker) Runtime(t map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.catchUpLocked(time.Now())
	t["msgPutTotalYesterdayMorning"] = strconv.FormatInt(s.yesterdayMorn[0], 10)
	t["msgPutTotalTodayMorning"] = strconv.FormatInt(s.todayMorning[0], 10)
	t["msgPutTotalTodayNow"] = strconv.FormatInt(s.putNums.Load(), 10)
	t["msgGetTotalYesterdayMorning"] = strconv.FormatInt(s.yesterdayMorn[1], 10)
	t["msgGetTotalTodayMorning"] = strconv.FormatInt(s.todayMorning[1], 10)
	t["msgGetTotalTodayNow"] = strconv.FormatInt(s.getNums.Load(), 10)
	t["putTps"] = s.puts.tps3()
	t["getTransferredTps"] = s.gets.tps3()
}

// Indexes of Broker.broker, in brokerStatNames' order.
const (
	brokerPut = iota
	brokerGet
	brokerPutUser
	brokerGetUser
)

var brokerStatNames = [4]string{"BROKER_PUT_NUMS", "BROKER_GET_NUMS",
	"BROKER_PUT_NUMS_WITHOUT_SYSTEM_TOPIC", "BROKER_GET_NUMS_WITHOUT_SYSTEM_TOPIC"}

// sampleBroker sums the topic and group counters into the broker counters
// and snapshots those due. Called with s.mu held.
func (s *Broker) sampleBroker(ms int64) {
	var nums, calls [4]int64
	for i := range nums {
		nums[i], calls[i] = s.retired.nums[i].Load(), s.retired.calls[i].Load()
	}
	if m := s.topics.Load(); m != nil {
		for _, c := range *m {
			n, t := c.nums.Load(), c.sizes.total()
			nums[brokerPut] += n
			calls[brokerPut] += t
			if !c.system {
				nums[brokerPutUser] += n
				calls[brokerPutUser] += t
			}
		}
	}
	if m := s.groups.Load(); m != nil {
		for _, c := range *m {
			n, t := c.nums.Load(), c.times.Load()
			nums[brokerGet] += n
			calls[brokerGet] += t
			if !c.system {
				nums[brokerGetUser] += n
				calls[brokerGetUser] += t
			}
		}
	}
	for i := range s.broker {
		c := s.broker[i].Load()
		if c == nil {
			if calls[i] == 0 {
				continue
			}
			c = &Counter{}
			s.broker[i].Store(c)
		}
		c.nums.Store(nums[i])
		c.times.Store(calls[i])
		c.sampleDue(ms)
	}
}

// Counter returns the counter VIEW_BROKER_STATS_DATA names by statsName and
// statsKey, nil when nothing was counted under it. The broker counters'
// key is the cluster name; the caller checks it.
func (s *Broker) Counter(name, key string) (c *Counter, size bool) {
	for i, n := range brokerStatNames {
		if name == n {
			return s.broker[i].Load(), false
		}
	}
	switch name {
	case "TOPIC_PUT_NUMS", "TOPIC_PUT_SIZE":
		if m := s.topics.Load(); m != nil {
			c = (*m)[key]
		}
		return c, name == "TOPIC_PUT_SIZE"
	case "GROUP_GET_NUMS", "GROUP_GET_SIZE":
		topic, group, ok := strings.Cut(key, "@")
		if m := s.groups.Load(); ok && m != nil {
			c = (*m)[topicGroup{topic, group}]
		}
		return c, name == "GROUP_GET_SIZE"
	}
	return nil, false
}

// ConsumeTps is BrokerStatsManager.tpsGroupGetNums: the rate at which group
// pulled messages of topic over the last minute.
func (s *Broker) ConsumeTps(topic, group string) float64 {
	m := s.groups.Load()
	if m == nil {
		return 0
	}
	c, ok := (*m)[topicGroup{topic, group}]
	if !ok {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.catchUpLocked(time.Now())
	_, tps := c.minuteStats(false)
	return tps
}

// Windows returns a counter's minute, hour and day statistics
// (getStatsDataInMinute, InHour, InDay).
func (s *Broker) Windows(c *Counter, size bool) [3]Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.catchUpLocked(time.Now())
	return [3]Snapshot{c.stats(WinMinute, size), c.stats(WinHour, size), c.stats(WinDay, size)}
}

// TopicPutTps is BrokerStatsManager.tpsTopicPutNums: the topic's put rate
// over the last minute, 0 when nothing was put.
func (s *Broker) TopicPutTps(topic string) float64 {
	m := s.topics.Load()
	if m == nil {
		return 0
	}
	c, ok := (*m)[topic]
	if !ok {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.catchUpLocked(time.Now())
	_, tps := c.minuteStats(false)
	return tps
}

// topicGroup keys the per-group counters.
type topicGroup struct{ topic, group string }

// SetManual stops the once-a-second sampler from sampling: a test then drives
// Sample itself on its own timeline.
func (s *Broker) SetManual(on bool) { s.manual.Store(on) }

// Nums is the messages counted.
func (c *Counter) Nums() int64 { return c.nums.Load() }

// Size is the bytes counted.
func (c *Counter) Size() int64 { return c.size.Load() }

// System tells whether the counter is of a system topic.
func (c *Counter) System() bool { return c.system }

// Sizes copies a topic's put-size histogram.
func (c *Counter) Sizes() SizeHistogram {
	var h SizeHistogram
	for i := range c.sizes.counts {
		h.Counts[i] = uint64(c.sizes.counts[i].Load())
	}
	h.Sum = c.sizes.sum.Load()
	return h
}

// EachTopic calls f with every topic's put counter.
func (s *Broker) EachTopic(f func(topic string, c *Counter)) {
	if m := s.topics.Load(); m != nil {
		for t, c := range *m {
			f(t, c)
		}
	}
}

// EachGroup calls f with every topic@group's get counter.
func (s *Broker) EachGroup(f func(topic, group string, c *Counter)) {
	if m := s.groups.Load(); m != nil {
		for k, c := range *m {
			f(k.topic, k.group, c)
		}
	}
}

// PutSizeTotal is the bytes put over all topics (putMessageSizeTotal).
func (s *Broker) PutSizeTotal() int64 {
	size := s.retired.putSize.Load()
	s.EachTopic(func(_ string, c *Counter) { size += c.size.Load() })
	return size
}

// MessageSizeBuckets are the upper bounds, in bytes, of the rocketmq_message_size
// histogram: BrokerMetricsManager's view (1 KB, 4 KB, 512 KB, 1 MB, 2 MB, 4 MB).
var MessageSizeBuckets = [...]int64{1 << 10, 4 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20}

// sizeHist counts put sizes per bucket with atomics, so the send path records a
// size without a lock or an allocation; the last slot is +Inf.
type sizeHist struct {
	counts [len(MessageSizeBuckets) + 1]atomic.Int64
	sum    atomic.Int64
}

func (h *sizeHist) observe(v int64) {
	h.counts[BucketIndex(MessageSizeBuckets[:], v)].Add(1)
	h.sum.Add(v)
}

// BucketIndex is the bucket of v among ascending upper bounds (inclusive, as
// OpenTelemetry's explicit buckets): len(bounds) when above every one.
func BucketIndex(bounds []int64, v int64) int {
	i := 0
	for i < len(bounds) && v > bounds[i] {
		i++
	}
	return i
}

// SizeHistogram is a read copy of a sizeHist: Counts[i] holds the observations in
// bucket i alone (not cumulative), the last one above every bound.
type SizeHistogram struct {
	Counts [len(MessageSizeBuckets) + 1]uint64
	Sum    int64
}
