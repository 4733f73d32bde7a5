package processor

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// brokerStats keeps what Java's BrokerStatsManager, BrokerStats and
// StoreStatsService report to admin tools: message counts per topic and per
// topic@group, broker totals (system topics left out, as
// getBrokerPutNumsWithoutSystemTopic does) and TPS over 10 s, 1 min and 10 min.
//
// The send and pull paths only add to atomics: per-topic counters live in a
// copy-on-write map read through an atomic pointer, so a message costs one map
// lookup and two atomic adds, no lock and no allocation once its topic is known.
// A sampler goroutine snapshots the totals once a second.
type brokerStats struct {
	putNums atomic.Int64 // messages stored, user topics
	getNums atomic.Int64 // messages handed to pullers, user topics

	topics atomic.Pointer[map[string]*statCounter]     // TOPIC_PUT_NUMS / TOPIC_PUT_SIZE
	groups atomic.Pointer[map[topicGroup]*statCounter] // GROUP_GET_NUMS / GROUP_GET_SIZE
	grow   sync.Mutex                                  // serializes copy-on-write inserts

	mu            sync.Mutex
	puts, gets    sampleRing // broker totals, one sample a second
	todayMorning  [2]int64   // put, get totals at the last midnight (BrokerStats.record)
	yesterdayMorn [2]int64
	lastRecordDay int
	ticks         int
}

// statCounter counts messages and bytes of one topic or topic@group.
type statCounter struct {
	nums atomic.Int64
	size atomic.Int64
	// system marks a system topic, left out of the broker totals; decided once
	// when the counter is made.
	system bool
	// minute holds the sampler's snapshots every 10 s, the last 7 (a minute, as
	// StatsItem's csListMinute); guarded by brokerStats.mu.
	minute [7]counterSample
	held   int
	next   int
	sizes  sizeHist // rocketmq_message_size, topics only
}

type counterSample struct{ atMs, nums, size int64 }

// minuteStats is StatsItem.getStatsDataInMinute: what was added between the
// oldest and newest snapshot of the last minute, and its rate per second.
func (c *statCounter) minuteStats(size bool) (sum int64, tps float64) {
	if c.held < 2 {
		return 0, 0
	}
	last := c.minute[(c.next+len(c.minute)-1)%len(c.minute)]
	first := c.minute[(c.next+len(c.minute)-c.held)%len(c.minute)]
	sum = last.nums - first.nums
	if size {
		sum = last.size - first.size
	}
	if dt := last.atMs - first.atMs; dt > 0 {
		tps = float64(sum) * 1000 / float64(dt)
	}
	return sum, tps
}

func (c *statCounter) snapshot(atMs int64) {
	c.minute[c.next] = counterSample{atMs, c.nums.Load(), c.size.Load()}
	c.next = (c.next + 1) % len(c.minute)
	c.held = min(c.held+1, len(c.minute))
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
	return javaDouble(float64(r.total[last]-r.total[first]) / float64(dt) * 1000)
}

// tps3 is StoreStatsService's "10s 60s 600s" triple.
func (r *sampleRing) tps3() string {
	return r.tps(10) + " " + r.tps(60) + " " + r.tps(600)
}

// javaDouble formats like Java's Double.toString for the magnitudes TPS takes
// (always a decimal point).
func javaDouble(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

func (s *brokerStats) topicCounter(topic string, isSystem func(string) bool) *statCounter {
	if m := s.topics.Load(); m != nil {
		if c, ok := (*m)[topic]; ok {
			return c
		}
	}
	s.grow.Lock()
	defer s.grow.Unlock()
	old := s.topics.Load()
	if old != nil {
		if c, ok := (*old)[topic]; ok {
			return c
		}
	}
	next := make(map[string]*statCounter, 1+lenOf(old))
	if old != nil {
		for k, v := range *old {
			next[k] = v
		}
	}
	c := &statCounter{system: isSystem != nil && isSystem(topic)}
	next[strings.Clone(topic)] = c
	s.topics.Store(&next)
	return c
}

func (s *brokerStats) groupCounter(topic, group string, isSystem func(string) bool) *statCounter {
	k := topicGroup{topic, group}
	if m := s.groups.Load(); m != nil {
		if c, ok := (*m)[k]; ok {
			return c
		}
	}
	s.grow.Lock()
	defer s.grow.Unlock()
	old := s.groups.Load()
	if old != nil {
		if c, ok := (*old)[k]; ok {
			return c
		}
	}
	next := make(map[topicGroup]*statCounter, 1+lenOf(old))
	if old != nil {
		for k, v := range *old {
			next[k] = v
		}
	}
	c := &statCounter{system: isSystem != nil && isSystem(topic)}
	next[topicGroup{strings.Clone(topic), strings.Clone(group)}] = c
	s.groups.Store(&next)
	return c
}

func lenOf[K comparable](m *map[K]*statCounter) int {
	if m == nil {
		return 0
	}
	return len(*m)
}

// countPut records n stored messages of size bytes in topic (incTopicPutNums,
// incTopicPutSize, incBrokerPutNums).
func (s *brokerStats) countPut(topic string, n int32, size int32, isSystem func(string) bool) {
	c := s.topicCounter(topic, isSystem)
	c.nums.Add(int64(n))
	c.size.Add(int64(size))
	if n > 0 {
		c.sizes.observe(int64(size / n)) // one observation per put, as Java records
	}
	if !c.system {
		s.putNums.Add(int64(n))
	}
}

// countGet records n messages of size bytes pulled by group from topic
// (incGroupGetNums, incGroupGetSize, incBrokerGetNums).
func (s *brokerStats) countGet(group, topic string, n int, size int, isSystem func(string) bool) {
	c := s.groupCounter(topic, group, isSystem)
	c.nums.Add(int64(n))
	c.size.Add(int64(size))
	if !c.system {
		s.getNums.Add(int64(n))
	}
}

// sample takes the once-a-second snapshot and, past midnight, moves the
// day counters as BrokerStats.record does.
func (s *brokerStats) sample(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	put, get := s.putNums.Load(), s.getNums.Load()
	ms := now.UnixMilli()
	s.puts.add(ms, put)
	s.gets.add(ms, get)
	if s.ticks%10 == 0 {
		if m := s.topics.Load(); m != nil {
			for _, c := range *m {
				c.snapshot(ms)
			}
		}
		if m := s.groups.Load(); m != nil {
			for _, c := range *m {
				c.snapshot(ms)
			}
		}
	}
	s.ticks++
	if day := now.YearDay(); s.lastRecordDay == 0 {
		s.lastRecordDay = day
	} else if day != s.lastRecordDay {
		s.lastRecordDay = day
		s.yesterdayMorn = s.todayMorning
		s.todayMorning = [2]int64{put, get}
	}
}

func (s *brokerStats) run(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	s.sample(time.Now())
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.sample(now)
		}
	}
}

// runtime fills the counter keys of GET_BROKER_RUNTIME_INFO.
func (s *brokerStats) runtime(t map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t["msgPutTotalYesterdayMorning"] = i64s(s.yesterdayMorn[0])
	t["msgPutTotalTodayMorning"] = i64s(s.todayMorning[0])
	t["msgPutTotalTodayNow"] = i64s(s.putNums.Load())
	t["msgGetTotalYesterdayMorning"] = i64s(s.yesterdayMorn[1])
	t["msgGetTotalTodayMorning"] = i64s(s.todayMorning[1])
	t["msgGetTotalTodayNow"] = i64s(s.getNums.Load())
	t["putTps"] = s.puts.tps3()
	t["getTransferredTps"] = s.gets.tps3()
}

// counter returns the counter VIEW_BROKER_STATS_DATA names by statsName and
// statsKey, nil when nothing was counted under it.
func (s *brokerStats) counter(name, key string) (c *statCounter, size bool) {
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

// consumeTps is BrokerStatsManager.tpsGroupGetNums: the rate at which group
// pulled messages of topic over the last minute.
func (s *brokerStats) consumeTps(topic, group string) float64 {
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
	_, tps := c.minuteStats(false)
	return tps
}

// minute returns a counter's last-minute sum and rate.
func (s *brokerStats) minute(c *statCounter, size bool) (int64, float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return c.minuteStats(size)
}
