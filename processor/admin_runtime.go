package processor

import (
	"fmt"

	"golang.org/x/sys/unix"

	"rmqd/processor/stats"
)

// storeBehind is what a store may tell beyond MessageStore (store.DefaultStore).
type storeBehind interface {
	FlushBehindBytes() int64
	DispatchBehindBytes() int64
}

// cqDiskRatio is implemented by stores that tell the used fraction of the
// consume queues' file system (DefaultMessageStore.getRuntimeInfo's
// consumeQueueDiskRatio, which rocketmq-exporter parses unconditionally).
type cqDiskRatio interface {
	ConsumeQueueDiskRatio() float64
}

// storeRuntime fills StoreStatsService.getRuntimeInfo's keys that the
// broker's own statistics do not: the store counters, how far flush and
// dispatch trail, and the commitlog directory's capacity.
func (b *Broker) storeRuntime(t map[string]string) {
	b.admin.storeStats.Runtime(t, b.admin.stats.PutSizeTotal())
	if sb, ok := b.store.(storeBehind); ok {
		t["remainHowManyDataToFlush"] = stats.HumanBytes(sb.FlushBehindBytes())
		t["dispatchBehindBytes"] = i64s(sb.DispatchBehindBytes())
	}
	if r, ok := b.store.(cqDiskRatio); ok {
		t["consumeQueueDiskRatio"] = stats.JavaDouble(r.ConsumeQueueDiskRatio())
	} else {
		t["consumeQueueDiskRatio"] = stats.JavaDouble(b.store.CommitLogDiskRatio()) // one root, one file system
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(b.conf().Store.StorePathRootDir, &fs); err == nil {
		t["commitLogDirCapacity"] = fmt.Sprintf("Total : %s, Free : %s.",
			stats.HumanBytes(int64(fs.Blocks)*fs.Bsize), stats.HumanBytes(int64(fs.Bfree)*fs.Bsize))
	}
}
