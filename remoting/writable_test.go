package remoting

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// A connection whose peer does not read reports not writable once its unsent
// output passed the high-water mark, and writable again once the peer read it.
func TestConnWritableFollowsWaterMarks(t *testing.T) {
	conns := make(chan Conn, 1)
	s := startServer(t, ServerConfig{WriteBufferHighWaterMark: 256 << 10, WriteBufferLowWaterMark: 64 << 10},
		func(s *Server) {
			s.RegisterDefault(ProcessorFunc(func(_ context.Context, c Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
				conns <- c
				return codec.NewResponse(req, codec.RespSuccess, ""), nil
			}))
		})
	c := dialSmallWindow(t, s)
	_, err := c.Write(requestFrame(t, 1, 1, nil))
	require.NoError(t, err)
	var sc Conn
	select {
	case sc = <-conns:
	case <-time.After(5 * time.Second):
		t.Fatal("no request")
	}
	_ = decodeFrame(t, c)
	require.True(t, Writable(sc))

	// Up to 12 MiB, past what the kernel's socket buffers take (they grow to
	// a few MiB) and below the hard cap (two maximal frames), until the
	// output is seen above the mark.
	const size = 64 << 10
	body := bytes.Repeat([]byte{'w'}, size)
	n := 0
	for ; n < 192 && Writable(sc); n++ {
		resp := codec.NewResponse(codec.NewRequest(1), codec.RespSuccess, "")
		resp.Opaque = int32(100 + n)
		resp.Body = body
		require.NoError(t, sc.WriteResponse(resp))
		if n%16 == 15 {
			time.Sleep(10 * time.Millisecond) // let the loop flush into gnet's buffer
		}
	}
	waitFor(t, 10*time.Second, "the connection to be not writable", func() bool { return !Writable(sc) })
	for i := 0; i < n; i++ {
		require.Len(t, decodeFrame(t, c).Body, size)
	}
	waitFor(t, 10*time.Second, "the connection to be writable again", func() bool { return Writable(sc) })
}
