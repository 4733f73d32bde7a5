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

// listenAddr is the address gnet is given for a configured listen address.
// Java binds its wildcard (0.0.0.0, NettyServerConfig's default, or ::) on a
// dual-stack socket, so IPv6 clients reach it too; gnet makes 0.0.0.0
// IPv4-only and :: IPv6-only, and only an empty host dual-stack. Where the
// kernel has no IPv6, or makes new IPv6 sockets IPv6-only (bindv6only, which
// gnet leaves as it is), the address stays as it is.
func listenAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "0.0.0.0" && host != "::" || !dualStackDefault() {
		return addr
	}
	return net.JoinHostPort("", port)
}

// dualStackDefault reports whether a new IPv6 socket takes IPv4 peers too.
func dualStackDefault() bool {
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	v6only, err := unix.GetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY)
	return err == nil && v6only == 0
}

// peerAddrOf is a connection's remote address with an IPv4 peer of a
// dual-stack listener as the 4-byte address Java reports (Java unmaps
// ::ffff:a.b.c.d), so the born host and client addresses read the same
// whichever listener took the connection.
func peerAddrOf(a net.Addr) net.Addr {
	if ta, ok := a.(*net.TCPAddr); ok && len(ta.IP) == net.IPv6len {
		if v4 := ta.IP.To4(); v4 != nil {
			return &net.TCPAddr{IP: v4, Port: ta.Port}
		}
	}
	return a
}
