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

	const n, size = 64, 32 << 10 // 2 MiB: past what the kernel buffers and the mark
	body := bytes.Repeat([]byte{'w'}, size)
	for i := 0; i < n; i++ {
		resp := codec.NewResponse(codec.NewRequest(1), codec.RespSuccess, "")
		resp.Opaque = int32(100 + i)
		resp.Body = body
		require.NoError(t, sc.WriteResponse(resp))
	}
	waitFor(t, 10*time.Second, "the connection to be not writable", func() bool { return !Writable(sc) })
	for i := 0; i < n; i++ {
		require.Len(t, decodeFrame(t, c).Body, size)
	}
	waitFor(t, 10*time.Second, "the connection to be writable again", func() bool { return Writable(sc) })
}
