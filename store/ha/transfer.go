package ha

import (
	"net"
	"net/netip"
)

// Transferring reports whether a slave at host (an IP, or host:port whose
// port is ignored) has a connection past its first offset report: what Java's
// HAConnectionStateNotificationService waits for as the TRANSFER state, which
// a returning master's pre-online waits for before going online.
func (m *Master) Transferring(host string) bool {
	want, ok := hostIP(host)
	if !ok {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for c := range m.conns {
		if got, ok := hostIP(c.nc.RemoteAddr().String()); ok && got == want && c.ack.Load() >= 0 {
			return true
		}
	}
	return false
}

// Transferring reports whether the slave's client is connected to its master
// (Java's HAClient in TRANSFER); host is not looked at: a slave has one master.
func (s *Slave) Transferring(string) bool { return s.connected() }

// hostIP is the IP of host or host:port, unmapped and without a zone.
func hostIP(s string) (netip.Addr, bool) {
	if h, _, err := net.SplitHostPort(s); err == nil {
		s = h
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}
