package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

const osPageSize = 4096

// mappedFile is one fixed-size segment of a queue, mapped shared read-write. Bytes
// below wrote are immutable records; readers hold a reference while they look at
// them so the mapping outlives every reader (a deleted file is unmapped by the last
// release).
type mappedFile struct {
	path string
	from int64 // offset of byte 0 in the queue's logical stream
	size int
	data []byte

	wrote   atomic.Int64 // bytes written (readers see only what is below)
	flushed atomic.Int64 // bytes known to be on disk
	// populated is how far pageKeeper has prefaulted the mapping.
	populated atomic.Int64

	// fd is kept open only for a write-through file (-1 otherwise): appends go
	// in with pwrite and flushes with fdatasync, the mapping serves reads. Set
	// by newMappedFile or by the writer (openForWrite, under the commitlog
	// lock), read by the flusher, cleared by the last release.
	fd atomic.Int32

	refs      atomic.Int64 // 1 for the queue itself plus one per reader
	destroyed atomic.Bool
	// firstCreate marks a consume-queue file created empty as the queue's first file.
	firstCreate bool
	// bcqFirst caches a batch consume-queue file's first unit (batchcq.go), so
	// a lookup searches the files without mapping each one; nil until known.
	bcqFirst atomic.Pointer[bcqUnit]

	// lazy is set for a file mapped on demand (a consume queue's, lazymap.go):
	// data is nil while unmapped and changes only under mapMu.
	lazy    *lazyMaps
	mapMu   sync.Mutex
	lastUse atomic.Int64 // lazy.now at the last hold
}

func fileName(offset int64) string {
	return fmt.Sprintf("%020d", offset)
}

// newMappedFile opens path, or with create makes it when missing, at exactly size
// bytes and maps it. A new file is sized by one ftruncate (sparse, reading as
// zero, like FileChannel.map extending a file): a crash leaves it either empty,
// which load deletes as the last file, or whole. No temporary name and rename,
// and raw system calls rather than os.File (which tries the file on the network
// poller): a new consume queue's first file is made on the dispatch path, where
// every system call is latency a pull may wait for. The descriptor is closed
// once mapped, so thousands of queues hold no file descriptors; a write-through
// file (see pwrite) keeps it.
func newMappedFile(path string, from int64, size int, create, writeThrough bool) (*mappedFile, error) {
	flags := unix.O_RDWR | unix.O_CLOEXEC
	if create {
		flags |= unix.O_CREAT
	}
	fd, err := unix.Open(path, flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open mapped file %s: %w", path, err)
	}
	keep := false
	defer func() {
		if !keep {
			_ = unix.Close(fd)
		}
	}()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	if create && st.Size == 0 {
		if err := unix.Ftruncate(fd, int64(size)); err != nil {
			_ = os.Remove(path)
			return nil, fmt.Errorf("size %s: %w", path, err)
		}
	} else if st.Size != int64(size) {
		return nil, fmt.Errorf("mapped file %s is %d bytes, want %d", path, st.Size, size)
	}
	data, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %s: %w", path, err)
	}
	mf := &mappedFile{path: path, from: from, size: size, data: data}
	mf.fd.Store(-1)
	if writeThrough {
		mf.fd.Store(int32(fd))
		keep = true
	}
	mf.refs.Store(1)
	return mf, nil
}

// reserveFrom allocates the file's blocks from pos to its end (see reserve).
func (m *mappedFile) reserveFrom(pos int64) error {
	fd, err := unix.Open(m.path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", m.path, err)
	}
	defer unix.Close(fd)
	if err := reserve(fd, pos, int64(m.size)-pos); err != nil {
		return fmt.Errorf("reserve %s: %w", m.path, err)
	}
	return nil
}

// openForWrite gives a file loaded at start (mapped only) the descriptor a
// write-through append needs. Called by the writer only.
func (m *mappedFile) openForWrite() error {
	if m.fd.Load() >= 0 {
		return nil
	}
	fd, err := unix.Open(m.path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s for writing: %w", m.path, err)
	}
	m.fd.Store(int32(fd))
	return nil
}

// pwrite puts b at pos of a write-through file (one with a descriptor). An
// error (a full disk) comes back as such, where a store through the mapping
// would raise SIGBUS.
//
// Why write-through exists: on the kernels and VMs measured here, making pages
// dirtied through a shared mapping durable costs several milliseconds per
// msync or fdatasync however few they are (3.3 ms for 16 KiB), while the same
// bytes written with pwrite sync in 0.3-0.5 ms. SYNC_FLUSH waits for that on
// every send; ASYNC_FLUSH does not, and keeps the cheaper mapped store.
func (m *mappedFile) pwrite(pos int64, b []byte) error {
	fd := int(m.fd.Load())
	for len(b) > 0 {
		n, err := unix.Pwrite(fd, b, pos)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("write %s at %d: %w", m.path, pos, err)
		}
		if n == 0 {
			return fmt.Errorf("write %s at %d: %w", m.path, pos, io.ErrShortWrite)
		}
		b, pos = b[n:], pos+int64(n)
	}
	return nil
}

func parseFileName(name string) (int64, bool) {
	if len(name) != 20 {
		return 0, false
	}
	n, err := strconv.ParseInt(name, 10, 64)
	return n, err == nil
}

func (m *mappedFile) isFull() bool { return m.wrote.Load() >= int64(m.size) }

// hold takes a reader reference; false once the file is being destroyed.
func (m *mappedFile) hold() bool {
	if m.lazy != nil {
		return m.holdLazy()
	}
	for {
		r := m.refs.Load()
		if r <= 0 || m.destroyed.Load() {
			return false
		}
		if m.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// release drops a reference; the last one unmaps and closes the file.
func (m *mappedFile) release() {
	if m.refs.Add(-1) == 0 {
		if m.lazy != nil {
			m.unmapLast()
			return
		}
		_ = unix.Munmap(m.data)
		m.data = nil
		if fd := m.fd.Swap(-1); fd >= 0 {
			_ = unix.Close(int(fd))
		}
	}
}

// destroy removes the file from disk and drops the queue's reference; the mapping
// stays until the last reader lets go.
func (m *mappedFile) destroy() error {
	if !m.destroyed.CompareAndSwap(false, true) {
		return nil
	}
	err := os.Remove(m.path)
	m.release()
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("delete %s: %w", m.path, err)
	}
	return nil
}

// close unmaps without deleting (shutdown).
func (m *mappedFile) close() {
	if m.destroyed.CompareAndSwap(false, true) {
		m.release()
	}
}

// flush msyncs the dirty pages [flushed, wrote) when at least leastPages pages are
// dirty (any dirty byte when leastPages is 0). It returns the new flushed position.
func (m *mappedFile) flush(leastPages int) (int64, error) {
	wrote := m.wrote.Load()
	flushed := m.flushed.Load()
	if wrote <= flushed {
		return flushed, nil
	}
	if leastPages > 0 && wrote/osPageSize-flushed/osPageSize < int64(leastPages) && wrote < int64(m.size) {
		return flushed, nil
	}
	if m.lazy != nil {
		return m.flushByDescriptor(wrote, flushed)
	}
	if !m.hold() {
		return flushed, nil
	}
	defer m.release()
	failpointDelay("flush-delay") // a slow disk, in chaos builds only
	if fd := m.fd.Load(); fd >= 0 {
		if err := unix.Fdatasync(int(fd)); err != nil {
			return flushed, fmt.Errorf("fdatasync %s: %w", m.path, err)
		}
		m.flushed.Store(wrote)
		return wrote, nil
	}
	start := flushed &^ (osPageSize - 1)
	if err := unix.Msync(m.data[start:wrote], unix.MS_SYNC); err != nil {
		return flushed, fmt.Errorf("msync %s: %w", m.path, err)
	}
	m.flushed.Store(wrote)
	return wrote, nil
}

// flushByDescriptor syncs a lazy file with fdatasync: it may be unmapped, and
// mapping it again only to msync it would undo the sweeper's work.
func (m *mappedFile) flushByDescriptor(wrote, flushed int64) (int64, error) {
	if m.destroyed.Load() {
		return flushed, nil
	}
	fd, err := unix.Open(m.path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return flushed, nil // deleted meanwhile (topic or retention)
		}
		return flushed, fmt.Errorf("open %s: %w", m.path, err)
	}
	defer unix.Close(fd)
	if err := unix.Fdatasync(fd); err != nil {
		return flushed, fmt.Errorf("fdatasync %s: %w", m.path, err)
	}
	m.flushed.Store(wrote)
	return wrote, nil
}

// zeroFrom makes [pos, size) read as zero: the partial page is cleared by hand and
// whole pages are punched out so a 1 GiB tail costs nothing.
func (m *mappedFile) zeroFrom(pos int64) {
	if pos >= int64(m.size) {
		return
	}
	pageEnd := (pos + osPageSize - 1) &^ (osPageSize - 1)
	if pageEnd > int64(m.size) {
		pageEnd = int64(m.size)
	}
	clear(m.data[pos:pageEnd])
	if pageEnd < int64(m.size) {
		err := punchHole(m.path, pageEnd, int64(m.size)-pageEnd)
		if err != nil {
			// No hole punching on this file system: clear up to the first zero page.
			for p := pageEnd; p < int64(m.size); p += osPageSize {
				page := m.data[p:min(p+osPageSize, int64(m.size))]
				if allZero(page) {
					break
				}
				clear(page)
			}
		}
	}
	_ = unix.Msync(m.data[pos&^(osPageSize-1):pageEnd], unix.MS_SYNC)
}

func punchHole(path string, off, n int64) error {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func (m *mappedFile) modTime() time.Time {
	st, err := os.Stat(m.path)
	if err != nil {
		return time.Now()
	}
	return st.ModTime()
}

func (m *mappedFile) name() string { return filepath.Base(m.path) }
