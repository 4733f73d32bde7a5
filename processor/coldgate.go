package processor

import (
	"context"
	"sync"
	"time"

	"rmqd/codec"
	"rmqd/processor/delivery"
	"rmqd/remoting"
	"rmqd/store"
)

// coldReadRemark is Java's answer to a push consumer throttled for reading cold data.
const coldReadRemark = "This consumer group is reading cold data. It has been flow control"

// Held pull-consumer pulls (Java's ColdDataPullRequestHoldService): each waits
// coldHoldTime, then runs once more with one message at most.
const (
	coldHoldTime = 3 * time.Second
	coldHoldTick = 500 * time.Millisecond // Java looks every 5 s, so its holds last 3 to 8 s
	coldHoldMax  = 10000                  // Java's queue bound
)

// coldStore is the store's side of cold-data flow control (store/coldread.go).
type coldStore interface {
	SetColdDataCheck(enable, scan bool, hotRatio int)
	InColdArea(topic string, queueID int32, offset int64) bool
}

// coldHolds are the held pulls, oldest first.
type coldHolds struct {
	mu      sync.Mutex
	held    []*heldPull // deadline: when to run again
	stopped bool
}

// coldGate is PullMessageProcessor's cold-data check, run before the read
// when coldDataFlowControlEnable is on: a throttled group whose pull starts
// in the cold area is answered SYSTEM_BUSY when it pushes; when it pulls,
// its pull is held coldHoldTime and then served one message. held reports
// a pull taken over by the hold.
func (b *Broker) coldGate(c remoting.Conn, h *codec.PullMessageRequestHeader, reply pullReply, filter store.MessageFilter) (resp *codec.RemotingCommand, held bool) {
	if !b.cold.throttled(b.conf(), h.ConsumerGroup) {
		return nil, false
	}
	cs, ok := b.store.(coldStore)
	if !ok || !cs.InColdArea(h.Topic, h.QueueID, h.QueueOffset) {
		return nil, false
	}
	// Java asks the group's heartbeat registration; one without it would
	// fail there, and is taken here for a pull consumer.
	if typ, online, _ := b.consumers.Member(h.ConsumerGroup, c); online && typ != consumeActively {
		return reply.response(codec.RespSystemBusy, coldReadRemark), false
	}
	if !reply.coldRerun && b.holdCold(c, h, reply, filter) {
		return nil, true
	}
	h.MaxMsgNums = 1
	return nil, false
}

// holdCold parks a pull for coldHoldTime; false when the holds are full or
// stopped (Java drops a pull its full queue refuses, leaving the consumer to
// time out; here it is served one message at once).
func (b *Broker) holdCold(c remoting.Conn, h *codec.PullMessageRequestHeader, reply pullReply, filter store.MessageFilter) bool {
	p := b.hold.newHeld(c, h, reply, filter, time.Now().Add(coldHoldTime))
	p.reply.coldRerun = true
	b.coldHold.mu.Lock()
	if b.coldHold.stopped || len(b.coldHold.held) >= coldHoldMax {
		b.coldHold.mu.Unlock()
		b.hold.release(p)
		return false
	}
	b.coldHold.held = append(b.coldHold.held, p)
	b.coldHold.mu.Unlock()
	delivery.Kick(b.cold.kick)
	return true
}

// takeDueCold removes the held pulls due by now (all with all set).
func (b *Broker) takeDueCold(now time.Time, all bool) (due []*heldPull, left int) {
	b.coldHold.mu.Lock()
	defer b.coldHold.mu.Unlock()
	n := len(b.coldHold.held)
	if !all {
		n = 0
		for n < len(b.coldHold.held) && !now.Before(b.coldHold.held[n].deadline) {
			n++
		}
	}
	due = append(due, b.coldHold.held[:n]...)
	b.coldHold.held = append(b.coldHold.held[:0], b.coldHold.held[n:]...)
	return due, len(b.coldHold.held)
}

// runCold ends the accumulation periods and re-runs the held pulls until
// ctx ends; it sleeps while nothing is counted or held.
func (b *Broker) runCold(ctx context.Context) {
	last := time.Now()
	delivery.TickUntilIdle(ctx, coldHoldTick, delivery.IdleTick, b.cold.kick, func(context.Context) bool {
		now := time.Now()
		due, left := b.takeDueCold(now, false)
		b.hold.execute(due)
		cfg := b.conf()
		period := coldCtrPeriod
		if !cfg.Store.ColdDataFlowControlEnable {
			period = coldCtrPeriodOff
		}
		if now.Sub(last) >= period {
			last = now
			b.cold.period(cfg, now)
		}
		b.cold.mu.RLock()
		counting := len(b.cold.runtime) > 0
		b.cold.mu.RUnlock()
		return left > 0 || counting
	})
}

// wakeCold answers every held pull and holds no more (shutdown).
func (b *Broker) wakeCold() {
	b.coldHold.mu.Lock()
	b.coldHold.stopped = true
	b.coldHold.mu.Unlock()
	due, _ := b.takeDueCold(time.Time{}, true)
	b.hold.execute(due)
}

// syncColdCheck hands the store the cold-data settings in force.
func (b *Broker) syncColdCheck() {
	if cs, ok := b.store.(coldStore); ok {
		st := &b.conf().Store
		cs.SetColdDataCheck(st.ColdDataFlowControlEnable, st.ColdDataScanEnable, st.AccessMessageInMemoryHotRatio)
	}
}
