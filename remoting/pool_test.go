package remoting

import (
	"context"
	"encoding/json"
	"net"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// readJSONResponse reads one response frame from c.
func readJSONResponse(t *testing.T, c net.Conn) rawJSONHeader {
	t.Helper()
	_, hdr, _ := readRawFrame(t, c)
	var h rawJSONHeader
	require.NoError(t, json.Unmarshal(hdr, &h), "header %s", hdr)
	return h
}

func remarkOf(h rawJSONHeader) string {
	if h.Remark == nil {
		return ""
	}
	return *h.Remark
}

// A request that waits in the queue past MaxWait is answered SYSTEM_BUSY
// with Java's TIMEOUT_CLEAN_QUEUE remark while the only worker is still stuck;
// while Busy holds, new requests get REJECTREQUEST and queued ones
// PCBUSY_CLEAN_QUEUE.
func TestPoolFastFailure(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	var busy atomic.Bool
	slow := ProcessorFunc(func(_ context.Context, _ Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
		started <- struct{}{}
		<-release
		return codec.NewResponse(req, codec.RespSuccess, ""), nil
	})
	pool := NewWorkerPool("send", 1, 100)
	pool.SetFastFailure(FastFailure{
		MaxWait: func() time.Duration { return 50 * time.Millisecond },
		Busy:    busy.Load,
	})
	s := startServer(t, ServerConfig{}, func(s *Server) { s.Register(310, slow, WithPool(pool)) })
	c := dialRaw(t, s)
	send := func(opaque int32) {
		_, err := c.Write(rawJSONFrame(t, rawJSONHeader{Code: 310, Language: "JAVA", Opaque: opaque}, nil))
		require.NoError(t, err)
	}
	send(1)
	<-started // the worker is stuck on request 1
	send(2)
	h := readJSONResponse(t, c)
	require.Equal(t, int32(2), h.Opaque)
	require.Equal(t, codec.RespSystemBusy, h.Code)
	require.Regexp(t, regexp.MustCompile(`^\[TIMEOUT_CLEAN_QUEUE\]broker busy, start flow control for a while, period in queue: \d+ms, size of queue: 0$`), remarkOf(h))
	require.Zero(t, pool.Queued())

	send(3) // queued behind the stuck worker
	require.Eventually(t, func() bool { return pool.Queued() == 1 && pool.HeadWait() > 0 }, 5*time.Second, time.Millisecond)
	busy.Store(true)
	h = readJSONResponse(t, c)
	require.Equal(t, int32(3), h.Opaque)
	require.Equal(t, codec.RespSystemBusy, h.Code)
	require.Contains(t, remarkOf(h), "[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: ")
	send(4)
	h = readJSONResponse(t, c)
	require.Equal(t, int32(4), h.Opaque)
	require.Equal(t, codec.RespSystemBusy, h.Code)
	require.Equal(t, "[REJECTREQUEST]system busy, start flow control for a while", remarkOf(h))

	busy.Store(false)
	close(release)
	h = readJSONResponse(t, c)
	require.Equal(t, int32(1), h.Opaque)
	require.Equal(t, codec.RespSuccess, h.Code, "the request that was running is answered normally")
	send(5)
	<-started
	h = readJSONResponse(t, c)
	require.Equal(t, int32(5), h.Opaque)
	require.Equal(t, codec.RespSuccess, h.Code)
	require.Zero(t, pool.HeadWait())
}
