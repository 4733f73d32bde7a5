package pop

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math/bits"
	"time"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/remoting"
)

// BatchAck is one entry of BatchAckMessageRequestBody (short fastjson names,
// long alternates): the acked offsets are startOffset + the set bits of a
// java.util.BitSet, written as base64 of BitSet.toByteArray (little endian).
type BatchAck struct {
	ConsumerGroup string
	Topic         string
	Retry         string
	StartOffset   int64
	QueueID       int32
	ReviveQueueID int32
	PopTime       int64
	InvisibleTime int64
	Bits          []byte
}

// BatchAckBody is BatchAckMessageRequestBody.
type BatchAckBody struct {
	BrokerName string
	Acks       []BatchAck
}

// maxBatchAckBits bounds the offsets one entry may ack, and all the entries of
// one request together (Java stops at Integer.MAX_VALUE; a few thousand is
// already far past maxMsgNums). Per entry alone, a 16 MiB body of 1,500
// entries acked ~10^8 offsets and wrote ack records of a gigabyte or more.
const maxBatchAckBits = 1 << 16

// DecodeBatchAckBody parses a BATCH_ACK_MESSAGE body (fastjson, possibly lenient).
func DecodeBatchAckBody(b []byte) (BatchAckBody, error) {
	var out BatchAckBody
	strict, err := codec.StrictJSON(b)
	if err != nil {
		return out, fmt.Errorf("batch ack body: %w", err)
	}
	var w struct {
		BrokerName string          `json:"brokerName"`
		Acks       []codec.RawJSON `json:"acks"`
	}
	if err := codec.UnmarshalBody(strict, &w); err != nil {
		return out, fmt.Errorf("batch ack body: %w", err)
	}
	out.BrokerName = w.BrokerName
	acked := 0
	for _, raw := range w.Acks {
		var m map[string]codec.RawJSON
		if err := codec.UnmarshalBody(raw, &m); err != nil {
			return out, fmt.Errorf("batch ack entry: %w", err)
		}
		if m == nil {
			continue
		}
		var a BatchAck
		var bitSet string
		fields := []struct {
			short, long string
			dst         any
		}{
			{"c", "consumerGroup", &a.ConsumerGroup}, {"t", "topic", &a.Topic}, {"r", "retry", &a.Retry},
			{"so", "startOffset", &a.StartOffset}, {"q", "queueId", &a.QueueID}, {"rq", "reviveQueueId", &a.ReviveQueueID},
			{"pt", "popTime", &a.PopTime}, {"it", "invisibleTime", &a.InvisibleTime}, {"b", "bitSet", &bitSet},
		}
		for _, f := range fields {
			v, ok := m[f.short]
			if !ok {
				v, ok = m[f.long]
			}
			if !ok || string(v) == "null" {
				continue
			}
			if err := codec.UnmarshalBody(v, f.dst); err != nil {
				return out, fmt.Errorf("batch ack field %s: %w", f.short, err)
			}
		}
		if bitSet != "" {
			if a.Bits, err = base64.StdEncoding.DecodeString(bitSet); err != nil {
				return out, fmt.Errorf("batch ack bitSet: %w", err)
			}
			if len(a.Bits) > maxBatchAckBits/8 {
				return out, errors.New("batch ack bitSet too long")
			}
			for _, by := range a.Bits {
				acked += bits.OnesCount8(by)
			}
			if acked > maxBatchAckBits {
				return out, fmt.Errorf("batch ack body acks more than %d offsets", maxBatchAckBits)
			}
		}
		out.Acks = append(out.Acks, a)
	}
	return out, nil
}

// setBits lists the set bit indexes (BitSet.valueOf(bytes): little endian).
func (a *BatchAck) setBits() []int {
	var out []int
	for i, by := range a.Bits {
		for j := 0; j < 8; j++ {
			if by&(1<<j) != 0 {
				out = append(out, i*8+j)
			}
		}
	}
	return out
}

// parseHandle reads an ack's or change's receipt handle, which needs its
// first six fields; an illegal one is answered SYSTEM_ERROR.
func parseHandle(req *codec.RemotingCommand, extraInfo string) (ExtraInfo, *codec.RemotingCommand) {
	ei, err := ParseExtraInfo(extraInfo)
	if err != nil || ei.Fields < 6 {
		return ei, codec.NewResponse(req, codec.RespSystemError, fmt.Sprintf("extraInfo %q is illegal", extraInfo))
	}
	return ei, nil
}

type ackHeader struct {
	group, topic string
	queueID      int32
	extraInfo    string
	offset       int64
	liteTopic    string
}

func parseAckHeader(req *codec.RemotingCommand) (ackHeader, error) {
	var r codec.AckMessageRequestHeader
	err := codec.DecodeHeader(req.Ext, &r)
	return ackHeader{group: r.ConsumerGroup, topic: r.Topic, queueID: r.QueueID, extraInfo: r.ExtraInfo, offset: r.Offset,
		liteTopic: r.LiteTopic}, err
}

func (s *Service) handleAck(_ context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	h, err := parseAckHeader(req)
	if err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	if bad := s.checkAckQueue(c, req, h.topic, h.queueID); bad != nil {
		return bad, nil
	}
	if r := s.ackLite(req, &h, h.liteTopic); r != nil {
		return r, nil
	}
	minOff, maxOff := s.h.MinOffset(h.topic, h.queueID), s.h.MaxOffset(h.topic, h.queueID)
	if h.offset < minOff || h.offset > maxOff {
		return codec.NewResponse(req, codec.RespNoMessage, fmt.Sprintf("offset is illegal, key:%s@%d, commit:%d, store:%d~%d",
			h.topic, h.queueID, h.offset, minOff, maxOff)), nil
	}
	ei, bad := parseHandle(req, h.extraInfo)
	if bad != nil {
		return bad, nil
	}
	if ei.ReviveQid == orderReviveQueue {
		s.ackOrderly(c, h.topic, h.group, h.queueID, h.offset, ei.PopTime, ei.InvisibleTime, resp)
		return resp, nil
	}
	ack := &AckMsg{AckOffset: h.offset, StartOffset: ei.CkQueueOffset, ConsumerGroup: h.group, Topic: h.topic,
		QueueID: h.queueID, PopTime: ei.PopTime, BrokerName: ei.BrokerName}
	s.putAck(ack, ei.ReviveQid, ei.PopTime+ei.InvisibleTime, false)
	s.inflight.done(h.topic, h.group, h.queueID, ei.PopTime, 1)
	return resp, nil
}

// checkAckQueue answers an ack or change-invisible naming a missing topic
// or a queue it does not have.
func (s *Service) checkAckQueue(c remoting.Conn, req *codec.RemotingCommand, topic string, queueID int32) *codec.RemotingCommand {
	tc, ok := s.h.Topic(topic)
	if !ok {
		return codec.NewResponse(req, codec.RespTopicNotExist, fmt.Sprintf("topic[%s] not exist, apply first please!", topic))
	}
	if queueID >= tc.ReadQueueNums || queueID < 0 {
		return codec.NewResponse(req, codec.RespMessageIllegal, fmt.Sprintf("queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d] consumer:[%s]",
			queueID, topic, tc.ReadQueueNums, c.RemoteAddr()))
	}
	return nil
}

func (s *Service) handleBatchAck(_ context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	if len(req.Body) == 0 {
		resp.Code = codec.RespNoMessage
		return resp, nil
	}
	body, err := DecodeBatchAckBody(req.Body)
	if err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	if len(body.Acks) == 0 {
		resp.Code = codec.RespNoMessage
		return resp, nil
	}
	for i := range body.Acks {
		a := &body.Acks[i]
		// The header gate cannot see the body's names: an orderly ack commits
		// an offset under its group.
		if remark, ok := compat.ValidateGroup(a.ConsumerGroup); !ok {
			return codec.NewResponse(req, codec.RespInvalidParameter, remark), nil
		}
		topic, err := realTopic(a.Topic, a.ConsumerGroup, a.Retry)
		if err != nil {
			return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
		}
		if _, ok := s.h.Topic(topic); !ok {
			continue
		}
		minOff, maxOff := s.h.MinOffset(topic, a.QueueID), s.h.MaxOffset(topic, a.QueueID)
		if minOff == -1 || maxOff == -1 {
			continue
		}
		ack := &AckMsg{AckOffset: -1, StartOffset: a.StartOffset, ConsumerGroup: a.ConsumerGroup, Topic: topic,
			QueueID: a.QueueID, PopTime: a.PopTime, BrokerName: body.BrokerName}
		for _, bit := range a.setBits() {
			off := a.StartOffset + int64(bit)
			if off < minOff || off > maxOff {
				continue
			}
			if a.ReviveQueueID == orderReviveQueue {
				s.ackOrderly(c, topic, a.ConsumerGroup, a.QueueID, off, a.PopTime, a.InvisibleTime, resp)
			} else {
				ack.AckOffsetList = append(ack.AckOffsetList, off)
			}
		}
		if a.ReviveQueueID == orderReviveQueue || len(ack.AckOffsetList) == 0 {
			continue
		}
		s.putAck(ack, a.ReviveQueueID, a.PopTime+a.InvisibleTime, true)
		s.inflight.done(topic, a.ConsumerGroup, a.QueueID, a.PopTime, int64(len(ack.AckOffsetList)))
	}
	return resp, nil
}

// putAck writes an ack (or batch ack) record to its revive queue, delivered by
// the timer at the checkpoint's revive time (AckMessageProcessor.appendAck).
// Java logs a failed put and answers the ack SUCCESS all the same.
func (s *Service) putAck(ack *AckMsg, reviveQid int32, deliverMs int64, batch bool) bool {
	if !s.isReviveQueue(reviveQid) {
		return false
	}
	// Sized for the longest numbers: one allocation unless a name needs escapes.
	body := ack.appendJSON(make([]byte, 0, 128+len(ack.ConsumerGroup)+len(ack.Topic)+len(ack.BrokerName)+21*len(ack.AckOffsetList)))
	tag := ackTag
	if batch {
		tag = batchAckTag
	}
	msg := s.reviveMessage(body, reviveQid, tag, ack.uniqueID(), deliverMs)
	res := s.h.PutMessage(context.Background(), msg)
	s.counts.revivePut.add(countKey{group: ack.ConsumerGroup, topic: ack.Topic, kind: kindACK, status: res.Status})
	if !res.Status.Written() {
		s.log.Error("put pop ack", "status", res.Status, "topic", ack.Topic, "queue", ack.QueueID)
		return false
	}
	return true
}

// lockAhead locks topic@group@queue for an orderly ack or change of the
// message at off, unless the group's offset is past it already (looked at
// again under the lock): ok false then, and nothing is locked. old is the
// group's offset under the lock.
func (s *Service) lockAhead(topic, group string, queueID int32, off int64) (key string, old int64, ok bool) {
	if off < s.h.QueryOffset(group, topic, queueID) {
		return "", 0, false
	}
	key = lockKey(topic, group, queueID)
	s.locks.lock(key)
	if old = s.h.QueryOffset(group, topic, queueID); off < old {
		s.locks.unlock(key)
		return "", 0, false
	}
	return key, old, true
}

// ackOrderly is AckMessageProcessor.ackOrderly.
func (s *Service) ackOrderly(c remoting.Conn, topic, group string, queueID int32, ackOffset, popTime, invisibleTime int64, resp *codec.RemotingCommand) {
	key, old, ok := s.lockAhead(topic, group, queueID, ackOffset)
	if !ok {
		return
	}
	defer s.locks.unlock(key)
	next := s.order.CommitAndNext(topic, group, queueID, ackOffset, popTime)
	if next != -1 {
		s.inflight.done(topic, group, queueID, popTime, 1)
	}
	if next > -1 {
		next = s.pastBatch(topic, queueID, next)
	}
	switch {
	case next > -1:
		if !s.h.HasReset(group, topic, queueID) {
			s.h.CommitOffset(group, topic, queueID, next)
		}
		if !s.order.CheckBlock("", topic, group, queueID, invisibleTime) {
			s.poll.notifyKey(topic, group, queueID)
			s.poll.notifyKey(topic, group, -1)
		}
	case next == -1:
		resp.Code = codec.RespMessageIllegal
		resp.Remark = fmt.Sprintf("offset is illegal, key:%s, old:%d, commit:%d, next:%d, %s", key, old, ackOffset, next, c.RemoteAddr())
		resp.HasRemark = true
	}
}

type changeHeader struct {
	ackHeader
	invisibleTime int64
}

// ChangeInvisibleResponseHeader is ChangeInvisibleTimeResponseHeader.
type ChangeInvisibleResponseHeader struct {
	PopTime       int64
	InvisibleTime int64
	ReviveQid     int32
}

// WriteExt writes the three fields.
func (h *ChangeInvisibleResponseHeader) WriteExt(w *codec.ExtWriter) {
	w.Int64("popTime", h.PopTime)
	w.Int64("invisibleTime", h.InvisibleTime)
	w.Int32("reviveQid", h.ReviveQid)
}

func (s *Service) handleChangeInvisible(_ context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var r codec.ChangeInvisibleTimeRequestHeader
	if err := codec.DecodeHeader(req.Ext, &r); err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	h := changeHeader{ackHeader: ackHeader{group: r.ConsumerGroup, topic: r.Topic, queueID: r.QueueID,
		extraInfo: r.ExtraInfo, offset: r.Offset}, invisibleTime: r.InvisibleTime}
	if bad := s.checkAckQueue(c, req, h.topic, h.queueID); bad != nil {
		return bad, nil
	}
	lite := r.LiteTopic
	if isBlank(lite) {
		lite = s.liteTopicOfHandle(&h.ackHeader)
	}
	if resp := s.changeInvisibleLite(req, &h, lite, r.Suspend); resp != nil {
		return resp, nil
	}
	minOff, maxOff := s.h.MinOffset(h.topic, h.queueID), s.h.MaxOffset(h.topic, h.queueID)
	if h.offset < minOff || h.offset >= maxOff {
		return codec.NewResponse(req, codec.RespNoMessage, ""), nil
	}
	ei, bad := parseHandle(req, h.extraInfo)
	if bad != nil {
		return bad, nil
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	hdr := &ChangeInvisibleResponseHeader{}
	resp.CustomHeader = hdr
	if ei.ReviveQid == orderReviveQueue {
		s.changeInvisibleOrderly(&h, ei, hdr)
		return resp, nil
	}
	now := time.Now().UnixMilli()
	ck := &CheckPoint{Num: 1, PopTime: now, InvisibleTime: h.invisibleTime, StartOffset: h.offset, CID: h.group,
		Topic: h.topic, QueueID: h.queueID, BrokerName: ei.BrokerName}
	ck.addDiff(0)
	if !s.putCheckPoint(ck, ei.ReviveQid) {
		resp.Code = codec.RespSystemError
		return resp, nil
	}
	// Then ack the old handle (ackOrigin).
	ack := &AckMsg{AckOffset: h.offset, StartOffset: ei.CkQueueOffset, ConsumerGroup: h.group, Topic: h.topic,
		QueueID: h.queueID, PopTime: ei.PopTime, BrokerName: ei.BrokerName}
	s.putAck(ack, ei.ReviveQid, ei.PopTime+ei.InvisibleTime, false)
	hdr.InvisibleTime, hdr.PopTime, hdr.ReviveQid = h.invisibleTime, now, ei.ReviveQid
	return resp, nil
}

// changeInvisibleOrderly is processChangeInvisibleTimeForOrder.
func (s *Service) changeInvisibleOrderly(h *changeHeader, ei ExtraInfo, hdr *ChangeInvisibleResponseHeader) {
	key, _, ok := s.lockAhead(h.topic, h.group, h.queueID, h.offset)
	if !ok {
		return
	}
	defer s.locks.unlock(key)
	next := time.Now().UnixMilli() + h.invisibleTime
	s.order.UpdateNextVisibleTime(h.topic, h.group, h.queueID, h.offset, ei.PopTime, next)
	hdr.InvisibleTime, hdr.PopTime, hdr.ReviveQid = next-ei.PopTime, ei.PopTime, ei.ReviveQid
}

// pastBatch moves an orderly POP's next offset that falls inside a BatchCQ
// unit to the unit's end. The order info keeps the offsets of the units it
// handed out, and once all are acked answers the last one plus one (Java's
// OrderInfo.getNextOffset): inside that unit when it holds an inner batch, so
// the next POP, which reads the whole unit covering its offset, would hand
// the acked batch out again, for ever (Java does).
func (s *Service) pastBatch(topic string, queueID int32, next int64) int64 {
	if tc, ok := s.h.Topic(topic); !ok || !tc.Batch {
		return next
	}
	res := s.h.GetMessage(reviveGroup, topic, queueID, next, 1, nil)
	if res == nil {
		return next
	}
	defer res.Release()
	if len(res.Records) > 0 && recordQueueOffset(res.Records[0]) < next && res.NextBeginOffset > next {
		return res.NextBeginOffset
	}
	return next
}
