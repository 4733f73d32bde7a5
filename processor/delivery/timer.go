package delivery

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"rmqd/codec"
	"rmqd/store"
)

// Timer delivery settings (MessageStoreConfig, TimerMessageStore).
const (
	timerPrecisionMs = 1000        // MessageStoreConfig.timerPrecisionMs's default
	TimerMaxDelayMs  = 3 * 86400e3 // timerMaxDelaySec's default (3 days) in ms
	// timerRollWindowMs is timerRollWindowSlot (2 days of 1 s slots): a
	// timer further away than this from its store time is stored again
	// (rolled) before then, so its bytes outlive no commitlog retention
	// longer than the window (fileReservedTime, 72 h by default).
	timerRollWindowMs = 2 * 86400e3
)

// Properties a rolled timer message carries (MessageConst): when the wheel
// took the record it rolls, when it rolled it, and how many times.
const (
	PropTimerEnqueueMs = "TIMER_ENQUEUE_MS"
	PropTimerDequeueMs = "TIMER_DEQUEUE_MS"
	PropTimerRollTimes = "TIMER_ROLL_TIMES"
)

// rollAt is when a record stored at stored (ms) and due at deliver is rolled,
// as TimerMessageStore.doEnqueue: a window after its store time, or half a
// window when less than a third of one would be left for the next roll.
// It depends on the record alone (Java's uses the time it is read), so a
// restart or a promoted slave finds the same time. roll is false for a
// record due within the window.
func rollAt(deliver, stored, w int64) (at int64, roll bool) {
	if stored <= 0 || deliver-stored < w {
		return deliver, false
	}
	if deliver-stored-w < w/3 {
		return stored + w/2, true
	}
	return stored + w, true
}

// ParkTimer is HookUtils.transformTimerMessage: a message with TIMER_DELIVER_MS,
// TIMER_DELAY_SEC or TIMER_DELAY_MS (5.x Java producers' setDeliverTimeMs /
// setDelayTimeSec / setDelayTimeMs) waits in rmq_sys_wheel_timer until its time.
// A DELAY level wins over timer properties, which are then dropped. ok is false
// for a malformed time or one more than maxDelayMs away (timerMaxDelaySec,
// MESSAGE_ILLEGAL). Any maxDelayMs is safe for the wheel: a timer further than
// the roll window is stored again before then (rollAt). pv, when not nil,
// indexes msg.Properties and is kept in step with them.
func ParkTimer(msg *codec.Message, pv *codec.PropView, maxDelayMs int64) (ok bool) {
	ok, _ = ParkTimerGated(msg, pv, maxDelayMs, timerPrecisionMs, nil)
	return ok
}

// ParkTimerGated is ParkTimer for a wheel of precisionMs slots
// (Timer.Precision), with the wheel's flow control: congested, the
// message left as it was, when reject (nil: none) refuses the slot the
// message would wait in (HookUtils.transformTimerMessage's isReject check,
// WHEEL_TIMER_FLOW_CONTROL).
func ParkTimerGated(msg *codec.Message, pv *codec.PropView, maxDelayMs, precisionMs int64,
	reject func(deliverMs int64) bool) (ok, congested bool) {
	if t := msg.SysFlag & sysFlagTransactionMask; t != 0 && t != 0x8 {
		return true, false
	}
	var own codec.PropView
	pv = viewOf(msg, pv, &own)
	props := msg.Properties
	if !HasTimerProps(pv) {
		return true, false
	}
	if DelayLevel(pv) > 0 {
		e := codec.EditProperties(props)
		e.Delete(codec.PropTimerDeliverMs)
		e.Delete(codec.PropTimerDelaySec)
		e.Delete(codec.PropTimerDelayMs)
		msg.Properties = e.StringView(pv)
		return true, false
	}
	if rolled := pv.Has(codec.PropTimerOutMs); rolled || msg.Topic == TopicTimer {
		return true, false
	}
	now := time.Now().UnixMilli()
	deliver, park, ok := timerDeliverMs(pv, now, maxDelayMs)
	if !park {
		return ok, false
	}
	if deliver%precisionMs == 0 {
		deliver -= precisionMs
	} else {
		deliver = deliver / precisionMs * precisionMs
	}
	if reject != nil && reject(deliver) {
		return true, true
	}
	e := codec.EditProperties(props)
	e.Set(codec.PropRealTopic, msg.Topic)
	e.SetInt(codec.PropRealQueueID, int64(msg.QueueID))
	e.SetInt(codec.PropTimerOutMs, deliver)
	msg.Properties = e.StringView(pv)
	msg.Topic, msg.QueueID = TopicTimer, 0
	return true, false
}

// timerDeliverMs reads a timer message's deliver time (ms) as
// transformTimerMessage does: TIMER_DELAY_SEC, else TIMER_DELAY_MS, else
// TIMER_DELIVER_MS. park is whether it waits in the wheel; ok is false for a
// malformed time, one more than maxDelayMs away, or a delete marker due
// already (WHEEL_TIMER_MSG_ILLEGAL). One due already is an ordinary message.
func timerDeliverMs(pv *codec.PropView, now, maxDelayMs int64) (deliver int64, park, ok bool) {
	var err error
	if v, has := pv.Get(codec.PropTimerDelaySec); has {
		var s int64
		s, err = strconv.ParseInt(v, 10, 64)
		deliver = now + s*1000
	} else if v, has := pv.Get(codec.PropTimerDelayMs); has {
		var d int64
		d, err = strconv.ParseInt(v, 10, 64)
		deliver = now + d
	} else {
		v, _ := pv.Get(codec.PropTimerDeliverMs)
		deliver, err = strconv.ParseInt(v, 10, 64)
	}
	switch {
	case err != nil:
		return 0, false, false
	case deliver <= now:
		return deliver, false, !pv.Has(PropTimerDelUniqKey)
	case deliver-now > maxDelayMs:
		return deliver, false, false
	}
	return deliver, true, true
}

// CheckTimer is ParkTimer's verdict without the parking: false when a
// message asking for a timer (WantsTimer) would be refused. A transactional
// prepare is checked with it, and parked at its commit.
func CheckTimer(pv *codec.PropView, maxDelayMs int64) bool {
	if !WantsTimer(pv) {
		return true
	}
	_, _, ok := timerDeliverMs(pv, time.Now().UnixMilli(), maxDelayMs)
	return ok
}

// WantsTimer reports a message asking for timer delivery (HookUtils.checkIfTimerMessage):
// timer properties, no delay level (which wins over them) and no TIMER_OUT_MS
// (a rolled copy's, stored as it is).
func WantsTimer(pv *codec.PropView) bool {
	return HasTimerProps(pv) && DelayLevel(pv) <= 0 && !pv.Has(codec.PropTimerOutMs)
}

// HasTimerProps reports a message naming a timer delivery: TIMER_DELIVER_MS,
// TIMER_DELAY_SEC or TIMER_DELAY_MS, whatever their values.
func HasTimerProps(pv *codec.PropView) bool {
	return pv.Has(codec.PropTimerDeliverMs) || pv.Has(codec.PropTimerDelaySec) || pv.Has(codec.PropTimerDelayMs)
}

type timerEntry struct {
	at       int64 // ms of its slot: the deliver time, or the roll time
	qOffset  int64
	clOffset int64
	roll     bool  // due beyond the roll window: stored again at at
	marker   bool  // a recall's delete marker, not a message
	topic    int32 // its real topic (Timer.topicRef), noTopic without one
}

// timerSlots is the wheel size in precision slots: more than the roll window
// (and than 3 days of 1 s slots) so a slot never holds two different due times
// (a timer further than the roll window waits in its roll slot).
const timerSlots = 1 << 18

// Timer delivers timer messages: it reads rmq_sys_wheel_timer into a
// timing wheel of timerPrecisionMs slots (1 s by default) and re-puts each
// message to its real topic when due. Scheduling and delivery cost O(1) per message whatever the number
// pending; the wheel walk costs one step per elapsed slot. Like Java's
// TimerMessageStore, the slot for time T is delivered once the clock has
// passed T+precision (currReadTimeMs < currWriteTimeMs). The committed offset
// (consumer offset of CID_RMQ_SYS_TIMER) is the oldest message not yet
// delivered, so a restart re-reads what is pending; the progress file
// (progress.go) says which of the records re-read were delivered, so a restart
// delivers again only what was delivered after its last write (at least once).
// A timer due beyond the roll window is stored again before then (rollAt).
type Timer struct {
	h *Host
	// revive reports a timer message that is POP's own revive record: it goes
	// to its system topic, which Target refuses to others.
	revive  func(m *codec.Message) bool
	mu      sync.Mutex
	wheel   [][]timerEntry // timerSlots slots, index = slot time / precision % timerSlots
	cursor  int64          // next slot to deliver (time / precision)
	count   int            // entries in the wheel
	done    doneSet        // delivered queue offsets above the commit point
	readPos int64
	loaded  bool
	running int // Runs delivering (a demotion's may overlap a promotion's): AdoptProgress refuses while any
	tick    time.Duration
	// rollSlots is timerRollWindowSlot (SetRollWindow); prec is the slot
	// length in ms (SetPrecision).
	rollSlots, prec int64
	kick            chan struct{} // a message reached rmq_sys_wheel_timer
	// rec, parked and real are deliver's scratch (under mu): one message's
	// record, its decoding (aliasing rec) and the message put back.
	rec    []byte
	parked codec.Message
	real   codec.Message
	// recalled holds the keys of delete markers read into the wheel
	// (RECALL_MESSAGE): the message a key names is dropped when due.
	recalled map[string]struct{}
	// lowAtCursor is the lowest deliver second of the entries added to the
	// cursor's slot because they were overdue (math.MaxInt64 when none): the
	// only pending entries due before the cursor.
	lowAtCursor int64
	// skipOffset and skipSec come from the progress file: a record below
	// skipOffset due before second skipSec was delivered before the restart.
	skipOffset, skipSec int64
	skipRolled          bool // the claim covers far records by their roll time (rmqd's, not Java's)
	prog                progress
	// moves counts the entries delivered or rolled: with none since the
	// progress was written, a later cursor claims nothing a restart could use.
	moves uint64
	// holds reports timerStopEnqueue and timerStopDequeue, read at every
	// step so an update applies at once (SetHolds).
	holds func() (stopEnqueue, stopDequeue bool)
	// kept reports a real topic whose due records stay pending without
	// holding the wheel (SetKept); deferred is the step's scratch for them.
	kept     func(topic string) bool
	deferred []timerEntry
	// slotLen mirrors each slot's length (set under mu) for SlotCount, which
	// a send calls without waiting for a step that holds mu while it delivers.
	// It is made on the first flow-control check (timerCongestNumEachSlot
	// set), so a wheel without one carries no 1 MiB of counters.
	slotLen atomic.Pointer[[]atomic.Int32]
	// topics are the per-topic timer counts (timer_stats.go), topicIdx their
	// index by name; both under mu.
	topics   []timerTopic
	topicIdx map[string]int32
}

// SetHolds lends the wheel timerStopEnqueue and timerStopDequeue. Held from
// enqueueing, new records wait in rmq_sys_wheel_timer unread and are read when
// the hold is cleared (TimerMessageStore.enqueue returns before reading); held
// from dequeueing, due slots wait and are delivered when it is cleared. Set
// before Run.
func (t *Timer) SetHolds(f func() (stopEnqueue, stopDequeue bool)) { t.holds = f }

// SetKept names the real topics whose due records this broker cannot put
// now but must not drop either (an acting slave's POP revive records): they
// stay in the wheel, undelivered, moved to each new cursor slot (so the
// progress never claims them) while the other records are delivered. Set
// before Run.
func (t *Timer) SetKept(f func(topic string) bool) { t.kept = f }

// isKept reports an entry SetKept's function keeps pending.
func (t *Timer) isKept(e timerEntry) bool {
	return t.kept != nil && e.topic != noTopic && int(e.topic) <= len(t.topics) && t.kept(t.topics[e.topic-1].name)
}

// maxRollWindowSlots is the longest roll window the wheel holds: its size
// less TimerMessageStore's TIMER_BLANK_SLOTS (60), so a rolled record's slot
// never meets one being delivered.
const maxRollWindowSlots = timerSlots - 60

// SetRollWindow sets timerRollWindowSlot (in slots, as Java's): a timer further than it
// from its store time is stored again that far ahead. Out of range (under 2,
// or more than the wheel holds, about 3 days) it is the wheel's longest, as
// TimerMessageStore falls back to its own. Set before Run.
func (t *Timer) SetRollWindow(slots int64) {
	if slots < 2 || slots > maxRollWindowSlots {
		slots = maxRollWindowSlots
	}
	t.rollSlots = slots
}

// TimerPrecision is MessageStoreConfig.setTimerPrecisionMs: the slot
// lengths Java's wheel allows are 100, 200, 500 and 1000 ms, and any other
// value is taken down to the next of them (1000 above it, 100 below 200).
func TimerPrecision(ms int64) int64 {
	switch {
	case ms >= 1000:
		return 1000
	case ms >= 500:
		return 500
	case ms >= 200:
		return 200
	}
	return 100
}

// SetPrecision sets timerPrecisionMs, taken as TimerPrecision does: the
// length of a slot, which the roll window counts too (as Java's). The wheel
// walks one slot per step, and steps ten times a slot while it holds
// timers, as Java's services wait 100 ms per 1000 ms of precision. Set
// before Run; senders park with Precision.
func (t *Timer) SetPrecision(ms int64) {
	t.prec = TimerPrecision(ms)
	t.tick = time.Duration(t.prec) * time.Millisecond / 10
}

// Precision is the wheel's slot length in ms.
func (t *Timer) Precision() int64 { return t.prec }

// NewTimer makes the timer wheel service; revive may be nil.
func NewTimer(h *Host, revive func(m *codec.Message) bool) *Timer {
	if revive == nil {
		revive = func(*codec.Message) bool { return false }
	}
	return &Timer{h: h, revive: revive, tick: 100 * time.Millisecond, kick: make(chan struct{}, 1),
		rollSlots: timerRollWindowMs / timerPrecisionMs, prec: timerPrecisionMs, prog: progress{interval: time.Second},
		holds: func() (bool, bool) { return false, false }}
}

// Kick tells the service a message reached its topic.
func (t *Timer) Kick() { Kick(t.kick) }

// Run delivers until ctx ends. Each run starts from the persisted progress:
// a broker demoted and promoted again must not trust a wheel it stopped
// keeping. The broker's shutdown writes the progress last (Persist).
func (t *Timer) Run(ctx context.Context) {
	t.mu.Lock()
	t.loaded, t.wheel, t.count, t.recalled = false, nil, 0, nil
	t.running++
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.running--
		t.mu.Unlock()
	}()
	TickUntilIdle(ctx, t.tick, IdleTick, t.kick, func(ctx context.Context) bool {
		t.step(ctx)
		t.mu.Lock()
		pending := !t.loaded || t.count > 0 || t.readPos < t.h.Store.MaxOffsetInQueue(TopicTimer, 0)
		t.mu.Unlock()
		// Every second while delivering (Java's timerFlushIntervalMs), and
		// before going idle.
		if t.prog.due(!pending) {
			t.persistLogged()
		}
		return pending
	})
}

// add puts e in its slot; an overdue entry goes to the cursor's slot.
func (t *Timer) add(e timerEntry) {
	sec := e.at / t.prec
	if sec < t.cursor {
		t.lowAtCursor = min(t.lowAtCursor, sec)
		sec = t.cursor
	}
	i := sec % timerSlots
	t.wheel[i] = append(t.wheel[i], e)
	if lens := t.slotLen.Load(); lens != nil {
		(*lens)[i].Store(int32(len(t.wheel[i])))
	}
	t.count++
}

// SlotCount is how many timers wait in the wheel's slot for deliverMs (a
// rolled one counts in the slot of its roll, as in Java's TimerWheel). It
// counts as well the few kept there for a later turn of the wheel (only
// while delivery has been held longer than a turn), erring towards
// flow control.
func (t *Timer) SlotCount(deliverMs int64) int64 {
	lens := t.slotLen.Load()
	if lens == nil {
		lens = t.countSlots()
	}
	return int64((*lens)[deliverMs/t.prec%timerSlots].Load())
}

// countSlots makes the slot counters from the wheel, once; later changes
// keep them (under mu).
func (t *Timer) countSlots() *[]atomic.Int32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if lens := t.slotLen.Load(); lens != nil {
		return lens
	}
	lens := make([]atomic.Int32, timerSlots)
	for i, slot := range t.wheel {
		lens[i].Store(int32(len(slot)))
	}
	t.slotLen.Store(&lens)
	return &lens
}

// Congested is TimerMessageStore.isReject with timerCongestNumEachSlot n: a
// timer for a slot holding n or fewer is taken, one for a slot holding 2n or
// more refused, and in between refused at random as Java's formula does.
func (t *Timer) Congested(deliverMs int64, n int32) bool {
	if n == math.MaxInt32 {
		return false // Java's default: no slot holds that many
	}
	limit := int64(n) * 2
	c := t.SlotCount(deliverMs)
	switch {
	case c <= int64(n):
		return false
	case c >= limit:
		return true
	}
	return float64(rand.IntN(1000)) > 1000*float64(c-int64(n))/(float64(n)+0.1)
}

// PendingCount is the number of timer messages waiting in the wheel.
func (t *Timer) PendingCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.count
}

// Progress reports what Java's runtime info calls timerReadBehind (seconds
// the delivery cursor lags the clock), timerOffsetBehind (timer records not
// read into the wheel yet) and timerCongestNum (messages waiting in it).
func (t *Timer) Progress(now int64) (readBehind, offsetBehind int64, congest int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.loaded {
		return 0, 0, 0
	}
	readBehind = max(now-t.cursor*t.prec, 0) / 1000
	offsetBehind = max(t.h.Store.MaxOffsetInQueue(TopicTimer, 0)-t.readPos, 0)
	return readBehind, offsetBehind, t.count
}

// step reads new timer records and delivers those that are due.
func (t *Timer) step(ctx context.Context) { t.StepAt(ctx, time.Now().UnixMilli()) }

// StepAt is one step with the clock at now (ms).
func (t *Timer) StepAt(ctx context.Context, now int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.h
	if !t.loaded {
		t.load(now)
	}
	stopEnqueue, stopDequeue := t.holds()
	var m codec.Message
	for i := 0; i < 1000 && !stopEnqueue; i++ {
		res := h.Store.GetMessage(TimerSysGroup, TopicTimer, 0, t.readPos, 32, 1<<20, nil)
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
			// A far record's time is its roll time: the progress counts a
			// rolled one as done (its copy carries it on).
			at, roll := rollAt(deliver, m.StoreTimestamp, t.rollSlots*t.prec)
			if m.QueueOffset >= t.readPos && m.QueueOffset < t.skipOffset && at/t.prec < t.skipSec && (!roll || t.skipRolled) {
				t.done.grow(m.QueueOffset + 1) // delivered before the restart
				t.done.mark(m.QueueOffset)
				t.readPos = m.QueueOffset + 1
				continue
			}
			if m.QueueOffset >= t.readPos {
				key, marker := codec.PropertyValue(m.Properties, PropTimerDelUniqKey)
				if marker {
					if t.recalled == nil {
						t.recalled = map[string]struct{}{}
					}
					t.recalled[strings.Clone(key)] = struct{}{}
				}
				t.done.grow(m.QueueOffset + 1)
				topic := t.topicRef(&m)
				t.countEnqueue(topic, deliver, m.BornTimestamp)
				t.add(timerEntry{at: at, qOffset: m.QueueOffset, clOffset: m.CommitLogOffset, roll: roll,
					marker: marker, topic: topic})
				t.readPos = m.QueueOffset + 1
			}
		}
		res.Release()
	}
	// Slot T is due once the clock is past T+precision, as in Java.
	for !stopDequeue && (t.cursor+1)*t.prec <= now && ctx.Err() == nil {
		i := t.cursor % timerSlots
		slot := t.wheel[i]
		kept := 0
		failed := false
		deferred := t.deferred[:0]
		for k, e := range slot {
			if e.at/t.prec > t.cursor { // cannot happen within 3 days; keep it
				slot[kept] = e
				kept++
				continue
			}
			if !failed && t.isKept(e) {
				deferred = append(deferred, e)
				continue
			}
			if failed || !t.deliver(ctx, e, now) {
				failed = true
				slot[kept] = slot[k]
				kept++
				continue
			}
			t.count--
			t.moves++
			t.countDequeue(e.topic)
			t.done.mark(e.qOffset)
		}
		clear(slot[kept:])
		if lens := t.slotLen.Load(); lens != nil {
			(*lens)[i].Store(int32(kept))
		}
		switch {
		case kept > 0:
			t.wheel[i] = slot[:kept]
		case cap(slot) > 256:
			t.wheel[i] = nil // give a burst's memory back
		default:
			t.wheel[i] = slot[:0]
		}
		if failed {
			t.requeue(i, deferred, false)
			t.deferred = deferred[:0]
			break
		}
		t.cursor++
		t.lowAtCursor = math.MaxInt64
		t.requeue(t.cursor%timerSlots, deferred, true)
		clear(deferred)
		t.deferred = deferred[:0]
	}
	h.Offsets.Commit(TimerSysGroup, TopicTimer, 0, t.done.base)
}

// requeue appends the kept-pending entries to slot i; overdue says they now
// sit in the cursor's slot past their time, which bounds the progress
// (lowAtCursor) as an overdue add does.
func (t *Timer) requeue(i int64, es []timerEntry, overdue bool) {
	if len(es) == 0 {
		return
	}
	for _, e := range es {
		if overdue {
			t.lowAtCursor = min(t.lowAtCursor, e.at/t.prec)
		}
		t.wheel[i] = append(t.wheel[i], e)
	}
	if lens := t.slotLen.Load(); lens != nil {
		(*lens)[i].Store(int32(len(t.wheel[i])))
	}
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

func (t *Timer) deliver(ctx context.Context, e timerEntry, now int64) bool {
	h := t.h
	var err error
	if t.rec, err = h.Store.AppendRecord(t.rec[:0], e.clOffset); err == nil {
		_, err = codec.DecodeRecord(t.rec, &t.parked)
	}
	if err != nil {
		h.Log.Warn("timer: message gone, dropped", "offset", e.clOffset, "err", err)
		return true
	}
	if e.roll {
		v, _ := codec.PropertyValue(t.parked.Properties, codec.PropTimerOutMs)
		if d, err := strconv.ParseInt(v, 10, 64); err == nil && d/t.prec > t.cursor {
			return t.roll(ctx, now)
		}
		// Due by now (the broker was down past it): delivered from these bytes.
	}
	if len(t.recalled) > 0 {
		// A marker is due with or after the message it names (same second,
		// read later): the message is dropped first, then the marker.
		key, marker := RecallKey(&t.parked)
		if _, recalled := t.recalled[key]; marker || recalled {
			if !marker {
				h.Log.Info("timer: recalled message dropped", "key", key)
			}
			delete(t.recalled, key)
			return true
		}
	} else if _, marker := codec.PropertyValue(t.parked.Properties, PropTimerDelUniqKey); marker {
		return true // a marker whose message was already delivered
	}
	// Java keeps REAL_TOPIC, REAL_QID and TIMER_OUT_MS in the delivered message,
	// and stamps when the wheel took it and put it back (TimerMessageStore.convert).
	real := &t.real
	if !RealInto(real, &t.parked) {
		h.Log.Warn("timer: message without REAL_TOPIC dropped", "offset", e.clOffset)
		return true
	}
	ed := codec.EditProperties(real.Properties)
	ed.SetInt(PropTimerEnqueueMs, t.parked.StoreTimestamp)
	ed.SetInt(PropTimerDequeueMs, time.Now().UnixMilli())
	real.Properties = ed.String()
	// The revive check sees where the parked record was stored (a slave's
	// copy: its master); putBack stamps this broker's host again.
	real.StoreHost = t.parked.StoreHost
	if remark, ok := h.Target(real.Topic, real.QueueID); !ok && !t.revive(real) {
		h.Log.Warn("timer: message for a topic it may not go to dropped", "offset", e.clOffset,
			"topic", real.Topic, "queue", real.QueueID, "remark", remark)
		return true
	}
	return h.putBack(ctx, "timer", real)
}

// roll stores the parked message again in rmq_sys_wheel_timer, with its
// deliver time and Java's roll properties (TimerMessageStore.convert); the
// wheel reads the copy like any new record. A message recalled meanwhile is
// dropped instead (its marker, read before, still waits for the deliver time;
// a marker rolls like a message).
func (t *Timer) roll(ctx context.Context, now int64) bool {
	p := &t.parked
	if key, marker := RecallKey(p); !marker {
		if _, recalled := t.recalled[key]; recalled {
			t.h.Log.Info("timer: recalled message dropped", "key", key)
			return true
		}
	}
	ed := codec.EditProperties(p.Properties)
	times, _ := ed.Get(PropTimerRollTimes)
	n, _ := strconv.ParseInt(times, 10, 64) // absent or malformed: first roll
	ed.SetInt(PropTimerRollTimes, n+1)
	ed.SetInt(PropTimerEnqueueMs, p.StoreTimestamp)
	ed.SetInt(PropTimerDequeueMs, now)
	t.real = codec.Message{Topic: p.Topic, QueueID: p.QueueID, Flag: p.Flag, SysFlag: p.SysFlag,
		BornTimestamp: p.BornTimestamp, BornHost: p.BornHost, ReconsumeTimes: p.ReconsumeTimes,
		Body: p.Body, Properties: ed.String()}
	return t.h.putBack(ctx, "timer roll", &t.real)
}

// PropTimerDelUniqKey marks a timer record as a delete marker for
// "<real topic>+<uniq key>" (MessageConst.PROPERTY_TIMER_DEL_UNIQKEY,
// RECALL_MESSAGE): the wheel drops the message it names.
const PropTimerDelUniqKey = "TIMER_DEL_UNIQKEY"

// RecallKey is the key a delete marker names ("<real topic>+<uniq key>",
// TimerMessageStore.buildDeleteKey) for a parked message, and whether the
// message is itself a marker.
func RecallKey(parked *codec.Message) (key string, marker bool) {
	if k, ok := codec.PropertyValue(parked.Properties, PropTimerDelUniqKey); ok {
		return k, true
	}
	real, ok := codec.PropertyValue(parked.Properties, codec.PropRealTopic)
	uniq, ok2 := codec.PropertyValue(parked.Properties, codec.PropUniqKey)
	if !ok || !ok2 {
		return "", false
	}
	return real + "+" + uniq, false
}

// Recalled is how many delete markers wait for the message they name.
func (t *Timer) Recalled() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.recalled)
}

// Checkpoint is what GET_TIMER_CHECK_POINT reports: the wheel's read time
// (its cursor) and where it reads rmq_sys_wheel_timer.
func (t *Timer) Checkpoint() (readMs, queueOffset int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cursor * t.prec, t.readPos
}

// Horizon is the time before which every timer message has been delivered:
// now when the wheel is empty with every record read (it idles between steps,
// whatever its cursor says), else its cursor, held back by the overdue entries
// waiting in the cursor's slot and by the oldest record not read yet (one
// written before it is due is due after it was stored), 0 before its first
// step.
func (t *Timer) Horizon(now int64) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.loaded {
		return 0
	}
	unread := t.readPos < t.h.Store.MaxOffsetInQueue(TopicTimer, 0)
	if t.count == 0 && !unread {
		return now
	}
	hz := min(now, t.cursor*t.prec)
	if t.lowAtCursor != math.MaxInt64 {
		hz = min(hz, t.lowAtCursor*t.prec)
	}
	if unread {
		if ts := t.h.Store.MessageStoreTimestamp(TopicTimer, 0, t.readPos); ts > 0 {
			hz = min(hz, ts)
		}
	}
	return hz
}

// TimerBoundsSec are TimerMetrics.timerDist: the upper bounds, in seconds from
// now, of rocketmq_timer_message_snapshot's timer_bound_s buckets.
var TimerBoundsSec = [...]int64{5, 60, 300, 900, 3600, 14400, 28800, 86400}

// TimerMetrics is the timer wheel's state (DefaultStoreMetricsManager's timer
// gauges).
type TimerMetrics struct {
	EnqueueLag       int64 // timer-topic records not yet read into the wheel
	EnqueueLatencyMs int64 // age of the oldest of them, 0 when none
	DequeueLag       int64 // messages waiting in the wheel
	DequeueLatencyMs int64 // how far the delivery cursor trails the clock
	// Due[i] counts waiting messages due within (TimerBoundsSec[i-1], TimerBoundsSec[i]] seconds.
	Due [len(TimerBoundsSec)]int64
	// Topics are the per-topic counts of every real topic the wheel read
	// since the start and not deleted since (ForgetTopic).
	Topics []TimerTopicMetrics
}

// Metrics reads the wheel under its lock; a scrape walks the waiting entries
// once.
func (t *Timer) Metrics(now int64) TimerMetrics {
	t.mu.Lock()
	defer t.mu.Unlock()
	var m TimerMetrics
	if !t.loaded {
		return m
	}
	m.EnqueueLag = max(t.h.Store.MaxOffsetInQueue(TopicTimer, 0)-t.readPos, 0)
	if m.EnqueueLag > 0 {
		if ts := t.h.Store.MessageStoreTimestamp(TopicTimer, 0, t.readPos); ts > 0 {
			m.EnqueueLatencyMs = max(now-ts, 0)
		}
	}
	m.DequeueLag = int64(t.count)
	m.Topics = t.topicMetrics()
	m.DequeueLatencyMs = max(now-t.cursor*t.prec, 0)
	for _, slot := range t.wheel {
		for _, e := range slot {
			in := (e.at - now) / 1000 // a roll by its roll time, as Java's wheel slots count
			for i, bound := range TimerBoundsSec {
				if in <= bound {
					m.Due[i]++
					break
				}
			}
		}
	}
	return m
}
