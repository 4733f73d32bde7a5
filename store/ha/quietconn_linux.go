//go:build linux

package ha

import (
	"io"
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// quiet returns nc reading and writing with raw system calls. The runtime's
// syscall entry wakes sysmon whenever the process was idle, and sysmon then
// polls every 20 µs until it is idle again: with one frame per message on a
// SYNC_MASTER pair that was a quarter of the slave's CPU. The socket is
// non-blocking (the poller waits, deadlines hold), so a raw call never blocks.
func quiet(nc net.Conn) net.Conn {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nc
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nc
	}
	return newQuietConn(tc, rc)
}

// quietConn serves one Read and one Write at a time, as the HA loops use
// it (one reader goroutine; writers serialized by the loop or a mutex): the
// state of each direction and its callback live in the conn, so a frame
// costs no allocation (closures passed to RawConn escaped, four per call).
type quietConn struct {
	*net.TCPConn
	rc     syscall.RawConn
	rd, wr rawIO
}

// rawIO is one direction's pending call: the buffer, what was done, and the
// callback RawConn runs (bound once).
type rawIO struct {
	p     []byte
	n     int
	errno syscall.Errno
	fn    func(fd uintptr) bool
}

func newQuietConn(tc *net.TCPConn, rc syscall.RawConn) *quietConn {
	c := &quietConn{TCPConn: tc, rc: rc}
	c.rd.fn = c.rd.read
	c.wr.fn = c.wr.write
	return c
}

func (r *rawIO) read(fd uintptr) bool {
	for {
		n, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&r.p[0])), uintptr(len(r.p)))
		if e == unix.EINTR {
			continue
		}
		if e == unix.EAGAIN {
			return false
		}
		r.n, r.errno = int(n), e
		return true
	}
}

func (w *rawIO) write(fd uintptr) bool {
	for w.n < len(w.p) {
		n, _, e := unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&w.p[w.n])), uintptr(len(w.p)-w.n))
		switch e {
		case 0:
			w.n += int(n)
		case unix.EINTR:
		case unix.EAGAIN:
			return false
		default:
			w.errno = e
			return true
		}
	}
	return true
}

func (c *quietConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r := &c.rd
	r.p, r.n, r.errno = p, 0, 0
	err := c.rc.Read(r.fn)
	n, errno := r.n, r.errno
	r.p = nil
	if err != nil {
		return 0, &net.OpError{Op: "read", Net: "tcp", Addr: c.RemoteAddr(), Err: err}
	}
	if errno != 0 {
		return 0, &net.OpError{Op: "read", Net: "tcp", Addr: c.RemoteAddr(), Err: errno}
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (c *quietConn) Write(p []byte) (int, error) {
	w := &c.wr
	w.p, w.n, w.errno = p, 0, 0
	err := c.rc.Write(w.fn)
	n, errno := w.n, w.errno
	w.p = nil
	if err == nil && errno != 0 {
		err = errno
	}
	if err != nil {
		return n, &net.OpError{Op: "write", Net: "tcp", Addr: c.RemoteAddr(), Err: err}
	}
	return n, nil
}
