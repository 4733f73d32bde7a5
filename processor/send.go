package processor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/processor/delivery"
	"rmqd/processor/meta"
	"rmqd/remoting"
	"rmqd/store"
)

// MessageSysFlag bits the broker touches.
const (
	sysFlagMultiTags       = 0x2
	sysFlagTransactionMask = 0xC
	sysFlagTransPrepared   = 0x4
	sysFlagBornHostV6      = 0x10
	sysFlagStoreHostV6     = 0x20
)

// handleSendMessage is SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE
// (SendMessageProcessor.sendMessage / sendBatchMessage).
func (b *Broker) handleSendMessage(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	if r := b.rejectOnSlave(req); r != nil {
		return r, nil
	}
	// Every send response carries extFields with MSG_REGION and TRACE_ON: the
	// Java client reads them unconditionally. The typed header writes its numbers
	// straight into the frame.
	a := b.sendAnswers.Get().(*sendAnswer)
	a.resp = codec.MakeResponse(req, codec.RespSuccess, "")
	a.hdr = codec.SendMessageResponseHeader{MsgRegion: b.conf().RegionID, TraceOn: b.conf().TraceOn}
	a.resp.CustomHeader, a.resp.Recycler = &a.hdr, a
	if b.sendMessage(ctx, c, req, a) == nil {
		return nil, nil // answered from the store's group commit (SYNC_FLUSH)
	}
	finishSendResponse(&a.resp, &a.hdr)
	return &a.resp, nil
}

// sendAnswer is a send's response, its header and the bytes of its message id,
// kept together in a pool: remoting gives it back (Release) once it wrote the
// response, so a send allocates none of them.
type sendAnswer struct {
	pool *sync.Pool
	resp codec.RemotingCommand
	hdr  codec.SendMessageResponseHeader
	id   [compat.OffsetMsgIDMaxLen]byte
	// props holds the stored properties of a send whose rewrite fits: the
	// record is written from them before the answer goes back to the pool.
	props [sendPropsScratch]byte
	// logical is the queue id answered for a static topic's send (static),
	// leader the item it was stored in.
	logical int32
	static  bool
	leader  codec.LogicQueueMappingItem
}

// sendPropsScratch fits the properties a client sends with what the broker
// adds (a Java producer's with keys and tags: about 200 bytes).
const sendPropsScratch = 512

// Release clears the answer, so the pool holds no string of a past send, and
// puts it back.
func (a *sendAnswer) Release() {
	p := a.pool
	*a = sendAnswer{pool: p}
	p.Put(a)
}

// sendInline picks the sends that run on the network event loop: those to a
// topic that exists and is neither a retry topic nor a revive topic (whose
// sends acceptBrokerRevive decodes and verifies). They wait for nothing but the
// commitlog lock (a SYNC_FLUSH send is answered later, from the group commit), so
// they skip the hand-off to a worker and the wake-up of the loop for the answer.
// The rest go to the send workers: auto-creating a topic registers it with the
// name servers, and retry sends may create the dead-letter topic. So do all
// sends while another put has held the commitlog lock for a millisecond or
// more (a slow disk): they would wait for it on the loop (send_admission.go).
// Under SYNC_FLUSH no send runs inline: each waits for an fdatasync of a few
// hundred microseconds anyway, so the hand-off costs nothing worth keeping,
// while a put that meets a slow disk (dirty-page throttling in the write)
// would stop every connection of its loop until the write returns.
func (b *Broker) sendInline(req *codec.RemotingCommand) bool {
	if b.conf().Store.FlushDiskType == store.SyncFlush {
		return false
	}
	topic, ok := codec.SendTopic(req.Code, req.Ext)
	return ok && !strings.HasPrefix(topic, RetryGroupTopicPrefix) && !isReviveTopic(topic) && b.topics.Exists(topic) &&
		!b.lockHeldLong()
}

// finishSendResponse trims a failed send's header to what Java sends.
func finishSendResponse(resp *codec.RemotingCommand, hdr *codec.SendMessageResponseHeader) {
	switch resp.Code {
	case codec.RespSuccess, codec.RespFlushDiskTimeout, codec.RespFlushSlaveTimeout, codec.RespSlaveNotAvailable:
	default:
		// Java leaves msgId/queueId/queueOffset out of failures; the two
		// unconditional fields stay.
		resp.CustomHeader = nil
		resp.Ext.Set(codec.ExtMsgRegion, hdr.MsgRegion)
		resp.Ext.Set(codec.ExtTraceOn, strconv.FormatBool(hdr.TraceOn))
	}
}

func (b *Broker) sendMessage(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand, a *sendAnswer) *codec.RemotingCommand {
	resp, hdr := &a.resp, &a.hdr
	var h codec.SendMessageRequestHeader
	if err := h.DecodeSend(req.Code, req.Ext); err != nil {
		return setCode(resp, codec.RespSystemError, err.Error())
	}
	// A static topic's logical queue is sent to its leader item's physical
	// queue, and the answer names the logical queue and offset
	// (SendMessageProcessor's rewrite).
	s, refused := b.staticLookup(req, h.Topic, h.QueueID, true)
	if refused != nil {
		return setCode(resp, refused.code, refused.remark)
	}
	a.static = s != nil
	if a.static {
		a.leader = *s.leader()
		h.QueueID, a.logical = a.leader.QueueID, s.logical
	}
	// The header's batch flag decides, as in Java's SendMessageProcessor
	// (requestHeader.isBatch()), not the request code: a SEND_BATCH_MESSAGE
	// without it is one message, a SEND_MESSAGE with it a batch.
	batch := h.Batch
	fromBroker := isReviveTopic(h.Topic) && b.acceptBrokerRevive(c, req, &h)
	tc, ok := b.sendCheck(ctx, c, &h, resp, fromBroker)
	if !ok {
		return resp
	}
	queueID := h.QueueID
	if queueID < 0 {
		queueID = randomQueue(tc.WriteQueueNums)
	}
	if !batch && len(req.Body) > int(b.conf().Store.MaxMessageSize) {
		return setCode(resp, codec.RespMessageIllegal,
			fmt.Sprintf("the message body size over max value, MAX: %d", b.conf().Store.MaxMessageSize))
	}
	if batch && len(req.Body) > int(b.conf().Store.MaxMessageSize) {
		return setCode(resp, codec.RespMessageIllegal,
			fmt.Sprintf("the batch message body size over max value, MAX: %d", b.conf().Store.MaxMessageSize))
	}

	topic := tc.TopicName
	if topic != h.Topic {
		topic = strings.Clone(h.Topic)
	}
	// Pooled: passed to the store through an interface, a local would escape.
	// Only the paths that finish here give it back; deferred ones keep it.
	msg := b.sendMsgs.Get().(*codec.Message)
	*msg = codec.Message{
		// The table's copy of the name, not the request's: the store keeps topic
		// strings as map keys, and request strings alias a recycled frame.
		Topic:          topic,
		QueueID:        queueID,
		Flag:           h.Flag,
		SysFlag:        h.SysFlag,
		BornTimestamp:  h.BornTimestamp,
		BornHost:       addrPortOf(c.RemoteAddr()),
		StoreHost:      b.storeHost,
		ReconsumeTimes: h.ReconsumeTimes,
		Body:           req.Body,
	}
	if tc.TopicFilterType == "MULTI_TAG" {
		msg.SysFlag |= sysFlagMultiTags
	}
	if fromBroker {
		// Vetted as this broker's own record: its timer and reviver trust
		// revive records born here (popRevive), and so do its slaves.
		msg.BornHost = b.storeHost
	}
	msg.SysFlag = hostFlags(msg.SysFlag, msg.BornHost, msg.StoreHost)

	if batch {
		if len(h.Topic) > 127 {
			return setCode(resp, codec.RespMessageIllegal, fmt.Sprintf("message topic length too long %d", len(h.Topic)))
		}
		if strings.HasPrefix(h.Topic, RetryGroupTopicPrefix) {
			return setCode(resp, codec.RespMessageIllegal, "batch request does not support retry group "+h.Topic)
		}
		msg.Properties = h.Properties
		// Java's hook parks a batch asking for a delay level, and its
		// CommitLog.asyncPutMessages then refuses it: never stored undelayed.
		if d, ok := codec.PropertyValue(h.Properties, codec.PropDelay); ok {
			if n, err := strconv.Atoi(d); err == nil && n > 0 {
				return b.sendDone(a, msg, queueID, store.PutResult{Status: store.PutMessageIllegal})
			}
		}
		hdr.TransactionID, _ = codec.PropertyValue(h.Properties, codec.PropUniqKey)
		if isBatchCQ(tc) && hdr.TransactionID != "" {
			return b.sendInnerBatch(ctx, c, req, a, msg, queueID, h.Properties, hdr.TransactionID)
		}
		cluster := b.conf().BrokerClusterName
		// Inner messages keep their properties and get CLUSTER, but no UNIQ_KEY
		// when they have none: Apache 5.3.3 adds none either, so a Go batch
		// consumer's MsgId is the offsetMsgId the producer's SendResult reported
		// (integration scenario go-produce-consume compares exactly that).
		fix := func(props string) string {
			return withCluster(props, cluster)
		}
		if as, ok := b.asyncStore(); ok {
			return b.putDeferred(c, req.Code, a, msg, queueID, func(done func(store.PutResult)) {
				as.PutMessagesAsync(ctx, msg, req.Body, fix, done)
			})
		}
		start := time.Now()
		res := b.store.PutMessages(ctx, msg, req.Body, fix)
		b.admin.storeStats.CountPut(time.Since(start))
		return b.sendDone(a, msg, queueID, res)
	}
	props := h.Properties
	if strings.HasPrefix(h.Topic, RetryGroupTopicPrefix) {
		var done bool
		if props, done = b.handleRetryAndDLQ(&h, msg, props, resp); done {
			return resp
		}
	}
	// One walk of the properties answers every name the send asks for below;
	// each rewrite leaves the view indexing what it wrote.
	pv := codec.ViewProperties(props)
	// SendMessageProcessor: a compaction topic keeps the newest message per
	// key, so a message must have one.
	if meta.Compacted(&tc) {
		if k, _ := pv.Get(codec.PropKeys); strings.TrimSpace(k) == "" {
			return setCode(resp, codec.RespMessageIllegal, "Required message key is missing")
		}
	}
	if msg.SysFlag&codec.SysFlagInnerBatch == 0 && pv.Has(codec.PropInnerNum) {
		// HookUtils.checkInnerBatch: a count without the flag would make a
		// Java broker reading this store number a batch queue wrongly.
		return b.sendDone(a, msg, queueID, store.PutResult{Status: store.PutMessageIllegal})
	}
	prio, dropPrio := messagePriority(&pv)
	// Java clamps to the send topic's queues, and would do so for a message
	// moved to the DLQ too, whose one queue that number may not name, and on
	// a static topic, whose logical queue the answer names: rmqd does neither.
	if prio >= 0 && msg.Topic == tc.TopicName && tc.WriteQueueNums > 0 && !a.static {
		queueID = min(prio, tc.WriteQueueNums-1)
		msg.QueueID = queueID
	}
	liteLMQ := ""
	if lite, _ := pv.Get(codec.PropLiteTopic); lite != "" {
		liteLMQ = compat.LiteLMQ(h.Topic, lite)
	}
	props = fixStoredProps(&pv, b.conf(), b.ids, dropPrio, liteLMQ, a.props[:])
	if tran, _ := pv.Get(codec.PropTranMsg); parseJavaBool(tran) &&
		!(msg.ReconsumeTimes > 0 && hasDelay(&pv)) {
		if b.conf().RejectTransactionMessage {
			return setCode(resp, codec.RespNoPermission,
				"the broker["+b.conf().BrokerIP1+"] sending transaction message is forbidden")
		}
		props = toHalfMessage(msg, &pv)
	}
	msg.Properties = props
	// A half message waits for its commit, which applies timer and delay.
	if msg.Topic != TopicTransHalf {
		if !b.conf().TimerWheelEnable && msg.Topic != TopicTimer && delivery.WantsTimer(&pv) {
			return setCode(resp, codec.RespSystemError, timerNotEnabledRemark)
		}
		// With the wheel off this parks nothing, but a DELAY level still drops
		// the timer properties, as Java's checkIfTimerMessage does.
		if ok, congested := b.parkTimer(msg, &pv); !ok {
			return setCode(resp, codec.RespMessageIllegal, b.timerIllegalRemark())
		} else if congested {
			return setCode(resp, codec.RespSystemError, b.timerCongestedRemark())
		}
		if msg.Topic == TopicTimer && !batch {
			hdr.RecallHandle = b.recallHandleFor(msg)
		}
		b.applyDelay(msg, &pv)
	} else if delivery.WantsTimer(&pv) {
		// Parked at its commit, but refused now as Java's hook refuses the
		// half message's put.
		if !b.conf().TimerWheelEnable {
			return setCode(resp, codec.RespSystemError, timerNotEnabledRemark)
		}
		if !b.checkTimer(&pv) {
			return setCode(resp, codec.RespMessageIllegal, b.timerIllegalRemark())
		}
	}
	// Sent back only when stored: a failed send's answer drops the header.
	hdr.TransactionID, _ = pv.Get(codec.PropUniqKey)
	return b.putOne(ctx, c, req.Code, a, msg, queueID)
}

// putOne stores a send's one record and answers it, from the store's
// completion when the store is asynchronous.
func (b *Broker) putOne(ctx context.Context, c remoting.Conn, code int32, a *sendAnswer, msg *codec.Message, queueID int32) *codec.RemotingCommand {
	if as, ok := b.asyncStore(); ok {
		return b.putDeferred(c, code, a, msg, queueID, func(done func(store.PutResult)) {
			as.PutMessageAsync(ctx, msg, done)
		})
	}
	start := time.Now()
	res := b.store.PutMessage(ctx, msg)
	b.admin.storeStats.CountPut(time.Since(start))
	return b.sendDone(a, msg, queueID, res)
}

// sendDone answers a send the store has finished and recycles its message.
func (b *Broker) sendDone(a *sendAnswer, msg *codec.Message, queueID int32, res store.PutResult) *codec.RemotingCommand {
	out := b.sendResult(a, msg, queueID, res)
	*msg = codec.Message{}
	b.sendMsgs.Put(msg)
	return out
}

// asyncStore returns the store's non-blocking put when puts wait for the disk:
// a SYNC_FLUSH send then frees its worker while the group commit is pending, so
// every in-flight send can share one msync (Java's asyncPutMessage).
func (b *Broker) asyncStore() (AsyncMessageStore, bool) {
	as, ok := b.store.(AsyncMessageStore)
	if !ok || !as.SyncFlush() {
		return nil, false
	}
	return as, true
}

// putDeferred runs put, whose done runs exactly once. When done runs before put
// returns, the response is built here and returned; otherwise it returns nil
// (the handler answers (nil, nil) and owns the request) and done builds the
// response and writes it on c. msg may alias the request: it stays valid because
// an owned request is never recycled.
func (b *Broker) putDeferred(c remoting.Conn, reqCode int32, a *sendAnswer, msg *codec.Message, queueID int32,
	put func(done func(store.PutResult))) *codec.RemotingCommand {
	var (
		mu       sync.Mutex
		have     bool
		deferred bool
		inline   store.PutResult
	)
	start := time.Now() // captured by value: no extra allocation
	put(func(res store.PutResult) {
		b.admin.storeStats.CountPut(time.Since(start))
		mu.Lock()
		if !deferred {
			inline, have = res, true
			mu.Unlock()
			return
		}
		mu.Unlock()
		b.sendResult(a, msg, queueID, res)
		finishSendResponse(&a.resp, &a.hdr)
		err := c.WriteResponse(&a.resp)
		if err != nil {
			b.log.Debug("write send response", "remote", c.RemoteAddr(), "err", err)
		}
		b.observeDeferred(reqCode, a.resp.Code, start, false, err)
		a.Release() // written: no dispatcher returns it
	})
	mu.Lock()
	defer mu.Unlock()
	if !have {
		deferred = true
		return nil
	}
	return b.sendResult(a, msg, queueID, inline)
}

// sendCheck is AbstractSendMessageProcessor.msgCheck: permission, topic name,
// auto-creation and queue id range. fromBroker lets a broker-only revive
// topic through (acceptBrokerRevive vetted the send).
func (b *Broker) sendCheck(ctx context.Context, c remoting.Conn, h *codec.SendMessageRequestHeader, resp *codec.RemotingCommand, fromBroker bool) (TopicConfig, bool) {
	if !permWritable(b.conf().BrokerPermission) && b.topics.IsOrderTopic(h.Topic) {
		setCode(resp, codec.RespNoPermission, "the broker["+b.conf().BrokerIP1+"] sending message is forbidden")
		return TopicConfig{}, false
	}
	if remark, ok := validateTopic(h.Topic); !ok {
		setCode(resp, codec.RespInvalidParameter, remark)
		return TopicConfig{}, false
	}
	if brokerOnlyTopic(h.Topic) && !fromBroker {
		setCode(resp, codec.RespNoPermission, "Sending message to topic["+h.Topic+"] is forbidden.")
		return TopicConfig{}, false
	}
	tc, ok := b.topics.Select(h.Topic)
	if !ok {
		var sysFlag int32
		if h.UnitMode {
			if strings.HasPrefix(h.Topic, RetryGroupTopicPrefix) {
				sysFlag = 0x2
			} else {
				sysFlag = 0x1
			}
		}
		b.log.Warn("send to a topic that does not exist", "topic", h.Topic, "producer", c.RemoteAddr())
		tc, ok = b.topics.CreateInSendMessage(strings.Clone(h.Topic), h.DefaultTopic, h.DefaultTopicQueueNums, sysFlag)
		if !ok && strings.HasPrefix(h.Topic, RetryGroupTopicPrefix) {
			tc, ok = b.topics.CreateInSendMessageBack(strings.Clone(h.Topic), 1, PermWrite|PermRead, sysFlag), true
		}
		if !ok {
			setCode(resp, codec.RespTopicNotExist, "topic["+h.Topic+"] not exist, apply first please!")
			return TopicConfig{}, false
		}
		b.registerCreated(ctx)
	}
	if h.QueueID >= max(tc.WriteQueueNums, tc.ReadQueueNums) {
		setCode(resp, codec.RespInvalidParameter, fmt.Sprintf("request queueId[%d] is illegal, %+v Producer: %s",
			h.QueueID, tc, c.RemoteAddr()))
		return TopicConfig{}, false
	}
	return tc, true
}

// handleRetryAndDLQ redirects a %RETRY% send whose reconsume count is exhausted
// to the group's %DLQ% topic. done means resp already holds the answer.
func (b *Broker) handleRetryAndDLQ(h *codec.SendMessageRequestHeader, msg *codec.Message, props string, resp *codec.RemotingCommand) (string, bool) {
	group := h.Topic[len(RetryGroupTopicPrefix):]
	sgc, ok := b.groups.Find(group)
	if !ok {
		setCode(resp, codec.RespSubscriptionGroupNotExist, "subscription group not exist, "+group)
		return props, true
	}
	maxTimes := sgc.RetryMaxTimes
	if h.HasMaxReconsumeTimes {
		maxTimes = h.MaxReconsumeTimes
	}
	// The header carries the count the message will have (the stored one plus
	// one), so only a count past the maximum is used up: CONSUMER_SEND_MSG_BACK
	// compares the stored count with >=. A group holding a live queue lock
	// consumes orderly, and sends only used-up messages (a 4.x orderly consumer
	// with the count unchanged): those go to the DLQ whatever the count (Java 5.x).
	if msg.ReconsumeTimes <= maxTimes && b.locks.IsLockAllExpired(group) {
		return props, false
	}
	b.events.countDLQ(h.ProducerGroup, h.Topic)
	dlq := DLQGroupTopicPrefix + group
	b.topics.CreateInSendMessageBack(dlq, dlqQueueNums, PermWrite|PermRead, 0)
	msg.Topic = dlq
	msg.QueueID = randomQueue(dlqQueueNums)
	// Java stores DELAY=-1 on it; a level below 1 parks nothing.
	return codec.SetProperty(props, codec.PropDelay, "-1"), false
}

// toHalfMessage stores a transactional prepare message in the half topic, as
// TransactionalMessageBridge.parseHalfMessageInner does. The broker's
// REAL_TOPIC, REAL_QID and __transactionId__ replace any the producer sent, and
// the checker's own bookkeeping (check count, prepared queue offset) starts
// empty: Java keeps a client's copies, rmqd does not let a client set them.
func toHalfMessage(msg *codec.Message, pv *codec.PropView) string {
	e := codec.EditProperties(pv.Props())
	if uniq, ok := pv.Get(codec.PropUniqKey); ok {
		e.Set(codec.PropTransactionID, uniq)
	}
	e.Set(codec.PropRealTopic, msg.Topic)
	e.SetInt(codec.PropRealQueueID, int64(msg.QueueID))
	e.Delete(codec.PropTranCheckTimes)
	e.Delete(codec.PropTranPreparedQOff)
	msg.SysFlag &^= sysFlagTransactionMask
	msg.Topic = TopicTransHalf
	msg.QueueID = 0
	return e.StringView(pv)
}

// hasDelay is Java's getDelayTimeLevel() > 0: DELAY=-1 (a DLQ message's) or
// 0 asks for no delay.
func hasDelay(pv *codec.PropView) bool {
	v, _ := pv.Get(codec.PropDelay)
	n, err := strconv.Atoi(v)
	return err == nil && n > 0
}

// sendResult maps the store outcome as handlePutMessageResult does; codes 10-12
// still count as stored, so they carry the message id too.
func (b *Broker) sendResult(a *sendAnswer, msg *codec.Message, queueID int32, res store.PutResult) *codec.RemotingCommand {
	resp, hdr := &a.resp, &a.hdr
	stored := false
	switch res.Status {
	case store.PutOK:
		stored = true
	case store.PutFlushDiskTimeout:
		stored = true
		resp.Code = codec.RespFlushDiskTimeout
	case store.PutFlushSlaveTimeout:
		stored = true
		resp.Code = codec.RespFlushSlaveTimeout
	case store.PutSlaveNotAvailable:
		stored = true
		resp.Code = codec.RespSlaveNotAvailable
	case store.PutCreateMappedFileFailed:
		setCode(resp, codec.RespSystemError, "create mapped file failed, server is busy or broken.")
	case store.PutMessageIllegal, store.PutPropertiesSizeExceeded:
		setCode(resp, codec.RespMessageIllegal, fmt.Sprintf("the message is illegal, maybe msg body or properties length not matched. msg body length limit %dB, msg properties length limit 32KB.",
			b.conf().Store.MaxMessageSize))
	case store.PutServiceNotAvailable:
		setCode(resp, codec.RespServiceNotAvailable, b.serviceNotAvailableRemark())
	case store.PutOSPageCacheBusy:
		setCode(resp, codec.RespSystemBusy, "[PC_SYNCHRONIZED]broker busy, start flow control for a while")
	case store.PutLMQConsumeQueueNumExceeded:
		if b.conf().Store.EnableLmqQuota {
			setCode(resp, codec.RespLMQQuotaExceeded, lmqQuotaRemark)
		} else {
			setCode(resp, codec.RespSystemError, lmqExceededRemark)
		}
	default:
		setCode(resp, codec.RespSystemError, "UNKNOWN_ERROR")
	}
	if !stored {
		b.admin.storeStats.CountPutFailed()
		return resp
	}
	b.countPut(msg.Topic, max(res.MsgNum, 1), res.WroteBytes)
	if res.Status == store.PutOK && msg.Topic == TopicTransHalf {
		b.events.countHalfPut(msg.Properties) // Java counts a PUT_OK half message only
	}
	if len(res.RecordOffsets) > 1 {
		var sb strings.Builder
		sb.Grow(len(res.RecordOffsets) * 33)
		var buf [compat.OffsetMsgIDMaxLen]byte
		for i, off := range res.RecordOffsets {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.Write(compat.AppendOffsetMsgID(buf[:0], b.storeHost, off))
		}
		hdr.MsgID = sb.String()
	} else {
		// The id's bytes live in the answer and are written once: no string of
		// their own.
		id := compat.AppendOffsetMsgID(a.id[:0], b.storeHost, res.WroteOffset)
		hdr.MsgID = unsafe.String(unsafe.SliceData(id), len(id))
	}
	hdr.QueueID = queueID
	hdr.QueueOffset = res.QueueOffset
	if a.static {
		// -1 while the leader's logic offset is undecided, as Java answers.
		hdr.QueueID, hdr.QueueOffset = a.logical, a.leader.StaticOffsetLoosely(res.QueueOffset)
	}
	return resp
}

func setCode(resp *codec.RemotingCommand, code int32, remark string) *codec.RemotingCommand {
	resp.Code = code
	resp.Remark = remark
	resp.HasRemark = remark != ""
	return resp
}

func randomQueue(n int32) int32 {
	if n <= 0 {
		return 0
	}
	return rand.Int32N(n)
}

// addrPortOf converts a connection address (a *net.TCPAddr from remoting).
func addrPortOf(a net.Addr) netip.AddrPort {
	var ap netip.AddrPort
	switch t := a.(type) {
	case nil:
		return ap
	case *net.TCPAddr:
		ap = t.AddrPort()
	default:
		ap, _ = netip.ParseAddrPort(a.String())
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// hostFlags sets the IPv6 host bits the record layout depends on.
func hostFlags(flag int32, born, storeHost netip.AddrPort) int32 {
	flag &^= sysFlagBornHostV6 | sysFlagStoreHostV6
	if !born.Addr().Unmap().Is4() && born.Addr().IsValid() {
		flag |= sysFlagBornHostV6
	}
	if !storeHost.Addr().Unmap().Is4() && storeHost.Addr().IsValid() {
		flag |= sysFlagStoreHostV6
	}
	return flag
}
