package processor

import (
	"container/heap"
	"context"
	"strconv"
	"sync"
	"time"

	"rmqd/codec"
	"rmqd/store"
)

// 5.x timer-message properties (MessageConst).
const (
	propTimerDeliverMs = "TIMER_DELIVER_MS"
	propTimerDelaySec  = "TIMER_DELAY_SEC"
	propTimerDelayMs   = "TIMER_DELAY_MS"
	propTimerOutMs     = "TIMER_OUT_MS"
	timerSysGroup      = "CID_RMQ_SYS_TIMER"
	timerPrecisionMs   = 1000        // MessageStoreConfig.timerPrecisionMs
	timerMaxDelay      = 3 * 86400e3 // timerMaxDelaySec (3 days) in ms
)

// applyTimer is HookUtils.transformTimerMessage: a message with TIMER_DELIVER_MS,
// TIMER_DELAY_SEC or TIMER_DELAY_MS (5.x Java producers' setDeliverTimeMs /
// setDelayTimeSec / setDelayTimeMs) waits in rmq_sys_wheel_timer until its time.
// A DELAY level wins over timer properties, which are then dropped. ok is false
// for a malformed or too distant time (MESSAGE_ILLEGAL).
func (b *Broker) applyTimer(msg *codec.Message) (ok bool) {
	if t := msg.SysFlag & sysFlagTransactionMask; t != 0 && t != 0x8 {
		return true
	}
	props := msg.Properties
	deliverStr, hasDeliver := propGet(props, propTimerDeliverMs)
	secStr, hasSec := propGet(props, propTimerDelaySec)
	msStr, hasMs := propGet(props, propTimerDelayMs)
	if !hasDeliver && !hasSec && !hasMs {
		return true
	}
	if delayLevelOf(props) > 0 {
		msg.Properties = propWithout(propWithout(propWithout(props, propTimerDeliverMs), propTimerDelaySec), propTimerDelayMs)
		return true
	}
	if _, rolled := propGet(props, propTimerOutMs); rolled || msg.Topic == TopicTimer {
		return true
	}
	now := time.Now().UnixMilli()
	var deliver int64
	var err error
	switch {
	case hasSec:
		var s int64
		s, err = strconv.ParseInt(secStr, 10, 64)
		deliver = now + s*1000
	case hasMs:
		var d int64
		d, err = strconv.ParseInt(msStr, 10, 64)
		deliver = now + d
	default:
		deliver, err = strconv.ParseInt(deliverStr, 10, 64)
	}
	if err != nil {
		return false
	}
	if deliver <= now {
		return true // due already: an ordinary message
	}
	if deliver-now > timerMaxDelay {
		return false
	}
	if deliver%timerPrecisionMs == 0 {
		deliver -= timerPrecisionMs
	} else {
		deliver = deliver / timerPrecisionMs * timerPrecisionMs
	}
	msg.Properties = appendProp(appendProp(appendProp(propWithout(propWithout(propWithout(props,
		"REAL_TOPIC"), "REAL_QID"), propTimerOutMs), "REAL_TOPIC", msg.Topic), "REAL_QID", i32s(msg.QueueID)),
		propTimerOutMs, i64s(deliver))
	msg.Topic, msg.QueueID = TopicTimer, 0
	return true
}

func hasTimerProps(props string) bool {
	_, a := propGet(props, propTimerDeliverMs)
	_, b := propGet(props, propTimerDelaySec)
	_, c := propGet(props, propTimerDelayMs)
	return a || b || c
}

type timerEntry struct {
	deliver  int64
	qOffset  int64
	clOffset int64
}

type timerHeap []timerEntry

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	return h[i].deliver < h[j].deliver || h[i].deliver == h[j].deliver && h[i].qOffset < h[j].qOffset
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(timerEntry)) }
func (h *timerHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// timerService delivers timer messages: it reads rmq_sys_wheel_timer into a
// deliver-time heap and re-puts each message to its real topic when due. The
// committed offset (consumer offset of CID_RMQ_SYS_TIMER) is the oldest message
// not yet delivered, so a restart re-reads what is pending; a message delivered
// out of order before a crash may be delivered again (at least once).
type timerService struct {
	b       *Broker
	mu      sync.Mutex
	pending timerHeap
	inHeap  map[int64]bool // queue offsets still pending
	readPos int64
	loaded  bool
	tick    time.Duration
}

func newTimerService(b *Broker) *timerService {
	return &timerService{b: b, inHeap: map[int64]bool{}, tick: 100 * time.Millisecond}
}

func (t *timerService) run(ctx context.Context) {
	tk := time.NewTicker(t.tick)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
			t.step(ctx)
		}
	}
}

// step reads new timer records and delivers those that are due.
func (t *timerService) step(ctx context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.b
	if !t.loaded {
		t.readPos = max(b.offsets.Query(timerSysGroup, TopicTimer, 0), 0)
		t.loaded = true
	}
	for range 100 {
		res := b.store.GetMessage(timerSysGroup, TopicTimer, 0, t.readPos, 32, 1<<20, nil)
		if res.Status != store.GetFound {
			if res.Status == store.GetOffsetTooSmall || res.Status == store.GetOffsetOverflowBadly {
				t.readPos = res.NextBeginOffset
			}
			res.Release()
			break
		}
		for _, rec := range res.Records {
			var m codec.Message
			if _, err := codec.DecodeRecord(rec, &m); err != nil {
				break
			}
			v, _ := propGet(m.Properties, propTimerOutMs)
			deliver, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				deliver = 0 // deliver at once rather than lose it
			}
			heap.Push(&t.pending, timerEntry{deliver: deliver, qOffset: m.QueueOffset, clOffset: m.CommitLogOffset})
			t.inHeap[m.QueueOffset] = true
			t.readPos = m.QueueOffset + 1
		}
		res.Release()
	}
	now := time.Now().UnixMilli()
	for t.pending.Len() > 0 && t.pending[0].deliver <= now && ctx.Err() == nil {
		e := t.pending[0]
		if !t.deliver(ctx, e) {
			break
		}
		heap.Pop(&t.pending)
		delete(t.inHeap, e.qOffset)
	}
	commit := t.readPos
	for off := range t.inHeap {
		commit = min(commit, off)
	}
	b.offsets.Commit(timerSysGroup, TopicTimer, 0, commit)
}

func (t *timerService) deliver(ctx context.Context, e timerEntry) bool {
	b := t.b
	m, err := b.store.LookMessageByOffset(e.clOffset)
	if err != nil || m == nil {
		b.log.Warn("timer: message gone, dropped", "offset", e.clOffset, "err", err)
		return true
	}
	real, ok := realMessageOf(m)
	if !ok {
		b.log.Warn("timer: message without REAL_TOPIC dropped", "offset", e.clOffset)
		return true
	}
	real.Properties = m.Properties // Java keeps REAL_TOPIC, REAL_QID and TIMER_OUT_MS
	real.StoreHost = b.storeHost
	real.SysFlag = hostFlags(real.SysFlag, real.BornHost, real.StoreHost)
	switch res := b.store.PutMessage(ctx, real); res.Status {
	case store.PutOK, store.PutFlushDiskTimeout, store.PutFlushSlaveTimeout, store.PutSlaveNotAvailable:
		return true
	case store.PutMessageIllegal, store.PutPropertiesSizeExceeded:
		b.log.Error("timer: message refused by the store, dropped", "topic", real.Topic, "status", putStatusName(res.Status))
		return true
	default:
		b.log.Warn("timer: put failed, will retry", "topic", real.Topic, "status", putStatusName(res.Status))
		return false
	}
}
