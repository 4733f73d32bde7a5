package delivery

import (
	"context"
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
	opRead int64           // next op queue offset to read
	loaded bool
	// Interval, Timeout and CheckMax are transactionCheckInterval,
	// transactionTimeOut and transactionCheckMax: the broker calls Check every
	// Interval.
	Interval time.Duration
	Timeout  time.Duration
	CheckMax int
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
}

// NewTransactions makes the checker with Java's default settings.
func NewTransactions(h *Host, ask Asker) *Transactions {
	return &Transactions{h: h, ask: ask, done: map[int64]int64{}, Interval: defaultCheckInterval,
		Timeout: defaultTranTimeout, CheckMax: defaultTranCheckMax}
}

// readOps loads op records written since the last read.
func (t *Transactions) readOps() {
	h := t.h
	if !t.loaded {
		t.opRead = max(h.Offsets.Query(TransSysGroup, TopicTransOpHalf, 0), 0)
		t.loaded = true
	}
	for range 1000 {
		res := h.Store.GetMessage(TransSysGroup, TopicTransOpHalf, 0, t.opRead, 32, 1<<20, nil)
		if res.Status != store.GetFound {
			if res.Status == store.GetOffsetTooSmall || res.Status == store.GetOffsetOverflowBadly {
				t.opRead = res.NextBeginOffset
			}
			res.Release()
			return
		}
		for _, rec := range res.Records {
			var m codec.Message
			if _, err := codec.DecodeRecord(rec, &m); err != nil {
				break
			}
			for _, s := range strings.Split(string(m.Body), ",") {
				if off, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
					t.done[off] = m.QueueOffset
				}
			}
			t.opRead = m.QueueOffset + 1
		}
		res.Release()
	}
}

// Check walks the half queue from the checker's offset.
func (t *Transactions) Check(ctx context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.h
	if h.Store.MaxOffsetInQueue(TopicTransHalf, 0) <= 0 {
		return
	}
	t.readOps()
	halfOff := max(h.Offsets.Query(TransSysGroup, TopicTransHalf, 0), 0)
	now := time.Now()
	// Copies re-queued by this round are left for the next one.
	end := h.Store.MaxOffsetInQueue(TopicTransHalf, 0)
	for range 1000 {
		if ctx.Err() != nil || halfOff >= end {
			break
		}
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
		if _, ok := t.done[half.QueueOffset]; ok {
			delete(t.done, half.QueueOffset)
			halfOff = half.QueueOffset + 1
			continue
		}
		immunity := t.Timeout
		if v, ok := codec.PropertyValue(half.Properties, codec.PropCheckImmunity); ok {
			if s, err := strconv.ParseInt(v, 10, 64); err == nil && s > 0 {
				immunity = time.Duration(s) * time.Second
			}
		}
		if now.Sub(time.UnixMilli(half.BornTimestamp)) < immunity {
			break
		}
		times, _ := strconv.Atoi(func() string { v, _ := codec.PropertyValue(half.Properties, codec.PropTranCheckTimes); return v }())
		if times >= t.CheckMax {
			t.discard(ctx, half)
			halfOff = half.QueueOffset + 1
			continue
		}
		if !t.requeueAndAsk(ctx, half, times+1) {
			break
		}
		halfOff = half.QueueOffset + 1
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

// discard moves a half message checked too often to TRANS_CHECK_MAX_TIME_TOPIC.
func (t *Transactions) discard(ctx context.Context, half *codec.Message) {
	h := t.h
	t.ask.EnsureTopic(TopicTransCheckMax)
	msg := *half
	msg.Topic, msg.QueueID = TopicTransCheckMax, 0
	h.Stamp(&msg)
	if res := h.Store.PutMessage(ctx, &msg); !res.Status.Written() {
		h.Log.Warn("transaction: discard half message failed", "offset", half.CommitLogOffset, "status", res.Status.String())
	}
}

// requeueAndAsk appends the half message again with its check count raised
// (putBackHalfMsgQueue) and asks one producer of its group about the copy.
func (t *Transactions) requeueAndAsk(ctx context.Context, half *codec.Message, times int) bool {
	h := t.h
	cp := *half
	cp.Properties = codec.SetProperty(half.Properties, codec.PropTranCheckTimes, strconv.Itoa(times))
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
