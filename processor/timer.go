package processor

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"rmqd/codec"
	"rmqd/store"
)

// Timer delivery settings (MessageStoreConfig, TimerMessageStore).
const (
	timerSysGroup    = "CID_RMQ_SYS_TIMER"
	timerPrecisionMs = 1000        // MessageStoreConfig.timerPrecisionMs
	timerMaxDelay    = 3 * 86400e3 // timerMaxDelaySec (3 days) in ms
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
	deliverStr, hasDeliver := codec.PropertyValue(props, codec.PropTimerDeliverMs)
	secStr, hasSec := codec.PropertyValue(props, codec.PropTimerDelaySec)
	msStr, hasMs := codec.PropertyValue(props, codec.PropTimerDelayMs)
	if !hasDeliver && !hasSec && !hasMs {
		return true
	}
	if delayLevelOf(props) > 0 {
		e := codec.EditProperties(props)
		e.Delete(codec.PropTimerDeliverMs)
		e.Delete(codec.PropTimerDelaySec)
		e.Delete(codec.PropTimerDelayMs)
		msg.Properties = e.String()
		return true
	}
	if _, rolled := codec.PropertyValue(props, codec.PropTimerOutMs); rolled || msg.Topic == TopicTimer {
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
	e := codec.EditProperties(props)
	e.Set(codec.PropRealTopic, msg.Topic)
	e.SetInt(codec.PropRealQueueID, int64(msg.QueueID))
	e.SetInt(codec.PropTimerOutMs, deliver)
	msg.Properties = e.String()
	msg.Topic, msg.QueueID = TopicTimer, 0
	return true
}

func hasTimerProps(props string) bool {
	_, a := codec.PropertyValue(props, codec.PropTimerDeliverMs)
	_, b := codec.PropertyValue(props, codec.PropTimerDelaySec)
	_, c := codec.PropertyValue(props, codec.PropTimerDelayMs)
	return a || b || c
}

type timerEntry struct {
	deliver  int64 // ms, a multiple of timerPrecisionMs
	qOffset  int64
	clOffset int64
}

// timerSlots is the wheel size in precision slots: more than timerMaxDelay
// (3 days of 1 s slots) so a slot never holds two different due seconds.
const timerSlots = 1 << 18

// timerService delivers timer messages: it reads rmq_sys_wheel_timer into a
// timing wheel of 1 s slots and re-puts each message to its real topic when
// due. Scheduling and delivery cost O(1) per message whatever the number
// pending; the wheel walk costs one step per elapsed second. Like Java's
// TimerMessageStore, the slot for second T is delivered once the clock has
// passed T+precision (currReadTimeMs < currWriteTimeMs). The committed offset
// (consumer offset of CID_RMQ_SYS_TIMER) is the oldest message not yet
// delivered, so a restart re-reads what is pending; a message delivered out
// of order before a crash may be delivered again (at least once).
type timerService struct {
	b       *Broker
	mu      sync.Mutex
	wheel   [][]timerEntry // timerSlots slots, index = second % timerSlots
	cursor  int64          // next second to deliver
	count   int            // entries in the wheel
	done    doneSet        // delivered queue offsets above the commit point
	readPos int64
	loaded  bool
	tick    time.Duration
	kick    chan struct{} // a message reached rmq_sys_wheel_timer (arriving)
	// rec, parked and real are deliver's scratch (under mu): one message's
	// record, its decoding (aliasing rec) and the message put back.
	rec    []byte
	parked codec.Message
	real   codec.Message
	// recalled holds the keys of delete markers read into the wheel
	// (RECALL_MESSAGE): the message a key names is dropped when due.
	recalled map[string]struct{}
}

func newTimerService(b *Broker) *timerService {
	return &timerService{b: b, tick: 100 * time.Millisecond, kick: make(chan struct{}, 1)}
}

func (t *timerService) run(ctx context.Context) {
	tickUntilIdle(ctx, t.tick, idleTick, t.kick, func(ctx context.Context) bool {
		t.step(ctx)
		t.mu.Lock()
		defer t.mu.Unlock()
		return !t.loaded || t.count > 0 || t.readPos < t.b.store.MaxOffsetInQueue(TopicTimer, 0)
	})
}

// add puts e in its slot; an overdue entry goes to the cursor's slot.
func (t *timerService) add(e timerEntry) {
	sec := e.deliver / timerPrecisionMs
	if sec < t.cursor {
		sec = t.cursor
	}
	i := sec % timerSlots
	t.wheel[i] = append(t.wheel[i], e)
	t.count++
}

// pendingCount is the number of timer messages waiting in the wheel.
func (t *timerService) pendingCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.count
}

// progress reports what Java's runtime info calls timerReadBehind (seconds
// the delivery cursor lags the clock), timerOffsetBehind (timer records not
// read into the wheel yet) and timerCongestNum (messages waiting in it).
func (t *timerService) progress(now int64) (readBehind, offsetBehind int64, congest int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.loaded {
		return 0, 0, 0
	}
	readBehind = max(now-t.cursor*timerPrecisionMs, 0) / 1000
	offsetBehind = max(t.b.store.MaxOffsetInQueue(TopicTimer, 0)-t.readPos, 0)
	return readBehind, offsetBehind, t.count
}

// step reads new timer records and delivers those that are due.
func (t *timerService) step(ctx context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stepAt(ctx, time.Now().UnixMilli())
}

func (t *timerService) stepAt(ctx context.Context, now int64) {
	b := t.b
	if !t.loaded {
		t.readPos = max(b.offsets.Query(timerSysGroup, TopicTimer, 0), 0)
		t.done.reset(t.readPos)
		t.wheel = make([][]timerEntry, timerSlots)
		t.cursor = now/timerPrecisionMs - 1
		t.loaded = true
	}
	var m codec.Message
	for range 1000 {
		res := b.store.GetMessage(timerSysGroup, TopicTimer, 0, t.readPos, 32, 1<<20, nil)
		if res.Status != store.GetFound {
			if res.Status == store.GetOffsetTooSmall || res.Status == store.GetOffsetOverflowBadly {
				t.readPos = res.NextBeginOffset
				t.done.reset(t.readPos)
			}
			res.Release()
			break
		}
		for _, rec := range res.Records {
			if _, err := codec.DecodeRecord(rec, &m); err != nil {
				break
			}
			v, _ := codec.PropertyValue(m.Properties, codec.PropTimerOutMs)
			deliver, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				deliver = 0 // deliver at once rather than lose it
			}
			if m.QueueOffset >= t.readPos {
				if key, ok := codec.PropertyValue(m.Properties, propTimerDelUniqKey); ok {
					if t.recalled == nil {
						t.recalled = map[string]struct{}{}
					}
					t.recalled[strings.Clone(key)] = struct{}{}
				}
				t.done.grow(m.QueueOffset + 1)
				t.add(timerEntry{deliver: deliver, qOffset: m.QueueOffset, clOffset: m.CommitLogOffset})
				t.readPos = m.QueueOffset + 1
			}
		}
		res.Release()
	}
	// Slot T is due once the clock is past T+precision, as in Java.
	for (t.cursor+1)*timerPrecisionMs <= now && ctx.Err() == nil {
		i := t.cursor % timerSlots
		slot := t.wheel[i]
		kept := 0
		failed := false
		for k, e := range slot {
			if e.deliver/timerPrecisionMs > t.cursor { // cannot happen within 3 days; keep it
				slot[kept] = e
				kept++
				continue
			}
			if failed || !t.deliver(ctx, e) {
				failed = true
				slot[kept] = slot[k]
				kept++
				continue
			}
			t.count--
			t.done.mark(e.qOffset)
		}
		clear(slot[kept:])
		switch {
		case kept > 0:
			t.wheel[i] = slot[:kept]
		case cap(slot) > 256:
			t.wheel[i] = nil // give a burst's memory back
		default:
			t.wheel[i] = slot[:0]
		}
		if failed {
			break
		}
		t.cursor++
	}
	b.offsets.Commit(timerSysGroup, TopicTimer, 0, t.done.base)
}

// doneSet tracks which queue offsets in [base, limit) are delivered, one bit
// each, and moves base past the delivered prefix: base is the commit point.
type doneSet struct {
	base  int64    // lowest offset not yet delivered
	start int64    // offset of bit 0 of words[0], a multiple of 64
	limit int64    // offsets at or above limit are not yet read
	words []uint64 // bit set = delivered
}

func (d *doneSet) reset(off int64) {
	d.base, d.limit = off, off
	d.start = off &^ 63
	d.words = d.words[:0]
}

func (d *doneSet) grow(limit int64) {
	for d.start+int64(len(d.words))*64 < limit {
		d.words = append(d.words, 0)
	}
	d.limit = max(d.limit, limit)
}

func (d *doneSet) mark(off int64) {
	if off < d.base || off >= d.limit {
		return
	}
	i := off - d.start
	d.words[i>>6] |= 1 << (i & 63)
	for d.base < d.limit {
		j := d.base - d.start
		w := d.words[j>>6]
		if w == ^uint64(0) {
			d.base = min(d.start+(j>>6+1)*64, d.limit)
			continue
		}
		if w&(1<<(j&63)) == 0 {
			break
		}
		d.base++
	}
	// Drop whole words below base; compact when the dead prefix is large.
	if drop := (d.base - d.start) >> 6; drop > 0 && drop >= int64(len(d.words))/2 {
		n := copy(d.words, d.words[drop:])
		d.words = d.words[:n]
		d.start += drop * 64
	}
}

func (t *timerService) deliver(ctx context.Context, e timerEntry) bool {
	b := t.b
	var err error
	if t.rec, err = b.store.AppendRecord(t.rec[:0], e.clOffset); err == nil {
		_, err = codec.DecodeRecord(t.rec, &t.parked)
	}
	if err != nil {
		b.log.Warn("timer: message gone, dropped", "offset", e.clOffset, "err", err)
		return true
	}
	if len(t.recalled) > 0 {
		// A marker is due with or after the message it names (same second,
		// read later): the message is dropped first, then the marker.
		key, marker := timerRecallKey(&t.parked)
		if _, recalled := t.recalled[key]; marker || recalled {
			if !marker {
				b.log.Info("timer: recalled message dropped", "key", key)
			}
			delete(t.recalled, key)
			return true
		}
	} else if _, marker := codec.PropertyValue(t.parked.Properties, propTimerDelUniqKey); marker {
		return true // a marker whose message was already delivered
	}
	// Java keeps REAL_TOPIC, REAL_QID and TIMER_OUT_MS in the delivered message.
	real := &t.real
	if !realInto(real, &t.parked) {
		b.log.Warn("timer: message without REAL_TOPIC dropped", "offset", e.clOffset)
		return true
	}
	if _, remark, ok := b.checkRestoredTarget(real.Topic, real.QueueID); !ok && !b.popRevive(real) {
		b.log.Warn("timer: message for a topic it may not go to dropped", "offset", e.clOffset,
			"topic", real.Topic, "queue", real.QueueID, "remark", remark)
		return true
	}
	real.StoreHost = b.storeHost
	real.SysFlag = hostFlags(real.SysFlag, real.BornHost, real.StoreHost)
	switch res := b.store.PutMessage(ctx, real); res.Status {
	case store.PutOK, store.PutFlushDiskTimeout, store.PutFlushSlaveTimeout, store.PutSlaveNotAvailable:
		return true
	case store.PutMessageIllegal, store.PutPropertiesSizeExceeded:
		b.log.Error("timer: message refused by the store, dropped", "topic", real.Topic, "status", res.Status.String())
		return true
	default:
		b.log.Warn("timer: put failed, will retry", "topic", real.Topic, "status", res.Status.String())
		return false
	}
}
