package processor

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/processor/delivery"
	"rmqd/remoting"
	"rmqd/store"
)

// Transaction bookkeeping (TransactionalMessageUtil, TransactionalMessageCheckService).
const (
	tranCommit   = 0x8
	tranRollback = 0xC
)

// handleEndTransaction is END_TRANSACTION (EndTransactionProcessor): commit
// re-puts the half message to its real topic, both outcomes write an op message
// so the checker stops asking.
func (b *Broker) handleEndTransaction(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	if b.conf().IsSlave() {
		return codec.NewResponse(req, codec.RespSlaveNotAvailable, ""), nil
	}
	var h codec.EndTransactionRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	group, tranOffset, clOffset, kind := h.ProducerGroup, h.TranStateTableOffset, h.CommitLogOffset, h.CommitOrRollback
	if kind != tranCommit && kind != tranRollback {
		return nil, nil // TRANSACTION_NOT_TYPE: nothing to do, nothing to answer
	}
	half, err := b.store.LookMessageByOffset(clOffset)
	if err != nil || half == nil || half.Topic != TopicTransHalf {
		return codec.NewResponse(req, codec.RespSystemError, "Find prepared transaction message failed"), nil
	}
	if !h.FromTransactionCheck && b.pastImmunity(half) {
		// The checker may have asked already: only its answer settles it now.
		return codec.NewResponse(req, codec.RespIllegalOperation, ""), nil
	}
	if pg, _ := codec.PropertyValue(half.Properties, codec.PropProducerGroup); pg != group {
		return codec.NewResponse(req, codec.RespSystemError, "The producer group wrong"), nil
	}
	if half.QueueOffset != tranOffset {
		return codec.NewResponse(req, codec.RespSystemError, "The transaction state table offset wrong"), nil
	}
	if half.CommitLogOffset != clOffset {
		return codec.NewResponse(req, codec.RespSystemError, "The commit log offset wrong"), nil
	}
	if b.checksTopics() {
		// The header's topic is optional and need not be the half
		// message's: commit or roll back only what the caller may publish
		// (Java checks the header's topic only).
		real, _ := codec.PropertyValue(half.Properties, codec.PropRealTopic)
		if r := b.authorizeTopic(c, req, real, accessPublish); r != nil {
			return r, nil
		}
	}
	if kind == tranCommit {
		msg, ok := delivery.RealMessageOf(half)
		if !ok {
			return codec.NewResponse(req, codec.RespSystemError, "half message without REAL_TOPIC/REAL_QID"), nil
		}
		// No op record on refusal: the checker keeps the half message and in
		// the end parks it in TRANS_CHECK_MAX_TIME_TOPIC, as after a failed put.
		if code, remark, ok := b.checkRestoredTarget(msg.Topic, msg.QueueID); !ok {
			b.log.Warn("transaction: commit refused", "topic", msg.Topic, "queue", msg.QueueID, "remark", remark)
			return codec.NewResponse(req, code, remark), nil
		}
		if b.committedBefore(half, msg.Topic) {
			// Committed already (a repeated END_TRANSACTION, or the answer to
			// a check about a copy of this half message): settle it only.
			b.log.Info("transaction: already committed, not delivered again", "topic", msg.Topic, "offset", half.CommitLogOffset)
			if err := b.writeOp(ctx, half.QueueID, half.QueueOffset); err != nil {
				return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
			}
			return codec.NewResponse(req, codec.RespSuccess, ""), nil
		}
		msg.SysFlag = msg.SysFlag&^sysFlagTransactionMask | tranCommit
		msg.PreparedTransactionOffset = half.CommitLogOffset
		msg.StoreHost = b.storeHost
		msg.SysFlag = hostFlags(msg.SysFlag, msg.BornHost, msg.StoreHost)
		// As Java's sendFinalMessage answers its store's timer refusals; the
		// half message stays for the checker (the prepare was checked, so only
		// a configuration changed since gets here).
		if pv := codec.ViewProperties(msg.Properties); !b.conf().TimerWheelEnable && delivery.WantsTimer(&pv) {
			return codec.NewResponse(req, codec.RespSystemError, timerNotEnabledRemark), nil
		}
		if ok, congested := b.parkTimer(msg, nil); !ok {
			return codec.NewResponse(req, codec.RespMessageIllegal, b.timerIllegalRemark()), nil
		} else if congested {
			return codec.NewResponse(req, codec.RespSystemError, b.timerCongestedRemark()), nil
		}
		b.applyDelay(msg, nil)
		res := b.store.PutMessage(ctx, msg)
		if !res.Status.Written() {
			code, remark := b.endTransactionRefusal(res.Status)
			return codec.NewResponse(req, code, remark), nil
		}
	}
	if err := b.writeOp(ctx, half.QueueID, half.QueueOffset); err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	realTopic, _ := codec.PropertyValue(half.Properties, codec.PropRealTopic)
	b.events.countEnd(realTopic, kind == tranCommit, half.BornTimestamp, time.Now().UnixMilli())
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// pastImmunity is rejectCommitOrRollback: half has a check immunity time
// (CHECK_IMMUNITY_TIME_IN_SECONDS, at least transactionTimeOut) and was born
// longer ago than that.
func (b *Broker) pastImmunity(half *codec.Message) bool {
	v, _ := codec.PropertyValue(half.Properties, codec.PropCheckImmunity)
	if v == "" {
		return false
	}
	timeout := int64(b.conf().TransactionTimeOut)
	immunity := int64(0) // unparsable: transactionTimeOut
	if s, err := strconv.ParseInt(v, 10, 64); err == nil && s > 0 && s <= math.MaxInt64/1000 {
		immunity = s * 1000
	}
	return time.Now().UnixMilli()-half.BornTimestamp > max(immunity, timeout)
}

// committedBefore looks in the index for a message END_TRANSACTION already
// committed to topic from a half message with half's UNIQ_KEY and producer
// group: the same half message, or another copy of it (the checker re-puts
// one for every check). Java commits again and the message is delivered
// twice. Without the index, or for a commit still parked by a delay or timer,
// nothing is found and the commit goes ahead as in Java.
func (b *Broker) committedBefore(half *codec.Message, topic string) bool {
	uniq, _ := codec.PropertyValue(half.Properties, codec.PropUniqKey)
	group, _ := codec.PropertyValue(half.Properties, codec.PropProducerGroup)
	if uniq == "" || !b.conf().Store.MessageIndexEnable {
		return false
	}
	// The commit was stored after the first copy of half; copies keep its born
	// time. An hour's slack covers the producer's clock running ahead.
	begin := min(half.BornTimestamp, half.StoreTimestamp) - time.Hour.Milliseconds()
	body, _, _, _ := b.store.QueryMessage(topic, uniq, 32, 8<<20, max(begin, 0), math.MaxInt64)
	var m codec.Message
	for len(body) > 0 {
		n, err := codec.DecodeRecord(body, &m)
		if err != nil || n <= 0 {
			return false
		}
		body = body[n:]
		u, _ := codec.PropertyValue(m.Properties, codec.PropUniqKey)
		g, _ := codec.PropertyValue(m.Properties, codec.PropProducerGroup)
		if m.SysFlag&sysFlagTransactionMask != tranCommit || u != uniq || g != group || !bytes.Equal(m.Body, half.Body) {
			continue
		}
		// A send may carry the commit flag too: only END_TRANSACTION names a
		// half message of this transaction as the record's prepared offset.
		if p, err := b.store.LookMessageByOffset(m.PreparedTransactionOffset); err == nil && p != nil && p.Topic == TopicTransHalf {
			if pu, _ := codec.PropertyValue(p.Properties, codec.PropUniqKey); pu == uniq {
				return true
			}
		}
	}
	return false
}

// checkRestoredTarget applies a normal send's checks (sendCheck) to the topic
// and queue a parked message (half, delayed, timer) goes back to: a valid name,
// not a topic clients may not send to nor an rmq_sys_ one, a topic that exists
// or can be created as a send would create it, and a queue id in range. Java
// trusts REAL_TOPIC here; rmqd checks because stores written before properties
// were rebuilt may hold a client's REAL_TOPIC, and a client may put a message
// straight into the timer topic.
func (b *Broker) checkRestoredTarget(topic string, queueID int32) (code int32, remark string, ok bool) {
	if remark, ok := validateTopic(topic); !ok {
		return codec.RespInvalidParameter, remark, false
	}
	if brokerOnlyTopic(topic) || strings.HasPrefix(topic, sysTopicPrefix) {
		return codec.RespNoPermission, "Sending message to topic[" + topic + "] is forbidden.", false
	}
	tc, ok := b.topics.Select(topic)
	if !ok {
		topic = strings.Clone(topic) // a table key must not alias a record
		if strings.HasPrefix(topic, RetryGroupTopicPrefix) {
			tc, ok = b.topics.CreateInSendMessageBack(topic, 1, PermWrite|PermRead, 0), true
		} else {
			tc, ok = b.topics.CreateInSendMessage(topic, TopicAutoCreate, b.conf().DefaultTopicQueueNums, 0)
		}
		if !ok {
			return codec.RespTopicNotExist, "topic[" + topic + "] not exist, apply first please!", false
		}
	}
	if queueID < 0 || queueID >= max(tc.WriteQueueNums, tc.ReadQueueNums) {
		return codec.RespInvalidParameter, fmt.Sprintf("request queueId[%d] is illegal, topic %s", queueID, topic), false
	}
	return 0, "", true
}

// sysTopicPrefix is TopicValidator.SYSTEM_TOPIC_PREFIX (the timer topic is one).
const sysTopicPrefix = "rmq_sys_"

// endTransactionRefusal is EndTransactionProcessor.sendFinalMessage's answer
// for a commit the store refused: a full disk is SERVICE_NOT_AVAILABLE, a bad
// message MESSAGE_ILLEGAL, the rest SYSTEM_ERROR with Java's remark.
func (b *Broker) endTransactionRefusal(st store.PutStatus) (int32, string) {
	switch st {
	case store.PutServiceNotAvailable:
		return codec.RespServiceNotAvailable, "Service not available now."
	case store.PutMessageIllegal, store.PutPropertiesSizeExceeded:
		return codec.RespMessageIllegal, fmt.Sprintf("The message is illegal, maybe msg body or properties length not matched. "+
			"msg body length limit %dB, msg properties length limit 32KB.", b.conf().Store.MaxMessageSize)
	case store.PutCreateMappedFileFailed:
		return codec.RespSystemError, "Create mapped file failed."
	case store.PutOSPageCacheBusy:
		return codec.RespSystemError, "OS page cache busy, please try another machine"
	}
	return codec.RespSystemError, st.String()
}

// Remarks of RESUME_CHECK_HALF_MESSAGE's failures, Java's verbatim.
const (
	resumeHalfPutFailed = "Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed."
	resumeHalfNotFound  = "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC."
)

// handleResumeCheckHalfMessage is RESUME_CHECK_HALF_MESSAGE
// (MQAdminExt.resumeCheckHalfMessage): the half message at the offset id is
// put again at the end of the half queue with TRANSACTION_CHECK_TIMES 0, so
// the checker asks its producer again, typically for one parked in
// TRANS_CHECK_MAX_TIME_TOPIC after too many checks. Java re-puts whatever
// record the id names into the half queue; rmqd takes only a half message (one
// with REAL_TOPIC, stored in either topic) stored in the header's topic, the
// one access control checked, and under access control the caller must be
// allowed to publish to the real topic, as for END_TRANSACTION.
func (b *Broker) handleResumeCheckHalfMessage(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.ResumeCheckHalfMessageRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return headerError(req, err), nil
	}
	if b.conf().IsSlave() {
		return codec.NewResponse(req, codec.RespSystemError, resumeHalfPutFailed), nil
	}
	_, off, err := compat.DecodeOffsetMsgID(h.MsgID)
	if err != nil {
		return codec.NewResponse(req, codec.RespSystemError, resumeHalfNotFound), nil
	}
	half, err := b.store.LookMessageByOffset(off)
	if err != nil || half == nil {
		return codec.NewResponse(req, codec.RespSystemError, resumeHalfNotFound), nil
	}
	real, isHalf := codec.PropertyValue(half.Properties, codec.PropRealTopic)
	if !isHalf || (half.Topic != TopicTransHalf && half.Topic != TopicTransCheckMax) {
		return codec.NewResponse(req, codec.RespSystemError, "message "+h.MsgID+" is not a half message"), nil
	}
	if h.Topic != half.Topic {
		return codec.NewResponse(req, codec.RespSystemError, "message "+h.MsgID+" is not stored in topic "+h.Topic), nil
	}
	if r := b.authorizeTopic(c, req, real, accessPublish); r != nil {
		return r, nil
	}
	msg := *half
	msg.Topic, msg.QueueID = TopicTransHalf, 0
	msg.Properties = codec.SetProperty(half.Properties, codec.PropTranCheckTimes, "0")
	b.stamp(&msg)
	if res := b.store.PutMessage(ctx, &msg); !res.Status.Written() {
		b.log.Warn("transaction: resume check of half message failed", "msgId", h.MsgID, "status", res.Status.String())
		return codec.NewResponse(req, codec.RespSystemError, resumeHalfPutFailed), nil
	}
	b.log.Info("transaction: half message put back to be checked", "msgId", h.MsgID, "realTopic", real, "remote", c.RemoteAddr())
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}
