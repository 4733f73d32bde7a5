package processor

import (
	"errors"
	"fmt"
	"sync"

	"rmqd/store/ha"
)

// ClassicSwitch is a ControllerHA over the classic replication protocol (store/ha's Master and Slave):
// the controller's roles switch which of the two runs. It keeps no epoch file and never truncates, so a
// group of rmqd brokers fails over with it but a returning master whose commitlog ran ahead of the new
// master's does not catch up; the auto-switch HA service (epochs, truncation) is the full answer.
type ClassicSwitch struct {
	st     ha.Store
	cfg    ha.Config
	listen string // haListenPort's address
	maxGap int64  // haMaxGapNotInSync, for RuntimeInfo

	mu     sync.Mutex
	master *ha.Master
	slave  *ha.Slave
	epoch  int32
	closed bool
}

// NewClassicSwitch returns a switch that serves slaves on listen as master, and replicates from the
// address it is given as slave.
func NewClassicSwitch(st ha.Store, cfg ha.Config, listen string, maxGap int64) *ClassicSwitch {
	return &ClassicSwitch{st: st, cfg: cfg, listen: listen, maxGap: maxGap}
}

// ChangeToMaster stops replicating and listens for slaves.
func (s *ClassicSwitch) ChangeToMaster(epoch, _ int32, _ []int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("ha switch: closed")
	}
	s.epoch = max(s.epoch, epoch)
	if s.slave != nil {
		_ = s.slave.Close()
		s.slave = nil
	}
	if s.master == nil {
		m := ha.NewMaster(s.st, s.cfg)
		if err := m.Start(s.listen); err != nil {
			return fmt.Errorf("ha switch to master: %w", err)
		}
		s.master = m
	}
	return nil
}

// ChangeToSlave stops serving slaves and replicates from masterHAAddr.
func (s *ClassicSwitch) ChangeToSlave(masterHAAddr string, epoch int32, _ int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("ha switch: closed")
	}
	s.epoch = max(s.epoch, epoch)
	if s.master != nil {
		_ = s.master.Close()
		s.master = nil
	}
	if s.slave == nil {
		s.slave = ha.NewSlave(s.st, s.cfg)
		s.slave.Start()
	}
	s.slave.SetMasterAddr(masterHAAddr)
	return nil
}

// SetSyncStateSet is a no-op: the classic master counts any one slave's ack.
func (s *ClassicSwitch) SetSyncStateSet([]int64, int32) {}

// LastEpoch is the newest epoch taken since start (no epoch file).
func (s *ClassicSwitch) LastEpoch() int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epoch
}

// ConfirmOffset is the commitlog end: without epochs there is no better bound.
func (s *ClassicSwitch) ConfirmOffset() int64 { return s.st.MaxPhyOffset() }

// RuntimeInfo is GET_BROKER_HA_STATUS's body for the running side.
func (s *ClassicSwitch) RuntimeInfo() ha.RuntimeInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.master != nil:
		return s.master.RuntimeInfo(s.maxGap)
	case s.slave != nil:
		return s.slave.RuntimeInfo()
	}
	return ha.RuntimeInfo{HaConnectionInfo: []ha.ConnectionRuntimeInfo{}}
}

// Close stops whichever side runs.
func (s *ClassicSwitch) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	var err error
	if s.master != nil {
		err = s.master.Close()
		s.master = nil
	}
	if s.slave != nil {
		err = errors.Join(err, s.slave.Close())
		s.slave = nil
	}
	return err
}
