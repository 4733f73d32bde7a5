package store

import (
	"encoding/binary"
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
}

const checkpointSize = osPageSize

func openCheckpoint(path string) (*checkpoint, error) {
	mf, err := newMappedFile(path, 0, checkpointSize, true, false)
	if err != nil {
		return nil, err
	}
	c := &checkpoint{mf: mf}
	be := binary.BigEndian
	c.physicMsgTimestamp.Store(int64(be.Uint64(mf.data[0:])))
	c.logicsMsgTimestamp.Store(int64(be.Uint64(mf.data[8:])))
	c.indexMsgTimestamp.Store(int64(be.Uint64(mf.data[16:])))
	return c, nil
}

func (c *checkpoint) flush() error {
	be := binary.BigEndian
	be.PutUint64(c.mf.data[0:], uint64(c.physicMsgTimestamp.Load()))
	be.PutUint64(c.mf.data[8:], uint64(c.logicsMsgTimestamp.Load()))
	be.PutUint64(c.mf.data[16:], uint64(c.indexMsgTimestamp.Load()))
	return unix.Msync(c.mf.data[:checkpointSize], unix.MS_SYNC)
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
