// Package delivery holds the broker's delivery services: delay levels
// (ScheduleMessageService), the timer wheel (TimerMessageStore) and the
// transaction checker (TransactionalMessageCheckService). Each reads its
// system topic through a small read/put view of the store, puts messages back
// to their real topic when due, and is kicked when the store dispatches a
// message to its topic. It knows no connection or request: the broker lends
// it the checks a send would make and the way to ask a producer.
package delivery

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"rmqd/codec"
	"rmqd/processor/meta"
	"rmqd/store"
)

// Store is what the services read and write of the message store.
type Store interface {
	GetMessage(group, topic string, queueID int32, offset int64, maxMsgNums int32, maxTotalBytes int32, filter store.MessageFilter) *store.GetResult
	MaxOffsetInQueue(topic string, queueID int32) int64
	MessageStoreTimestamp(topic string, queueID int32, queueOffset int64) int64
	// AppendRecord appends the commitlog record at offset to dst.
	AppendRecord(dst []byte, commitLogOffset int64) ([]byte, error)
	PutMessage(ctx context.Context, msg *codec.Message) store.PutResult
}

// Offsets keeps the services' progress as consumer offsets of their system
// groups, as Java does.
type Offsets interface {
	Query(group, topic string, queueID int32) int64
	Commit(group, topic string, queueID int32, offset int64)
}

// Host is what the broker lends the services.
type Host struct {
	Store   Store
	Offsets Offsets
	Log     *slog.Logger
	// Target applies a send's checks to the topic and queue a parked message
	// goes back to; false drops the message, with the reason.
	Target func(topic string, queueID int32) (remark string, ok bool)
	// Stamp readies a message for its put: the broker's store host and the
	// host flags that follow from it.
	Stamp func(m *codec.Message)
}

// System topics and groups of the services (TopicValidator, TimerMessageStore,
// TransactionalMessageUtil).
const (
	TopicSchedule      = meta.TopicSchedule
	TopicTimer         = meta.TopicTimer
	TopicTransHalf     = meta.TopicTransHalf
	TopicTransOpHalf   = meta.TopicTransOpHalf
	TopicTransCheckMax = meta.TopicTransCheckMax

	TimerSysGroup = "CID_RMQ_SYS_TIMER"
	TransSysGroup = "CID_RMQ_SYS_TRANS"
)

// sysFlagTransactionMask covers MessageSysFlag's transaction type bits; only a
// non-transactional message (0) or a commit (0x8) is parked for later.
const sysFlagTransactionMask = 0xC

// The services tick every 100 ms while they hold messages, as Java's do. With
// nothing to deliver they sleep up to IdleTick and are woken by the dispatch
// of a message to their topic instead: an idle broker should not wake ten
// times a second per service. The sleep is a safety net only (every hold and
// every dispatch to their topics kicks them): 10 s, not 1 s.
const IdleTick = 10 * time.Second

// Kick wakes a service's loop without blocking; a wake-up already pending is
// enough.
func Kick(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// TickUntilIdle calls f every busy while it reports pending work; otherwise the next call comes after
// idle, or one busy period after a kick (not at once: the ticks keep their period, as a fixed ticker's
// would, so work kicked in does not run twice in quick succession).
func TickUntilIdle(ctx context.Context, busy, idle time.Duration, wake <-chan struct{}, f func(context.Context) (pending bool)) {
	t := time.NewTimer(busy)
	defer t.Stop()
	idling := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
			if idling {
				idling = false
				t.Reset(busy)
			}
			continue
		case <-t.C:
		}
		idling = !f(ctx)
		if idling {
			t.Reset(idle)
		} else {
			t.Reset(busy)
		}
	}
}

// RealInto sets dst to the message a parked one (half, timer, delay) stands
// for: its REAL_TOPIC and REAL_QID, the producer's fields and body, and the
// parked properties as they are (callers that drop some do so themselves).
// False when REAL_TOPIC or REAL_QID is missing or malformed.
func RealInto(dst, parked *codec.Message) bool {
	topic, ok := codec.PropertyValue(parked.Properties, codec.PropRealTopic)
	qs, ok2 := codec.PropertyValue(parked.Properties, codec.PropRealQueueID)
	q, err := strconv.ParseInt(qs, 10, 32)
	if !ok || !ok2 || err != nil || topic == "" {
		return false
	}
	*dst = codec.Message{Topic: topic, QueueID: int32(q), Flag: parked.Flag, SysFlag: parked.SysFlag,
		BornTimestamp: parked.BornTimestamp, BornHost: parked.BornHost, ReconsumeTimes: parked.ReconsumeTimes,
		Body: parked.Body, Properties: parked.Properties}
	return true
}

// RealMessageOf turns a stored half message back into the message the producer
// sent: REAL_TOPIC / REAL_QID become topic and queue again.
func RealMessageOf(half *codec.Message) (*codec.Message, bool) {
	real := new(codec.Message)
	if !RealInto(real, half) {
		return nil, false
	}
	e := codec.EditProperties(half.Properties)
	e.Delete(codec.PropRealTopic)
	e.Delete(codec.PropRealQueueID)
	real.Properties = e.String()
	return real, true
}

// putBack puts a restored message; true when it is done with (stored, or
// refused for good and dropped), false to retry on the next tick.
func (h *Host) putBack(ctx context.Context, who string, m *codec.Message) bool {
	h.Stamp(m)
	res := h.Store.PutMessage(ctx, m)
	switch {
	case res.Status.Written():
		return true
	case res.Status == store.PutMessageIllegal || res.Status == store.PutPropertiesSizeExceeded:
		h.Log.Error(who+": message refused by the store, dropped", "topic", m.Topic, "status", res.Status.String())
		return true
	}
	h.Log.Warn(who+": put failed, will retry", "topic", m.Topic, "status", res.Status.String())
	return false
}
