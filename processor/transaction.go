package processor

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/remoting"
	"rmqd/store"
)

// Transaction bookkeeping (TransactionalMessageUtil, TransactionalMessageCheckService).
const (
	transSysGroup        = "CID_RMQ_SYS_TRANS"
	transRemoveTag       = "d"
	tranCommit           = 0x8
	tranRollback         = 0xC
	defaultTranTimeout   = 6 * time.Second
	defaultTranCheckMax  = 15
	defaultCheckInterval = 30 * time.Second
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
	if pg, _ := codec.PropertyValue(half.Properties, codec.PropProducerGroup); pg != group {
		return codec.NewResponse(req, codec.RespSystemError, "The producer group wrong"), nil
	}
	if half.QueueOffset != tranOffset {
		return codec.NewResponse(req, codec.RespSystemError, "The transaction state table offset wrong"), nil
	}
	if half.CommitLogOffset != clOffset {
		return codec.NewResponse(req, codec.RespSystemError, "The commit log offset wrong"), nil
	}
	if kind == tranCommit {
		msg, ok := realMessageOf(half)
		if !ok {
			return codec.NewResponse(req, codec.RespSystemError, "half message without REAL_TOPIC/REAL_QID"), nil
		}
		// No op record on refusal: the checker keeps the half message and in
		// the end parks it in TRANS_CHECK_MAX_TIME_TOPIC, as after a failed put.
		if code, remark, ok := b.checkRestoredTarget(msg.Topic, msg.QueueID); !ok {
			b.log.Warn("transaction: commit refused", "topic", msg.Topic, "queue", msg.QueueID, "remark", remark)
			return codec.NewResponse(req, code, remark), nil
		}
		msg.SysFlag = msg.SysFlag&^sysFlagTransactionMask | tranCommit
		msg.PreparedTransactionOffset = half.CommitLogOffset
		msg.StoreHost = b.storeHost
		msg.SysFlag = hostFlags(msg.SysFlag, msg.BornHost, msg.StoreHost)
		if b.conf().TimerWheelEnable {
			b.applyTimer(msg)
		}
		b.applyDelay(msg)
		res := b.store.PutMessage(ctx, msg)
		if !res.Status.Written() {
			code, remark := b.endTransactionRefusal(res.Status)
			return codec.NewResponse(req, code, remark), nil
		}
	}
	if err := b.trans.writeOp(ctx, half.QueueID, half.QueueOffset); err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// realMessageOf turns a stored half message back into the message the producer
// sent: REAL_TOPIC / REAL_QID become topic and queue again.
func realMessageOf(half *codec.Message) (*codec.Message, bool) {
	real := new(codec.Message)
	if !realInto(real, half) {
		return nil, false
	}
	e := codec.EditProperties(half.Properties)
	e.Delete(codec.PropRealTopic)
	e.Delete(codec.PropRealQueueID)
	real.Properties = e.String()
	return real, true
}

// realInto sets dst to the message a parked one (half, timer, delay) stands
// for: its REAL_TOPIC and REAL_QID, the producer's fields and body, and the
// parked properties as they are (callers that drop some do so themselves).
// False when REAL_TOPIC or REAL_QID is missing or malformed.
func realInto(dst, parked *codec.Message) bool {
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
	if notAllowedSendTopic(topic) || strings.HasPrefix(topic, sysTopicPrefix) {
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

// transactionService is the half-message checker
// (TransactionalMessageCheckService): half messages without an op record that
// are older than the transaction timeout are re-queued and the producer group is
// asked for their state with CHECK_TRANSACTION_STATE.
type transactionService struct {
	b        *Broker
	mu       sync.Mutex
	done     map[int64]int64 // half queue offset → op queue offset that settled it
	opRead   int64           // next op queue offset to read
	loaded   bool
	interval time.Duration
	timeout  time.Duration
	checkMax int
}

func newTransactionService(b *Broker) *transactionService {
	return &transactionService{b: b, done: map[int64]int64{}, interval: defaultCheckInterval,
		timeout: defaultTranTimeout, checkMax: defaultTranCheckMax}
}

// writeOp records that the half message at halfOffset is settled (an op
// message tagged "d" whose body is "offset,").
func (t *transactionService) writeOp(ctx context.Context, queueID int32, halfOffset int64) error {
	props := fixStoredProps(codec.SetProperty("", codec.PropTags, transRemoveTag), t.b.conf(), t.b.ids)
	msg := &codec.Message{Topic: TopicTransOpHalf, QueueID: queueID, BornTimestamp: time.Now().UnixMilli(),
		BornHost: t.b.storeHost, StoreHost: t.b.storeHost, Body: []byte(strconv.FormatInt(halfOffset, 10) + ","),
		Properties: props}
	msg.SysFlag = hostFlags(0, msg.BornHost, msg.StoreHost)
	res := t.b.store.PutMessage(ctx, msg)
	if !res.Status.Written() {
		return &putError{res.Status}
	}
	return nil
}

type putError struct{ s store.PutStatus }

func (e *putError) Error() string { return "write transaction op message: " + e.s.String() }

func (t *transactionService) run(ctx context.Context) { everyTick(ctx, t.interval, t.check) }

// readOps loads op records written since the last read.
func (t *transactionService) readOps() {
	b := t.b
	if !t.loaded {
		t.opRead = max(b.offsets.Query(transSysGroup, TopicTransOpHalf, 0), 0)
		t.loaded = true
	}
	for range 1000 {
		res := b.store.GetMessage(transSysGroup, TopicTransOpHalf, 0, t.opRead, 32, 1<<20, nil)
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

// check walks the half queue from the checker's offset.
func (t *transactionService) check(ctx context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.b
	if b.store.MaxOffsetInQueue(TopicTransHalf, 0) <= 0 {
		return
	}
	t.readOps()
	halfOff := max(b.offsets.Query(transSysGroup, TopicTransHalf, 0), 0)
	now := time.Now()
	// Copies re-queued by this round are left for the next one.
	end := b.store.MaxOffsetInQueue(TopicTransHalf, 0)
	for range 1000 {
		if ctx.Err() != nil || halfOff >= end {
			break
		}
		res := b.store.GetMessage(transSysGroup, TopicTransHalf, 0, halfOff, 1, 4<<20, nil)
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
		immunity := t.timeout
		if v, ok := codec.PropertyValue(half.Properties, codec.PropCheckImmunity); ok {
			if s, err := strconv.ParseInt(v, 10, 64); err == nil && s > 0 {
				immunity = time.Duration(s) * time.Second
			}
		}
		if now.Sub(time.UnixMilli(half.BornTimestamp)) < immunity {
			break
		}
		times, _ := strconv.Atoi(func() string { v, _ := codec.PropertyValue(half.Properties, codec.PropTranCheckTimes); return v }())
		if times >= t.checkMax {
			t.discard(ctx, half)
			halfOff = half.QueueOffset + 1
			continue
		}
		if !t.requeueAndAsk(ctx, half, times+1) {
			break
		}
		halfOff = half.QueueOffset + 1
	}
	b.offsets.Commit(transSysGroup, TopicTransHalf, 0, halfOff)
	// Op records of half messages already passed are no longer needed.
	minOp := t.opRead
	for h, op := range t.done {
		if h < halfOff {
			delete(t.done, h)
			continue
		}
		minOp = min(minOp, op)
	}
	b.offsets.Commit(transSysGroup, TopicTransOpHalf, 0, minOp)
}

// discard moves a half message checked too often to TRANS_CHECK_MAX_TIME_TOPIC.
func (t *transactionService) discard(ctx context.Context, half *codec.Message) {
	b := t.b
	b.topics.CreateInSendMessageBack(TopicTransCheckMax, 1, PermRead|PermWrite, 0)
	msg := *half
	msg.Topic, msg.QueueID = TopicTransCheckMax, 0
	msg.StoreHost = b.storeHost
	if res := b.store.PutMessage(ctx, &msg); !res.Status.Written() {
		b.log.Warn("transaction: discard half message failed", "offset", half.CommitLogOffset, "status", res.Status.String())
	}
}

// requeueAndAsk appends the half message again with its check count raised
// (putBackHalfMsgQueue) and asks one producer of its group about the copy.
func (t *transactionService) requeueAndAsk(ctx context.Context, half *codec.Message, times int) bool {
	b := t.b
	cp := *half
	cp.Properties = codec.SetProperty(half.Properties, codec.PropTranCheckTimes, strconv.Itoa(times))
	cp.StoreHost = b.storeHost
	res := b.store.PutMessage(ctx, &cp)
	if !res.Status.Written() {
		b.log.Warn("transaction: re-queue half message failed", "status", res.Status.String())
		return false
	}
	cp.QueueOffset, cp.CommitLogOffset, cp.StoreTimestamp = res.QueueOffset, res.WroteOffset, res.StoreTimestamp
	group, _ := codec.PropertyValue(cp.Properties, codec.PropProducerGroup)
	chs := b.producers.Channels(group)
	if len(chs) == 0 {
		b.log.Debug("transaction: no producer online to check", "group", group)
		return true
	}
	ch := chs[int(cp.QueueOffset)%len(chs)]
	real, ok := realMessageOf(&cp)
	if !ok {
		return true
	}
	real.QueueOffset, real.CommitLogOffset, real.StoreTimestamp = cp.QueueOffset, cp.CommitLogOffset, cp.StoreTimestamp
	real.StoreHost = cp.StoreHost
	real.Properties = cp.Properties // the client reads PGROUP, UNIQ_KEY, REAL_* from the body
	real.SysFlag = hostFlags(real.SysFlag, real.BornHost, real.StoreHost)
	body := make([]byte, codec.RecordSize(real))
	codec.EncodeRecord(body, real)
	uniq, _ := codec.PropertyValue(cp.Properties, codec.PropUniqKey)
	req := codec.NewRequest(codec.ReqCheckTransactionState)
	req.Ext.Set("topic", real.Topic)
	req.Ext.Set("tranStateTableOffset", i64s(cp.QueueOffset))
	req.Ext.Set("commitLogOffset", i64s(cp.CommitLogOffset))
	req.Ext.Set("msgId", uniq)
	req.Ext.Set("transactionId", uniq)
	req.Ext.Set("offsetMsgId", compat.OffsetMsgID(b.storeHost, cp.CommitLogOffset))
	req.Ext.Set("bname", b.conf().BrokerName)
	req.Body = body
	if err := ch.Conn.InvokeOneway(req); err != nil {
		b.log.Debug("transaction: check request not sent", "group", group, "err", err)
	}
	return true
}

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
