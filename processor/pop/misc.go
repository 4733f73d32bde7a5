package pop

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"rmqd/codec"
	"rmqd/remoting"
	"rmqd/store"
)

// checkRead runs the checks NOTIFICATION, POLLING_INFO and PEEK_MESSAGE share.
func (s *Service) checkRead(c remoting.Conn, r reply, topic, group string, queueID int32, what string) (Topic, *codec.RemotingCommand) {
	cfg := s.h.Conf()
	if !cfg.Readable {
		return Topic{}, r.response(codec.RespNoPermission, fmt.Sprintf("the broker[%s] %s is forbidden", cfg.BrokerIP1, what))
	}
	tc, ok := s.h.Topic(topic)
	if !ok {
		return tc, r.response(codec.RespTopicNotExist, fmt.Sprintf("topic[%s] not exist, apply first please!", topic))
	}
	if tc.Perm&permRead == 0 {
		return tc, r.response(codec.RespNoPermission, "the topic["+topic+"] peeking message is forbidden")
	}
	if queueID >= tc.ReadQueueNums {
		return tc, r.response(codec.RespInvalidParameter, fmt.Sprintf("queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d] consumer:[%s]",
			queueID, topic, tc.ReadQueueNums, c.RemoteAddr()))
	}
	g, ok := s.h.Group(group)
	if !ok {
		return tc, r.response(codec.RespSubscriptionGroupNotExist, fmt.Sprintf("subscription group [%s] does not exist", group))
	}
	if !g.ConsumeEnable {
		return tc, r.response(codec.RespNoPermission, "subscription group no permission, "+group)
	}
	return tc, nil
}

// NotificationResponseHeader is Java's.
type NotificationResponseHeader struct{ HasMsg, PollingFull bool }

// WriteExt writes both flags.
func (h *NotificationResponseHeader) WriteExt(w *codec.ExtWriter) {
	w.Bool("hasMsg", h.HasMsg)
	w.Bool("pollingFull", h.PollingFull)
}

func (s *Service) handleNotification(_ context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var r codec.NotificationRequestHeader
	err := codec.DecodeHeader(req.Ext, &r)
	h := popHeader{group: r.ConsumerGroup, topic: r.Topic, queueID: r.QueueID, pollTime: r.PollTime,
		bornTime: r.BornTime, order: r.Order, attemptID: r.AttemptID}
	if h.bornTime == 0 {
		h.bornTime = time.Now().UnixMilli()
	}
	if err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	h.group, h.topic, h.attemptID = strings.Clone(h.group), strings.Clone(h.topic), strings.Clone(h.attemptID)
	if h.queueID < 0 {
		h.queueID = -1
	}
	return s.notification(c, &h, replyOf(req)), nil
}

// notification is NotificationProcessor: does the group have something to
// pop, waiting up to pollTime for it.
func (s *Service) notification(c remoting.Conn, h *popHeader, r reply) *codec.RemotingCommand {
	tc, resp := s.checkRead(c, r, h.topic, h.group, h.queueID, "peeking message")
	if resp != nil {
		return resp
	}
	cfg := s.h.Conf()
	randomQ := rand.IntN(100)
	needRetry := randomQ%5 == 0
	retryTopics := []string{retryTopic(h.topic, h.group, cfg.EnableRetryTopicV2)}
	if cfg.EnableRetryTopicV2 && cfg.RetrieveFromRetryV1 {
		retryTopics = append(retryTopics, retryTopicV1(h.topic, h.group))
	}
	hasRetry := func() bool {
		for _, t := range retryTopics {
			if s.hasMsgInTopic(t, randomQ, h) {
				return true
			}
		}
		return false
	}
	has := needRetry && hasRetry()
	if !has {
		if h.queueID < 0 {
			for i := int32(0); i < tc.ReadQueueNums && !has; i++ {
				has = s.hasMsgInQueue(h.topic, h, (int32(randomQ)+i)%tc.ReadQueueNums)
			}
		} else {
			has = s.hasMsgInQueue(h.topic, h, h.queueID)
		}
		if !needRetry && !has {
			has = hasRetry()
		}
	}
	hdr := &NotificationResponseHeader{HasMsg: has}
	if !has {
		switch s.poll.park(&heldPop{conn: c, h: *h, r: r, expired: h.bornTime + h.pollTime, notify: true}) {
		case pollSuspended:
			return nil
		case pollFull:
			hdr.PollingFull = true
		}
	}
	resp = r.response(codec.RespSuccess, "")
	resp.CustomHeader = hdr
	return resp
}

func (s *Service) hasMsgInTopic(topic string, randomQ int, h *popHeader) bool {
	tc, ok := s.h.Topic(topic)
	if !ok {
		return false
	}
	for i := int32(0); i < tc.ReadQueueNums; i++ {
		if s.hasMsgInQueue(topic, h, (int32(randomQ)+i)%tc.ReadQueueNums) {
			return true
		}
	}
	return false
}

func (s *Service) hasMsgInQueue(topic string, h *popHeader, queueID int32) bool {
	if h.order && s.order.CheckBlock(h.attemptID, h.topic, h.group, queueID, 0) {
		return false
	}
	return s.h.MaxOffset(topic, queueID)-s.peekOffset(topic, h.group, queueID) > 0
}

// peekOffset is the POP offset without initialising it (min offset when none).
func (s *Service) peekOffset(topic, group string, queueID int32) int64 {
	off := s.h.QueryOffset(group, topic, queueID)
	if off < 0 {
		off = s.h.MinOffset(topic, queueID)
	}
	return off
}

// PollingInfoResponseHeader is Java's.
type PollingInfoResponseHeader struct{ PollingNum int32 }

// WriteExt writes pollingNum.
func (h *PollingInfoResponseHeader) WriteExt(w *codec.ExtWriter) { w.Int32("pollingNum", h.PollingNum) }

func (s *Service) handlePollingInfo(_ context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var r codec.PollingInfoRequestHeader
	if err := codec.DecodeHeader(req.Ext, &r); err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	group, topic, queueID := r.ConsumerGroup, r.Topic, r.QueueID
	if _, resp := s.checkRead(c, replyOf(req), topic, group, queueID, "pop message"); resp != nil {
		return resp, nil
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.CustomHeader = &PollingInfoResponseHeader{PollingNum: int32(s.poll.count(topic, group, queueID))}
	return resp, nil
}

// peekResponseHeader is the PopMessageResponseHeader PEEK_MESSAGE answers
// with: only restNum is set, the rest Java's zero values.
type peekResponseHeader struct{ restNum int64 }

func (h *peekResponseHeader) WriteExt(w *codec.ExtWriter) {
	w.Int64("popTime", 0)
	w.Int64("invisibleTime", 0)
	w.Int32("reviveQid", 0)
	w.Int64("restNum", h.restNum)
}

func (s *Service) handlePeek(_ context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var r codec.PeekMessageRequestHeader
	if err := codec.DecodeHeader(req.Ext, &r); err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	topic, queueID, maxNums, group := r.Topic, r.QueueID, r.MaxMsgNums, r.ConsumerGroup
	tc, resp := s.checkRead(c, replyOf(req), topic, group, queueID, "peeking message")
	if resp != nil {
		return resp, nil
	}
	maxNums = min(max(maxNums, 0), maxPopMsgNums)
	cfg := s.h.Conf()
	randomQ := rand.IntN(100)
	needRetry := randomQ%5 == 0
	var body []byte
	var count int32
	var rest int64
	peekQueue := func(t string, q int32) {
		off := s.peekOffset(t, group, q)
		rest += s.h.MaxOffset(t, q) - off
		if count >= maxNums {
			return
		}
		res := s.h.GetMessage(group, t, q, off, maxNums-count, nil)
		if res == nil {
			return
		}
		if res.Status == store.GetOffsetTooSmall || res.Status == store.GetOffsetOverflowBadly {
			res.Release()
			if res = s.h.GetMessage(group, t, q, res.NextBeginOffset, maxNums-count, nil); res == nil {
				return
			}
		}
		for _, rec := range res.Records {
			body = append(body, rec...)
			count++
		}
		res.Release()
	}
	peekTopic := func(t string) {
		rc, ok := s.h.Topic(t)
		if !ok {
			return
		}
		for i := int32(0); i < rc.ReadQueueNums; i++ {
			peekQueue(t, (int32(randomQ)+i)%rc.ReadQueueNums)
		}
	}
	retry := retryTopic(topic, group, cfg.EnableRetryTopicV2)
	if needRetry {
		peekTopic(retry)
	}
	if queueID < 0 {
		for i := int32(0); i < tc.ReadQueueNums; i++ {
			peekQueue(topic, (int32(randomQ)+i)%tc.ReadQueueNums)
		}
	} else {
		peekQueue(topic, queueID)
	}
	if !needRetry && count < maxNums {
		peekTopic(retry)
	}
	if count == 0 {
		resp = codec.NewResponse(req, codec.RespPullNotFound, "NO_MESSAGE_IN_QUEUE")
	} else {
		resp = codec.NewResponse(req, codec.RespSuccess, "FOUND")
		resp.Body = body
	}
	resp.CustomHeader = &peekResponseHeader{restNum: rest}
	return resp, nil
}
