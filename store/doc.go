package store

// Design notes (the why; the formats are in /work/shared/spec/store.md).
//
// Append: commitLog.put takes one mutex, assigns the queue offset from the
// topic-queue table (a map keyed by struct, no string building), and encodes the
// record with codec.EncodeRecord straight into the mapped tail file. TOTALSIZE is
// written last, so a process killed mid-record leaves a size of 0 that every
// reader rejects. Nothing is allocated per message; a batch reuses scratch slices
// held under the same lock.
//
// Dispatch: one goroutine (runReput) decodes new records in place and writes
// 20-byte consume-queue units (size field last) and index entries, then calls the
// ArrivingListener. Only the dispatcher writes queue and index files.
//
// Light message queues (lmq.go, docs/lmq.md): under enableLmq a put assigns
// each %LMQ% queue its INNER_MULTI_DISPATCH names an offset inside the same
// lock and table as its own queue offset, so the dispatcher, recovery and a
// slave only read the offsets back from the record; nothing else is stored.
//
// Batch consume queues (batchcq.go, docs/store.md): a queue.type=BatchCQ
// topic's queues are Java's 46-byte BatchConsumeQueue units under
// batchconsumequeue/, one per record covering batchSize offsets; they share
// consumeQueue and its file handling, each method branching on c.batch, so
// the simple queues' path gains one flag test and nothing else.
//
// Reads: readers take a reference on each mapped file they slice (findHeld /
// mappedFile.hold). Deleting a file unlinks it at once but unmaps it only when
// the last reference goes (GetResult.Release), so a record handed to the network
// is never read after munmap. Java's destroyMapedFileIntervalForcibly (unmap a
// file readers still hold after 120 s) is accepted and not acted on: a forced
// unmap makes such a reader fault; here the space comes back with the last
// release, and writes to a slow connection are bounded by its stall timeout.
//
// Consume-queue files are mapped on demand and unmapped when idle
// (lazymap.go): a hold maps, a sweeper unmaps what no one holds, so 100,000
// queues do not need 100,000 of the process's vm.max_map_count areas.
//
// Durability: ASYNC_FLUSH writes records into the mapping and msyncs
// periodically by pages. SYNC_FLUSH writes the commitlog through: records are
// encoded into a buffer and pwritten, each waiting put queues on groupCommit,
// and one fdatasync serves every put queued meanwhile. Syncing pages dirtied
// through a mapping costs several times more (mappedFile.pwrite says why), and
// every SYNC_FLUSH send waits for it. Readers use the mapping either way.
// Under SYNC_FLUSH dispatch stops at the flushed offset (dispatchLimit), so
// consumers see only what is on disk; each group flush wakes the dispatcher
// (docs/store.md).
// Checkpoint timestamps move only once the data they vouch for is flushed.
//
// Recovery: consume queues are scanned first, then the commitlog from the file
// the checkpoint (crash) or the queues (clean exit) point at; the first record
// that fails magic, size, body CRC (the CRC property under forceVerifyPropCRC)
// or the zero-tail checks ends the log. The rest
// of that file is zeroed (hole-punched), later files go, queue units at or past
// the end are dropped, and the dispatcher replays what the queues miss before
// the topic-queue table is rebuilt from them.
//
// Crash states: every file is made so that a kill at any instant leaves one
// that load accepts. Queue files (commitlog, consume queue) are sized by one
// ftruncate, so a kill leaves an empty last file, which load deletes. An index
// file is sized and headed under index.tmp and then renamed; a short last index
// file (made in place by older rmqd, or damaged) is deleted, and recovery
// re-indexes from the end of the kept files whatever load or the commitlog cut
// deleted. A short checkpoint reads as zeros (recovery starts earlier). The
// abort file is fsynced and made before recovery, so a crash during recovery
// is recovered as one. TestCrashStatesRecover builds each of these states.
