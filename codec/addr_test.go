package codec

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDialAddr(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:10911":       "127.0.0.1:10911",
		"broker.example:10911":  "broker.example:10911",
		"[::1]:10911":           "[::1]:10911",
		"::1:10911":             "[::1]:10911",             // Java's brokerIP1 + ":" + port
		"0:0:0:0:0:0:0:1:10911": "[0:0:0:0:0:0:0:1]:10911", // Java's getHostAddress() + ":" + port
		"fe80::1%eth0:10912":    "[fe80::1%eth0]:10912",    // a scoped HA address
		"2001:db8::10:9876":     "[2001:db8::10]:9876",     // last colon is the port's, as Java splits
		"":                      "",
		"nocolon":               "nocolon",
	} {
		got := DialAddr(in)
		require.Equal(t, want, got, in)
		if want != "" && want != "nocolon" && want[0] == '[' {
			_, err := netip.ParseAddrPort(got)
			require.NoError(t, err, got)
		}
	}
}
