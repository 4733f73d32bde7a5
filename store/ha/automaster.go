package ha

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// autoConn is one slave connection of the master side (AutoSwitchHAConnection):
// the reader takes the slave's handshake and offset reports, the writer sends
// the epoch entries, then commitlog bytes one epoch at a time.
type autoConn struct {
	a    *AutoSwitch
	nc   net.Conn
	wake chan struct{}
	// handshake is signalled by each slave handshake; first is closed by the
	// first TRANSFER report, which sets request.
	handshake chan struct{}
	first     chan struct{}
	request   int64
	done      chan struct{}
	closeOnce sync.Once
	goWG      sync.WaitGroup

	slaveID          atomic.Int64
	handshook        atomic.Bool
	syncFromLastFile bool // set before handshake is signalled
	asyncLearner     bool
	// asked says this connection asked for its id in the sync state set,
	// after askedAt controller answers (under a.mu).
	asked          bool
	askedAt        uint64
	ack            atomic.Int64
	next           atomic.Int64
	lastMasterMax  atomic.Int64 // master end at the last transfer (lastMasterMaxOffset)
	lastTransferMs atomic.Int64
	flow           *flow
}

func (a *AutoSwitch) accept() {
	defer a.wg.Done()
	for {
		nc, ok := acceptOne(a.ctx, a.ln, a.log)
		if !ok {
			return
		}
		if nc == nil {
			continue
		}
		c := &autoConn{a: a, nc: nc, wake: make(chan struct{}, 1), handshake: make(chan struct{}, 1),
			first: make(chan struct{}), done: make(chan struct{}), flow: newFlow(a.cfg.flowLimit, time.Now())}
		c.slaveID.Store(-1)
		c.ack.Store(-1)
		c.next.Store(-1)
		c.lastMasterMax.Store(-1)
		a.mu.Lock()
		if a.ctx.Err() != nil {
			a.mu.Unlock()
			_ = nc.Close()
			return
		}
		if !a.master {
			// Java serves its log on any role; a broker that is not master
			// (a deposed one a slave still dials) refuses, so no slave copies
			// a log the controller does not stand behind.
			a.mu.Unlock()
			a.log.Info("HA connection refused: not master", "remote", nc.RemoteAddr())
			_ = nc.Close()
			continue
		}
		if !a.gate.admit(nc, a.log) {
			a.mu.Unlock()
			_ = nc.Close()
			continue
		}
		a.conns[c] = struct{}{}
		a.publishWakesLocked()
		a.mu.Unlock()
		a.log.Info("slave connected", "remote", nc.RemoteAddr())
		c.goWG.Add(2)
		a.wg.Add(2)
		go c.readLoop()
		go c.writeLoop()
	}
}

func (a *AutoSwitch) publishWakesLocked() {
	ws := make([]chan struct{}, 0, len(a.conns))
	for c := range a.conns {
		ws = append(ws, c.wake)
	}
	a.wakes.publish(ws)
}

func (c *autoConn) close() {
	c.closeOnce.Do(func() {
		close(c.done)
		_ = c.nc.Close()
	})
}

func (c *autoConn) wait() { c.goWG.Wait() }

// readLoop decodes the slave's frames: a HANDSHAKE (16 bytes) or a TRANSFER
// offset report (12 bytes). Any other state closes the connection.
func (c *autoConn) readLoop() {
	defer c.a.wg.Done()
	defer c.goWG.Done()
	defer c.close()
	r := bufio.NewReaderSize(c.nc, 4096)
	var b [slaveHandshakeSize]byte
	firstSeen := false
	for {
		// The handshake comes within FirstFrameTimeout; after it the slave
		// may take the housekeeping interval (it truncates its log before
		// its first report).
		tun := c.a.cfg.tun()
		wait := tun.HousekeepingInterval
		if !c.handshook.Load() {
			wait = c.a.cfg.firstFrameTimeout(tun)
		}
		_ = c.nc.SetReadDeadline(time.Now().Add(wait))
		if _, err := io.ReadFull(r, b[:4]); err != nil {
			break
		}
		state := int32(binary.BigEndian.Uint32(b[:4]))
		if state == StateHandshake {
			if _, err := io.ReadFull(r, b[4:slaveHandshakeSize]); err != nil {
				break
			}
			h, _ := DecodeSlaveHandshake(b[4:slaveHandshakeSize])
			if c.handshook.Load() {
				// Java takes a repeated handshake as is; rmqd keeps the
				// first identity so acks are never counted for two ids.
				continue
			}
			c.slaveID.Store(h.BrokerID)
			c.syncFromLastFile = h.SyncFromLastFile
			c.asyncLearner = h.AsyncLearner
			c.handshook.Store(true)
			c.a.log.Info("slave handshake", "remote", c.nc.RemoteAddr(), "brokerId", h.BrokerID,
				"syncFromLastFile", h.SyncFromLastFile, "asyncLearner", h.AsyncLearner)
			select {
			case c.handshake <- struct{}{}:
			default:
			}
			continue
		}
		if state != StateTransfer || !c.handshook.Load() {
			c.a.log.Error("slave sent a frame out of order", "remote", c.nc.RemoteAddr(), "state", state)
			break
		}
		if _, err := io.ReadFull(r, b[4:slaveTransferSize]); err != nil {
			break
		}
		off := int64(binary.BigEndian.Uint64(b[4:slaveTransferSize]))
		if !firstSeen {
			firstSeen = true
			if end := c.a.st.MaxPhyOffset(); off < 0 || off > end {
				// Java would stream nothing and count its acks; rmqd refuses it.
				c.a.log.Error("slave is ahead of this master, refusing it", "remote", c.nc.RemoteAddr(),
					"slaveOffset", off, "masterOffset", end)
				break
			}
			c.request = off
			close(c.first)
		}
		if sent := c.next.Load(); sent >= 0 && off > sent {
			off = sent // nothing beyond what was sent can be held
		}
		c.ack.Store(off)
		c.a.slaveAcked(c, off)
	}
	c.a.connGone(c)
	c.a.log.Info("slave disconnected", "remote", c.nc.RemoteAddr(), "brokerId", c.slaveID.Load())
}

// writeLoop answers the handshake with the epoch entries, then streams from
// the slave's first report (from the last file's or the first file's start
// when it reports 0), never across an epoch boundary in one frame.
func (c *autoConn) writeLoop() {
	defer c.a.wg.Done()
	defer c.goWG.Done()
	defer c.close()
	a, st, cfg := c.a, c.a.st, c.a.cfg
	var buf []byte
	// Handshakes until the first report.
	for {
		select {
		case <-c.done:
			return
		case <-c.first:
		case <-c.handshake:
			h := MasterHandshake{MaxOffset: st.MaxPhyOffset(), LastEpoch: a.epoch.LastEpoch(), Entries: a.epoch.Entries()}
			if len(h.Entries) > maxHandshakeEntries {
				h.Entries = h.Entries[len(h.Entries)-maxHandshakeEntries:]
			}
			buf = AppendMasterHandshake(buf[:0], h)
			_ = c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
			if _, err := c.nc.Write(buf); err != nil {
				return
			}
			continue
		}
		break
	}
	next := c.request
	if next == 0 {
		if c.syncFromLastFile {
			end := st.MaxPhyOffset()
			next = end - end%int64(st.CommitLogFileSize())
		} else {
			next = st.MinPhyOffset()
		}
	}
	c.next.Store(next)
	tun := cfg.tun()
	var frame []byte
	lastWrite := time.Time{}
	idle := time.NewTimer(tun.HeartbeatInterval)
	defer idle.Stop()
	lastWarn := time.Time{}
	lastConfirm := int64(-1)
	var writeDeadline time.Time
	warn := func(limit int64) {
		a.log.Warn("HA flow control: the slave's bytes for this second are sent", "remote", c.nc.RemoteAddr(),
			"maxHaTransferByteInSecond", limit)
	}
	for {
		// Read at each frame, as Java's connection reads MessageStoreConfig.
		tun = cfg.tun()
		if len(frame) < masterTransferSize+tun.TransferBatchSize {
			frame = make([]byte, masterTransferSize+tun.TransferBatchSize) // at start, and when the batch grows
		}
		room, ok := c.flow.waitRoom(tun.TransferBatchSize, c.done, &lastWarn, warn)
		if !ok {
			return
		}
		// The frame stays inside the epoch holding next.
		entry, ok := a.epoch.FindByOffset(next)
		if !ok {
			entry, _ = a.epoch.FirstEntry()
			room = 0 // heartbeat only: no term holds these bytes
		}
		if entry.EndOffset > next && entry.EndOffset-next < int64(room) {
			room = int(entry.EndOffset - next)
		}
		end := st.MaxPhyOffset()
		n, err := st.ReadCommitLog(frame[masterTransferSize:masterTransferSize+room], next)
		if err != nil {
			a.log.Error("read commitlog for slave", "remote", c.nc.RemoteAddr(), "offset", next, "err", err)
			return
		}
		if n == 0 {
			// Everything is sent: the slave counts as caught up (Java does
			// the same when it has nothing to transfer).
			a.caughtUpNow(c)
		}
		confirm := st.ConfirmOffset()
		// A moved confirm offset goes out at once, not at the next heartbeat
		// as in Java, so the slave's consumers see confirmed messages sooner.
		if n > 0 || confirm != lastConfirm || time.Since(lastWrite) >= tun.HeartbeatInterval {
			PutTransferHeader(frame, TransferHeader{BodySize: int32(n), Offset: next, Epoch: entry.Epoch,
				EpochStartOffset: entry.StartOffset, ConfirmOffset: confirm})
			lastConfirm = confirm
			if n > 0 {
				c.lastMasterMax.Store(end)
				c.lastTransferMs.Store(time.Now().UnixMilli())
			}
			next += int64(n)
			c.next.Store(next)
			if !writeFrame(c.nc, c.flow, &writeDeadline, frame[:masterTransferSize+n], n) {
				return
			}
			lastWrite = time.Now()
			if n > 0 {
				continue
			}
		}
		// At most liveRecheck: a shortened heartbeat applies within it.
		if !idleWait(idle, min(tun.HeartbeatInterval-time.Since(lastWrite), liveRecheck), c.done, c.wake) {
			return
		}
	}
}
