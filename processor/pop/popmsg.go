package pop

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"rmqd/codec"
	"rmqd/remoting"
	"rmqd/store"
)

// popHeader is PopMessageRequestHeader. Strings are owned (a held POP
// outlives its request frame).
type popHeader struct {
	group, topic  string
	queueID       int32
	maxMsgNums    int32
	invisibleTime int64
	pollTime      int64
	bornTime      int64
	initMode      int32
	expType, exp  string
	order         bool
	attemptID     string
}

// reply carries what a response needs of its request after the frame is gone.
type reply struct {
	opaque        int32
	serializeType codec.SerializeType
}

func replyOf(req *codec.RemotingCommand) reply {
	return reply{opaque: req.Opaque, serializeType: req.SerializeType}
}

func (r reply) response(code int32, remark string) *codec.RemotingCommand {
	req := codec.RemotingCommand{Opaque: r.opaque, SerializeType: r.serializeType}
	return codec.NewResponse(&req, code, remark)
}

func parsePopHeader(req *codec.RemotingCommand) (popHeader, error) {
	var r codec.PopMessageRequestHeader
	err := codec.DecodeHeader(req.Ext, &r)
	h := popHeader{group: r.ConsumerGroup, topic: r.Topic, queueID: r.QueueID, maxMsgNums: r.MaxMsgNums,
		invisibleTime: r.InvisibleTime, pollTime: r.PollTime, bornTime: r.BornTime, initMode: r.InitMode,
		expType: r.ExpType, exp: r.Exp, order: r.Order, attemptID: r.AttemptID}
	// PopMessageProcessor fills a missing or zero bornTime with now.
	if h.bornTime == 0 {
		h.bornTime = time.Now().UnixMilli()
	}
	if err != nil {
		return h, err
	}
	h.group, h.topic = strings.Clone(h.group), strings.Clone(h.topic)
	h.expType, h.exp, h.attemptID = strings.Clone(h.expType), strings.Clone(h.exp), strings.Clone(h.attemptID)
	if h.queueID < 0 {
		h.queueID = -1
	}
	return h, nil
}

// PopResponseHeader is PopMessageResponseHeader.
type PopResponseHeader struct {
	PopTime         int64
	InvisibleTime   int64
	ReviveQid       int32
	RestNum         int64
	StartOffsetInfo string
	MsgOffsetInfo   string
	OrderCountInfo  string
}

// WriteExt writes the fields; null strings are left out as Java does.
func (h *PopResponseHeader) WriteExt(w *codec.ExtWriter) {
	w.Int64("popTime", h.PopTime)
	w.Int64("invisibleTime", h.InvisibleTime)
	w.Int32("reviveQid", h.ReviveQid)
	w.Int64("restNum", h.RestNum)
	w.StringIfSet("startOffsetInfo", h.StartOffsetInfo)
	w.StringIfSet("msgOffsetInfo", h.MsgOffsetInfo)
	w.StringIfSet("orderCountInfo", h.OrderCountInfo)
}

func (s *Service) handlePop(_ context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	h, err := parsePopHeader(req)
	if err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	return s.pop(c, &h, replyOf(req)), nil
}

// popState gathers one POP's messages across queues.
type popState struct {
	h *popHeader
	// What the queues read of the config: a pointer to the POP's copy of it
	// would move that copy to the heap on every POP.
	brokerName  string
	actualRetry bool  // popResponseReturnActualRetryTopic
	inflightOn  bool  // enablePopMessageThreshold
	inflightCap int64 // popInflightMessageThreshold
	filter      store.MessageFilter
	reviveQid   int32
	descending  bool // priorityOrderAsc: topics are read from their last queue down
	popTime     int64
	body        []byte
	count       int32
	restNum     int64
	start       offsetInfo
	msgs        offsetInfo
	orders      offsetInfo
	rec         codec.Message
}

// pop runs one POP; nil means the request is held for long polling (or
// answered already).
func (s *Service) pop(c remoting.Conn, h *popHeader, r reply) *codec.RemotingCommand {
	cfg := s.h.Conf()
	now := time.Now().UnixMilli()
	if now-h.bornTime-h.pollTime > timeoutTooMuchMs {
		return r.response(codec.RespPollingTimeout, fmt.Sprintf("the broker[%s] pop message is timeout too much", cfg.BrokerIP1))
	}
	if !cfg.Readable {
		return r.response(codec.RespNoPermission, fmt.Sprintf("the broker[%s] pop message is forbidden", cfg.BrokerIP1))
	}
	if h.maxMsgNums > maxPopMsgNums {
		return r.response(codec.RespInvalidParameter, fmt.Sprintf("the broker[%s] pop message's num is greater than 32", cfg.BrokerIP1))
	}
	if !cfg.TimerWheelEnable {
		return r.response(codec.RespSystemError, fmt.Sprintf("the broker[%s] pop message is forbidden because timerWheelEnable is false", cfg.BrokerIP1))
	}
	tc, ok := s.h.Topic(h.topic)
	if !ok {
		return r.response(codec.RespTopicNotExist, fmt.Sprintf("topic[%s] not exist, apply first please!", h.topic))
	}
	if tc.Perm&permRead == 0 {
		return r.response(codec.RespNoPermission, "the topic["+h.topic+"] peeking message is forbidden")
	}
	if h.queueID >= tc.ReadQueueNums {
		return r.response(codec.RespInvalidParameter, fmt.Sprintf("queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d] consumer:[%s]",
			h.queueID, h.topic, tc.ReadQueueNums, c.RemoteAddr()))
	}
	g, ok := s.h.Group(h.group)
	if !ok {
		return r.response(codec.RespSubscriptionGroupNotExist, fmt.Sprintf("subscription group [%s] does not exist", h.group))
	}
	if !g.ConsumeEnable {
		return r.response(codec.RespNoPermission, "subscription group no permission, "+h.group)
	}
	// Java compensates before building the filter, so a group with a broken expression is still known.
	s.h.Compensate(h.group, h.topic, retryTopic(h.topic, h.group, cfg.EnableRetryTopicV2), h.expType, h.exp)
	st := &popState{h: h, popTime: now, brokerName: cfg.BrokerName,
		actualRetry: cfg.PopResponseReturnActualRetryTopic,
		inflightOn:  cfg.EnablePopMessageThreshold, inflightCap: cfg.PopInflightMessageThreshold}
	if h.exp != "" {
		f, err := s.h.NewFilter(h.topic, h.expType, h.exp)
		if err != nil {
			return r.response(codec.RespSubscriptionParseFailed, "parse the consumer's subscription failed")
		}
		st.filter = f
	}
	randomQ := rand.IntN(100)
	if h.order {
		st.reviveQid = orderReviveQueue
	} else {
		s.ckMu.Lock()
		st.reviveQid = int32(s.ckNum % int64(max(cfg.ReviveQueueNum, 1)))
		s.ckNum++
		s.ckMu.Unlock()
	}
	// Java 5.5: a priority topic's POP reads its queues from the highest
	// priority down, unrotated, for priority.factor percent of the group's POPs.
	priority := tc.Priority && !h.order && randomQ < g.PriorityFactor
	retryShare := cfg.PopFromRetryProbability
	if priority {
		retryShare = cfg.PopFromRetryProbabilityForPriority
	}
	needRetry := randomQ < retryShare
	needRetryV1 := cfg.EnableRetryTopicV2 && cfg.RetrieveFromRetryV1 && randomQ%2 == 0
	if priority {
		randomQ = 0
	}
	st.descending = cfg.PriorityOrderAsc
	retry := retryTopic(h.topic, h.group, cfg.EnableRetryTopicV2)
	if needRetryV1 {
		retry = retryTopicV1(h.topic, h.group)
	}
	if needRetry && !h.order {
		s.popFromTopic(st, retry, true, randomQ)
	}
	if h.queueID < 0 {
		s.popFromTopic(st, h.topic, false, randomQ)
	} else {
		s.popFromQueue(st, h.topic, false, h.queueID)
	}
	if !needRetry && st.count < h.maxMsgNums && !h.order {
		s.popFromTopic(st, retry, true, randomQ)
	}

	var code int32 = codec.RespSuccess
	remark := "FOUND"
	if st.count > 0 {
		if st.restNum > 0 {
			// Another POP of the same key may take the rest.
			s.poll.notifyKey(h.topic, h.group, h.queueID)
		}
	} else {
		switch s.poll.hold(c, h, r) {
		case pollSuspended:
			if st.restNum > 0 {
				s.poll.notifyKey(h.topic, h.group, h.queueID)
			}
			return nil
		case pollFull:
			code = codec.RespPollingFull
		default:
			code = codec.RespPollingTimeout
		}
		remark = "NO_MESSAGE_IN_QUEUE"
	}
	resp := r.response(code, remark)
	hdr := &PopResponseHeader{PopTime: st.popTime, InvisibleTime: h.invisibleTime, ReviveQid: st.reviveQid,
		RestNum: st.restNum, StartOffsetInfo: st.start.String(), MsgOffsetInfo: st.msgs.String()}
	if h.order {
		hdr.OrderCountInfo = st.orders.String()
	}
	resp.CustomHeader = hdr
	if code == codec.RespSuccess {
		resp.Body = st.body
	}
	return resp
}

const permRead = 1 << 2

func (s *Service) popFromTopic(st *popState, topic string, isRetry bool, randomQ int) {
	tc, ok := s.h.Topic(topic)
	if !ok || tc.ReadQueueNums <= 0 {
		return
	}
	n := tc.ReadQueueNums
	for i := int32(0); i < n; i++ {
		// Java's order for every topic; unrotated (randomQ 0) it is a
		// priority topic's, from the highest priority.
		idx := i
		if st.descending {
			idx = n - 1 - i
		}
		s.popFromQueue(st, topic, isRetry, (idx+int32(randomQ))%n)
	}
}

// popOffset is PopMessageProcessor.getPopOffset (there is no merge buffer);
// a reset taken clears the queue's batch in order (the POP's or the lite one).
func (s *Service) popOffset(order *OrderInfo, topic, group string, queueID, initMode int32, init, checkReset bool) int64 {
	off := s.h.QueryOffset(group, topic, queueID)
	if off < 0 {
		off = s.initOffset(topic, group, queueID, initMode, init)
	}
	if checkReset {
		if reset, ok := s.h.TakeReset(group, topic, queueID); ok {
			order.ClearBlock(topic, group, queueID)
			s.h.CommitOffset(group, topic, queueID, reset)
			return reset
		}
	}
	return off
}

// wrongPopOffset and wrongLiteOffset are the read statuses after which a POP
// (Java's PopMessageProcessor) and a lite POP (PopLiteMessageProcessor's
// correctOffset) take the store's next offset as the group's and read again.
func wrongPopOffset(st store.GetStatus) bool {
	return st == store.GetOffsetTooSmall || st == store.GetOffsetOverflowBadly || st == store.GetOffsetFoundNull
}

func wrongLiteOffset(st store.GetStatus) bool {
	return wrongPopOffset(st) || st == store.GetNoMatchedMessage || st == store.GetMessageWasRemoving ||
		st == store.GetNoMatchedLogicQueue
}

// getFrom reads a queue from the group's offset off; when the store says the
// offset is wrong (wrong), the group's offset becomes the store's next one
// and the read is made again from there. It answers the read (nil when the
// store had none) and the offset it was made from.
func (s *Service) getFrom(group, topic string, queueID int32, off int64, max int32, f store.MessageFilter,
	wrong func(store.GetStatus) bool) (*store.GetResult, int64) {
	res := s.h.GetMessage(group, topic, queueID, off, max, f)
	if res == nil || !wrong(res.Status) {
		return res, off
	}
	res.Release()
	off = res.NextBeginOffset
	s.h.CommitOffset(group, topic, queueID, off)
	return s.h.GetMessage(group, topic, queueID, off, max, f), off
}

// initModeMax is ConsumeInitMode.MAX (MIN is 0).
const initModeMax = 1

// initOffset is getInitOffset: MIN (0) and retry topics start at the queue's
// first message; MAX starts at the last one, or at 0 while the queue still
// holds its first message (initPopOffsetByCheckMsgInMem: rmqd counts a queue
// that was never trimmed as in memory).
func (s *Service) initOffset(topic, group string, queueID, initMode int32, init bool) int64 {
	var off int64
	minOff := s.h.MinOffset(topic, queueID)
	if initMode == 0 || strings.HasPrefix(topic, retryGroupPrefix) {
		off = minOff
	} else if minOff <= 0 && s.h.MaxOffset(topic, queueID) > 0 {
		off = 0
	} else {
		off = max(s.h.MaxOffset(topic, queueID)-1, 0)
	}
	if init {
		s.h.CommitOffset(group, topic, queueID, off)
	}
	return off
}

// recordQueueOffset reads QUEUEOFFSET of a commitlog record.
func recordQueueOffset(rec []byte) int64 {
	if len(rec) < 28 {
		return -1
	}
	return int64(binary.BigEndian.Uint64(rec[20:28]))
}

func (s *Service) popFromQueue(st *popState, topic string, isRetry bool, queueID int32) {
	h := st.h
	key := lockKey(topic, h.group, queueID)
	off := s.popOffset(s.order, topic, h.group, queueID, h.initMode, false, false)
	if !s.locks.tryLock(key) {
		if !h.order {
			st.restNum += s.h.MaxOffset(topic, queueID) - off
		}
		return
	}
	defer s.locks.unlock(key)
	if st.inflightOn && s.popShouldStop(st.inflightCap, topic, h.group, queueID) {
		s.log.Warn("too many messages in flight, queue not popped", "topic", topic, "group", h.group, "queue", queueID)
		st.restNum += s.h.MaxOffset(topic, queueID) - off
		return
	}
	off = s.popOffset(s.order, topic, h.group, queueID, h.initMode, true, true)
	if h.order {
		if s.order.CheckBlock(h.attemptID, topic, h.group, queueID, h.invisibleTime) {
			return
		}
		s.inflight.clear(topic, h.group, queueID)
	}
	if st.count >= h.maxMsgNums {
		st.restNum += s.h.MaxOffset(topic, queueID) - off
		return
	}
	res, off := s.getFrom(h.group, topic, queueID, off, h.maxMsgNums-st.count, st.filter, wrongPopOffset)
	if res == nil {
		st.restNum += s.h.MaxOffset(topic, queueID) - off
		return
	}
	defer res.Release()
	if len(res.Records) > 0 {
		offs := make([]int64, len(res.Records))
		for i, rec := range res.Records {
			offs[i] = recordQueueOffset(rec)
		}
		if h.order {
			s.order.Update(h.attemptID, isRetry, topic, h.group, queueID, st.popTime, h.invisibleTime, offs, &st.orders)
			s.h.CommitOffset(h.group, topic, queueID, off)
		} else {
			ck := &CheckPoint{Num: int8(len(offs)), PopTime: st.popTime, InvisibleTime: h.invisibleTime,
				StartOffset: off, CID: h.group, Topic: topic, QueueID: queueID, BrokerName: s.h.Conf().BrokerName,
				Diff: make([]int32, 0, len(offs))}
			for _, o := range offs {
				ck.addDiff(int32(o - off))
			}
			if !s.putCheckPoint(ck, st.reviveQid) {
				st.restNum += int64(len(offs) + res.InnerMessages) // messages, as Java's getMessageCount
				return
			}
			// Java commits once the checkpoint is stored (PopBufferMergeService.scanCommitOffset).
			s.h.CommitOffset(h.group, topic, queueID, res.NextBeginOffset)
		}
		st.start.start(topic, queueID, off)
		st.msgs.msgs(topic, queueID, offs)
	} else if res.NextBeginOffset > -1 {
		switch res.Status {
		case store.GetNoMatchedMessage, store.GetOffsetFoundNull, store.GetMessageWasRemoving, store.GetNoMatchedLogicQueue:
			s.h.CommitOffset(h.group, topic, queueID, res.NextBeginOffset)
		}
	}
	st.restNum += res.MaxOffset - res.NextBeginOffset
	s.inflight.add(topic, h.group, queueID, int64(len(res.Records)))
	brokerName := st.brokerName
	// Grown once to what this queue adds (a retry record grows by its POP_CK property, appended later):
	// appending record by record reallocated the body ~4x over its size.
	need := 0
	for _, rec := range res.Records {
		need += len(rec)
	}
	st.body = slices.Grow(st.body, need)
	for _, rec := range res.Records {
		st.count++
		if !isRetry || st.actualRetry {
			st.body = append(st.body, rec...)
			continue
		}
		// A retry message goes out under its original topic with its receipt
		// handle (unless popResponseReturnActualRetryTopic).
		m := &st.rec
		if _, err := codec.DecodeRecord(rec, m); err != nil {
			s.log.Warn("decode retry message", "topic", topic, "err", err)
			continue
		}
		props := m.Properties
		if _, has := codec.PropertyValue(props, propPopCK); !has {
			props = codec.SetProperty(props, propPopCK, BuildExtraInfo(off, st.popTime, h.invisibleTime, st.reviveQid,
				m.Topic, brokerName, m.QueueID, m.QueueOffset))
		}
		out := *m
		out.Topic = h.topic
		out.Properties = props
		n := codec.RecordSize(&out)
		start := len(st.body)
		st.body = append(st.body, make([]byte, n)...)
		codec.EncodeRecord(st.body[start:], &out)
	}
}

// putCheckPoint writes a checkpoint to the revive topic, delivered by the
// timer one second before its revive time (PopMessageProcessor.buildCkMsg).
func (s *Service) putCheckPoint(ck *CheckPoint, reviveQid int32) bool {
	if !s.isReviveQueue(reviveQid) {
		return false
	}
	ck.ReviveTimeOut = ck.ReviveTime()
	body, err := jsonMarshal(ck)
	if err != nil {
		return false
	}
	msg := s.reviveMessage(body, reviveQid, ckTag, ck.uniqueID(), ck.ReviveTime()-ackTimeInterval)
	res := s.h.PutMessage(context.Background(), msg)
	s.counts.revivePut.add(countKey{group: ck.CID, topic: ck.Topic, kind: kindCK, status: res.Status})
	if !res.Status.Written() {
		s.log.Error("put pop checkpoint", "status", res.Status, "topic", ck.Topic, "queue", ck.QueueID)
		return false
	}
	return true
}

// isReviveQueue says whether a revive queue id (from a client's extraInfo) is
// one of the broker's: any other would be a new queue of the revive topic, a
// file and a table entry per id (Java writes it as given).
func (s *Service) isReviveQueue(q int32) bool { return q >= 0 && q < s.h.Conf().ReviveQueueNum }

// reviveMessage builds a revive topic record: tags, UNIQ_KEY and the timer
// delivery time as Java writes them.
func (s *Service) reviveMessage(body []byte, reviveQid int32, tag, uniq string, deliverMs int64) *codec.Message {
	cfg := s.h.Conf()
	e := codec.EditProperties("")
	e.Set(codec.PropTags, tag)
	e.SetInt(codec.PropTimerDeliverMs, deliverMs)
	e.Set(propUniqKeyIdx, uniq)
	now := time.Now().UnixMilli()
	return &codec.Message{Topic: s.reviveTopicNow(cfg.ClusterName), QueueID: reviveQid, Body: body,
		BornTimestamp: now, BornHost: cfg.StoreHost, StoreHost: cfg.StoreHost, Properties: e.String()}
}
