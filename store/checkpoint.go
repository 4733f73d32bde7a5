package store

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// checkpoint is the 4096-byte StoreCheckpoint file. Setters change memory only;
// flush writes the fields into the mapping and msyncs it.
type checkpoint struct {
	mf                 *mappedFile
	physicMsgTimestamp atomic.Int64
	logicsMsgTimestamp atomic.Int64
	indexMsgTimestamp  atomic.Int64
	// confirmPhyOffset is 5.x's controller-mode confirm offset (bytes 32-39).
	confirmPhyOffset atomic.Int64
	// masterFlushedOffset (bytes 24-31) is what RESET_MASTER_FLUSH_OFFSET
	// sets on a slave. rmqd reads nothing from it; a Java broker taking the
	// store over would.
	masterFlushedOffset atomic.Int64
	// synced are the times last made durable (under mu): an idle broker's
	// flush every second then costs no msync.
	mu            sync.Mutex
	synced        [3]int64
	syncedConfirm int64
	dirty         bool // synced is not known to be on disk
}

const checkpointSize = osPageSize

// openCheckpoint maps the checkpoint, making it when missing. A file shorter
// than a page (damage; rmqd sizes it with one ftruncate, so a crash leaves it
// empty or whole) is grown with zeros first, as Java's map of a page does: the
// missing times read as 0, which only makes a crash recovery start earlier.
func openCheckpoint(path string) (*checkpoint, error) {
	if st, err := os.Stat(path); err == nil && st.Size() > 0 && st.Size() < checkpointSize {
		if err := os.Truncate(path, checkpointSize); err != nil {
			return nil, fmt.Errorf("grow short checkpoint: %w", err)
		}
	}
	mf, err := newMappedFile(path, 0, checkpointSize, true, false)
	if err != nil {
		return nil, err
	}
	c := &checkpoint{mf: mf}
	be := binary.BigEndian
	c.physicMsgTimestamp.Store(int64(be.Uint64(mf.data[0:])))
	c.logicsMsgTimestamp.Store(int64(be.Uint64(mf.data[8:])))
	c.indexMsgTimestamp.Store(int64(be.Uint64(mf.data[16:])))
	c.confirmPhyOffset.Store(int64(be.Uint64(mf.data[32:])))
	c.masterFlushedOffset.Store(int64(be.Uint64(mf.data[24:])))
	return c, nil
}

// changed: a field differs from what the last flush synced (or that flush failed).
func (c *checkpoint) changed() bool {
	now := [3]int64{c.physicMsgTimestamp.Load(), c.logicsMsgTimestamp.Load(), c.indexMsgTimestamp.Load()}
	confirm := c.confirmPhyOffset.Load()
	c.mu.Lock()
	defer c.mu.Unlock()
	return now != c.synced || confirm != c.syncedConfirm || c.dirty
}

func (c *checkpoint) flush() error {
	now := [3]int64{c.physicMsgTimestamp.Load(), c.logicsMsgTimestamp.Load(), c.indexMsgTimestamp.Load()}
	confirm := c.confirmPhyOffset.Load()
	c.mu.Lock()
	defer c.mu.Unlock()
	if now == c.synced && confirm == c.syncedConfirm && !c.dirty {
		return nil
	}
	be := binary.BigEndian
	be.PutUint64(c.mf.data[0:], uint64(now[0]))
	be.PutUint64(c.mf.data[8:], uint64(now[1]))
	be.PutUint64(c.mf.data[16:], uint64(now[2]))
	be.PutUint64(c.mf.data[24:], uint64(c.masterFlushedOffset.Load()))
	be.PutUint64(c.mf.data[32:], uint64(confirm))
	if err := unix.Msync(c.mf.data[:checkpointSize], unix.MS_SYNC); err != nil {
		c.dirty = true
		return err
	}
	c.synced, c.syncedConfirm, c.dirty = now, confirm, false
	return nil
}

// setMasterFlushedOffset records v for the next flush.
func (c *checkpoint) setMasterFlushedOffset(v int64) {
	c.masterFlushedOffset.Store(v)
	c.mu.Lock()
	c.dirty = true
	c.mu.Unlock()
}

// minTimestamp is StoreCheckpoint.getMinTimestamp: the older of the two, less 3 s.
func (c *checkpoint) minTimestamp() int64 {
	m := min(c.physicMsgTimestamp.Load(), c.logicsMsgTimestamp.Load()) - 3000
	return max(m, 0)
}

func (c *checkpoint) minTimestampIndex() int64 {
	return min(c.minTimestamp(), c.indexMsgTimestamp.Load())
}

func (c *checkpoint) close() {
	_ = c.flush()
	c.mf.close()
}

// createAbortFile writes the abort file (Java's createTempFile) and makes it
// durable: a power loss must not take it away and pass a crash off as a clean
// exit. Its content (the pid) is for people; only its existence is read.
func createAbortFile(path string, pid int) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("create abort file: %w", err)
	}
	_, err = f.WriteString(strconv.Itoa(pid))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("create abort file: %w", err)
	}
	syncDir(filepath.Dir(path))
	return nil
}
