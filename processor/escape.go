package processor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/processor/delivery"
	"rmqd/store"
)

// The escape bridge (Java's EscapeBridge): what the master-only services put
// back (due delayed and timed messages, revived POP messages, half messages
// an acting slave hands over) goes to this broker's store on a master. On a
// slave, whose store takes no put, it is sent with enableRemoteEscape to a
// master of the message's topic in another group (putMessageToRemoteBroker);
// without it the put fails as the slave's store refuses it, and the service
// tries again later. POP checkpoints and acks go the same way to another
// group's revive topic (putMessageToSpecificQueue), which takes them from
// brokers only (revive_accept.go).

// escapeSendTimeout is EscapeBridge's SEND_TIMEOUT.
const escapeSendTimeout = 3 * time.Second

// escapeStore is the store the delivery services put through.
type escapeStore struct {
	MessageStore
	b *Broker
}

// PutMessage puts msg locally or, on a slave with enableRemoteEscape, to a
// remote master.
func (s escapeStore) PutMessage(ctx context.Context, msg *codec.Message) store.PutResult {
	return s.b.escapePut(ctx, msg)
}

// escapePut is EscapeBridge.putMessage.
func (b *Broker) escapePut(ctx context.Context, msg *codec.Message) store.PutResult {
	cfg := b.conf()
	if !cfg.IsSlave() || !cfg.EnableSlaveActingMaster || !cfg.EnableRemoteEscape {
		return b.store.PutMessage(ctx, msg)
	}
	out, ok := b.escapedForm(msg)
	if !ok {
		return store.PutResult{Status: store.PutMessageIllegal}
	}
	pick := b.pickRoundRobin
	if isReviveTopic(out.Topic) {
		// POP checkpoints and acks (putMessageToSpecificQueue): all of this
		// broker's go to one queue, where a checkpoint meets its acks.
		pick = b.pickSpecificQueue(out.Topic)
	}
	if err := b.putToRemoteBroker(ctx, out, pick); err != nil {
		b.log.Warn("escape: put to a remote master failed", "topic", out.Topic, "err", err)
		return store.PutResult{Status: store.PutServiceNotAvailable}
	}
	return store.PutResult{Status: store.PutOK}
}

// escapedForm is the message a remote master is sent for msg: the real
// message of a parked one, parked again by the remote (a timer roll keeps its
// deliver time), a half message as a new prepared one (Java's
// buildTransactionalMessageFromHalfMessage), a due message without the
// properties that would park it again. A POP revive record the timer
// delivers keeps them (TIMER_OUT_MS says it is due: the remote stores it as
// its own timer would), as the remote's reviver reads its deliver time.
func (b *Broker) escapedForm(msg *codec.Message) (*codec.Message, bool) {
	out := *msg
	e := codec.EditProperties(msg.Properties)
	switch msg.Topic {
	case delivery.TopicTimer:
		real, _ := e.Get(codec.PropRealTopic)
		at, _ := e.Get(codec.PropTimerOutMs)
		q, err := parseQueueID(&e)
		if real == "" || at == "" || err != nil {
			b.log.Warn("escape: timer record without its real topic or time dropped")
			return nil, false
		}
		out.Topic, out.QueueID = real, q
		e.Delete(codec.PropRealTopic)
		e.Delete(codec.PropRealQueueID)
		e.Delete(codec.PropTimerOutMs)
		e.Set(codec.PropTimerDeliverMs, at)
	case delivery.TopicTransHalf:
		real, _ := e.Get(codec.PropRealTopic)
		q, err := parseQueueID(&e)
		if real == "" || err != nil {
			b.log.Warn("escape: half message without its real topic dropped")
			return nil, false
		}
		out.Topic, out.QueueID = real, q
		e.Delete(codec.PropRealTopic)
		e.Delete(codec.PropRealQueueID)
		e.Delete(codec.PropTranPreparedQOff)
		e.Set(codec.PropTranMsg, "true")
		out.SysFlag = out.SysFlag&^sysFlagTransactionMask | sysFlagTransPrepared
	default:
		if isReviveTopic(msg.Topic) {
			return &out, true
		}
		e.Delete(codec.PropDelay)
		e.Delete(codec.PropTimerDeliverMs)
		e.Delete(codec.PropTimerDelaySec)
		e.Delete(codec.PropTimerDelayMs)
	}
	out.Properties = e.String()
	return &out, true
}

func parseQueueID(e *codec.PropertiesEditor) (int32, error) {
	v, _ := e.Get(codec.PropRealQueueID)
	q, err := strconv.ParseInt(v, 10, 32)
	return int32(q), err
}

func isReviveTopic(topic string) bool { return strings.HasPrefix(topic, compat.SysTopicRevivePrefix) }

// escapeTarget is a writable queue of a master of another group.
type escapeTarget struct {
	addr, name string
	queue      int32
}

// remoteTargets are the writable queues of route on masters of groups other
// than this broker's (never its own group's master, gone or not), in the
// order of Java's TopicPublishInfo: groups by name, queues by id.
func (b *Broker) remoteTargets(route *codec.TopicRouteData) []escapeTarget {
	self := b.conf().BrokerName
	masters := map[string]string{}
	for _, bd := range route.BrokerDatas {
		if a := bd.BrokerAddrs[codec.MasterID]; a != "" {
			masters[bd.BrokerName] = a
		}
	}
	qds := slices.Clone(route.QueueDatas)
	slices.SortStableFunc(qds, func(x, y codec.QueueData) int { return strings.Compare(x.BrokerName, y.BrokerName) })
	var targets []escapeTarget
	for _, qd := range qds {
		addr := masters[qd.BrokerName]
		if qd.BrokerName == self || addr == "" || qd.Perm&PermWrite == 0 {
			continue
		}
		for q := range min(compat.ClampQueueNums(qd.WriteQueueNums), 1024) {
			targets = append(targets, escapeTarget{addr, qd.BrokerName, q})
		}
	}
	return targets
}

// pickRoundRobin is selectOneMessageQueue(this broker's name) over targets.
func (b *Broker) pickRoundRobin(targets []escapeTarget) escapeTarget {
	return targets[b.acting.escapePick.Add(1)%uint64(len(targets))]
}

// pickSpecificQueue is asyncRemotePutMessageToSpecificQueue's pick: the
// queue at floorMod(hash(topic + storeHost)) (storeHost as Java's
// InetSocketAddress prints it), the same for every record of this broker.
func (b *Broker) pickSpecificQueue(topic string) func([]escapeTarget) escapeTarget {
	return func(targets []escapeTarget) escapeTarget {
		h := int64(compat.JavaStringHash(topic + "/" + b.storeHost.String()))
		n := int64(len(targets))
		return targets[((h%n)+n)%n]
	}
}

// putToRemoteBroker sends msg to a writable queue of its topic on a master of
// another group, picked from the name servers' route by pick.
func (b *Broker) putToRemoteBroker(ctx context.Context, msg *codec.Message, pick func([]escapeTarget) escapeTarget) error {
	cfg := b.conf()
	if b.ns == nil || len(b.nameServerAddrs()) == 0 {
		return errors.New("no name server")
	}
	route, err := b.topicRoute(ctx, msg.Topic)
	if err != nil {
		return err
	}
	targets := b.remoteTargets(route)
	if len(targets) == 0 {
		return fmt.Errorf("no writable queue of %s on a master of another group", msg.Topic)
	}
	t := pick(targets)
	group, _ := codec.PropertyValue(msg.Properties, codec.PropProducerGroup)
	if group == "" {
		group = fmt.Sprintf("InnerProducerGroup_%s_%d", cfg.BrokerName, cfg.BrokerID)
	}
	// The host bits are this broker's record's; the remote sets its own.
	flag := msg.SysFlag &^ (sysFlagBornHostV6 | sysFlagStoreHostV6)
	h := codec.SendMessageRequestHeader{ProducerGroup: group, Topic: msg.Topic, DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, QueueID: t.queue, SysFlag: flag, BornTimestamp: msg.BornTimestamp,
		Flag: msg.Flag, Properties: codec.SetProperty(msg.Properties, codec.PropWait, "false"),
		ReconsumeTimes: msg.ReconsumeTimes, BrokerName: t.name}
	req := codec.NewRequest(codec.ReqSendMessage)
	req.CustomHeader = &h
	req.Body = msg.Body
	cctx, cancel := context.WithTimeout(ctx, escapeSendTimeout)
	defer cancel()
	resp, err := b.ns.InvokeSync(cctx, t.addr, req)
	if err != nil {
		return fmt.Errorf("send to %s (%s): %w", t.name, t.addr, err)
	}
	if resp.Code != codec.RespSuccess {
		return fmt.Errorf("send to %s (%s): code %d %s", t.name, t.addr, resp.Code, resp.Remark)
	}
	return nil
}

// topicRoute is GET_ROUTEINFO_BY_TOPIC from the first name server that has it.
func (b *Broker) topicRoute(ctx context.Context, topic string) (*codec.TopicRouteData, error) {
	var errs []error
	for _, addr := range b.nameServerAddrs() {
		req := codec.NewRequest(codec.ReqGetRouteinfoByTopic)
		req.Ext.Set("topic", topic)
		cctx, cancel := context.WithTimeout(ctx, escapeSendTimeout)
		resp, err := b.ns.InvokeSync(cctx, addr, req)
		cancel()
		if err == nil && resp.Code != codec.RespSuccess {
			err = fmt.Errorf("code %d %s", resp.Code, resp.Remark)
		}
		var route *codec.TopicRouteData
		if err == nil {
			route, err = codec.DecodeTopicRouteData(bytes.Clone(resp.Body))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("route of %s from %s: %w", topic, addr, err))
			continue
		}
		return route, nil
	}
	return nil, errors.Join(errs...)
}

// escapeHalf is the acting slave's transaction checker step
// (TransactionalMessageServiceImpl.check with enableSlaveActingMaster): a
// half message not settled is handed to a remote master as a new prepared
// message, whose checker asks the producer. escaping is false on a master.
func (b *Broker) escapeHalf(ctx context.Context, half *codec.Message) (escaping, ok bool) {
	if !b.conf().IsSlave() || !b.actingEnabled() {
		return false, false
	}
	return true, b.escapePut(ctx, half).Status.Written()
}
