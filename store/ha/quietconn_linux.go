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
	return &quietConn{TCPConn: tc, rc: rc}
}

type quietConn struct {
	*net.TCPConn
	rc syscall.RawConn
}

func (c *quietConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			if e == unix.EINTR {
				continue
			}
			if e == unix.EAGAIN {
				return false
			}
			n, errno = int(r), e
			return true
		}
	})
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
	var n int
	var errno syscall.Errno
	err := c.rc.Write(func(fd uintptr) bool {
		for n < len(p) {
			r, _, e := unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[n])), uintptr(len(p)-n))
			switch e {
			case 0:
				n += int(r)
			case unix.EINTR:
			case unix.EAGAIN:
				return false
			default:
				errno = e
				return true
			}
		}
		return true
	})
	if err == nil && errno != 0 {
		err = errno
	}
	if err != nil {
		return n, &net.OpError{Op: "write", Net: "tcp", Addr: c.RemoteAddr(), Err: err}
	}
	return n, nil
}
