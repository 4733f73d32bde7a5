package pop

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/remoting"
	"rmqd/store"
)

// Lite topics (Java 5.5): a message sent to a message.type=LITE topic with a
// __LITE_TOPIC property is also dispatched to that lite topic's queue,
// %LMQ%$parent$lite (the LMQ dispatch does it). A group bound to the topic
// (lite.bind.topic) consumes each lite topic its clients subscribed to
// (LITE_SUBSCRIPTION_CTL) in order, one batch in flight per queue, through
// POP_LITE_MESSAGE and ACK_MESSAGE / CHANGE_MESSAGE_INVISIBLETIME naming the
// liteTopic. The order state is in memory only, as Java's
// MemoryConsumerOrderInfoManager: acked progress is the group's offset.

// liteHeader is PopLiteMessageRequestHeader, owned (a held POP outlives its frame).
type liteHeader struct {
	clientID, group, topic, attemptID string
	maxNum                            int32
	invisibleTime, pollTime, bornTime int64
}

// LitePopResponseHeader is PopLiteMessageResponseHeader: one batch may span
// several lite topics, so there are no start or message offsets.
type LitePopResponseHeader struct {
	PopTime        int64
	InvisibleTime  int64
	ReviveQid      int32
	OrderCountInfo string
}

// WriteExt writes the fields; a null orderCountInfo is left out as Java does.
func (h *LitePopResponseHeader) WriteExt(w *codec.ExtWriter) {
	w.Int64("popTime", h.PopTime)
	w.Int64("invisibleTime", h.InvisibleTime)
	w.Int32("reviveQid", h.ReviveQid)
	w.StringIfSet("orderCountInfo", h.OrderCountInfo)
}

func (s *Service) handlePopLite(_ context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var r codec.PopLiteMessageRequestHeader
	if err := codec.DecodeHeader(req.Ext, &r); err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	h := &liteHeader{clientID: strings.Clone(r.ClientID), group: strings.Clone(r.ConsumerGroup), topic: strings.Clone(r.Topic),
		attemptID: strings.Clone(r.AttemptID), maxNum: r.MaxMsgNum, invisibleTime: r.InvisibleTime,
		pollTime: r.PollTime, bornTime: r.BornTime}
	// PopLiteMessageProcessor puts now in a missing or zero bornTime.
	if h.bornTime == 0 {
		h.bornTime = time.Now().UnixMilli()
	}
	return s.popLite(c, h, replyOf(req)), nil
}

// popLite runs one POP_LITE_MESSAGE (PopLiteMessageProcessor); nil means
// the request is held for long polling.
func (s *Service) popLite(c remoting.Conn, h *liteHeader, r reply) *codec.RemotingCommand {
	cfg := s.h.Conf()
	now := time.Now().UnixMilli()
	if now-h.bornTime-h.pollTime > timeoutTooMuchMs {
		return liteRefusal(r, codec.RespPollingTimeout, fmt.Sprintf("the broker[%s] pop message is timeout too much", cfg.BrokerIP1))
	}
	if !cfg.Readable {
		return liteRefusal(r, codec.RespNoPermission, fmt.Sprintf("the broker[%s] pop message is forbidden", cfg.BrokerIP1))
	}
	if h.maxNum > maxPopMsgNums {
		return liteRefusal(r, codec.RespInvalidParameter, fmt.Sprintf("the broker[%s] pop message's num is greater than 32", cfg.BrokerIP1))
	}
	tc, ok := s.h.Topic(h.topic)
	if !ok {
		return liteRefusal(r, codec.RespTopicNotExist, fmt.Sprintf("topic [%s] not exist, apply first please! %s", h.topic, faqApplyTopic))
	}
	if tc.Perm&permRead == 0 {
		return liteRefusal(r, codec.RespNoPermission, fmt.Sprintf("the topic [%s] peeking message is forbidden", h.topic))
	}
	if !tc.Lite {
		return liteRefusal(r, codec.RespInvalidParameter, fmt.Sprintf("the topic [%s] message type not match", h.topic))
	}
	g, ok := s.h.Group(h.group)
	if !ok {
		return liteRefusal(r, codec.RespSubscriptionGroupNotExist, fmt.Sprintf("subscription group [%s] not exist, %s", h.group, faqGroupNotExist))
	}
	if !g.ConsumeEnable {
		return liteRefusal(r, codec.RespNoPermission, "subscription group no permission, "+h.group)
	}
	if g.LiteBindTopic != h.topic {
		return liteRefusal(r, codec.RespInvalidParameter, "subscription bind topic not match, "+h.group)
	}
	var body []byte
	var counts []string
	total := int32(0)
	qs, marks := s.lite.queuesOf(h.clientID, h.group, h.topic)
	var empty []string
	var emptyMarks []uint64
	for i, q := range qs {
		if total >= h.maxNum {
			break
		}
		n, info, none := s.popLiteQueue(h, q, now, h.maxNum-total, &body)
		if n == 0 {
			if none && marks != nil {
				empty, emptyMarks = append(empty, q), append(emptyMarks, marks[i])
			}
			continue
		}
		total += n
		counts = append(counts, info)
	}
	s.lite.settleWild(h.topic, h.group, empty, emptyMarks)
	var code int32 = codec.RespSuccess
	remark := "FOUND"
	if total == 0 {
		remark = "NO_MESSAGE_IN_QUEUE"
		switch s.poll.holdLite(c, h, r) {
		case pollSuspended:
			return nil
		case pollFull:
			code = codec.RespPollingFull
		default:
			code = codec.RespPollingTimeout
		}
	}
	resp := r.response(code, remark)
	resp.CustomHeader = &LitePopResponseHeader{PopTime: now, InvisibleTime: h.invisibleTime, ReviveQid: orderReviveQueue,
		OrderCountInfo: strings.Join(counts, ";")}
	if code == codec.RespSuccess {
		resp.Body = body
	}
	return resp
}

// liteRefusal answers a POP_LITE_MESSAGE with Java's header of zeros: the
// 5.5 client reads popTime, invisibleTime and reviveQid whatever the code.
func liteRefusal(r reply, code int32, remark string) *codec.RemotingCommand {
	resp := r.response(code, remark)
	resp.CustomHeader = &LitePopResponseHeader{}
	return resp
}

// popLiteQueue is popLiteTopic: at most maxNum messages of one lite topic's
// queue for the group, unless a batch of it is still in flight. It appends
// the records to body and answers how many, with their order count info;
// none when the queue had nothing to read (not when it was busy or blocked).
func (s *Service) popLiteQueue(h *liteHeader, lmq string, popTime int64, maxNum int32, body *[]byte) (n int32, info string, none bool) {
	if s.h.MaxOffset(lmq, 0) <= 0 {
		return 0, "", true // no such queue yet (isLmqExist)
	}
	key := lockKey(lmq, h.group, 0)
	if !s.locks.tryLock(key) {
		return 0, "", false
	}
	defer s.locks.unlock(key)
	if s.liteOrder.CheckBlock(h.attemptID, lmq, h.group, 0, h.invisibleTime) {
		return 0, "", false
	}
	// Java's getPopOffset with ConsumeInitMode.MAX: a new subscription starts at the end.
	off := s.popOffset(s.liteOrder, lmq, h.group, 0, initModeMax, true, true)
	res, off := s.getFrom(h.group, lmq, 0, off, maxNum, nil, wrongLiteOffset)
	if res == nil {
		return 0, "", true
	}
	defer res.Release()
	if res.Status != store.GetFound || len(res.Records) == 0 {
		return 0, "", true
	}
	offs := make([]int64, len(res.Records))
	for i, rec := range res.Records {
		offs[i] = lmqQueueOffset(rec, lmq, off+int64(i))
	}
	var oi offsetInfo
	s.liteOrder.Update(h.attemptID, false, lmq, h.group, 0, popTime, h.invisibleTime, offs, &oi)
	need := 0
	for _, rec := range res.Records {
		need += len(rec)
	}
	*body = slices.Grow(*body, need)
	for _, rec := range res.Records {
		*body = append(*body, rec...)
	}
	return int32(len(res.Records)), liteOrderCount(oi.String(), len(res.Records)), false
}

// lmqQueueOffset reads a record's offset in queue lmq from its
// INNER_MULTI_QUEUE_OFFSET (the record's own QUEUEOFFSET is its parent
// topic's); def when the properties do not say.
func lmqQueueOffset(rec []byte, lmq string, def int64) int64 {
	var m codec.Message
	if _, err := codec.DecodeRecord(rec, &m); err != nil {
		return def
	}
	return lmqOffsetIn(m.Properties, lmq, def)
}

// lmqOffsetIn reads the offset in queue lmq from a message's properties.
func lmqOffsetIn(props, lmq string, def int64) int64 {
	names, _ := codec.PropertyValue(props, codec.PropInnerMultiDispatch)
	offs, _ := codec.PropertyValue(props, codec.PropInnerMultiQueueOffset)
	ns, os := strings.Split(names, codec.LMQDispatchSeparator), strings.Split(offs, codec.LMQDispatchSeparator)
	for i, n := range ns {
		if n == lmq && i < len(os) {
			if v, err := strconv.ParseInt(os[i], 10, 64); err == nil {
				return v
			}
		}
	}
	return def
}

// liteOrderCount is transformOrderCountInfo: one consume count per message.
// The order info wrote "qo" entries for the offsets delivered before and a
// last entry for the queue; the queue's entry is dropped, and with no
// per-offset entries its count (or 0) is repeated for every message.
func liteOrderCount(info string, n int) string {
	if info == "" {
		return strings.TrimSuffix(strings.Repeat("0;", n), ";")
	}
	if i := strings.LastIndexByte(info, ';'); i >= 0 {
		return info[:i]
	}
	count := "0"
	if f := strings.Split(info, " "); len(f) == 3 {
		count = f[2]
	}
	return strings.TrimSuffix(strings.Repeat(count+";", n), ";")
}

// ackLite is AckMessageProcessor.ackLite: the acked offset of the lite
// topic's queue frees it (commitAndNext) and moves the group's offset. nil
// when the ack names no lite topic.
func (s *Service) ackLite(req *codec.RemotingCommand, h *ackHeader, liteTopic string) *codec.RemotingCommand {
	if isBlank(liteTopic) {
		return nil
	}
	if g, ok := s.h.Group(h.group); !ok || g.LiteBindTopic != h.topic {
		return codec.NewResponse(req, codec.RespInvalidParameter, "group type or bind topic not match.")
	}
	lmq := compat.LiteLMQ(h.topic, liteTopic)
	if h.offset > s.h.MaxOffset(lmq, 0) {
		return codec.NewResponse(req, codec.RespNoMessage, "ack offset illegal.")
	}
	ei, bad := parseHandle(req, h.extraInfo)
	if bad != nil {
		return bad
	}
	if h.queueID != 0 || ei.ReviveQid != orderReviveQueue {
		return codec.NewResponse(req, codec.RespInvalidParameter, "ack queue illegal.")
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	key, _, ok := s.lockAhead(lmq, h.group, 0, h.offset)
	if !ok {
		return resp
	}
	defer s.locks.unlock(key)
	next := s.liteOrder.CommitAndNext(lmq, h.group, 0, h.offset, ei.PopTime)
	if next == -1 {
		return codec.NewResponse(req, codec.RespMessageIllegal, "ack offset illegal.")
	}
	if next > -1 {
		if !s.h.HasReset(h.group, lmq, 0) {
			s.h.CommitOffset(h.group, lmq, 0, next)
		}
		if !s.liteOrder.CheckBlock("", lmq, h.group, 0, ei.InvisibleTime) {
			s.liteArriving(lmq)
		}
	}
	return resp
}

// changeInvisibleLite is processChangeInvisibleTimeForLite: a lite message's
// queue stays blocked until the new time (suspend: the whole batch). nil
// when the request names no lite topic.
func (s *Service) changeInvisibleLite(req *codec.RemotingCommand, h *changeHeader, liteTopic string, suspend bool) *codec.RemotingCommand {
	if isBlank(liteTopic) {
		return nil
	}
	lmq := compat.LiteLMQ(h.topic, liteTopic)
	if h.offset > s.h.MaxOffset(lmq, 0) {
		return codec.NewResponse(req, codec.RespNoMessage, "")
	}
	ei, bad := parseHandle(req, h.extraInfo)
	if bad != nil {
		return bad
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	hdr := &ChangeInvisibleResponseHeader{}
	resp.CustomHeader = hdr
	key, _, ok := s.lockAhead(lmq, h.group, 0, h.offset)
	if !ok {
		return resp
	}
	defer s.locks.unlock(key)
	next := time.Now().UnixMilli() + h.invisibleTime
	if suspend {
		s.liteOrder.Suspend(lmq, h.group, 0, ei.PopTime, next)
	} else {
		s.liteOrder.UpdateNextVisibleTime(lmq, h.group, 0, h.offset, ei.PopTime, next)
	}
	hdr.InvisibleTime, hdr.PopTime, hdr.ReviveQid = next-ei.PopTime, ei.PopTime, ei.ReviveQid
	return resp
}

// liteTopicOfHandle finds the lite topic of a CHANGE_MESSAGE_INVISIBLETIME
// that names none. Client-java 5.2 sends none on a nack, nor does the 5.5
// proxy when it renews a handle while the listener runs, and Java then takes
// the ordinary path, where they change nothing: a slow listener's message is
// handed out again at the first invisible time's end. rmqd reads the lite
// topic from the message the handle names (the proxy's handle ends with its
// commitlog offset): a handle of the parent topic's queue 0 and the orderly
// revive queue, whose message is of that parent and sits at that offset of
// its lite topic's queue.
func (s *Service) liteTopicOfHandle(h *ackHeader) string {
	if h.queueID != 0 {
		return ""
	}
	if tc, ok := s.h.Topic(h.topic); !ok || !tc.Lite {
		return ""
	}
	ei, err := ParseExtraInfo(h.extraInfo)
	if err != nil || ei.Fields < 9 || ei.ReviveQid != orderReviveQueue {
		return ""
	}
	clOff, err := strconv.ParseInt(h.extraInfo[strings.LastIndexByte(h.extraInfo, ' ')+1:], 10, 64)
	if err != nil || clOff < 0 {
		return ""
	}
	m := s.h.MessageAt(clOff)
	if m == nil || m.Topic != h.topic {
		return ""
	}
	lite, _ := codec.PropertyValue(m.Properties, codec.PropLiteTopic)
	lmq := compat.LiteLMQ(h.topic, lite)
	if lmq == "" {
		return ""
	}
	if lmqOffsetIn(m.Properties, lmq, -1) != h.offset {
		return ""
	}
	return lite
}

// liteArriving wakes a held POP_LITE_MESSAGE of each client subscribed to
// the lite topic's queue, and marks it for its parent's wildcard groups.
func (s *Service) liteArriving(lmq string) {
	if s.lite.wilds.Load() > 0 {
		if parent, _, ok := compat.SplitLiteLMQ(lmq); ok {
			s.lite.markDirty(parent, "", []string{lmq})
		}
	}
	if !s.poll.active.Load() {
		return
	}
	for _, cg := range s.lite.subscribers(lmq) {
		s.poll.notifyLite(cg[0], cg[1])
	}
}

// The FAQ links Java's remarks end with (FAQUrl.suggestTodo).
const (
	faqApplyTopic    = "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."
	faqGroupNotExist = faqApplyTopic
)
