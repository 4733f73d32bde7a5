package compat

import (
	"net/netip"
	"strconv"
)

// JavaHostPort formats a socket address as Java's getHostAddress() + ":" +
// port, the form header fields such as PUSH_REPLY_MESSAGE_TO_CLIENT's bornHost
// carry: IPv6 as eight unabbreviated lower-case groups and no brackets
// ("0:0:0:0:0:0:0:1:40000"), which the clients split at the last colon.
func JavaHostPort(ap netip.AddrPort) string {
	a := ap.Addr().Unmap()
	port := strconv.Itoa(int(ap.Port()))
	if !a.Is6() {
		if !a.IsValid() {
			a = netip.IPv4Unspecified()
		}
		return a.String() + ":" + port
	}
	b := a.As16()
	out := make([]byte, 0, 40+len(a.Zone())+1+len(port))
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			out = append(out, ':')
		}
		out = strconv.AppendUint(out, uint64(b[i])<<8|uint64(b[i+1]), 16)
	}
	if z := a.Zone(); z != "" {
		out = append(out, '%')
		out = append(out, z...)
	}
	out = append(out, ':')
	out = append(out, port...)
	return string(out)
}
