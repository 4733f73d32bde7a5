package store

import (
	"context"
	"strconv"
	"strings"
	"time"

	"rmqd/compat"
)

// runClean is CleanCommitLogService plus CleanConsumeQueueService: a pass
// every cleanResourceInterval, the first after a minute at most. The interval
// is read each round, and ApplyLive retimes the wait in progress, so a changed
// one takes effect at once without waking the cleaner more often.
func (s *DefaultStore) runClean(ctx context.Context) {
	start := time.Now()
	var last time.Time // the last pass's start; zero before the first
	due := func() time.Time {
		if last.IsZero() {
			return start.Add(min(time.Minute, s.live.Load().cleanInterval()))
		}
		return last.Add(s.live.Load().cleanInterval())
	}
	t := time.NewTimer(time.Until(due()))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.cleanRetime:
			t.Reset(time.Until(due()))
			continue
		case <-t.C:
		}
		last = time.Now()
		s.cleanOnce(ctx, false)
		// At a fixed rate, as Java's schedule: a pass that overran is followed at once.
		t.Reset(time.Until(due()))
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
	c := s.live.Load()
	ratio := max(u.CommitLog, u.ConsumeQueue)
	maxRatio := float64(min(max(c.DiskMaxUsedSpaceRatio, 10), 95)) / 100
	immediately := ratio > c.forciblyRatio() || ratio > u.WarningRatio
	spaceFull := immediately || ratio > maxRatio
	deleted := 0
	manualPass := s.manualDeletes.Load() > 0
	if manual || manualPass || spaceFull || isTimeToDelete(c.DeleteWhen, time.Now()) {
		if manualPass {
			s.manualDeletes.Add(-1)
		}
		reserved := time.Duration(c.FileReservedTime) * time.Hour
		deleted = s.commitLog.q.deleteExpiredByTime(reserved, immediately && c.CleanFileForciblyEnable, 10,
			compat.Millis(int64(c.DeleteCommitLogFilesInterval)),
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
		if pause := s.live.Load().DeleteConsumeQueueFilesInterval; cq.deleteExpired(minPhy) > 0 && pause > 0 {
			time.Sleep(compat.Millis(int64(pause)))
		}
		cq.correctMinOffset(minPhy)
	}
	s.index.deleteBelow(minPhy)
	s.cleanedMinPhy.Store(minPhy)
}
