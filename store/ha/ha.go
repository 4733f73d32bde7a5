// Package ha is RocketMQ master/slave replication. The store itself opens no
// socket; this package drives it through Store (classic) or AutoStore.
//
// Classic (Master, Slave) is byte-compatible with Java's DefaultHAService,
// DefaultHAConnection and DefaultHAClient: a slave reports its commitlog end as
// an 8-byte offset, the master answers with frames of offset(8) size(4) raw
// commitlog bytes.
//
// Controller mode (AutoSwitch) is byte-compatible with Java 5.x's
// AutoSwitchHAService, AutoSwitchHAConnection and AutoSwitchHAClient. A slave
// sends HANDSHAKE state(4)=1 isSyncFromLastFile(2) isAsyncLearner(2)
// brokerId(8); the master answers state(4)=1 bodySize(4) maxPhyOffset(8)
// lastEpoch(4) and its epoch entries (epoch(4) startOffset(8) each). The slave
// cuts its log where the two epoch histories last agree, then reports
// state(4)=2 offset(8); the master streams state(4)=2 bodySize(4) offset(8)
// epoch(4) epochStartOffset(8) confirmOffset(8) and the bytes, one epoch per
// frame. The epochs live in the store root's epochFileCheckpoint (EpochCache).
//
// The broker drives an AutoSwitch as its controller says:
//
//	a, err := NewAutoSwitch(st, AutoConfig{ListenAddr: ":10912", EpochFile: EpochFilePath(root), LocalBrokerID: id})
//	a.OnSyncStateSetChange(func(want []int64) { /* ALTER_SYNC_STATE_SET, then a.SetSyncStateSet(got, epoch) */ })
//	a.ChangeToMaster(masterEpoch, syncStateSetEpoch, syncStateSet) // or
//	a.ChangeToSlave(masterHAAddr, masterEpoch, selfBrokerID); a.SetMasterHAAddr(addr)
//	a.CheckInSyncReplicas()   // before a SYNC put: ErrInSyncReplicasNotEnough = IN_SYNC_REPLICAS_NOT_ENOUGH
//	a.WaitAckedAsync(putEnd, slaveTimeout, func(err error) { ... }) // nil = PUT_OK, ErrAckTimeout = FLUSH_SLAVE_TIMEOUT
//	a.WaitAcked(ctx, putEnd)  // the same, blocking
//	a.ConfirmOffset(); a.Status(); a.LastEpoch(); a.Epochs().Entries(); a.Close()
//
// In controller mode the store dispatches (so consumers see) only what is
// below its confirm offset (store.UseConfirmOffset), as Java does.
package ha

import (
	"log/slog"
	"time"

	"rmqd/compat"
	"rmqd/store"
)

const (
	reportSize = 8  // slave -> master: int64 max offset (REPORT_HEADER_SIZE)
	headerSize = 12 // master -> slave: int64 offset, int32 size (TRANSFER_HEADER_SIZE)
	// maxFrameBody bounds what a slave accepts in one frame: Java's slave reads
	// into a 4 MiB buffer, so no Java master ever sends more.
	maxFrameBody = 4<<20 - headerSize
	// retryWait is how long a slave waits after a failed connection or a
	// rejected frame before dialing again (DefaultHAClient.closeMasterAndWait).
	retryWait   = 5 * time.Second
	dialTimeout = 3 * time.Second
	// writeTimeout bounds one frame write to a peer that stopped reading.
	writeTimeout = 10 * time.Second
	// liveRecheck is the longest an idle writer or a heartbeat sleeps before
	// it reads the Tunables again (Java's HA loops wake each second), so a
	// shorter heartbeat applies within it.
	liveRecheck = time.Second
)

// Store is what replication needs of the message store (*store.DefaultStore).
type Store interface {
	MaxPhyOffset() int64
	CommitLogFileSize() int
	// ReadCommitLog copies written bytes from offset, never across a file end.
	ReadCommitLog(dst []byte, offset int64) (int, error)
	// AppendCommitLog writes replicated bytes at exactly the store's end.
	AppendCommitLog(offset int64, data []byte) error
	// ReplicaTarget is the commitlog's own memory for n bytes at offset (nil
	// when it must go through AppendCommitLog); CommitReplica makes them
	// part of the log once written there.
	ReplicaTarget(offset int64, n int) ([]byte, error)
	CommitReplica(offset int64, n int) error
	// DispatchReplicated builds the consume queues of what was appended.
	DispatchReplicated()
	SlaveAcked(offset int64)
	// ReplicaWaiting says whether puts wait for a slave's ack (SYNC_MASTER).
	ReplicaWaiting() bool
	SlaveConnected(delta int)
	SetAppendHook(h func())
}

// Config holds the MessageStoreConfig HA settings.
type Config struct {
	// HeartbeatInterval is haSendHeartbeatInterval: an idle master sends an
	// empty frame, a slave reports its offset, at least this often.
	HeartbeatInterval time.Duration
	// HousekeepingInterval is haHousekeepingInterval: a side that reads nothing
	// for this long drops the connection.
	HousekeepingInterval time.Duration
	// TransferBatchSize is haTransferBatchSize: the most bytes in one frame.
	TransferBatchSize int
	// MaxTransferBytesPerSecond caps what is sent each slave per second
	// (haFlowControlEnable with maxHaTransferByteInSecond); 0: no cap.
	MaxTransferBytesPerSecond int64
	// SyncFrameInterval and AsyncFrameInterval are the least time between two
	// data frames to a slave (unless a whole TransferBatchSize is pending)
	// while SYNC_MASTER puts wait for an ack (each adds to their latency),
	// and while none does. Java sends at once when a SYNC_MASTER put arrives
	// and otherwise looks every 100 ms. 0: none.
	SyncFrameInterval  time.Duration
	AsyncFrameInterval time.Duration
	// SyncAckHold bounds how long new bytes wait, while SYNC_MASTER puts
	// wait, for the slave's ack of the frame before (0: not at all).
	SyncAckHold time.Duration
	// MaxConnections and MaxConnectionsPerIP bound a master's HA connections,
	// in all and from one remote IP (DefaultMaxConnections,
	// DefaultMaxConnectionsPerIP); more are closed at accept.
	MaxConnections      int
	MaxConnectionsPerIP int
	// FirstFrameTimeout is how long a new connection has for its first frame
	// before the master drops it (DefaultFirstFrameTimeout): a controller-mode
	// handshake, or a classic report, which may also wait for the slave's
	// next heartbeat (HeartbeatInterval more). Java waits HousekeepingInterval.
	FirstFrameTimeout time.Duration
	// Live, when set, gives the four settings above Java reads from
	// MessageStoreConfig at each use (Tunables); they are read through it per
	// frame, report and heartbeat, so an updateBrokerConfig applies to running
	// connections. Nil: the fields above, fixed.
	Live   func() Tunables
	Logger *slog.Logger
}

// Tunables are the HA settings a running master or slave takes at once:
// haSendHeartbeatInterval, haHousekeepingInterval, haTransferBatchSize and,
// with haFlowControlEnable, maxHaTransferByteInSecond (0: no cap).
type Tunables struct {
	HeartbeatInterval         time.Duration
	HousekeepingInterval      time.Duration
	TransferBatchSize         int
	MaxTransferBytesPerSecond int64
}

// StoreTunables are the Tunables of a store configuration (its live snapshot).
func StoreTunables(c *store.Config) Tunables {
	t := Tunables{
		HeartbeatInterval:    compat.Millis(int64(c.HaSendHeartbeatInterval)),
		HousekeepingInterval: compat.Millis(int64(c.HaHousekeepingInterval)),
		TransferBatchSize:    c.HaTransferBatchSize,
	}
	if c.HaFlowControlEnable {
		t.MaxTransferBytesPerSecond = c.MaxHaTransferByteInSecond
	}
	return t
}

// fill puts the defaults in for unset settings and bounds the batch by what a
// slave takes in one frame.
func (t *Tunables) fill() {
	if t.HeartbeatInterval <= 0 {
		t.HeartbeatInterval = 5 * time.Second
	}
	if t.HousekeepingInterval <= 0 {
		t.HousekeepingInterval = 20 * time.Second
	}
	if t.TransferBatchSize <= 0 {
		t.TransferBatchSize = 32 * 1024
	}
	t.TransferBatchSize = min(t.TransferBatchSize, maxFrameBody)
	t.MaxTransferBytesPerSecond = max(t.MaxTransferBytesPerSecond, 0)
}

// tun is the Tunables in force.
func (c *Config) tun() Tunables {
	t := Tunables{HeartbeatInterval: c.HeartbeatInterval, HousekeepingInterval: c.HousekeepingInterval,
		TransferBatchSize: c.TransferBatchSize, MaxTransferBytesPerSecond: c.MaxTransferBytesPerSecond}
	if c.Live != nil {
		t = c.Live()
	}
	t.fill()
	return t
}

// firstFrameTimeout is FirstFrameTimeout, at most the housekeeping interval in force.
func (c *Config) firstFrameTimeout(t Tunables) time.Duration {
	return min(c.FirstFrameTimeout, t.HousekeepingInterval)
}

// flowLimit is the flow-control cap in force, for a connection's flow.
func (c *Config) flowLimit() int64 { return c.tun().MaxTransferBytesPerSecond }

func (c *Config) fill() {
	if c.MaxConnections <= 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.MaxConnectionsPerIP <= 0 {
		c.MaxConnectionsPerIP = DefaultMaxConnectionsPerIP
	}
	if c.FirstFrameTimeout <= 0 {
		c.FirstFrameTimeout = DefaultFirstFrameTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}
