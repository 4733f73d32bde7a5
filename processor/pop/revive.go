package pop

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"rmqd/codec"
	"rmqd/store"
)

// ckRewriteIntervals are the extra seconds of invisibility a checkpoint gets
// each time its revive failed and it was written again (PopReviveService).
var ckRewriteIntervals = []int64{10, 20, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200}

// reviver is PopReviveService for one revive queue: it reads checkpoints and
// acks (both delivered through the timer near the revive time), and once a
// checkpoint's acks can no longer arrive, puts its unacked messages to the
// retry topic. Progress is the consumer offset of CID_RMQ_SYS_REVIVE_GROUP on
// the revive topic: the queue offset of the last checkpoint done, as Java
// keeps it, so either broker resumes the other's revive queue.
type reviver struct {
	s     *Service
	queue int32
	topic string
	rec   codec.Message
	// idle is set while every record of the queue is processed; then the
	// reviver sleeps until a record arrives (kick) instead of each interval.
	idle atomic.Bool
	kick chan struct{}
	// lastReviveTime is PopReviveService.currentReviveMessageTimestamp: after
	// a round, the revive time of its oldest checkpoint, or the round's end
	// when it read none (0 before the first round).
	lastReviveTime atomic.Int64
}

// reviveIdleCheck is how long a reviver with nothing to read sleeps when no
// record wakes it (a safety net).
const reviveIdleCheck = time.Minute

// kickIdle wakes an idle reviver: its queue got a record.
func (r *reviver) kickIdle() {
	if r.idle.Load() {
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
}

func newReviver(s *Service, q int32) *reviver {
	return &reviver{s: s, queue: q, topic: reviveTopic(s.h.Conf().ClusterName), kick: make(chan struct{}, 1)}
}

func (r *reviver) run(ctx context.Context) {
	interval := r.s.h.Conf().ReviveInterval
	if interval <= 0 {
		interval = time.Second
	}
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-r.kick:
			// A record arrived: read it on the usual beat, not at once.
			t.Reset(interval)
			r.idle.Store(false)
			continue
		}
		r.round(ctx)
		// Publish idleness, then look again: a record that came before the
		// flag was seen did not kick.
		r.idle.Store(true)
		if r.s.h.QueryOffset(reviveGroup, r.topic, r.queue)+1 < r.s.h.MaxOffset(r.topic, r.queue) {
			r.idle.Store(false)
			t.Reset(interval)
		} else {
			t.Reset(reviveIdleCheck)
		}
	}
}

// round reads what is new in the revive queue (bounded: reviveRoundReads
// records, reviveRoundPeriod) and revives what is due.
func (r *reviver) round(ctx context.Context) {
	// Taken before reading: what the timer delivered before it is all read below.
	horizon := r.s.h.ReviveHorizon()
	old := r.s.h.QueryOffset(reviveGroup, r.topic, r.queue)
	off := old + 1
	// Checkpoints under one merge key, in the order read: a
	// CHANGE_INVISIBLE_TIME on a POP's first message in the POP's own
	// millisecond writes a checkpoint with the key of the POP's (Java's map
	// keeps the later one and loses the rest of the POP's messages).
	cks := map[string][]*CheckPoint{}
	nCks := 0
	var endTime int64
	reads := 0
	atTail := false
	started := time.Now()
	// Records before the first checkpoint of the round are acks whose
	// checkpoints were done in earlier rounds (a checkpoint is delivered
	// before its acks): progress may pass them, so a long run of late acks
	// cannot hold the queue (Java re-reads them until a checkpoint follows).
	leading, sawCk := old, false
	defaultBroker := r.s.h.Conf().BrokerName
	for reads < reviveRoundReads && ctx.Err() == nil && time.Since(started) < reviveRoundPeriod {
		res := r.s.h.GetMessage(reviveGroup, r.topic, r.queue, off, 32, nil)
		if res == nil {
			atTail = true
			break
		}
		if len(res.Records) == 0 {
			next := res.NextBeginOffset
			status := res.Status
			res.Release()
			if (status == store.GetOffsetTooSmall || status == store.GetOffsetOverflowBadly || status == store.GetNoMatchedMessage) && next > off {
				// Trimmed or skipped: continue where the queue now starts.
				r.s.h.CommitOffset(reviveGroup, r.topic, r.queue, next-1)
				off = next
				continue
			}
			atTail = true
			break
		}
		for _, rec := range res.Records {
			reads++
			m := &r.rec
			if _, err := codec.DecodeRecord(rec, m); err != nil {
				continue
			}
			qoff := recordQueueOffset(rec)
			tags, _ := codec.PropertyValue(m.Properties, codec.PropTags)
			if tags == ckTag {
				sawCk = true
			} else if !sawCk {
				leading = qoff
			}
			switch tags {
			case ckTag:
				ck := &CheckPoint{}
				if codec.UnmarshalBody(m.Body, ck) != nil || !ck.valid() {
					continue
				}
				ck.ReviveOffset = qoff
				k := ck.mergeKey()
				cks[k] = append(cks[k], ck)
				nCks++
				r.s.counts.reviveGet.add(countKey{group: ck.CID, topic: ck.Topic, queue: r.queue, kind: kindCK})
			case ackTag, batchAckTag:
				ack := &AckMsg{}
				if codec.UnmarshalBody(m.Body, ack) != nil {
					continue
				}
				r.s.counts.reviveGet.add(countKey{group: ack.ConsumerGroup, topic: ack.Topic, queue: r.queue, kind: kindACK})
				list := cks[ack.mergeKey(defaultBroker)]
				if list == nil {
					continue // Java drops an ack without its checkpoint (enableSkipLongAwaitingAck=false)
				}
				offs := ack.AckOffsetList
				if tags == ackTag {
					offs = []int64{ack.AckOffset}
				}
				deliver, _ := codec.PropertyValue(m.Properties, codec.PropTimerDeliverMs)
				due, _ := strconv.ParseInt(deliver, 10, 64)
				for _, o := range offs {
					markAcked(list, o, due)
				}
			}
			if v, ok := codec.PropertyValue(m.Properties, codec.PropTimerDeliverMs); ok {
				if d, err := strconv.ParseInt(v, 10, 64); err == nil && d > endTime {
					endTime = d
				}
			}
		}
		off += int64(len(res.Records))
		res.Release()
	}
	if atTail && nCks > 0 {
		// Nothing more to read: the acks of checkpoints due before the timer's
		// horizon have all come out (Java moves endTime to now after 3 s idle
		// while its timer is not behind).
		endTime = max(endTime, min(time.Now().UnixMilli()-500, horizon))
	}
	// A record due late does not prove an earlier ack came out: after a
	// restart the timer delivers what fell due while down in the order it was
	// written. Only the horizon does.
	endTime = min(endTime, horizon)
	list := make([]*CheckPoint, 0, nCks)
	for _, l := range cks {
		list = append(list, l...)
	}
	slices.SortFunc(list, func(a, b *CheckPoint) int { return compareInt64(a.ReviveOffset, b.ReviveOffset) })
	if len(list) > 0 {
		r.lastReviveTime.Store(list[0].ReviveTime())
	} else {
		r.lastReviveTime.Store(time.Now().UnixMilli())
	}
	newOff := old
	for _, ck := range list {
		if ctx.Err() != nil {
			break
		}
		if endTime-ck.ReviveTime() <= ackTimeInterval+1000 {
			break
		}
		if _, ok := r.s.h.Topic(normalTopic(ck.Topic, ck.CID)); ok {
			if _, ok := r.s.h.Group(ck.CID); ok && !r.reviveOne(ctx, ck) {
				break // stopped midway: the checkpoint is read again by the next run
			}
		}
		newOff = ck.ReviveOffset
	}
	newOff = max(newOff, leading)
	if newOff > old {
		r.s.h.CommitOffset(reviveGroup, r.topic, r.queue, newOff)
	}
}

// markAcked sets o's bit in the checkpoint the ack was for: an ack is due
// when its handle's checkpoint is (popTime + invisibleTime, as Java writes
// it), so the first of the key's checkpoints due then that holds o unacked,
// else the first that holds it unacked.
func markAcked(cks []*CheckPoint, o, due int64) {
	pick := -1
	for j, ck := range cks {
		i := ck.indexOfAck(o)
		if i < 0 || i >= 32 || ck.BitMap&(1<<i) != 0 {
			continue
		}
		if ck.ReviveTime() == due {
			pick = j
			break
		}
		if pick < 0 {
			pick = j
		}
	}
	if pick >= 0 {
		cks[pick].BitMap |= 1 << cks[pick].indexOfAck(o)
	}
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// reviveOne revives ck and reports whether it is done; a checkpoint that
// panics is given up (done), not the queue's reviver (a store written by
// another broker is data too).
func (r *reviver) reviveOne(ctx context.Context, ck *CheckPoint) (done bool) {
	defer func() {
		if r.s.h.Recovered("revive checkpoint", recover()) {
			done = true
		}
	}()
	return r.revive(ctx, ck)
}

// revive puts every unacked message of ck to the retry topic; a message that
// cannot be put gets a checkpoint of its own, to be tried again later. Once
// ctx ends (demoted: the store refuses puts; or shutting down) it stops and
// reports false, without such checkpoints: ck stays unrevived and the next
// master's revive reads it again (what was put is put again: at least once).
// It stops the same way when that checkpoint cannot be written either (an
// acting slave, whose store takes no put): Java loses the message there.
//
// The messages are read as EscapeBridge.getMessageAsync reads them: from this
// broker's store when ck names its group (or none: checkpoints of old
// versions), else pulled from the master of the group it names (a checkpoint
// another group's acting slave escaped to this one's revive topic).
func (r *reviver) revive(ctx context.Context, ck *CheckPoint) bool {
	local := ck.BrokerName == "" || ck.BrokerName == r.s.h.Conf().BrokerName
	for j := 0; j < int(ck.Num); j++ {
		if ck.BitMap&(1<<j) != 0 {
			continue
		}
		if ctx.Err() != nil {
			return false
		}
		off := ck.ackOffsetByIndex(j)
		ok := false
		if local {
			res := r.s.h.GetMessage(reviveGroup, ck.Topic, ck.QueueID, off, 1, nil)
			if res != nil {
				if len(res.Records) == 0 {
					// Gone (trimmed) or never there: nothing to revive (Java: needRetry false).
					res.Release()
					continue
				}
				ok = r.reviveRetry(ck, res.Records[0])
				res.Release()
			}
		} else {
			rec, retry := r.s.h.GetRemoteMessage(ctx, ck.BrokerName, ck.Topic, ck.QueueID, off)
			if rec == nil && !retry {
				continue // the master has no such message (Java: needRetry false)
			}
			ok = rec != nil && r.reviveRetry(ck, rec)
		}
		if !ok {
			if ctx.Err() != nil || !r.rePut(ck, off) {
				return false
			}
		}
	}
	return true
}

// maxRetryTopicLen is the longest retry topic name (a group's limit).
const maxRetryTopicLen = 255

// Born and store host IPv6 bits of a record's sysFlag.
const (
	sysFlagBornV6  = 1 << 4
	sysFlagStoreV6 = 1 << 5
)

// reviveRetry is PopReviveService.reviveRetry.
func (r *reviver) reviveRetry(ck *CheckPoint, rec []byte) bool {
	var m codec.Message
	if _, err := codec.DecodeRecord(rec, &m); err != nil {
		return true // undecodable: nothing to retry
	}
	cfg := r.s.h.Conf()
	topic := ck.Topic
	if !strings.HasPrefix(topic, retryGroupPrefix) {
		topic = retryTopic(ck.Topic, ck.CID, cfg.EnableRetryTopicV2)
	}
	if len(topic) > maxRetryTopicLen {
		// A file name the store could not make (Java fails at the store).
		r.s.log.Warn("revive: retry topic name too long, message dropped", "group", ck.CID, "topic", ck.Topic)
		return true
	}
	props := m.Properties
	if _, has := codec.PropertyValue(props, propFirstPopTime); m.ReconsumeTimes == 0 || !has {
		props = codec.SetPropertyInt(props, propFirstPopTime, ck.PopTime)
	}
	flag := m.SysFlag &^ (sysFlagBornV6 | sysFlagStoreV6)
	if flag&codec.SysFlagInnerBatch != 0 {
		// An inner batch of a BatchCQ topic goes to the (simple) retry topic
		// as one plain message with the same body, as the POP first handed it
		// out; NEED_UNWRAP stays to tell the body is a batch. Java puts it
		// as it is and its store refuses an inner batch outside a BatchCQ
		// topic: the checkpoint is put back until it is dropped, and the
		// batch never comes again.
		flag &^= codec.SysFlagInnerBatch
		props = codec.DeleteProperty(codec.DeleteProperty(props, codec.PropInnerNum), codec.PropInnerBase)
	}
	if cfg.StoreHost.Addr().Is6() {
		flag |= sysFlagBornV6 | sysFlagStoreV6
	}
	out := &codec.Message{Topic: topic, QueueID: 0, Body: append([]byte(nil), m.Body...), Flag: m.Flag, SysFlag: flag,
		BornTimestamp: m.BornTimestamp, BornHost: cfg.StoreHost, StoreHost: cfg.StoreHost,
		ReconsumeTimes: m.ReconsumeTimes + 1, Properties: strings.Clone(props)}
	if _, ok := r.s.h.Topic(topic); !ok {
		r.s.h.CreateTopic(topic, retryQueueNum, 6)
		if r.s.h.QueryOffset(ck.CID, topic, 0) < 0 {
			r.s.h.CommitOffset(ck.CID, topic, 0, 0)
		}
	}
	res := r.s.h.PutMessage(context.Background(), out)
	r.s.counts.retry.add(countKey{group: ck.CID, topic: ck.Topic, status: res.Status})
	// Written counts (Java checks the append status): a SYNC_MASTER without its
	// slave answers SLAVE_NOT_AVAILABLE for a stored message, and a re-put
	// checkpoint would revive it once more.
	if !res.Status.Written() {
		r.s.log.Error("revive put to retry topic", "topic", topic, "status", res.Status)
		return false
	}
	r.s.inflight.done(ck.Topic, ck.CID, ck.QueueID, ck.PopTime, 1)
	return true
}

// rePut writes a one-message checkpoint for a message whose revive failed
// (PopReviveService.rePutCK), further invisible each time; false when it
// could not be written.
func (r *reviver) rePut(old *CheckPoint, off int64) bool {
	n := old.rePutTimes()
	if n >= len(ckRewriteIntervals) {
		r.s.log.Warn("pop checkpoint re-put too often, dropped", "topic", old.Topic, "group", old.CID, "queue", old.QueueID, "offset", off)
		return true
	}
	ck := &CheckPoint{Num: 1, PopTime: old.PopTime, InvisibleTime: old.InvisibleTime, StartOffset: off, CID: old.CID,
		Topic: old.Topic, QueueID: old.QueueID, BrokerName: old.BrokerName, RePutTimes: strconv.Itoa(n + 1)}
	ck.addDiff(0)
	if old.ReviveTime() <= time.Now().UnixMilli() {
		ck.InvisibleTime = old.InvisibleTime + ckRewriteIntervals[n]*1000
	}
	return r.s.putCheckPoint(ck, r.queue)
}
