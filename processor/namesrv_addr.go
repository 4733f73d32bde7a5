package processor

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"rmqd/codec"
)

// Bounds of namesrvAddr: it comes from broker.conf and from
// UPDATE_BROKER_CONFIG, and each entry becomes a connection the broker dials.
const (
	maxNameServers     = 32
	maxNamesrvAddrLen  = 4096
	maxNameServerEntry = 261 // a 253-byte host name, brackets, ':' and a port
)

// checkNamesrvAddr refuses a namesrvAddr that is not a ';'-separated list of
// host:port entries, as Java's BrokerStartup refuses to start with one (it
// names the form "127.0.0.1:9876;192.168.0.1:9876"). Blank entries are
// skipped, as nameServers skips them. Hosts are IP addresses (IPv6 bracketed
// or, as Java writes them, bare before the last colon) or DNS names.
func checkNamesrvAddr(s string) error {
	if len(s) > maxNamesrvAddrLen {
		return fmt.Errorf("namesrvAddr: %d bytes, at most %d", len(s), maxNamesrvAddrLen)
	}
	n := 0
	for _, a := range strings.Split(s, ";") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		if n++; n > maxNameServers {
			return fmt.Errorf("namesrvAddr: more than %d name servers", maxNameServers)
		}
		if err := checkNameServer(a); err != nil {
			return fmt.Errorf("namesrvAddr: %q: %w; want host:port;host:port, e.g. 127.0.0.1:9876;192.168.0.1:9876", a, err)
		}
	}
	return nil
}

// checkNameServer checks one host:port entry.
func checkNameServer(a string) error {
	if len(a) > maxNameServerEntry {
		return fmt.Errorf("%d bytes, at most %d", len(a), maxNameServerEntry)
	}
	host, port, err := net.SplitHostPort(codec.DialAddr(a))
	if err != nil {
		return errors.New("not host:port")
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 || port[0] < '0' || port[0] > '9' {
		return fmt.Errorf("port %q is not 1-65535", port)
	}
	if strings.ContainsAny(host, ":%") {
		if _, err := netip.ParseAddr(host); err != nil {
			return fmt.Errorf("host %q is not an IP address", host)
		}
		return nil
	}
	if !validHostName(host) {
		return fmt.Errorf("host %q is not an IP address or host name", host)
	}
	return nil
}

// validHostName reports a DNS name (or dotted IPv4) of letters, digits, '-',
// '_' and '.', at most 253 bytes.
func validHostName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for i := 0; i < len(h); i++ {
		switch c := h[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return true
}

// checkNamesrvMove refuses a namesrvAddr update the running broker cannot
// follow: it started without name servers (it has no name-server client and
// no registration loop; Java's broker then never reads namesrvAddr again
// either), or the new list is empty.
func (b *Broker) checkNamesrvMove(next *BrokerConfig) error {
	if b.conf().fromAddressServer() {
		return errors.New("namesrvAddr: this broker takes its name servers from the address server " +
			"(fetchNamesrvAddrByAddressServer); set namesrvAddr in its config file and restart")
	}
	if b.ns == nil || len(b.conf().nameServers()) == 0 {
		return errors.New("namesrvAddr: this broker started without name servers and does not register; " +
			"set namesrvAddr in its config file and restart")
	}
	if len(next.nameServers()) == 0 {
		return errors.New("namesrvAddr: empty; a running broker keeps at least one name server " +
			"(host:port;host:port)")
	}
	return nil
}

// nameServersMoved asks the registration loop to register with the name
// servers in force now, not at its next period (Java's broker takes a new
// list within updateNameServerAddrPeriod, 2 minutes, and registers with it at
// its next registration).
func (b *Broker) nameServersMoved() {
	if b.conf().lookupNameServers() {
		// The new names are looked up first; the lookup moves the
		// registrations when their addresses changed.
		select {
		case b.lookup.refresh <- struct{}{}:
		default:
		}
		return
	}
	b.movedNow()
}

// movedNow wakes the registration loop for the name servers in force.
func (b *Broker) movedNow() {
	select {
	case b.nsMoved <- struct{}{}:
	default:
	}
}
