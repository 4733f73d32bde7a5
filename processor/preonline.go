package processor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"rmqd/codec"
)

// Pre-online (Java's BrokerPreOnlineService): a broker of an acting-master
// group (totalReplicas above 1, skipPreOnline false) starts isolated: it
// neither registers nor heartbeats nor runs the master-only services.
//
// A master that starts while its slaves may have acted for it takes back
// from each alive slave what moved there: consumer offsets (the services'
// progress among them), delay offsets and the timer's progress, once the
// slave's HA connection transfers. Then it starts them and registers; the
// slaves, seeing it in the group, stop theirs. Without this the master would
// deliver again what the slave delivered, and its older offsets would
// overwrite the slave's.
//
// A slave whose master is alive asks it for its HA address and waits until
// its HA client transfers from it, then registers; with the master gone it
// starts at once (as the prime slave if its id is the lowest).

// preOnlineRetry is how long a failed round waits (Java: 1 s).
const preOnlineRetry = time.Second

// haHandshakeTimeout bounds a wait for an HA connection to transfer
// (HAConnectionStateNotificationService's CONNECTION_ESTABLISH_TIMEOUT); a
// wait that runs out fails the round, which is tried again.
const haHandshakeTimeout = 10 * time.Second

// HATransfer is the classic HA service as pre-online waits on it (store/ha's
// Master and Slave): Transferring reports, on a master, a connection of the
// slave at host (host or host:port) past its first offset report; on a
// slave, its connection to its master (host unused).
type HATransfer interface {
	Transferring(host string) bool
}

// SetHATransfer lends pre-online the HA service (cmd wires store/ha's);
// without one it waits for no HA connection. Set before Start.
func (b *Broker) SetHATransfer(h HATransfer) { b.acting.transfer.Store(&h) }

// waitHATransfer is waitForHaHandshakeComplete: until the HA connection
// with the broker at addr transfers, at most haHandshakeTimeout.
func (b *Broker) waitHATransfer(ctx context.Context, addr string) error {
	p := b.acting.transfer.Load()
	if p == nil {
		return nil
	}
	wait := time.Duration(b.acting.haWait.Load())
	if wait <= 0 {
		wait = haHandshakeTimeout
	}
	deadline := time.Now().Add(wait)
	for !(*p).Transferring(addr) {
		if time.Now().After(deadline) {
			return fmt.Errorf("no HA connection with %s in the transfer state after %s", addr, wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// needsPreOnline reports a broker that starts isolated.
func (b *Broker) needsPreOnline() bool {
	cfg := b.conf()
	return !cfg.SkipPreOnline && cfg.TotalReplicas > 1
}

// preOnlineLoop tries until a round succeeds or ctx ends.
func (b *Broker) preOnlineLoop(ctx context.Context) {
	for {
		var err error
		if b.conf().BrokerID == codec.MasterID {
			if err = b.preOnline(ctx); err == nil {
				b.startService(ctx, codec.MasterID, b.conf().BrokerAddr())
			}
		} else {
			err = b.slavePreOnline(ctx)
		}
		if err == nil {
			return
		}
		b.log.Warn("pre-online: will try again", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(preOnlineRetry):
		}
	}
}

// startService is BrokerController.startService: the group's lowest id, the
// services if it is this broker's, then the registration.
func (b *Broker) startService(ctx context.Context, minID int64, minAddr string) {
	b.log.Info("pre-online: done, serving", "minBrokerId", minID, "minBrokerAddr", minAddr)
	b.acting.mu.Lock()
	b.acting.minID, b.acting.minAddr = minID, minAddr
	b.changeSpecialLocked(b.conf().BrokerID == minID)
	b.acting.mu.Unlock()
	b.acting.isolated.Store(false)
	_ = b.RegisterAll(ctx) // logged per name server (regState)
}

// slavePreOnline is prepareForBrokerOnline on a slave: with the master
// alive, prepareForSlaveOnline; else start at once with the lowest alive id
// (this broker counted: Java leaves it out, and a slave that is the lowest
// would start passive until the next group sync).
func (b *Broker) slavePreOnline(ctx context.Context) error {
	members, err := b.brokerMemberGroup(ctx)
	if err != nil {
		return err
	}
	cfg := b.conf()
	minID, minAddr := cfg.BrokerID, cfg.BrokerAddr()
	for id, addr := range members {
		if addr != "" && id < minID {
			minID, minAddr = id, addr
		}
	}
	if minID != codec.MasterID {
		b.startService(ctx, minID, minAddr)
		return nil
	}
	ha, master, err := b.retrieveBrokerHaInfo(ctx, minAddr)
	switch {
	case errors.Is(err, errNotSupported):
		b.log.Warn("pre-online: the master does not give its HA address, serving", "master", minAddr)
		b.startService(ctx, minID, minAddr)
		return nil
	case err != nil:
		return err
	case ha == "":
		// Java: "fetch master ha address return null, start service directly".
		b.startService(ctx, minID, minAddr)
		return nil
	}
	if master == "" {
		master = minAddr
	}
	// The metadata copy starts at once, as with a registration naming it.
	b.followMaster(master, ha)
	if err := b.waitHATransfer(ctx, ha); err != nil {
		return err
	}
	b.startService(ctx, minID, minAddr)
	return nil
}

// retrieveBrokerHaInfo is EXCHANGE_BROKER_HA_INFO without addresses: the
// master at addr answers its HA and remoting addresses.
func (b *Broker) retrieveBrokerHaInfo(ctx context.Context, addr string) (ha, master string, err error) {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp, err := b.ns.InvokeSync(cctx, addr, codec.NewRequest(codec.ReqExchangeBrokerHaInfo))
	if err != nil {
		return "", "", fmt.Errorf("HA info from %s: %w", addr, err)
	}
	switch resp.Code {
	case codec.RespSuccess:
	case codec.RespRequestCodeNotSupported:
		return "", "", fmt.Errorf("HA info from %s: %w", addr, errNotSupported)
	default:
		return "", "", fmt.Errorf("HA info from %s: code %d %s", addr, resp.Code, resp.Remark)
	}
	ha, _ = resp.Ext.Get("masterHaAddress")
	master, _ = resp.Ext.Get("masterAddress")
	return ha, master, nil
}

// preOnline is prepareForMasterOnline: the alive members of the group,
// lowest id first, each told the master's HA address, waited for until its
// HA connection transfers, then asked for its tables.
func (b *Broker) preOnline(ctx context.Context) error {
	members, err := b.brokerMemberGroup(ctx)
	if err != nil {
		return err
	}
	self := b.conf().BrokerID
	ids := make([]int64, 0, len(members))
	for id := range members {
		if id != self && members[id] != "" {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		// As Java, a slave that fails or refuses this fails the round (tried
		// again; a slave gone leaves the member group). One that does not
		// know the code (an older broker) must not keep the master offline
		// for good: it is only logged, and not waited for, as it learns the
		// master's HA address only from the registration the wait holds back.
		switch err := b.sendBrokerHaInfo(ctx, members[id]); {
		case errors.Is(err, errNotSupported):
			b.log.Warn("pre-online: HA info not taken, the slave is not waited for", "broker", id, "err", err)
		case err != nil:
			return fmt.Errorf("broker %d: %w", id, err)
		default:
			if err := b.waitHATransfer(ctx, members[id]); err != nil {
				return fmt.Errorf("broker %d: %w", id, err)
			}
		}
		if err := b.syncMetadataReverse(ctx, members[id]); err != nil {
			return fmt.Errorf("reverse sync from broker %d: %w", id, err)
		}
	}
	return nil
}

// syncMetadataReverse takes from the slave at addr the consumer offsets and
// delay offsets ahead of this broker's and its timer progress if ahead. Java
// takes a whole table when the slave's data version is not older; rmqd
// compares entries, so a slave that did not act (whose copy is older) changes
// nothing.
func (b *Broker) syncMetadataReverse(ctx context.Context, addr string) error {
	get := func(code int32) (*codec.RemotingCommand, error) {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		resp, err := b.ns.InvokeSync(cctx, addr, codec.NewRequest(code))
		if err != nil {
			return nil, fmt.Errorf("request %d to %s: %w", code, addr, err)
		}
		if resp.Code != codec.RespSuccess {
			return nil, fmt.Errorf("request %d to %s: code %d %s", code, addr, resp.Code, resp.Remark)
		}
		return resp, nil
	}
	resp, err := get(codec.ReqGetAllConsumerOffset)
	if err != nil {
		return err
	}
	n, err := b.offsets.MergeAhead(resp.Body)
	if err != nil {
		return err
	}
	resp, err = get(codec.ReqGetAllDelayOffset)
	if err != nil {
		return err
	}
	d, err := b.schedule.MergeAhead(resp.Body)
	if err != nil {
		return err
	}
	adopted := false
	if b.conf().TimerWheelEnable {
		// A broker without the wheel answers none; a Java slave's claim has no
		// queueOffset to say it is ahead of this broker's: only an rmqd
		// slave's is taken.
		if resp, err := get(codec.ReqGetTimerCheckPoint); err == nil {
			if s, ok, err := timerProgressOf(resp); err == nil && ok && !s.RollsUnknown {
				if adopted, err = b.timer.AdoptProgressIfAhead(s); err != nil {
					return err
				}
			}
		}
	}
	b.log.Info("pre-online: reverse sync", "from", addr, "consumerOffsetsTaken", n, "delayOffsetsTaken", d,
		"timerProgressTaken", adopted)
	return nil
}
