package remoting

import (
	"net"

	"golang.org/x/sys/unix"
)

// localAddrOf asks the kernel for the local address of an accepted socket: gnet
// reports the listener's configured address (":10911") instead.
func localAddrOf(fd int, fallback net.Addr) net.Addr {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return fallback
	}
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return &net.TCPAddr{IP: net.IP(sa.Addr[:]).To4(), Port: sa.Port}
	case *unix.SockaddrInet6:
		ip := net.IP(append([]byte(nil), sa.Addr[:]...))
		if v4 := ip.To4(); v4 != nil {
			ip = v4 // IPv4 peer on a dual-stack listener
		}
		return &net.TCPAddr{IP: ip, Port: sa.Port}
	}
	return fallback
}
