package processor

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/processor/meta"
	"rmqd/remoting"
	"rmqd/store"
)

// A pull that reaches the end of what the consume queue holds while the store
// has not yet dispatched every record the commitlog held when the pull arrived
// waits for that dispatch: syncDispatchWait in the handler (dispatch is
// usually microseconds behind, and the record a pull just found may still be
// indexed), then from a goroutine up to maxDispatchWait, polling every
// dispatchPollInterval.
const (
	syncDispatchWait     = 20 * time.Millisecond
	maxDispatchWait      = time.Second
	dispatchPollInterval = 250 * time.Microsecond
)

// dispatchProgress is implemented by stores that tell how far consume-queue
// dispatch has got: every commitlog record below DispatchedPhyOffset is in its
// consume queue (and it equals MaxPhyOffset once dispatch has caught up).
//
// Consume queues are built asynchronously (Java's ReputMessageService), so a
// message can be acknowledged to its producer before a pull can see it. With
// this the broker gives a pull that cannot wait for messages (no suspend flag)
// every message stored before the pull arrived: the e2e PullParamTest pulls
// each queue once right after its sends, and a new queue's first consume-queue
// write (file creation, first page fault) can take tens of milliseconds on a
// loaded machine.
type dispatchProgress interface {
	DispatchedPhyOffset() int64
}

// pullReply carries what a pull response needs of its request after the
// request frame may have been recycled (long polling).
type pullReply struct {
	opaque        int32
	serializeType codec.SerializeType
	code          int32
	start         time.Time   // when the handler took the request, for rocketmq_rpc_latency
	suspended     bool        // held for long polling (Java's RemotingCommand.isSuspended)
	onLoop        bool        // runs on the event loop that writes the answer (remoting.OnLoop)
	coldRerun     bool        // re-run after a cold-data hold: not held again (Java's _noSuspend_)
	static        *staticPull // a static topic's logical queue: the answer is rewritten (static_pull.go)
	answers       *sync.Pool  // of *pullAnswer (nil: each answer its own allocation)
}

func (p pullReply) response(code int32, remark string) *codec.RemotingCommand {
	req := codec.RemotingCommand{Opaque: p.opaque, SerializeType: p.serializeType}
	return codec.NewResponse(&req, code, remark)
}

// Java's ForbiddenType: why a pull was answered NO_PERMISSION.
const (
	forbiddenBroker    = 1
	forbiddenGroup     = 2
	forbiddenTopic     = 3
	forbiddenBroadcast = 4
	// forbiddenSubscription: the group is banned from the topic.
	forbiddenSubscription = 5
)

// forbidden is a NO_PERMISSION answer with its forbiddenType, the one field
// Java's pull response header then carries.
func (p pullReply) forbidden(typ int, remark string) *codec.RemotingCommand {
	resp := p.response(codec.RespNoPermission, remark)
	resp.Ext.Set("forbiddenType", strconv.Itoa(typ))
	return resp
}

// pullAnswer is a pull response and its header, taken from a pool: whoever
// writes the response releases it (resp.Release), so a pull allocates no
// answer. A held pull builds none.
type pullAnswer struct {
	pool *sync.Pool
	resp codec.RemotingCommand
	hdr  codec.PullMessageResponseHeader
}

// Release clears the answer and puts it back in its pool.
func (a *pullAnswer) Release() {
	p := a.pool
	*a = pullAnswer{pool: p}
	p.Put(a)
}

// withHeader is response with hdr as its custom header.
func (p pullReply) withHeader(code int32, remark string, hdr codec.PullMessageResponseHeader) *codec.RemotingCommand {
	req := codec.RemotingCommand{Opaque: p.opaque, SerializeType: p.serializeType}
	var a *pullAnswer
	if p.answers != nil {
		a = p.answers.Get().(*pullAnswer)
	} else {
		a = new(pullAnswer)
	}
	a.resp, a.hdr = codec.MakeResponse(&req, code, remark), hdr
	a.resp.CustomHeader = &a.hdr
	if a.pool != nil {
		a.resp.Recycler = a
	}
	return &a.resp
}

// handlePullMessage is PULL_MESSAGE (and LITE_PULL_MESSAGE): PullMessageProcessor
// with long polling through the pull hold service.
func (b *Broker) handlePullMessage(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	if b.conf().IsSlave() && !b.conf().SlaveReadEnable {
		// PullMessageProcessor.rejectRequest: a slave serves reads only when allowed.
		return codec.NewResponse(req, codec.RespSystemBusy, slaveRejectRemark), nil
	}
	reply := pullReply{opaque: req.Opaque, serializeType: req.SerializeType, code: req.Code, start: time.Now(), answers: &b.pullAnswers,
		onLoop: remoting.OnLoop(ctx)}
	var h codec.PullMessageRequestHeader
	if err := h.Decode(req.Ext); err != nil {
		return reply.response(codec.RespSystemError, err.Error()), nil
	}
	// Here, not in pull: a held pull is re-run with the physical id.
	s, refused := b.staticLookup(req, h.Topic, h.QueueID, false)
	if refused != nil {
		return reply.response(refused.code, refused.remark), nil
	}
	if s != nil {
		if resp := b.staticResetPull(s.items, s.logical, &h, reply); resp != nil {
			return resp, nil
		}
		var fwd *codec.RemotingCommand
		if reply.static, fwd = b.staticPullRequest(ctx, s, &h, reply); reply.static == nil {
			return fwd, nil
		}
	}
	var dispatchTarget int64
	if _, ok := b.store.(dispatchProgress); ok && h.SysFlag&codec.PullFlagSuspend == 0 {
		dispatchTarget = b.store.MaxPhyOffset()
	}
	return b.pull(c, &h, reply, nil, true, dispatchTarget)
}

// pullReleasing serves PULL_MESSAGE through handlePullMessage, whose (nil,
// nil) means written already, or held or waiting with a header of its own:
// nothing of req is kept, so its frame is recycled now, not left to the GC.
func (b *Broker) pullReleasing(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	resp, err := b.handlePullMessage(ctx, c, req)
	if resp == nil && err == nil {
		return nil, remoting.ErrAnsweredLater
	}
	return resp, err
}

// pull runs one pull. allowSuspend is false when a held request is re-run; a
// nil filter is built from the request or the group's subscription. A dispatchTarget above 0 is the
// commitlog end when the pull arrived: a pull that would answer the end of the
// queue waits until dispatch has passed it (see dispatchProgress).
func (b *Broker) pull(c remoting.Conn, h *codec.PullMessageRequestHeader, reply pullReply, filter store.MessageFilter, allowSuspend bool, dispatchTarget int64) (*codec.RemotingCommand, error) {
	sgc, tc, refused := b.pullAllowed(h, reply)
	if refused != nil {
		return refused, nil
	}
	if h.QueueID < 0 || h.QueueID >= tc.ReadQueueNums {
		// INVALID_PARAMETER since 5.0 (4.x answered SYSTEM_ERROR).
		return reply.response(codec.RespInvalidParameter, fmt.Sprintf("queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d] consumer:[%s]",
			h.QueueID, h.Topic, tc.ReadQueueNums, c.RemoteAddr())), nil
	}
	if filter == nil {
		var resp *codec.RemotingCommand
		if filter, resp = b.pullFilter(h, sgc, reply); resp != nil {
			return resp, nil
		}
	} else if resp := b.readForbidden(h, reply); resp != nil {
		// A re-run (a woken or dispatch-waiting pull) keeps the filter it
		// built, but a ban may have come since: Java re-runs every check.
		return resp, nil
	}
	if b.conf().RejectPullConsumerEnable && b.rejectPullConsumer(c, h.ConsumerGroup) {
		return reply.response(codec.RespSubscriptionNotExist, rejectPullConsumerRemark), nil
	}
	if b.conf().Store.ColdDataFlowControlEnable {
		if resp, held := b.coldGate(c, h, reply, filter); resp != nil || held {
			return resp, nil
		}
	}

	if p := reply.static; p != nil && !allowSuspend {
		// A held pull re-run: a reset assigned while it was held.
		if resp := b.staticResetPull(p.items, p.logical, h, reply); resp != nil {
			return resp, nil
		}
	}
	// A pending reset is taken whatever the setting, as Java's
	// queryThenEraseResetOffset does, but acted on only while server-side
	// reset is on: one recorded before the switch is dropped, not replayed.
	if off, ok := b.offsets.TakeReset(h.ConsumerGroup, h.Topic, h.QueueID); ok && b.conf().UseServerSideResetOffset {
		hdr := codec.PullMessageResponseHeader{SuggestWhichBrokerID: b.suggestBrokerID(h.ConsumerGroup, &store.GetResult{}),
			NextBeginOffset: off,
			MinOffset:       b.store.MinOffsetInQueue(h.Topic, h.QueueID), MaxOffset: b.store.MaxOffsetInQueue(h.Topic, h.QueueID)}
		if p := reply.static; p != nil {
			// A static queue's offsets are answered logical, as Java's
			// handler rewrites every static pull answer.
			it := &p.items[p.cur]
			hdr.NextBeginOffset = it.StaticOffsetStrictly(off)
			hdr.MinOffset, hdr.MaxOffset = it.StaticOffsetStrictly(hdr.MinOffset), it.StaticOffsetStrictly(hdr.MaxOffset)
			hdr.OffsetDelta, hdr.HasOffsetDelta = it.OffsetDelta(), true
		}
		return reply.withHeader(codec.RespPullOffsetMoved, store.GetOffsetReset.String(), hdr), nil
	}
	// The store's transfer limits bound the pull; maxMsgBytes, when the
	// client sends it, bounds it further (Java's broker ignores it).
	maxBytes := h.MaxMsgBytes
	start := time.Now()
	var res *store.GetResult
	if lr, ok := b.store.(loopReader); ok && reply.onLoop {
		res = lr.GetMessageOnLoop(h.Topic, h.QueueID, h.QueueOffset, h.MaxMsgNums, maxBytes, filter)
	} else {
		res = b.store.GetMessage(h.ConsumerGroup, h.Topic, h.QueueID, h.QueueOffset, h.MaxMsgNums, maxBytes, filter)
	}
	if res == nil {
		return reply.response(codec.RespSystemError, "store getMessage return null"), nil
	}
	b.admin.storeStats.CountGet(res.Status == store.GetFound, time.Since(start))
	if res.ColdDataSum > 0 && !sysPullGroup(h.ConsumerGroup) {
		b.cold.add(h.ConsumerGroup, res.ColdDataSum, start)
	}
	if res.FallBehind > 0 || res.Status == store.GetOffsetOverflowOne {
		b.recordFallBehind(h.ConsumerGroup, h.Topic, h.QueueID, res.FallBehind)
	}
	code := pullCode(res.Status, h.QueueOffset)
	if dispatchTarget > 0 && atQueueEnd(code, res) && b.dispatchBehind(dispatchTarget) {
		res.Release()
		if b.waitDispatch(dispatchTarget, syncDispatchWait, nil) {
			return b.pull(c, h, reply, filter, allowSuspend, 0)
		}
		b.awaitDispatch(c, *h, reply, filter, dispatchTarget)
		return nil, nil
	}
	suggest := b.suggestBrokerID(h.ConsumerGroup, res)
	if code == codec.RespPullOffsetMoved && b.conf().IsSlave() && !b.conf().Store.OffsetCheckInSlave {
		// DefaultPullMessageResultHandler: a slave never moves a consumer's
		// offset (its queues may lag its master's, or be empty after it lost
		// its store); the consumer retries at once, sent to the group's broker.
		code, suggest = codec.RespPullRetryImmediately, sgc.BrokerID
	}
	// Every 0/19/20/21 answer carries all four: the Java client unboxes them.
	hdr := codec.PullMessageResponseHeader{SuggestWhichBrokerID: suggest,
		NextBeginOffset: res.NextBeginOffset, MinOffset: res.MinOffset, MaxOffset: res.MaxOffset}
	if reply.static != nil {
		code = reply.static.rewrite(code, h.QueueOffset, &hdr)
	}
	b.offsets.CommitPull(h.ConsumerGroup, h.Topic, h.QueueID, res.NextBeginOffset)
	if allowSuspend && h.SysFlag&codec.PullFlagCommitOffset != 0 && b.conf().BrokerID == 0 {
		b.offsets.Commit(h.ConsumerGroup, h.Topic, h.QueueID, h.CommitOffset)
	}

	switch {
	case code == codec.RespSuccess:
		b.countGet(h.ConsumerGroup, h.Topic, len(res.Records)+res.InnerMessages, res.BufferTotalSize)
		if b.conf().EnableNetWorkFlowControl && !remoting.Writable(c) {
			// DefaultPullMessageResultHandler.channelIsWritable: the answer is
			// dropped, not queued behind the backlog; the consumer's pull
			// times out and is sent again from its own next offset.
			res.Release()
			b.log.Warn("pull answer dropped: connection not writable", "remote", c.RemoteAddr(), "group", h.ConsumerGroup)
			return nil, nil
		}
		resp := reply.withHeader(code, res.Status.String(), hdr)
		err := remoting.WriteResponseBodies(c, resp, res.Records, res)
		if err != nil {
			b.log.Debug("write pull response", "remote", c.RemoteAddr(), "err", err)
		}
		resp.Release() // its header was encoded by the write
		// Answered here, not by the handler's return: timed here, once.
		b.observeDeferred(reply.code, codec.RespSuccess, reply.start, reply.suspended, err)
		return nil, nil
	case code == codec.RespPullNotFound && allowSuspend && h.SysFlag&codec.PullFlagSuspend != 0:
		res.Release()
		hold := compat.Millis(int64(h.SuspendTimeoutMillis))
		if !b.conf().LongPollingEnable {
			hold = compat.Millis(int64(b.conf().ShortPollingTimeMills))
		}
		b.hold.suspend(b.hold.newHeld(c, h, reply, filter, time.Now().Add(hold)))
		return nil, nil
	default:
		resp := reply.withHeader(code, res.Status.String(), hdr)
		res.Release()
		return resp, nil
	}
}

// pullAllowed makes the checks of a pull that come before its queue is
// looked at (and before a static topic's pull is forwarded, as in Java):
// broker, group and topic; a non-nil answer refuses it.
func (b *Broker) pullAllowed(h *codec.PullMessageRequestHeader, reply pullReply) (SubscriptionGroupConfig, TopicConfig, *codec.RemotingCommand) {
	if !permReadable(b.conf().BrokerPermission) {
		return SubscriptionGroupConfig{}, TopicConfig{}, reply.forbidden(forbiddenBroker, "the broker["+b.conf().BrokerIP1+"] pulling message is forbidden")
	}
	if reply.code == codec.ReqLitePullMessage && !b.conf().LitePullMessageEnable {
		return SubscriptionGroupConfig{}, TopicConfig{}, reply.forbidden(forbiddenBroker, "the broker["+b.conf().BrokerIP1+"] for lite pull consumer is forbidden")
	}
	sgc, ok := b.groups.Find(h.ConsumerGroup)
	if !ok {
		return sgc, TopicConfig{}, reply.response(codec.RespSubscriptionGroupNotExist,
			fmt.Sprintf("subscription group [%s] does not exist", h.ConsumerGroup))
	}
	if !sgc.ConsumeEnable {
		return sgc, TopicConfig{}, reply.forbidden(forbiddenGroup, "subscription group no permission, "+h.ConsumerGroup)
	}
	tc, ok := b.topics.Select(h.Topic)
	if !ok {
		return sgc, tc, reply.response(codec.RespTopicNotExist,
			fmt.Sprintf("topic[%s] not exist, apply first please!", h.Topic))
	}
	if !permReadable(tc.Perm) {
		return sgc, tc, reply.forbidden(forbiddenTopic, "the topic["+h.Topic+"] pulling message is forbidden")
	}
	return sgc, tc, nil
}

// atQueueEnd reports a result that stops at the end of the consume queue: more
// records would have been read had they been dispatched.
func atQueueEnd(code int32, res *store.GetResult) bool {
	switch code {
	case codec.RespPullNotFound:
		return true
	case codec.RespSuccess, codec.RespPullRetryImmediately:
		return res.NextBeginOffset >= res.MaxOffset
	}
	return false
}

// confirmBound is implemented by stores whose dispatch stops at a confirm
// offset (controller mode, Java's ReputMessageService up to getConfirmOffset).
type confirmBound interface {
	ConfirmOffset() int64
}

// dispatchBehind reports that records below target are not all in their
// consume queues yet. Records past the confirm offset wait for replicas, not
// for dispatch: a wait for them would last its whole time (Java's consume
// queues do not hold them either).
func (b *Broker) dispatchBehind(target int64) bool {
	dp, ok := b.store.(dispatchProgress)
	if !ok {
		return false
	}
	if cb, ok := b.store.(confirmBound); ok {
		target = min(target, cb.ConfirmOffset())
	}
	return dp.DispatchedPhyOffset() < target
}

// waitDispatch polls until dispatch has passed target (true) or d has
// elapsed or c closed (false).
func (b *Broker) waitDispatch(target int64, d time.Duration, c remoting.Conn) bool {
	deadline := time.Now().Add(d)
	for b.dispatchBehind(target) {
		if !time.Now().Before(deadline) || (c != nil && c.Closed()) {
			return false
		}
		time.Sleep(dispatchPollInterval)
	}
	return true
}

// awaitDispatch answers the pull once dispatch has passed target, or after
// maxDispatchWait, from its own goroutine so the pull worker is free.
func (b *Broker) awaitDispatch(c remoting.Conn, h codec.PullMessageRequestHeader, reply pullReply, filter store.MessageFilter, target int64) {
	h.CloneStrings() // the request frame is recycled once the handler returns
	go func() {
		defer func() {
			if b.recovered("pull after dispatch", recover()) {
				_ = b.answerPull(c, reply, reply.response(codec.RespSystemError, "internal error"))
			}
		}()
		b.waitDispatch(target, maxDispatchWait, c)
		if c.Closed() {
			return
		}
		resp, err := b.pull(c, &h, reply, filter, true, 0)
		if err != nil {
			resp = reply.response(codec.RespSystemError, err.Error())
		}
		if resp != nil {
			if err := b.answerPull(c, reply, resp); err != nil {
				b.log.Debug("write pull response after dispatch", "remote", c.RemoteAddr(), "err", err)
			}
		}
	}()
}

// pullFilter resolves the subscription of a pull: from the request (sysFlag
// bit 2) or from the group's last heartbeat.
// Java's RequestSource values of a pull's requestSource (absent: the SDK).
const (
	requestSourceProxyForBroadcast = 1
	requestSourceProxyForStream    = 2
)

func (b *Broker) pullFilter(h *codec.PullMessageRequestHeader, sgc SubscriptionGroupConfig, reply pullReply) (store.MessageFilter, *codec.RemotingCommand) {
	var sub codec.SubscriptionData
	// compensateBasicConsumerInfo by request source: the proxy's broadcast and stream pulls, else the SDK's.
	consumeType, model := "CONSUME_PASSIVELY", "CLUSTERING"
	switch h.RequestSource {
	case requestSourceProxyForBroadcast:
		model = "BROADCASTING"
	case requestSourceProxyForStream:
		consumeType = "CONSUME_ACTIVELY"
	}
	if h.SysFlag&codec.PullFlagSubscription != 0 {
		if !isTagType(h.ExpressionType) {
			sub = codec.SubscriptionData{Topic: h.Topic, SubString: h.Subscription, ExpressionType: h.ExpressionType}
		} else {
			sub = parseTagSubscription(h.Topic, h.Subscription)
		}
		b.consumers.CompensatePull(h.ConsumerGroup, consumeType, model, &sub)
		sub.SubVersion = h.SubVersion
		// Java checks the ban only for subscriptions from heartbeats, so a
		// lite pull consumer (its subscription in the request) walked past it.
		if resp := b.readForbidden(h, reply); resp != nil {
			return nil, resp
		}
	} else {
		b.consumers.CompensatePull(h.ConsumerGroup, consumeType, model, nil)
		s, online, found, model := b.consumers.Subscription(h.ConsumerGroup, h.Topic)
		if !online {
			return nil, reply.response(codec.RespSubscriptionNotExist,
				fmt.Sprintf("the consumer's group info not exist, group: %s", h.ConsumerGroup))
		}
		if !sgc.ConsumeBroadcastEnable && model == "BROADCASTING" {
			return nil, reply.forbidden(forbiddenBroadcast,
				fmt.Sprintf("the consumer group[%s] can not consume by broadcast way", h.ConsumerGroup))
		}
		if resp := b.readForbidden(h, reply); resp != nil {
			return nil, resp
		}
		if !found {
			return nil, reply.response(codec.RespSubscriptionNotExist,
				fmt.Sprintf("the consumer's subscription not exist, group: %s, topic:%s", h.ConsumerGroup, h.Topic))
		}
		if s.SubVersion < h.SubVersion {
			return nil, reply.response(codec.RespSubscriptionNotLatest, "the consumer's subscription not latest")
		}
		sub = s
	}
	if !isTagType(sub.ExpressionType) && !b.conf().EnablePropertyFilter {
		return nil, reply.response(codec.RespSystemError,
			"The broker does not support consumer to filter message by "+sub.ExpressionType)
	}
	f, err := b.newPullFilter(&sub)
	if err != nil {
		return nil, reply.response(codec.RespSubscriptionParseFailed, err.Error())
	}
	return f, nil
}

// readForbidden answers a pull of a topic its group is banned from reading
// (UPDATE_AND_GET_GROUP_FORBIDDEN) as Java does; nil when it may read.
func (b *Broker) readForbidden(h *codec.PullMessageRequestHeader, reply pullReply) *codec.RemotingCommand {
	if !b.groups.Forbidden(h.ConsumerGroup, h.Topic, meta.IndexPermRead) {
		return nil
	}
	return reply.forbidden(forbiddenSubscription,
		"the consumer group["+h.ConsumerGroup+"] is forbidden for topic["+h.Topic+"]")
}

// pullCode maps the store status to the response code as PullMessageProcessor.
func pullCode(s store.GetStatus, requestOffset int64) int32 {
	switch s {
	case store.GetFound:
		return codec.RespSuccess
	case store.GetMessageWasRemoving, store.GetNoMatchedMessage:
		return codec.RespPullRetryImmediately
	case store.GetNoMatchedLogicQueue, store.GetNoMessageInQueue:
		if requestOffset != 0 {
			return codec.RespPullOffsetMoved
		}
		return codec.RespPullNotFound
	case store.GetOffsetFoundNull, store.GetOffsetOverflowOne:
		return codec.RespPullNotFound
	case store.GetOffsetOverflowBadly, store.GetOffsetReset, store.GetOffsetTooSmall:
		return codec.RespPullOffsetMoved
	}
	return codec.RespSystemError
}
