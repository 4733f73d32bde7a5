package ha

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// autoClient is the slave side (AutoSwitchHAClient): handshake, truncation to
// the point both logs agree on, then TRANSFER frames appended to the store.
type autoClient struct {
	client
	a        *AutoSwitch
	brokerID int64
	flow     *flow
	// cleanEnd is the commitlog end ready last found clean (run loop only).
	cleanEnd int64
}

func newAutoClient(a *AutoSwitch, brokerID int64) *autoClient {
	c := &autoClient{a: a, brokerID: brokerID, flow: newFlow(nil, time.Now()), cleanEnd: -1}
	c.init(a.ctx, a.log)
	return c
}

func (c *autoClient) run() { c.start(c.ready, c.session) }

// ready is the READY state: cut a record the last master left half sent.
// The scan runs from the dispatch position, which the confirm offset may hold
// far back, so a log already found clean is not scanned again.
func (c *autoClient) ready() {
	if c.a.st.MaxPhyOffset() == c.cleanEnd {
		return
	}
	if cut, err := c.a.st.TruncateInvalidTail(); err != nil {
		c.log.Error("truncate invalid tail", "err", err)
		return
	} else if cut >= 0 {
		if err := c.a.epoch.TruncateSuffixByOffset(cut); err != nil {
			c.log.Error("truncate epoch file", "err", err)
		}
	}
	c.cleanEnd = c.a.st.MaxPhyOffset()
}

func (c *autoClient) session(addr string) error {
	st, cfg := c.a.st, c.a.cfg
	sess, err := c.dial(addr)
	if err != nil {
		return err
	}
	defer sess.close()
	nc := sess.nc
	var wmu sync.Mutex
	var reported atomic.Int64
	write := func(b []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		_ = nc.SetWriteDeadline(time.Now().Add(writeTimeout))
		if _, err := nc.Write(b); err != nil {
			return err
		}
		c.lastWrite.Store(nowMs())
		return nil
	}
	report := func(off int64) error {
		var b [slaveTransferSize]byte
		if err := write(AppendSlaveReport(b[:0], off)); err != nil {
			return fmt.Errorf("report offset: %w", err)
		}
		reported.Store(off)
		return nil
	}

	// HANDSHAKE
	hs := AppendSlaveHandshake(nil, SlaveHandshake{SyncFromLastFile: cfg.SyncFromLastFile, AsyncLearner: cfg.AsyncLearner,
		BrokerID: c.brokerID})
	if err := write(hs); err != nil {
		return fmt.Errorf("send handshake: %w", err)
	}
	r := bufio.NewReaderSize(nc, 64<<10)
	_ = nc.SetReadDeadline(time.Now().Add(cfg.tun().HousekeepingInterval))
	hdr := make([]byte, masterTransferSize)
	if _, err := io.ReadFull(r, hdr[:masterHandshakeSize]); err != nil {
		return fmt.Errorf("read handshake: %w", err)
	}
	mh, size, err := decodeMasterHandshakeHeader(hdr[:masterHandshakeSize])
	if err != nil {
		return err
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(r, body); err != nil {
		return fmt.Errorf("read handshake body: %w", err)
	}
	c.lastRead.Store(nowMs())
	mh.Entries = decodeEpochEntries(body)
	from, err := c.truncate(mh)
	if err != nil {
		return err
	}
	// Java reports only at its next heartbeat when the truncation left its
	// end where it was; rmqd reports at once so the master starts sooner.
	if err := report(from); err != nil {
		return err
	}
	c.a.log.Info("slave handshake done", "master", addr, "from", from, "masterEnd", mh.MaxOffset)
	sess.beat(func() time.Duration { return cfg.tun().HeartbeatInterval }, func() error { return report(max(reported.Load(), st.MaxPhyOffset())) })

	// TRANSFER
	received := int32(-1)
	var data []byte
	var readDeadline time.Time
	for {
		refreshReadDeadline(nc, &readDeadline, cfg.tun().HousekeepingInterval)
		if _, err := io.ReadFull(r, hdr); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return errHousekeeping
			}
			return fmt.Errorf("read frame header: %w", err)
		}
		h, err := DecodeTransferHeader(hdr)
		if err != nil {
			return err
		}
		if cap(data) < int(h.BodySize) {
			data = make([]byte, h.BodySize)
		}
		data = data[:h.BodySize]
		if _, err := io.ReadFull(r, data); err != nil {
			return fmt.Errorf("read frame body: %w", err)
		}
		c.lastRead.Store(nowMs())
		c.flow.sent(len(data))
		if mine := st.MaxPhyOffset(); mine != 0 && mine != h.Offset {
			return fmt.Errorf("master sent offset %d, slave ends at %d", h.Offset, mine)
		} else if mine == 0 && (h.Offset%int64(st.CommitLogFileSize()) != 0 || h.Offset > mh.MaxOffset) {
			// An empty slave starts at a file's first byte, within what the
			// master said it holds.
			return fmt.Errorf("master sent offset %d to an empty slave (master end %d): not a file start it holds",
				h.Offset, mh.MaxOffset)
		}
		if h.Epoch != received {
			if ok, err := c.learnEpoch(h, len(data)); err != nil {
				return err
			} else if ok {
				received = h.Epoch
			}
		}
		if len(data) > 0 {
			if err := st.AppendCommitLog(h.Offset, data); err != nil {
				return fmt.Errorf("append frame: %w", err)
			}
		}
		st.SetConfirmOffset(min(h.ConfirmOffset, st.MaxPhyOffset()))
		if r.Buffered() >= masterTransferSize {
			continue // report after the frames already here
		}
		if mine := st.MaxPhyOffset(); mine > reported.Load() {
			if err := report(mine); err != nil {
				return err
			}
		}
	}
}

// learnEpoch records the epoch of a frame when it is newer than the last
// one held; true once the epoch is held. A master sends the epoch holding
// the frame's offset, so a new epoch starts within the frame and after the
// last one: one starting beyond the frame is not taken (not yet: a later
// frame in it brings it), one starting at or before the last held ends the
// connection. Java appends whatever comes (rewriting and syncing the epoch
// file each time), so a forged master's empty frames, each a new epoch
// further on, made the file grow without bound.
func (c *autoClient) learnEpoch(h TransferHeader, n int) (bool, error) {
	ec := c.a.epoch
	last, ok := ec.LastEntry()
	if ok && last.Epoch >= h.Epoch {
		return true, nil
	}
	if h.EpochStartOffset > h.Offset+int64(n) {
		return false, nil
	}
	if ok && h.EpochStartOffset <= last.StartOffset {
		return false, fmt.Errorf("master sent epoch %d from %d, not after epoch %d from %d",
			h.Epoch, h.EpochStartOffset, last.Epoch, last.StartOffset)
	}
	if err := ec.Append(EpochEntry{Epoch: h.Epoch, StartOffset: h.EpochStartOffset}); err != nil {
		// Java logs and goes on as well.
		c.a.log.Error("append epoch entry", "epoch", h.Epoch, "start", h.EpochStartOffset, "err", err)
	}
	return true, nil
}

// truncate is doTruncate: with no local epochs the log is taken as it is;
// otherwise it is cut where the master's and this log's epochs last agree.
// It returns the offset to report.
func (c *autoClient) truncate(mh MasterHandshake) (int64, error) {
	st, ec := c.a.st, c.a.epoch
	if err := checkMasterEpochs(mh); err != nil {
		return 0, err
	}
	if ec.Len() == 0 {
		return st.MaxPhyOffset(), nil
	}
	masterCache := NewEpochCache(mh.Entries)
	masterCache.SetLastEndOffset(mh.MaxOffset)
	local := NewEpochCache(ec.Entries())
	local.SetLastEndOffset(st.MaxPhyOffset())
	point := local.FindConsistentPoint(masterCache)
	if point < 0 {
		return 0, fmt.Errorf("no consistent point between master epochs %v and local %v", mh.Entries, ec.Entries())
	}
	if floor := min(st.ConfirmOffset(), st.DispatchedPhyOffset()); c.a.cfg.AllAckInSyncStateSet && point < floor {
		// With allAckInSyncStateSet the confirm offset is held by every
		// member of the sync state set, so a master the controller elects
		// holds what this slave dispatched below it (the whole records its
		// consumers may have read). Java cuts wherever the handshake says.
		return 0, fmt.Errorf("master %v (end %d) would cut this log to %d, below what its consumers saw (%d): refused",
			mh.Entries, mh.MaxOffset, point, floor)
	}
	if point < st.MaxPhyOffset() {
		c.a.log.Warn("truncating the slave log to the last epoch in common", "offset", point, "end", st.MaxPhyOffset())
		if err := st.TruncateCommitLog(point); err != nil {
			return 0, fmt.Errorf("truncate to %d: %w", point, err)
		}
	}
	if err := ec.TruncateSuffixByOffset(point); err != nil {
		return 0, err
	}
	return st.MaxPhyOffset(), nil
}

// checkMasterEpochs refuses a handshake whose epochs and starts do not
// strictly increase or start past the master's end: a master's own epoch
// file never looks so, and the slave cuts its log by it.
func checkMasterEpochs(mh MasterHandshake) error {
	for i, e := range mh.Entries {
		bad := e.StartOffset < 0 || e.StartOffset > mh.MaxOffset
		if i > 0 {
			p := mh.Entries[i-1]
			bad = bad || e.Epoch <= p.Epoch || e.StartOffset <= p.StartOffset
		}
		if bad {
			return fmt.Errorf("master handshake epochs %v (end %d): not increasing within the log: %w", mh.Entries,
				mh.MaxOffset, errBadFrame)
		}
	}
	return nil
}

// runtimeInfo is the client's half of haStatus.
func (c *autoClient) runtimeInfo() ClientRuntimeInfo {
	return ClientRuntimeInfo{Activated: c.connected(), MasterAddr: c.masterAddr(), MaxOffset: c.a.st.MaxPhyOffset(),
		LastReadTimestamp: c.lastRead.Load(), LastWriteTimestamp: c.lastWrite.Load(),
		TransferredByteInSecond: c.flow.perSecond(time.Now())}
}
