package processor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"rmqd/codec"
	"rmqd/compat"
)

// lockInStrictMode (AdminBrokerProcessor.lockBatchMQ): a LOCK_BATCH_MQ from a
// client grants a queue only when a quorum (totalReplicas/2+1) of the group's
// brokers locked it, this one included; the others are asked with
// onlyThisBroker=true. UNLOCK_BATCH_MQ is passed on the same way. Every peer
// request ends before the handler returns, so the request's strings need no
// copy.
//
// Java learns the group's brokers only through syncBrokerMemberGroup, which it
// schedules with enableSlaveActingMaster alone: without it (the only way rmqd
// runs) Java's member list stays empty and strict mode grants no lock at all.
// rmqd asks the name servers for the list (GET_BROKER_MEMBER_GROUP) when a
// strict request needs it and keeps it for syncBrokerMemberGroupPeriod, so
// strict mode works in a classic group too without a name-server round trip
// per lock.

// Java's timeouts: 1 s for each forwarded request, 2 s for all of them.
const (
	strictPeerTimeout = time.Second
	strictAllTimeout  = 2 * time.Second
)

// strictQuorum is the number of brokers that must lock a queue, or 0 when this
// request is answered from this broker's locks alone.
func (b *Broker) strictQuorum(body *codec.LockBatchRequestBody) int {
	cfg := b.conf()
	if body.OnlyThisBroker || !cfg.LockInStrictMode {
		return 0
	}
	if q := cfg.TotalReplicas/2 + 1; q > 1 {
		return q
	}
	return 0
}

// memberGroupStaleMax bounds how long a member list outlives a failed refresh:
// the peers still decide each lock themselves, so a recent list serves better
// than none while the name servers are unreachable, but not for long.
const memberGroupStaleMax = 30 * time.Second

// memberGroup caches this broker's group as the name servers listed it (Java's
// BrokerMemberGroup): broker id -> address.
type memberGroup struct {
	mu    sync.Mutex // held across a refresh: concurrent lock requests share one
	addrs map[int64]string
	at    time.Time // when addrs was fetched; zero: never
}

// groupPeers are the addresses of the other brokers of this broker's group:
// the cached list while younger than syncBrokerMemberGroupPeriod, else a fresh
// one from the first name server that answers (the cached one, up to
// memberGroupStaleMax old, if none does).
func (b *Broker) groupPeers(ctx context.Context) ([]string, error) {
	cfg := b.conf()
	m := &b.members
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	age := now.Sub(m.at)
	if m.at.IsZero() || age >= compat.Millis(int64(max(cfg.SyncBrokerMemberGroupPeriod, 0))) {
		addrs, err := b.brokerMemberGroup(ctx)
		switch {
		case err == nil:
			m.addrs, m.at = addrs, now
		case m.at.IsZero() || age >= memberGroupStaleMax:
			m.addrs, m.at = nil, time.Time{}
			return nil, err
		default:
			b.log.Warn("strict lock: member group refresh failed, using the last list", "age", age, "err", err)
		}
	}
	var peers []string
	for id, a := range m.addrs {
		if id != cfg.BrokerID && a != "" {
			peers = append(peers, a)
		}
	}
	return peers, nil
}

// brokerMemberGroup is GET_BROKER_MEMBER_GROUP: the alive brokers of this
// broker's group by id, as the first name server that answers lists them.
func (b *Broker) brokerMemberGroup(ctx context.Context) (map[int64]string, error) {
	cfg := b.conf()
	if b.ns == nil {
		return nil, errors.New("no name server client")
	}
	var errs []error
	for _, addr := range b.nameServerAddrs() {
		req := codec.NewRequest(codec.ReqGetBrokerMemberGroup)
		req.Ext.Set("clusterName", cfg.BrokerClusterName)
		req.Ext.Set("brokerName", cfg.BrokerName)
		cctx, cancel := context.WithTimeout(ctx, strictPeerTimeout)
		resp, err := b.ns.InvokeSync(cctx, addr, req)
		cancel()
		if err == nil && resp.Code != codec.RespSuccess {
			err = fmt.Errorf("code %d: %s", resp.Code, resp.Remark)
		}
		var body struct {
			BrokerMemberGroup struct {
				BrokerAddrs map[int64]string `json:"brokerAddrs"`
			} `json:"brokerMemberGroup"`
		}
		if err == nil {
			err = codec.UnmarshalBody(resp.Body, &body)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("broker member group from %s: %w", addr, err))
			continue
		}
		return body.BrokerMemberGroup.BrokerAddrs, nil
	}
	if len(errs) == 0 {
		return nil, errors.New("no name server")
	}
	return nil, errors.Join(errs...)
}

// forEachPeer sends code with body (onlyThisBroker set) to every peer at once
// and hands each answer to got; it returns when all answered or after
// strictAllTimeout.
func (b *Broker) forEachPeer(ctx context.Context, peers []string, code int32, body codec.LockBatchRequestBody,
	got func(resp *codec.RemotingCommand)) {
	body.OnlyThisBroker = true
	data, err := codec.MarshalBody(body)
	if err != nil {
		b.log.Warn("strict lock: encode body", "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, strictAllTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, addr := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { b.recovered("strict lock peer", recover()) }()
			req := codec.NewRequest(code)
			req.Body = data
			cctx, cancel := context.WithTimeout(ctx, strictPeerTimeout)
			defer cancel()
			resp, err := b.ns.InvokeSync(cctx, addr, req)
			if err == nil && resp.Code != codec.RespSuccess {
				err = fmt.Errorf("code %d: %s", resp.Code, resp.Remark)
			}
			if err != nil {
				b.log.Warn("strict lock: peer request", "code", code, "peer", addr, "err", err)
				return
			}
			got(resp)
		}()
	}
	wg.Wait()
}

// strictLock keeps of locked (this broker's grants) the queues at least quorum
// brokers of the group granted to the client.
func (b *Broker) strictLock(ctx context.Context, body codec.LockBatchRequestBody, locked []codec.MessageQueue,
	quorum int) []codec.MessageQueue {
	if len(locked) == 0 {
		return locked
	}
	peers, err := b.groupPeers(ctx)
	if err != nil {
		b.log.Warn("strict lock: group members", "err", err)
	}
	var mu sync.Mutex
	votes := make(map[codec.MessageQueue]int, len(locked))
	for _, mq := range locked {
		votes[mq] = 1
	}
	body.MQSet = locked
	b.forEachPeer(ctx, peers, codec.ReqLockBatchMq, body, func(resp *codec.RemotingCommand) {
		var r codec.LockBatchResponseBody
		if err := codec.UnmarshalBody(resp.Body, &r); err != nil {
			b.log.Warn("strict lock: peer answer", "err", err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, mq := range r.LockOKMQSet {
			if _, asked := votes[mq]; asked {
				votes[mq]++
			}
		}
	})
	mu.Lock()
	defer mu.Unlock()
	out := locked[:0:0]
	for _, mq := range locked {
		if votes[mq] >= quorum {
			out = append(out, mq)
		}
	}
	return out
}

// strictUnlock passes an UNLOCK_BATCH_MQ on to the group's other brokers.
func (b *Broker) strictUnlock(ctx context.Context, body codec.LockBatchRequestBody) {
	peers, err := b.groupPeers(ctx)
	if err != nil {
		b.log.Warn("strict unlock: group members", "err", err)
		return
	}
	b.forEachPeer(ctx, peers, codec.ReqUnlockBatchMq, body, func(*codec.RemotingCommand) {})
}
