package codec

import "strings"

// DialAddr returns a "host:port" address from the wire or a config file in the
// form Go's net package dials. Java joins brokerIP1 (or an address's
// getHostAddress) and the port with a bare colon and splits at the last colon,
// so a Java broker registers, and a Java broker.conf names, IPv6 hosts as
// "::1:10911"; Go wants "[::1]:10911". Addresses that already dial are returned
// unchanged.
func DialAddr(addr string) string {
	i := strings.LastIndexByte(addr, ':')
	if i <= 0 || addr[0] == '[' || strings.IndexByte(addr[:i], ':') < 0 {
		return addr
	}
	return "[" + addr[:i] + "]" + addr[i:]
}

// BareHost drops the brackets of an IPv6 host written "[::1]" (a brokerIP1 or
// an exporter host in a config file; Java's InetAddress takes both forms).
func BareHost(host string) string {
	if len(host) > 2 && host[0] == '[' && host[len(host)-1] == ']' {
		return host[1 : len(host)-1]
	}
	return host
}
