package ha

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Master is the HA listener of a master broker (DefaultHAService with its
// AcceptSocketService): one reader and one writer goroutine per slave.
type Master struct {
	st  Store
	cfg Config
	log *slog.Logger

	ln     net.Listener
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns map[*masterConn]struct{}
	gate  connGate
	wakes wakeList
}

// ConnStatus describes one slave connection (haStatus).
type ConnStatus struct {
	Addr      string
	AckOffset int64
	// TransferredOffset is where the next frame to this slave starts.
	TransferredOffset int64
	// BytesPerSecond is what was sent this slave in the last whole second.
	BytesPerSecond int64
}

// NewMaster returns a master that serves st once Start listens.
func NewMaster(st Store, cfg Config) *Master {
	cfg.fill()
	m := &Master{st: st, cfg: cfg, log: cfg.Logger.With("component", "ha-master"), conns: map[*masterConn]struct{}{}}
	m.gate = newConnGate(&m.cfg)
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m
}

// Start listens on addr (brokerIP's haListenPort) and accepts slaves.
func (m *Master) Start(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("ha listen %s: %w", addr, err)
	}
	m.ln = ln
	m.st.SetAppendHook(m.wakes.poke)
	m.wg.Add(1)
	go m.accept()
	return nil
}

// Addr is the listening address.
func (m *Master) Addr() net.Addr { return m.ln.Addr() }

// Close stops accepting, drops every slave and waits for their goroutines.
func (m *Master) Close() error {
	m.cancel()
	m.st.SetAppendHook(nil)
	var err error
	if m.ln != nil {
		err = m.ln.Close()
	}
	m.mu.Lock()
	for c := range m.conns {
		_ = c.nc.Close()
	}
	m.mu.Unlock()
	m.wg.Wait()
	return err
}

// Status lists the connected slaves.
func (m *Master) Status() []ConnStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]ConnStatus, 0, len(m.conns))
	for c := range m.conns {
		out = append(out, ConnStatus{Addr: c.nc.RemoteAddr().String(), AckOffset: c.ack.Load(), TransferredOffset: c.next.Load(),
			BytesPerSecond: c.flow.perSecond(time.Now())})
	}
	return out
}

func (m *Master) publishWakes() {
	ws := make([]chan struct{}, 0, len(m.conns))
	for c := range m.conns {
		ws = append(ws, c.wake)
	}
	m.wakes.publish(ws)
}

func (m *Master) accept() {
	defer m.wg.Done()
	for {
		nc, ok := acceptOne(m.ctx, m.ln, m.log)
		if !ok {
			return
		}
		if nc == nil {
			continue
		}
		c := &masterConn{m: m, nc: nc, wake: make(chan struct{}, 1), first: make(chan struct{}), done: make(chan struct{}),
			acked: make(chan struct{}, 1),
			flow:  newFlow(m.cfg.flowLimit, time.Now())}
		c.ack.Store(-1)
		c.next.Store(-1)
		m.mu.Lock()
		if m.ctx.Err() != nil {
			m.mu.Unlock()
			_ = nc.Close()
			return
		}
		if !m.gate.admit(nc, m.log) {
			m.mu.Unlock()
			_ = nc.Close()
			continue
		}
		m.conns[c] = struct{}{}
		m.publishWakes()
		m.mu.Unlock()
		m.log.Info("slave connected", "remote", nc.RemoteAddr())
		m.wg.Add(2)
		go c.readLoop()
		go c.writeLoop()
	}
}

func (m *Master) remove(c *masterConn) {
	m.mu.Lock()
	delete(m.conns, c)
	m.gate.release(c.nc)
	m.publishWakes()
	m.mu.Unlock()
}

// masterConn is one slave (DefaultHAConnection).
type masterConn struct {
	m    *Master
	nc   net.Conn
	wake chan struct{}
	// first is closed once the slave's first report set request.
	first   chan struct{}
	request int64
	// counted says this slave counts for SYNC_MASTER (its first report was sane).
	counted bool
	ack     atomic.Int64
	next    atomic.Int64
	flow    *flow
	// acked wakes a writer holding bytes back until the slave acknowledged
	// its last frame (ackWanted set).
	acked     chan struct{}
	ackWanted atomic.Bool
	done      chan struct{}
	closeOnce sync.Once
}

func (c *masterConn) close() {
	c.closeOnce.Do(func() {
		close(c.done)
		_ = c.nc.Close()
	})
}

// readLoop takes the slave's 8-byte reports: its acknowledged offset.
func (c *masterConn) readLoop() {
	defer c.m.wg.Done()
	defer c.close()
	var b [reportSize]byte
	firstSeen := false
	var deadline time.Time
	for {
		tun := c.m.cfg.tun()
		hk := tun.HousekeepingInterval
		// A slave reports at least every heartbeat; silence for the
		// housekeeping interval (read at each report, as Java does) means it
		// is gone.
		if !firstSeen {
			// The first report comes within FirstFrameTimeout after the
			// slave's next heartbeat (a Java slave that wrote within the
			// heartbeat interval reports at its next one; rmqd at once).
			first := min(c.m.cfg.firstFrameTimeout(tun)+tun.HeartbeatInterval, hk)
			_ = c.nc.SetReadDeadline(time.Now().Add(first))
		} else {
			refreshReadDeadline(c.nc, &deadline, hk)
		}
		if _, err := io.ReadFull(c.nc, b[:]); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				c.m.log.Info("slave read", "remote", c.nc.RemoteAddr(), "err", err)
			}
			break
		}
		off := int64(binary.BigEndian.Uint64(b[:]))
		if !firstSeen {
			firstSeen = true
			if max := c.m.st.MaxPhyOffset(); off < 0 || off > max {
				// Java would stream nothing and still take this slave's acks as
				// replication; rmqd refuses it instead.
				c.m.log.Error("slave is ahead of this master, refusing it", "remote", c.nc.RemoteAddr(),
					"slaveOffset", off, "masterOffset", max)
				break
			}
			c.request = off
			c.counted = true
			c.m.st.SlaveConnected(1)
			close(c.first)
		}
		if sent := c.next.Load(); sent >= 0 && off > sent {
			// Nothing beyond what was sent can be held by the slave: a larger
			// ack must not answer a SYNC_MASTER put (Java takes it as is).
			off = sent
		}
		c.ack.Store(off)
		c.m.st.SlaveAcked(off)
		if c.ackWanted.Load() && off >= c.next.Load() {
			select {
			case c.acked <- struct{}{}:
			default:
			}
		}
	}
	if c.counted {
		c.m.st.SlaveConnected(-1)
	}
	c.m.remove(c)
	c.m.log.Info("slave disconnected", "remote", c.nc.RemoteAddr())
}

// writeLoop streams commitlog bytes from the slave's first report on (from the
// start of the last file when it reports 0), and an empty frame when idle.
func (c *masterConn) writeLoop() {
	defer c.m.wg.Done()
	defer c.close()
	select {
	case <-c.first:
	case <-c.done:
		return
	}
	st, cfg := c.m.st, c.m.cfg
	next := c.request
	if next == 0 {
		max := st.MaxPhyOffset()
		next = max - max%int64(st.CommitLogFileSize())
	}
	c.next.Store(next)
	tun := cfg.tun()
	var buf []byte
	lastWrite := time.Now()
	var lastData, writeDeadline time.Time
	idle := time.NewTimer(tun.HeartbeatInterval)
	defer idle.Stop()
	pace := time.NewTimer(time.Hour)
	pace.Stop()
	defer pace.Stop()
	lastWarn := time.Time{}
	warn := func(limit int64) {
		c.m.log.Warn("HA flow control: the slave's bytes for this second are sent", "remote", c.nc.RemoteAddr(),
			"maxHaTransferByteInSecond", limit)
	}
	for {
		// Read at each frame, as Java's connection reads MessageStoreConfig:
		// an updateBrokerConfig applies to this slave from its next frame.
		tun = cfg.tun()
		if len(buf) < headerSize+tun.TransferBatchSize {
			buf = make([]byte, headerSize+tun.TransferBatchSize) // at start, and when the batch grows
		}
		room, ok := c.flow.waitRoom(tun.TransferBatchSize, c.done, &lastWarn, warn)
		if !ok {
			return
		}
		// New bytes short of a whole batch wait for more while a frame is
		// recent, so that at low rates one frame carries what several sends
		// appended (per frame the slave reads, appends, dispatches and
		// reports, each a wake-up): while SYNC_MASTER puts wait, until the
		// slave acknowledged the last frame (a lone producer never waits; the
		// slower the slave, the more one frame carries), bounded by
		// SyncAckHold, and SyncFrameInterval after the last one; otherwise
		// AsyncFrameInterval after it.
		if pending := st.MaxPhyOffset() - next; pending > 0 && pending < int64(room) {
			if !c.pace(pace, lastData, next) {
				return
			}
		}
		n, err := st.ReadCommitLog(buf[headerSize:headerSize+room], next)
		if err != nil {
			c.m.log.Error("read commitlog for slave", "remote", c.nc.RemoteAddr(), "offset", next, "err", err)
			return
		}
		if n > 0 || time.Since(lastWrite) >= tun.HeartbeatInterval {
			binary.BigEndian.PutUint64(buf[0:], uint64(next))
			binary.BigEndian.PutUint32(buf[8:], uint32(n))
			// Published before the write: the slave may ack these bytes before
			// Write returns, and the reader clamps acks to it.
			next += int64(n)
			c.next.Store(next)
			if !writeFrame(c.nc, c.flow, &writeDeadline, buf[:headerSize+n], n) {
				return
			}
			lastWrite = time.Now()
			if n > 0 {
				lastData = lastWrite
				continue
			}
		}
		// At most liveRecheck: a shortened heartbeat applies within it.
		if !idleWait(idle, min(tun.HeartbeatInterval-time.Since(lastWrite), liveRecheck), c.done, c.wake) {
			return
		}
	}
}

// pace holds new bytes back as writeLoop says; false once the connection is
// done. Appends do not wake it meanwhile.
func (c *masterConn) pace(t *time.Timer, lastData time.Time, sent int64) bool {
	cfg := &c.m.cfg
	if c.m.st.ReplicaWaiting() {
		if wait := cfg.SyncFrameInterval - time.Since(lastData); wait > 0 {
			t.Reset(wait)
			select {
			case <-c.done:
				return false
			case <-t.C:
			}
		}
		wait := cfg.SyncAckHold - time.Since(lastData)
		if wait <= 0 {
			return true
		}
		c.ackWanted.Store(true)
		defer c.ackWanted.Store(false)
		if c.ack.Load() >= sent {
			return true
		}
		t.Reset(wait)
		select {
		case <-c.done:
			return false
		case <-c.acked:
		case <-t.C:
		}
		return true
	}
	wait := cfg.AsyncFrameInterval - time.Since(lastData)
	if wait <= 0 {
		return true
	}
	t.Reset(wait)
	select {
	case <-c.done:
		return false
	case <-t.C:
	}
	return true
}
