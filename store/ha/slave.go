package ha

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Slave is the HA client of a slave broker (DefaultHAClient): it dials the
// master's HA address, reports its commitlog end and appends what it is sent.
type Slave struct {
	client
	st  Store
	cfg Config
}

// NewSlave returns a slave that replicates into st once Start runs.
func NewSlave(st Store, cfg Config) *Slave {
	cfg.fill()
	s := &Slave{st: st, cfg: cfg}
	s.init(context.Background(), cfg.Logger.With("component", "ha-slave"))
	return s
}

// SetMasterAddr sets the master's HA address (haMasterAddress, or the
// haServerAddr of the REGISTER_BROKER answer). A change drops the current
// connection so the next one goes to the new address.
func (s *Slave) SetMasterAddr(addr string) { s.setAddr(addr) }

// MasterAddr is the master HA address in use ("" until known).
func (s *Slave) MasterAddr() string { return s.masterAddr() }

// Start runs the client until Close.
func (s *Slave) Start() { s.start(func() {}, s.session) }

// Close drops the connection and waits for the client to stop.
func (s *Slave) Close() error {
	s.stop()
	return nil
}

// heartbeat is the report interval in force.
func (s *Slave) heartbeat() time.Duration { return s.cfg.tun().HeartbeatInterval }

// Connected reports whether a master connection is up.
func (s *Slave) Connected() bool { return s.connected() }

// session is one connection: report, then apply frames until an error.
func (s *Slave) session(addr string) error {
	sess, err := s.dial(addr)
	if err != nil {
		return err
	}
	defer sess.close()
	nc := sess.nc

	var wmu sync.Mutex
	var reported atomic.Int64
	var writeDeadline time.Time // under wmu
	var b [reportSize]byte      // under wmu; one per session, not per report
	report := func(off int64) error {
		wmu.Lock()
		defer wmu.Unlock()
		binary.BigEndian.PutUint64(b[:], uint64(off))
		// Deadlines are refreshed once a second, not per report: each set
		// costs a runtime timer update, and a report goes out per frame.
		if now := time.Now(); now.After(writeDeadline.Add(-writeTimeout + time.Second)) {
			writeDeadline = now.Add(writeTimeout)
			_ = nc.SetWriteDeadline(writeDeadline)
		}
		_, err := nc.Write(b[:])
		if err != nil {
			return fmt.Errorf("report offset: %w", err)
		}
		reported.Store(off)
		s.lastWrite.Store(nowMs())
		return nil
	}
	// Java waits for its first heartbeat tick before the first report; rmqd
	// reports at once so the master starts streaming without that delay.
	if err := report(s.st.MaxPhyOffset()); err != nil {
		return err
	}
	s.log.Info("connected to master", "master", addr, "offset", s.st.MaxPhyOffset())
	sess.beat(s.heartbeat, func() error { return report(s.st.MaxPhyOffset()) })

	var hdr [headerSize]byte
	var body []byte // only when the store cannot take a frame in place
	// Buffered: a frame's header and body, and the frames that arrived
	// together, come in one read; the offset is reported and the new bytes
	// dispatched once they are applied (as Java's slave reports after its
	// whole read buffer).
	r := bufio.NewReaderSize(nc, 64<<10)
	var readDeadline time.Time
	for {
		refreshReadDeadline(nc, &readDeadline, s.cfg.tun().HousekeepingInterval)
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return errHousekeeping
			}
			return fmt.Errorf("read frame header: %w", err)
		}
		off := int64(binary.BigEndian.Uint64(hdr[0:]))
		size := int32(binary.BigEndian.Uint32(hdr[8:]))
		if size < 0 || size > maxFrameBody {
			return fmt.Errorf("frame at %d of %d bytes: bad size", off, size)
		}
		if err := s.checkFrameOffset(off); err != nil {
			return err
		}
		if size > 0 {
			var err error
			if body, err = s.applyFrame(r, off, int(size), body); err != nil {
				return err
			}
		}
		s.lastRead.Store(nowMs())
		if r.Buffered() >= headerSize {
			continue // the next frame is here already: report after it
		}
		if mine := s.st.MaxPhyOffset(); mine > reported.Load() {
			if err := report(mine); err != nil {
				return err
			}
		}
		s.st.DispatchReplicated()
	}
}

// checkFrameOffset refuses a frame that does not continue the log: one not
// at its end, or, when it is empty, one not at a file start (a master starts
// an empty slave at a file's first byte; Java takes any offset, a negative
// one made files named "-0000000000000262144").
func (s *Slave) checkFrameOffset(off int64) error {
	mine := s.st.MaxPhyOffset()
	switch {
	case off < 0:
		return fmt.Errorf("master sent offset %d: negative", off)
	case mine == 0 && off%int64(s.st.CommitLogFileSize()) != 0:
		return fmt.Errorf("master sent offset %d to an empty slave: not a file start", off)
	case mine != 0 && mine != off:
		return fmt.Errorf("master sent offset %d, slave ends at %d", off, mine)
	}
	return nil
}

// applyFrame reads a frame's body of size bytes into the commitlog at off:
// straight into the mapped file when the store allows it, else through buf
// (grown as needed and returned for the next frame).
func (s *Slave) applyFrame(r io.Reader, off int64, size int, buf []byte) ([]byte, error) {
	dst, err := s.st.ReplicaTarget(off, size)
	if err != nil {
		return buf, fmt.Errorf("append frame: %w", err)
	}
	if dst != nil {
		if _, err := io.ReadFull(r, dst); err != nil {
			return buf, fmt.Errorf("read frame body: %w", err)
		}
		if err := s.st.CommitReplica(off, size); err != nil {
			return buf, fmt.Errorf("append frame: %w", err)
		}
		return buf, nil
	}
	if cap(buf) < size {
		buf = make([]byte, size)
	}
	buf = buf[:size]
	if _, err := io.ReadFull(r, buf); err != nil {
		return buf, fmt.Errorf("read frame body: %w", err)
	}
	if err := s.st.AppendCommitLog(off, buf); err != nil {
		return buf, fmt.Errorf("append frame: %w", err)
	}
	return buf, nil
}
