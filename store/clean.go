package store

import (
	"context"
	"strconv"
	"strings"
	"time"

	"rmqd/compat"
)

// runClean is CleanCommitLogService plus CleanConsumeQueueService.
func (s *DefaultStore) runClean(ctx context.Context) {
	interval := compat.Millis(int64(max(s.cfg.CleanResourceInterval, 10)))
	first := time.NewTimer(min(time.Minute, interval))
	defer first.Stop()
	select {
	case <-ctx.Done():
		return
	case <-first.C:
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		s.cleanOnce(ctx, false)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// isTimeToDelete says whether the local hour is one of deleteWhen ("04;05").
func isTimeToDelete(deleteWhen string, now time.Time) bool {
	for _, h := range strings.Split(deleteWhen, ";") {
		if n, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && n == now.Hour() {
			return true
		}
	}
	return false
}

// manualDeletePasses is MAX_MANUAL_DELETE_FILE_TIMES: how many clean passes a
// manual request turns into deleting ones.
const manualDeletePasses = 20

// DeleteExpiredFilesManually is executeDeleteFilesManually (DELETE_EXPIRED_COMMITLOG):
// the next clean passes delete the commitlog files older than fileReservedTime
// at any hour, not only at deleteWhen.
func (s *DefaultStore) DeleteExpiredFilesManually() {
	s.manualDeletes.Store(manualDeletePasses)
}

// cleanOnce deletes expired commitlog files when it is time (or the disk is
// filling up, or manual is set), then the consume-queue and index files below the
// new minimum offset. It returns how many commitlog files went.
func (s *DefaultStore) cleanOnce(ctx context.Context, manual bool) int {
	// isSpaceToDelete: the commitlog's disk and the consume queues' (they may
	// be two) both count; deleting commitlog files is what frees the latter
	// too. Above the warning level puts are refused, so it cleans at once
	// whatever the forcibly ratio is set to.
	u := s.checkDisk()
	ratio := max(u.CommitLog, u.ConsumeQueue)
	maxRatio := float64(min(max(s.cfg.DiskMaxUsedSpaceRatio, 10), 95)) / 100
	immediately := ratio > s.cfg.forciblyRatio() || ratio > u.WarningRatio
	spaceFull := immediately || ratio > maxRatio
	deleted := 0
	manualPass := s.manualDeletes.Load() > 0
	if manual || manualPass || spaceFull || isTimeToDelete(s.cfg.DeleteWhen, time.Now()) {
		if manualPass {
			s.manualDeletes.Add(-1)
		}
		reserved := time.Duration(s.cfg.FileReservedTime) * time.Hour
		deleted = s.commitLog.q.deleteExpiredByTime(reserved, immediately && s.cfg.CleanFileForciblyEnable, 10,
			compat.Millis(int64(s.cfg.DeleteCommitLogFilesInterval)),
			// Unlike Java, never delete what the consume queues have not seen yet:
			// that would leave holes in them.
			s.reputFrom.Load())
		if deleted > 0 {
			s.log.Info("commitlog files deleted", "count", deleted, "diskRatio", ratio)
		}
	}
	s.cleanQueues(ctx)
	return deleted
}

// cleanQueues removes consume-queue and index files wholly below the commitlog's min
// offset and corrects each queue's min offset.
func (s *DefaultStore) cleanQueues(ctx context.Context) {
	minPhy := s.MinPhyOffset()
	if s.cleanedMinPhy.Load() == minPhy {
		// Nothing left the commitlog since the last pass: no queue file can
		// have fallen below it, and looking would map every queue's files.
		return
	}
	for _, cq := range s.allCQs() {
		if ctx.Err() != nil {
			return
		}
		if cq.deleteExpired(minPhy) > 0 && s.cfg.DeleteConsumeQueueFilesInterval > 0 {
			time.Sleep(compat.Millis(int64(s.cfg.DeleteConsumeQueueFilesInterval)))
		}
		cq.correctMinOffset(minPhy)
	}
	s.index.deleteBelow(minPhy)
	s.cleanedMinPhy.Store(minPhy)
}
