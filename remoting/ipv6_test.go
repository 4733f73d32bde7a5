package remoting

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// needIPv6Loopback skips where the sandbox has no ::1.
func needIPv6Loopback(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	_ = ln.Close()
}

// remoteOf starts a server on addr that reports each request's remote address.
func remoteOf(t *testing.T, addr string) (*Server, <-chan net.Addr) {
	got := make(chan net.Addr, 4)
	s := startServer(t, ServerConfig{Addr: addr}, func(s *Server) {
		s.Register(10, ProcessorFunc(func(_ context.Context, c Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
			got <- c.RemoteAddr()
			return codec.NewResponse(req, 0, ""), nil
		}))
	})
	return s, got
}

// A wildcard listener takes IPv4 and IPv6 clients, as Java's dual-stack bind
// of 0.0.0.0 (NettyServerConfig's default) and of :: does; an IPv4 client's
// address reads as a 4-byte one, as Java reports it.
func TestWildcardListenerIsDualStack(t *testing.T) {
	needIPv6Loopback(t)
	for _, bind := range []string{"0.0.0.0:0", "[::]:0"} {
		t.Run(bind, func(t *testing.T) {
			s, got := remoteOf(t, bind)
			port := strconv.Itoa(s.Addr().(*net.TCPAddr).Port)
			c := newClient(t)
			for _, host := range []string{"127.0.0.1", "::1"} {
				_, err := c.InvokeSync(tctx(t, 5*time.Second), net.JoinHostPort(host, port), codec.NewRequest(10))
				require.NoError(t, err, host)
				ra := (<-got).(*net.TCPAddr)
				require.Equal(t, host, ra.IP.String())
				if host == "127.0.0.1" {
					require.Len(t, []byte(ra.IP), net.IPv4len, "an IPv4 peer is not v4-mapped")
				}
			}
		})
	}
}

// Route data from a Java broker names an IPv6 broker "::1:10911" (brokerIP1 +
// ":" + port); the client dials it as Java's does, splitting at the last colon.
func TestClientDialsJavaStyleIPv6Addr(t *testing.T) {
	needIPv6Loopback(t)
	s, got := remoteOf(t, "[::1]:0")
	addr := "::1:" + strconv.Itoa(s.Addr().(*net.TCPAddr).Port)
	_, err := newClient(t).InvokeSync(tctx(t, 5*time.Second), addr, codec.NewRequest(10))
	require.NoError(t, err)
	require.Equal(t, "::1", (<-got).(*net.TCPAddr).IP.String())
}
