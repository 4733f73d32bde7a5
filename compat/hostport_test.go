package compat

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

// The strings are what InetAddress.getHostAddress() + ":" + port gives.
func TestJavaHostPort(t *testing.T) {
	for in, want := range map[string]string{
		"10.1.2.3:40000":            "10.1.2.3:40000",
		"[::ffff:10.1.2.3]:40000":   "10.1.2.3:40000", // Java holds a mapped address as Inet4Address
		"[::1]:10911":               "0:0:0:0:0:0:0:1:10911",
		"[2001:db8::abcd:0:1]:9876": "2001:db8:0:0:0:abcd:0:1:9876",
		"[fe80::1%eth0]:10912":      "fe80:0:0:0:0:0:0:1%eth0:10912",
	} {
		require.Equal(t, want, JavaHostPort(netip.MustParseAddrPort(in)), in)
	}
	require.Equal(t, "0.0.0.0:0", JavaHostPort(netip.AddrPort{}))
}
