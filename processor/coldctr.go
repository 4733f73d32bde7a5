package processor

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"rmqd/processor/delivery"
)

// Cold-data read flow control (Java's ColdDataCgCtrService): the store tells
// how many bytes of each pull were cold (store.GetResult.ColdDataSum); a group
// that read cgColdReadThreshold bytes of cold data within one period, or any
// group that reads cold data while the whole broker is past
// globalColdReadThreshold, is throttled until the period ends (coldgate.go).
const (
	coldCtrPeriod     = 5 * time.Second   // Java's accumulation window with the feature on
	coldCtrPeriodOff  = 180 * time.Second // and with it off (the counters are empty then)
	coldAccResideTime = 60 * time.Second  // a group that reads no cold data for this long is forgotten
	coldAdaptive      = "||adaptive"      // suffix of the thresholds the strategies set
	coldMaxDecelerate = 3                 // adaptive thresholds lowered per period
	pidHistory        = 10                // PIDAdaptiveColdCtrStrategy.MAX_STORE_NUMS
)

// coldAcc is one group's cold reads of the current period (Java's AccAndTimeStamp).
type coldAcc struct {
	acc      atomic.Int64
	lastRead atomic.Int64 // unix ms of the last cold read
	created  int64        // unix ms
}

// coldCtr holds the counters and thresholds. mu guards the maps; the counters
// are atomics so that a pull adds to its group's under the read lock.
type coldCtr struct {
	mu      sync.RWMutex
	runtime map[string]*coldAcc
	config  map[string]int64 // admin thresholds by group, adaptive ones by group+coldAdaptive
	global  atomic.Int64
	// pid selects PIDAdaptiveColdCtrStrategy over SimpleColdCtrStrategy
	// (usePIDColdCtrStrategy, read at start as Java does); expect is its
	// target global figure, history its last errors (under mu).
	pid     bool
	expect  int64
	history []int64
	kick    chan struct{}
}

func newColdCtr(cfg *BrokerConfig) *coldCtr {
	return &coldCtr{runtime: map[string]*coldAcc{}, config: map[string]int64{}, pid: cfg.UsePIDColdCtrStrategy,
		expect: int64(float64(cfg.GlobalColdReadThreshold) * 0.8), kick: make(chan struct{}, 1)}
}

// add counts n cold bytes read by group (coldAcc). group may alias a request
// frame: it is cloned when first kept.
func (c *coldCtr) add(group string, n int64, now time.Time) {
	if n <= 0 {
		return
	}
	c.global.Add(n)
	c.mu.RLock()
	a := c.runtime[group]
	c.mu.RUnlock()
	if a == nil {
		c.mu.Lock()
		if a = c.runtime[group]; a == nil {
			a = &coldAcc{created: now.UnixMilli()}
			c.runtime[strings.Clone(group)] = a
		}
		c.mu.Unlock()
		delivery.Kick(c.kick) // the period timer sleeps while nothing is counted
	}
	a.acc.Add(n)
	a.lastRead.Store(now.UnixMilli())
}

// throttled is isCgNeedColdDataFlowCtr: group read cold data this period and
// is past its threshold, or the broker is past the global one.
func (c *coldCtr) throttled(cfg *BrokerConfig, group string) bool {
	if sysPullGroup(group) {
		return false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	a := c.runtime[group]
	if a == nil {
		return false
	}
	if a.acc.Load() >= c.thresholdLocked(cfg, group) {
		return true
	}
	return c.global.Load() >= cfg.GlobalColdReadThreshold
}

// thresholdLocked is getThresholdByConsumerGroup: the admin's threshold, else
// the adaptive one (with coldCtrStrategyEnable), else cgColdReadThreshold.
func (c *coldCtr) thresholdLocked(cfg *BrokerConfig, group string) int64 {
	base := strings.TrimSuffix(group, coldAdaptive)
	if t, ok := c.config[base]; ok {
		return t
	}
	if cfg.ColdCtrStrategyEnable {
		if t, ok := c.config[base+coldAdaptive]; ok {
			return t
		}
	}
	return cfg.CgColdReadThreshold
}

func (c *coldCtr) adminConfigLocked(group string) bool {
	_, ok := c.config[strings.TrimSuffix(group, coldAdaptive)]
	return ok
}

func (c *coldCtr) globalCtr(cfg *BrokerConfig) bool {
	return c.global.Load() > cfg.GlobalColdReadThreshold
}

// period ends an accumulation window (clearDataAcc): groups idle for
// coldAccResideTime are forgotten, the strategy raises the adaptive threshold
// of groups that hit theirs while the broker is below its global one and
// lowers the three highest when it is above, and every counter restarts.
func (c *coldCtr) period(cfg *BrokerConfig, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	adaptive := cfg.ColdCtrStrategyEnable
	if adaptive && c.pid {
		c.history = append(c.history, c.expect-c.global.Load())
		if len(c.history) > pidHistory {
			c.history = slices.Delete(c.history, 0, len(c.history)-pidHistory)
		}
	}
	for g, a := range c.runtime {
		switch {
		case now.UnixMilli() >= a.lastRead.Load()+coldAccResideTime.Milliseconds():
			if adaptive {
				delete(c.config, g+coldAdaptive)
			}
			delete(c.runtime, g)
		case a.acc.Load() >= c.thresholdLocked(cfg, g):
			if adaptive && !c.globalCtr(cfg) && !c.adminConfigLocked(g) {
				c.promoteLocked(g+coldAdaptive, c.thresholdLocked(cfg, g))
			}
		}
		a.acc.Store(0)
	}
	if adaptive {
		c.decelerateLocked(cfg)
	} else {
		for k := range c.config {
			if strings.HasSuffix(k, coldAdaptive) {
				delete(c.config, k)
			}
		}
	}
	c.global.Store(0)
}

// pidFactor is PIDAdaptiveColdCtrStrategy.decisionFactor: 0 until the
// history is full.
func (c *coldCtr) pidFactor() float64 {
	n := len(c.history)
	if n < pidHistory {
		return 0
	}
	var sum float64
	for _, e := range c.history {
		sum += float64(e)
	}
	return 0.5*float64(c.history[n-1]) + 0.3*sum + 0.2*float64(c.history[n-1]-c.history[n-2])
}

func (c *coldCtr) promoteLocked(key string, cur int64) {
	if !c.pid || c.pidFactor() > 0 {
		c.config[key] = int64(float64(cur) * 1.5)
	}
}

// decelerateLocked lowers the highest adaptive thresholds by a fifth, never
// below cgColdReadThreshold: the simple strategy while the broker is past its
// global threshold, the PID one while its factor is negative.
func (c *coldCtr) decelerateLocked(cfg *BrokerConfig) {
	if c.pid && c.pidFactor() >= 0 || !c.pid && !c.globalCtr(cfg) {
		return
	}
	keys := make([]string, 0, len(c.config))
	for k := range c.config {
		if !c.adminConfigLocked(k) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int { return int(min(max(c.config[b]-c.config[a], -1), 1)) })
	for _, k := range keys[:min(len(keys), coldMaxDecelerate)] {
		c.config[k] = max(int64(float64(c.thresholdLocked(cfg, k))*0.8), cfg.CgColdReadThreshold)
	}
}

// setGroup and removeGroup are the admin's per-group thresholds (codes 2001, 2002).
func (c *coldCtr) setGroup(group string, threshold int64) {
	c.mu.Lock()
	c.config[strings.Clone(group)] = threshold
	c.mu.Unlock()
}

func (c *coldCtr) removeGroup(group string) {
	c.mu.Lock()
	delete(c.config, group)
	c.mu.Unlock()
}

// infoJSON is getColdDataFlowCtrInfo, field for field as fastjson2 writes it.
func (c *coldCtr) infoJSON(cfg *BrokerConfig) []byte {
	type acc struct {
		ColdAcc               int64 `json:"coldAcc"`
		CreateTimeMills       int64 `json:"createTimeMills"`
		LastColdReadTimeMills int64 `json:"lastColdReadTimeMills"`
	}
	c.mu.RLock()
	rt := make(map[string]acc, len(c.runtime))
	for g, a := range c.runtime {
		rt[g] = acc{a.acc.Load(), a.created, a.lastRead.Load()}
	}
	conf := make(map[string]int64, len(c.config))
	for g, t := range c.config {
		conf[g] = t
	}
	c.mu.RUnlock()
	body, _ := json.Marshal(struct {
		RuntimeTable            map[string]acc   `json:"runtimeTable"`
		ConfigTable             map[string]int64 `json:"configTable"`
		CgColdReadThreshold     int64            `json:"cgColdReadThreshold"`
		GlobalColdReadThreshold int64            `json:"globalColdReadThreshold"`
		GlobalAcc               int64            `json:"globalAcc"`
	}{rt, conf, cfg.CgColdReadThreshold, cfg.GlobalColdReadThreshold, c.global.Load()})
	return body
}

// sysPullGroup is MixAll.isSysConsumerGroupPullMessage: the broker's and the
// tools' own groups are never throttled.
func sysPullGroup(g string) bool {
	switch g {
	case "DEFAULT_CONSUMER", "TOOLS_CONSUMER", "SCHEDULE_CONSUMER", "FILTERSRV_CONSUMER", "__MONITOR_CONSUMER",
		"SELF_TEST_C_GROUP", "CID_ONS-HTTP-PROXY", "CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER", "CID_ONSAPI_PULL":
		return true
	}
	return strings.HasPrefix(g, "CID_RMQ_SYS_")
}
