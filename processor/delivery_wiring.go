package processor

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/processor/delivery"
	"rmqd/store"
)

// DefaultMessageDelayLevel is MessageStoreConfig.messageDelayLevel.
const DefaultMessageDelayLevel = compat.DefaultMessageDelayLevel

// Delivery services' system groups and the op tag of a settled half message.
const (
	timerSysGroup  = delivery.TimerSysGroup
	transSysGroup  = delivery.TransSysGroup
	transRemoveTag = "d"
)

// newDelivery makes the schedule, timer and transaction services over the
// broker's store and offsets, with the broker's send checks.
func (b *Broker) newDelivery(cfg BrokerConfig) error {
	levels, err := compat.ParseDelayLevels(cfg.Store.MessageDelayLevel)
	if err != nil {
		return fmt.Errorf("messageDelayLevel: %w", err)
	}
	h := &delivery.Host{Store: escapeStore{b.store, b}, Offsets: b.offsets, Log: b.log,
		Target: func(topic string, queueID int32) (string, bool) {
			_, remark, ok := b.checkRestoredTarget(topic, queueID)
			return remark, ok
		},
		Stamp: b.stamp,
	}
	b.schedule = delivery.NewSchedule(h, levels, cfg.ConfigDir())
	if cfg.Store.FlushDelayOffsetInterval > 0 {
		b.schedule.PersistInterval = compat.Millis(cfg.Store.FlushDelayOffsetInterval)
	}
	b.timer = delivery.NewTimer(h, b.popRevive)
	b.timer.SetProgressFile(cfg.ConfigDir())
	b.timer.SetRollWindow(cfg.TimerRollWindowSlot)
	b.timer.SetPrecision(int64(cfg.TimerPrecisionMs))
	b.timer.SetHolds(func() (bool, bool) {
		c := b.conf()
		return c.TimerStopEnqueue, c.TimerStopDequeue
	})
	// A slave's wheel runs only while it acts for its master: the revive
	// records due then cannot go into its store. With enableRemoteEscape
	// they go to another group's master (escape.go); with none to take them
	// they wait for the master, whose pre-online adopts this progress.
	b.timer.SetKept(func(topic string) bool {
		return b.conf().IsSlave() && isReviveTopic(topic) && !b.acting.reviveRemote.Load()
	})
	b.trans = delivery.NewTransactions(h, delivery.Asker{
		Ask:         b.askTransactionState,
		EnsureTopic: func(topic string) { b.topics.CreateInSendMessageBack(topic, 1, PermRead|PermWrite, 0) },
		BrokerName:  func() string { return b.conf().BrokerName },
		OffsetMsgID: func(off int64) string { return compat.OffsetMsgID(b.storeHost, off) },
		Escape:      b.escapeHalf,
	})
	// Read at each round, as the interval is (transCheckInterval), so
	// updateBrokerConfig changes them live. As Java's needSkip: a
	// fileReservedTime of 0 hours discards every half message not born ahead.
	defTimeout, defMax := b.trans.Timeout, b.trans.CheckMax
	b.trans.Limits = func() (time.Duration, int, time.Duration) {
		c := b.conf()
		timeout, checkMax := defTimeout, defMax
		if c.TransactionTimeOut > 0 {
			timeout = compat.Millis(c.TransactionTimeOut)
		}
		if c.TransactionCheckMax > 0 {
			checkMax = int(c.TransactionCheckMax)
		}
		return timeout, checkMax, time.Duration(c.Store.FileReservedTime) * time.Hour
	}
	return nil
}

// transCheckInterval is transactionCheckInterval in force (the checker's
// default, Transactions.Interval, when unset): read before each wait.
func (b *Broker) transCheckInterval() time.Duration {
	if ms := b.conf().TransactionCheckInterval; ms > 0 {
		return compat.Millis(ms)
	}
	return b.trans.Interval
}

// stamp readies a message the broker puts itself: its store host and the
// host flags that follow.
func (b *Broker) stamp(m *codec.Message) {
	m.StoreHost = b.storeHost
	m.SysFlag = hostFlags(m.SysFlag, m.BornHost, m.StoreHost)
}

// askTransactionState sends CHECK_TRANSACTION_STATE to one producer of group.
func (b *Broker) askTransactionState(group string, pick int64, req *codec.RemotingCommand) bool {
	chs := b.producers.Channels(group)
	if len(chs) == 0 {
		return false
	}
	ch := chs[int(pick)%len(chs)]
	if err := ch.Conn.InvokeOneway(req); err != nil {
		b.log.Debug("transaction: check request not sent", "group", group, "err", err)
	}
	return true
}

// applyDelay parks a DELAY message in SCHEDULE_TOPIC_XXXX.
func (b *Broker) applyDelay(msg *codec.Message, pv *codec.PropView) {
	delivery.ParkDelay(msg, pv, b.schedule.Levels())
}

// applyTimer parks a timer message in rmq_sys_wheel_timer; false for a
// malformed time or one further than timerMaxDelaySec (MESSAGE_ILLEGAL).
func (b *Broker) applyTimer(msg *codec.Message, pv *codec.PropView) bool {
	ok, _ := delivery.ParkTimerGated(msg, pv, b.conf().TimerMaxDelaySec*1000, b.timer.Precision(), nil)
	return ok
}

// parkTimer is applyTimer for a producer's send and an end-transaction
// commit, flow-controlled per slot as HookUtils is (timerCongestNumEachSlot):
// congested answers WHEEL_TIMER_FLOW_CONTROL (timerCongestedRemark).
func (b *Broker) parkTimer(msg *codec.Message, pv *codec.PropView) (ok, congested bool) {
	n := b.conf().TimerCongestNumEachSlot
	return delivery.ParkTimerGated(msg, pv, b.conf().TimerMaxDelaySec*1000, b.timer.Precision(),
		func(deliverMs int64) bool { return b.timer.Congested(deliverMs, n) })
}

// timerCongestedRemark is SendMessageProcessor's and EndTransactionProcessor's
// remark for WHEEL_TIMER_FLOW_CONTROL (answered SYSTEM_ERROR).
func (b *Broker) timerCongestedRemark() string {
	n := int64(b.conf().TimerCongestNumEachSlot)
	return fmt.Sprintf("timer message is under flow control, max num limit is %d or the current value is greater than %d"+
		" and less than %d, trigger random flow control", n*2, n, n*2)
}

// checkTimer is applyTimer's verdict on a message it does not park yet (a
// transactional prepare).
func (b *Broker) checkTimer(pv *codec.PropView) bool {
	return delivery.CheckTimer(pv, b.conf().TimerMaxDelaySec*1000)
}

// Java's answers to a refused timer message (SendMessageProcessor's
// WHEEL_TIMER_NOT_ENABLE and WHEEL_TIMER_MSG_ILLEGAL): a Java producer shows
// them in its MQBrokerException.
const timerNotEnabledRemark = "accurate timer message is not enabled, timerWheelEnable is false"

func (b *Broker) timerIllegalRemark() string {
	return fmt.Sprintf("timer message illegal, the delay time should not be bigger than the max delay %dms;"+
		" or if set del msg, the delay time should be bigger than the current time", b.conf().TimerMaxDelaySec*1000)
}

// writeOp records that the half message at halfOffset is settled (an op
// message tagged "d" whose body is "offset,").
func (b *Broker) writeOp(ctx context.Context, queueID int32, halfOffset int64) error {
	pv := codec.ViewProperties(codec.SetProperty("", codec.PropTags, transRemoveTag))
	props := fixStoredProps(&pv, b.conf(), b.ids, false, "", nil)
	msg := &codec.Message{Topic: TopicTransOpHalf, QueueID: queueID, BornTimestamp: time.Now().UnixMilli(),
		BornHost: b.storeHost, StoreHost: b.storeHost, Body: []byte(strconv.FormatInt(halfOffset, 10) + ","),
		Properties: props}
	msg.SysFlag = hostFlags(0, msg.BornHost, msg.StoreHost)
	res := b.store.PutMessage(ctx, msg)
	if !res.Status.Written() {
		return &putError{res.Status}
	}
	return nil
}

type putError struct{ s store.PutStatus }

func (e *putError) Error() string { return "write transaction op message: " + e.s.String() }
