package harness

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
)

// Ports are picked below the Linux ephemeral range (32768+) so outgoing connections cannot steal them
// between the check and the server's bind.
const (
	portLow  = 20000
	portHigh = 32000
)

var (
	portsMu    sync.Mutex
	portsTaken = map[int]bool{}
)

// FreePort returns a loopback TCP port nobody listens on, never handed out before in this process.
func FreePort(tb TB) int {
	tb.Helper()
	return FreePortBlock(tb, 1)
}

// FreePortBlock returns base such that base..base+n-1 are all free loopback ports. A broker on listen port p
// also binds p-2 (VIP channel) and p+1 (HA), so a broker takes a block of 4 and listens on base+2.
func FreePortBlock(tb TB, n int) int {
	tb.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 500 {
		base := portLow + rand.IntN(portHigh-portLow-n)
		if blockFree(base, n) {
			for p := base; p < base+n; p++ {
				portsTaken[p] = true
			}
			return base
		}
	}
	tb.Fatalf("harness: no block of %d free loopback ports in [%d,%d)", n, portLow, portHigh)
	return 0
}

func blockFree(base, n int) bool {
	for p := base; p < base+n; p++ {
		if portsTaken[p] || !portFree(p) {
			return false
		}
	}
	return true
}

// portFree reports whether 127.0.0.1:p can be bound right now. On Linux this also fails when a server holds
// the wildcard address on p, so loopback is the only address we ever bind, even for a check.
func portFree(p int) bool {
	l, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// Addr is "127.0.0.1:port".
func Addr(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }
