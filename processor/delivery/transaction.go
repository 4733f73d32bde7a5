package delivery

import (
	"context"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"rmqd/codec"
	"rmqd/store"
)

// Transaction check settings (BrokerConfig's defaults).
const (
	defaultTranTimeout   = 6 * time.Second
	defaultTranCheckMax  = 15
	defaultCheckInterval = 30 * time.Second
	defaultReserved      = 72 * time.Hour // fileReservedTime
	// maxCheckReads bounds the half messages one round reads, so one round
	// re-puts a bounded number of copies.
	maxCheckReads = 1000
	// defaultDoneCap bounds the settled offsets held ahead of the check
	// offset; defaultLateCap the settlements read after the check offset
	// passed them, kept for immunity copies (TRAN_PREPARED_QUEUE_OFFSET).
	defaultDoneCap = 1 << 18
	defaultLateCap = 1 << 12
)

// Transactions is the half-message checker
// (TransactionalMessageCheckService): half messages without an op record that
// are older than the transaction timeout are re-queued and the producer group is
// asked for their state with CHECK_TRANSACTION_STATE.
type Transactions struct {
	h      *Host
	ask    Asker
	mu     sync.Mutex
	done   map[int64]int64 // half queue offset → op queue offset that settled it
	late   lateSet         // settled half offsets the check offset had passed
	opRead int64           // next op queue offset to read
	loaded bool
	// Interval, Timeout and CheckMax are transactionCheckInterval,
	// transactionTimeOut and transactionCheckMax: the broker calls Check every
	// Interval.
	Interval time.Duration
	Timeout  time.Duration
	CheckMax int
	// Reserved is the store's fileReservedTime: a half message born longer
	// ago is discarded unasked (needSkip), its commitlog file due for removal.
	Reserved time.Duration
	// Limits, when set, gives Timeout, CheckMax and Reserved afresh at each
	// round instead (Java's checker reads them per round, so updateBrokerConfig
	// changes them at the next one).
	Limits  func() (timeout time.Duration, checkMax int, reserved time.Duration)
	doneCap int
}

// limits is the round's Timeout, CheckMax and Reserved.
func (t *Transactions) limits() (time.Duration, int, time.Duration) {
	if t.Limits != nil {
		return t.Limits()
	}
	return t.Timeout, t.CheckMax, t.Reserved
}

// lateSet is a bounded FIFO set of half offsets.
type lateSet struct {
	m    map[int64]struct{}
	ring []int64
	next int
}

func (l *lateSet) add(off int64) {
	if _, ok := l.m[off]; ok || len(l.ring) == 0 {
		return
	}
	if old := l.ring[l.next]; old >= 0 {
		delete(l.m, old)
	}
	l.ring[l.next] = off
	l.next = (l.next + 1) % len(l.ring)
	l.m[off] = struct{}{}
}

func (l *lateSet) has(off int64) bool { _, ok := l.m[off]; return ok }

func newLateSet(n int) lateSet {
	l := lateSet{m: make(map[int64]struct{}), ring: make([]int64, n)}
	for i := range l.ring {
		l.ring[i] = -1
	}
	return l
}

// Asker is how the checker reaches producers and the topic table.
type Asker struct {
	// Ask sends CHECK_TRANSACTION_STATE to one producer of group, picked by
	// pick (the copy's queue offset); it reports whether one was online.
	Ask func(group string, pick int64, req *codec.RemotingCommand) bool
	// EnsureTopic makes TRANS_CHECK_MAX_TIME_TOPIC exist before a discard.
	EnsureTopic func(topic string)
	// BrokerName goes in the check request (bname).
	BrokerName func() string
	// OffsetMsgID is the message id of a commitlog offset on this broker.
	OffsetMsgID func(commitLogOffset int64) string
	// Escape, when set and escaping, hands an unsettled half message to
	// another group instead of checking it here (an acting slave, whose store
	// takes no put); ok false keeps it for the next round.
	Escape func(ctx context.Context, half *codec.Message) (escaping, ok bool)
}

// NewTransactions makes the checker with Java's default settings.
func NewTransactions(h *Host, ask Asker) *Transactions {
	return &Transactions{h: h, ask: ask, done: map[int64]int64{}, late: newLateSet(defaultLateCap),
		Interval: defaultCheckInterval, Timeout: defaultTranTimeout, CheckMax: defaultTranCheckMax,
		Reserved: defaultReserved, doneCap: defaultDoneCap}
}

// readOps loads op records written since the last read, until done is full.
// Settlements of offsets below halfOff go to late: only an immunity copy
// can still ask about them.
func (t *Transactions) readOps(halfOff int64) {
	h := t.h
	if !t.loaded {
		t.opRead = max(h.Offsets.Query(TransSysGroup, TopicTransOpHalf, 0), 0)
		t.loaded = true
	}
	for range 1000 {
		if len(t.done) >= t.doneCap {
			return
		}
		res := h.Store.GetMessage(TransSysGroup, TopicTransOpHalf, 0, t.opRead, 32, 1<<20, nil)
		if res.Status != store.GetFound {
			if res.Status == store.GetOffsetTooSmall || res.Status == store.GetOffsetOverflowBadly {
				t.opRead = res.NextBeginOffset
			}
			res.Release()
			return
		}
		for _, rec := range res.Records {
			if len(t.done) >= t.doneCap {
				break
			}
			var m codec.Message
			if _, err := codec.DecodeRecord(rec, &m); err != nil {
				t.opRead++ // skip it, or every due half message would re-read it
				continue
			}
			for _, s := range strings.Split(string(m.Body), ",") {
				off, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
				switch {
				case err != nil:
				case off < halfOff:
					t.late.add(off)
				default:
					t.done[off] = m.QueueOffset
				}
			}
			t.opRead = m.QueueOffset + 1
		}
		res.Release()
	}
}

// opsPending reports whether op records remain unread.
func (t *Transactions) opsPending() bool {
	return t.opRead < t.h.Store.MaxOffsetInQueue(TopicTransOpHalf, 0)
}

// Check walks the half queue from the checker's offset. As in Java, only a
// message younger than the transaction timeout and without an immunity time
// ends the walk; a message still immune is copied to the end of the queue and
// passed, so no single message holds the check offset.
func (t *Transactions) Check(ctx context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.h
	if h.Store.MaxOffsetInQueue(TopicTransHalf, 0) <= 0 {
		return
	}
	timeout, checkMax, reserved := t.limits()
	halfOff := max(h.Offsets.Query(TransSysGroup, TopicTransHalf, 0), 0)
	t.readOps(halfOff)
	now := time.Now()
	// Copies re-queued by this round are left for the next one.
	end := h.Store.MaxOffsetInQueue(TopicTransHalf, 0)
	warned := false
	for reads := 0; reads < maxCheckReads && halfOff < end && ctx.Err() == nil; {
		if _, ok := t.done[halfOff]; ok {
			delete(t.done, halfOff)
			halfOff++
			continue
		}
		reads++
		res := h.Store.GetMessage(TransSysGroup, TopicTransHalf, 0, halfOff, 1, 4<<20, nil)
		if res.Status != store.GetFound {
			if res.Status == store.GetOffsetTooSmall {
				halfOff = res.NextBeginOffset
				res.Release()
				continue
			}
			res.Release()
			break
		}
		var m codec.Message
		_, err := codec.DecodeRecord(res.Records[0], &m)
		half := codec.CloneMessage(&m)
		res.Release()
		if err != nil {
			halfOff++
			continue
		}
		if half.QueueOffset > halfOff {
			halfOff = half.QueueOffset
			continue
		}
		prepared := preparedOffset(half)
		if prepared >= 0 && t.late.has(prepared) {
			halfOff++ // an immunity copy whose original was settled
			continue
		}
		if t.ask.Escape != nil {
			if escaping, ok := t.ask.Escape(ctx, half); escaping {
				if !ok {
					break
				}
				halfOff++
				continue
			}
		}
		times, _ := strconv.Atoi(func() string { v, _ := codec.PropertyValue(half.Properties, codec.PropTranCheckTimes); return v }())
		age := now.Sub(time.UnixMilli(half.BornTimestamp))
		if times >= checkMax || age > reserved {
			if !t.discard(ctx, half) {
				break // keep it: the next round tries the move again
			}
			halfOff++
			continue
		}
		if v, ok := codec.PropertyValue(half.Properties, codec.PropCheckImmunity); ok {
			immunity := timeout // getImmunityTime: unparsable or -1
			if s, err := strconv.ParseInt(v, 10, 64); err == nil && s != -1 {
				lim := int64(math.MaxInt64 / time.Second)
				immunity = time.Duration(max(min(s, lim), -lim)) * time.Second
			}
			if age <= immunity {
				if !t.putImmune(ctx, half, prepared, times+1) {
					break
				}
				halfOff++
				continue
			}
		} else if age >= 0 && age <= timeout {
			break // the newest ones: check them next round
		}
		// Born in the future or due: ask, once every op written so far is read.
		if t.opsPending() {
			t.readOps(halfOff)
			if _, ok := t.done[halfOff]; ok {
				continue
			}
			if t.opsPending() && !warned {
				warned = true
				h.Log.Warn("transaction: settled-offset table full, checking without all op records", "offset", halfOff)
			}
		}
		if !t.requeueAndAsk(ctx, half, times+1) {
			break
		}
		halfOff++
	}
	h.Offsets.Commit(TransSysGroup, TopicTransHalf, 0, halfOff)
	// Op records of half messages already passed are no longer needed.
	minOp := t.opRead
	for h, op := range t.done {
		if h < halfOff {
			delete(t.done, h)
			continue
		}
		minOp = min(minOp, op)
	}
	h.Offsets.Commit(TransSysGroup, TopicTransOpHalf, 0, minOp)
}

// preparedOffset is TRAN_PREPARED_QUEUE_OFFSET, the original of an immunity
// copy, or -1. A copy always follows its original, so a later offset is a
// producer's forgery.
func preparedOffset(half *codec.Message) int64 {
	v, ok := codec.PropertyValue(half.Properties, codec.PropTranPreparedQOff)
	if !ok {
		return -1
	}
	p, err := strconv.ParseInt(v, 10, 64)
	if err != nil || p < 0 || p >= half.QueueOffset {
		return -1
	}
	return p
}

// putImmune copies a half message still inside its check immunity to the end
// of the half queue (putImmunityMsgBackToHalfQueue), naming its original in
// TRAN_PREPARED_QUEUE_OFFSET. As in Java the check count rises, so a copy is
// re-put at most CheckMax times before it is discarded.
func (t *Transactions) putImmune(ctx context.Context, half *codec.Message, prepared int64, times int) bool {
	h := t.h
	cp := *half
	e := codec.EditProperties(half.Properties)
	e.Set(codec.PropTranCheckTimes, strconv.Itoa(times))
	if prepared < 0 {
		prepared = half.QueueOffset
	}
	e.Set(codec.PropTranPreparedQOff, strconv.FormatInt(prepared, 10))
	cp.Properties = e.String()
	h.Stamp(&cp)
	if res := h.Store.PutMessage(ctx, &cp); !res.Status.Written() {
		h.Log.Warn("transaction: re-put immune half message failed", "status", res.Status.String())
		return false
	}
	return true
}

// discard moves a half message checked too often to TRANS_CHECK_MAX_TIME_TOPIC.
// Java moves the check offset on even when this put fails, losing the
// message; a false here holds the offset instead.
func (t *Transactions) discard(ctx context.Context, half *codec.Message) bool {
	h := t.h
	t.ask.EnsureTopic(TopicTransCheckMax)
	msg := *half
	msg.Topic, msg.QueueID = TopicTransCheckMax, 0
	h.Stamp(&msg)
	if res := h.Store.PutMessage(ctx, &msg); !res.Status.Written() {
		h.Log.Warn("transaction: discard half message failed", "offset", half.CommitLogOffset, "status", res.Status.String())
		return false
	}
	return true
}

// requeueAndAsk appends the half message again with its check count raised
// (putBackHalfMsgQueue) and asks one producer of its group about the copy.
func (t *Transactions) requeueAndAsk(ctx context.Context, half *codec.Message, times int) bool {
	h := t.h
	cp := *half
	cp.Properties = codec.SetPropertyInt(half.Properties, codec.PropTranCheckTimes, int64(times))
	h.Stamp(&cp)
	res := h.Store.PutMessage(ctx, &cp)
	if !res.Status.Written() {
		h.Log.Warn("transaction: re-queue half message failed", "status", res.Status.String())
		return false
	}
	cp.QueueOffset, cp.CommitLogOffset, cp.StoreTimestamp = res.QueueOffset, res.WroteOffset, res.StoreTimestamp
	group, _ := codec.PropertyValue(cp.Properties, codec.PropProducerGroup)
	real, ok := RealMessageOf(&cp)
	if !ok {
		return true
	}
	real.QueueOffset, real.CommitLogOffset, real.StoreTimestamp = cp.QueueOffset, cp.CommitLogOffset, cp.StoreTimestamp
	real.StoreHost = cp.StoreHost
	real.Properties = cp.Properties // the client reads PGROUP, UNIQ_KEY, REAL_* from the body
	h.Stamp(real)
	body := make([]byte, codec.RecordSize(real))
	codec.EncodeRecord(body, real)
	uniq, _ := codec.PropertyValue(cp.Properties, codec.PropUniqKey)
	req := codec.NewRequest(codec.ReqCheckTransactionState)
	req.Ext.Set("topic", real.Topic)
	req.Ext.Set("tranStateTableOffset", strconv.FormatInt(cp.QueueOffset, 10))
	req.Ext.Set("commitLogOffset", strconv.FormatInt(cp.CommitLogOffset, 10))
	req.Ext.Set("msgId", uniq)
	req.Ext.Set("transactionId", uniq)
	req.Ext.Set("offsetMsgId", t.ask.OffsetMsgID(cp.CommitLogOffset))
	req.Ext.Set("bname", t.ask.BrokerName())
	req.Body = body
	if !t.ask.Ask(group, cp.QueueOffset, req) {
		h.Log.Debug("transaction: no producer online to check", "group", group)
	}
	return true
}
