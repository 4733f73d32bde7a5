package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"time"

	"golang.org/x/sys/unix"
)

// Admission: what makes the store refuse a put before it takes the commitlog
// lock, as DefaultMessageStore/HookUtils.checkBeforePutMessage do.
//
//   - a disk above diskSpaceWarningLevelRatio (commitlog's or the consume
//     queues') refuses puts with PutServiceNotAvailable until a later check
//     finds it below again (Java's RunningFlags DISK_FULL bit);
//   - a put that has held the commitlog lock longer than
//     osPageCacheBusyTimeOutMills makes the others fail fast with
//     PutOSPageCacheBusy instead of queueing behind it (isOSPageCacheBusy).
//
// A disk that fills up between two checks is refused cleanly too: commitlog
// files are reserved whole when made (fallocate, so a store into the mapping
// never meets a hole the file system cannot fill), write-through appends get
// ENOSPC from pwrite, and the writes into sparse consume-queue and index
// mappings run under guardFault, which turns the SIGBUS into an error.

// DiskUsage is what the last disk check found (UtilAll
// .getDiskPartitionSpaceUsedPercent of each store path, -1 when unknown).
type DiskUsage struct {
	CommitLogPath string
	CommitLog     float64
	ConsumeQueue  float64
	Index         float64
	// Full is set while puts are refused: a ratio above WarningRatio.
	Full         bool
	WarningRatio float64
}

// diskCheckEvery is how often the disk is looked at: Java marks a full disk
// only from its cleanup service (every cleanResourceInterval, 10 s, after a
// first minute); a statfs costs microseconds, so rmqd looks every second and
// writes resume within one once space is freed.
const diskCheckEvery = time.Second

// DiskUsage returns the last disk check's figures.
func (s *DefaultStore) DiskUsage() DiskUsage {
	if s.diskNap.idle.Load() {
		return s.checkDisk() // the service sleeps: its figures may be old
	}
	if u := s.disk.Load(); u != nil {
		return *u
	}
	return DiskUsage{CommitLogPath: s.cfg.commitLogDir(), CommitLog: -1, ConsumeQueue: -1, Index: -1,
		WarningRatio: s.live.Load().warningRatio()}
}

// checkDisk measures the store's disks and sets or clears the disk-full state
// (CleanCommitLogService.isSpaceToDelete's marking part).
func (s *DefaultStore) checkDisk() DiskUsage {
	root := s.cfg.StorePathRootDir
	u := DiskUsage{
		CommitLogPath: s.cfg.commitLogDir(),
		CommitLog:     s.statRatio(s.cfg.commitLogDir()),
		ConsumeQueue:  s.statRatio(existingDir(filepath.Join(root, "consumequeue"), root)),
		Index:         s.statRatio(existingDir(filepath.Join(root, "index"), root)),
		WarningRatio:  s.live.Load().warningRatio(),
	}
	u.Full = u.CommitLog > u.WarningRatio || u.ConsumeQueue > u.WarningRatio
	s.disk.Store(&u)
	if was := s.diskFull.Swap(u.Full); was != u.Full {
		if u.Full {
			s.diskNap.kick() // found by another caller: look every second until space is freed
			s.log.Error("disk full: refusing puts", "path", u.CommitLogPath, "commitLogRatio", u.CommitLog,
				"consumeQueueRatio", u.ConsumeQueue, "warningRatio", u.WarningRatio)
		} else {
			s.log.Info("disk space ok: accepting puts again", "path", u.CommitLogPath, "commitLogRatio", u.CommitLog,
				"consumeQueueRatio", u.ConsumeQueue)
		}
	}
	return u
}

func existingDir(dir, fallback string) string {
	var st unix.Stat_t
	if unix.Stat(dir, &st) == nil {
		return dir
	}
	return fallback
}

// runDiskCheck re-checks the disk every diskCheckEvery while appends go on or
// the disk is full, and at once when an append failed for lack of space
// (diskWake). With nothing appended since its last look and the disk not full
// it sleeps until an append kicks it: only puts care, and a put is admitted
// by the state the last look left (as before, up to a second old).
// DiskUsage looks afresh while it sleeps.
func (s *DefaultStore) runDiskCheck(ctx context.Context) {
	var seen int64 = -1
	tickUntilIdle(ctx, every(diskCheckEvery), s.diskNap, s.diskWake, func() {
		seen = s.commitLog.q.maxOffset()
		s.checkDisk()
	}, func() bool {
		return s.diskFull.Load() || s.commitLog.q.maxOffset() != seen
	})
}

// noSpace is told of an append or file creation that failed for lack of space.
func (s *DefaultStore) noSpace() { signal(s.diskWake) }

// admit is checkBeforePutMessage's store part: PutOK when a put may go on.
// A slave's commitlog takes only replicated bytes (AppendCommitLog): a record
// put here would shift it off its master's offsets (Java refuses it too).
func (s *DefaultStore) admit() PutStatus {
	if s.closed.Load() || s.diskFull.Load() || s.IsSlave() {
		return PutServiceNotAvailable
	}
	if s.IsOSPageCacheBusy() {
		return PutOSPageCacheBusy
	}
	return PutOK
}

// LockTimeMills is how long the put in progress has held the commitlog lock,
// 0 when none holds it (CommitLog.lockTimeMills; runtime info's
// pageCacheLockTimeMills).
func (s *DefaultStore) LockTimeMills() int64 {
	begin := s.commitLog.lockBegin.Load()
	if begin == 0 {
		return 0
	}
	return max(time.Now().UnixMilli()-begin, 0)
}

// IsOSPageCacheBusy reports a put holding the commitlog lock longer than
// osPageCacheBusyTimeOutMills (DefaultMessageStore.isOSPageCacheBusy).
func (s *DefaultStore) IsOSPageCacheBusy() bool {
	begin := s.commitLog.lockBegin.Load()
	if begin == 0 {
		return false
	}
	d := time.Now().UnixMilli() - begin
	return d > s.live.Load().OsPageCacheBusyTimeOutMills && d < 10000000
}

// DispatchBehindBytes is dispatchBehindBytes as GET_BROKER_RUNTIME_INFO and
// the metrics report it: DispatchBehind.
func (s *DefaultStore) DispatchBehindBytes() int64 { return s.DispatchBehind() }

// errMappedFault is what guardFault returns for a store into a mapped page the
// file system could not back.
var errMappedFault = errors.New("store: fault on a mapped page (no space left on the device?)")

// guardFault runs f with faults on mapped memory turned into an error instead
// of a crash: a store into a hole of a sparse file on a full file system raises
// SIGBUS, which the runtime would otherwise make fatal. f must not keep
// anything it wrote visible until guardFault returned nil.
func guardFault(f func()) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			if fe, ok := r.(interface{ Addr() uintptr }); ok {
				err = fmt.Errorf("%w: address %#x", errMappedFault, fe.Addr())
				return
			}
			panic(r)
		}
	}()
	f()
	return nil
}

// reserve allocates the blocks of [off, off+n) of the file at path, so that
// stores into its mapping cannot fault for lack of space. File systems without
// fallocate are left as they are.
func reserve(fd int, off, n int64) error {
	if n <= 0 {
		return nil
	}
	for {
		err := unix.Fallocate(fd, 0, off, n)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS):
			return nil
		default:
			return err
		}
	}
}
