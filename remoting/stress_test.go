package remoting

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// TestShutdownUnderLoad shuts the server down while clients keep calling and
// the server keeps writing deferred and multi-slice responses: every call ends
// (answer or error), every done callback runs, nothing panics.
func TestShutdownUnderLoad(t *testing.T) {
	var dones, bodies atomic.Int64
	s := NewServer(ServerConfig{Addr: "127.0.0.1:0", Logger: testLogger(), Multicore: true})
	s.Register(10, echo())
	s.Register(11, echo(), Inline())
	s.Register(12, ProcessorFunc(func(_ context.Context, c Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
		bodies.Add(1)
		return nil, WriteResponseBodies(c, codec.NewResponse(req, 0, ""), [][]byte{[]byte("a"), []byte("b")}, ReleaseFunc(func() { dones.Add(1) }))
	}))
	s.Register(13, ProcessorFunc(func(_ context.Context, c Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
		go func() { _ = c.WriteResponse(codec.NewResponse(req, 0, "")) }()
		return nil, nil
	}))
	require.NoError(t, s.Start(tctx(t, 5*time.Second)))
	addr := s.Addr().String()

	var wg sync.WaitGroup
	var answered, failed atomic.Int64
	for g := range 8 {
		c := newClient(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100000; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				req := codec.NewRequest(10 + int32((g+i)%4))
				req.Body = []byte(fmt.Sprint(i))
				_, err := c.InvokeSync(ctx, addr, req)
				cancel()
				if err != nil {
					failed.Add(1)
					if failed.Load() > 50 {
						return
					}
					continue
				}
				answered.Add(1)
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, s.Shutdown(tctx(t, 10*time.Second)))
	wg.Wait()
	assert.Positive(t, answered.Load())
	assert.Positive(t, failed.Load())
	assert.Eventually(t, func() bool { return dones.Load() == bodies.Load() }, 5*time.Second, 10*time.Millisecond,
		"done callbacks %d of %d", dones.Load(), bodies.Load())
}

// TestManyBodies covers the fallback for more slices than one writev takes.
func TestManyBodies(t *testing.T) {
	var done atomic.Int32
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.Register(60, ProcessorFunc(func(_ context.Context, c Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
			bodies := make([][]byte, 2500)
			for i := range bodies {
				bodies[i] = []byte{byte('a' + i%26)}
			}
			return nil, WriteResponseBodies(c, codec.NewResponse(req, 0, ""), bodies, ReleaseFunc(func() { done.Add(1) }))
		}))
	})
	resp, err := newClient(t).InvokeSync(tctx(t, 5*time.Second), s.Addr().String(), codec.NewRequest(60))
	require.NoError(t, err)
	require.Len(t, resp.Body, 2500)
	for i, b := range resp.Body {
		require.Equal(t, byte('a'+i%26), b)
	}
	assert.Equal(t, int32(1), done.Load())
}

// TestBodiesOnClosedConn: done runs even when the connection is gone.
func TestBodiesOnClosedConn(t *testing.T) {
	connCh := make(chan Conn, 1)
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.Register(10, ProcessorFunc(func(_ context.Context, c Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
			connCh <- c
			return codec.NewResponse(req, 0, ""), nil
		}))
	})
	c := newClient(t)
	_, err := c.InvokeSync(tctx(t, 5*time.Second), s.Addr().String(), codec.NewRequest(10))
	require.NoError(t, err)
	sc := <-connCh
	c.CloseConn(s.Addr().String())
	require.Eventually(t, sc.Closed, 5*time.Second, 5*time.Millisecond)
	done := make(chan struct{})
	err = WriteResponseBodies(sc, codec.NewRequest(1), [][]byte{[]byte("x")}, ReleaseFunc(func() { close(done) }))
	require.ErrorIs(t, err, ErrConnClosed)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("done not called")
	}
}

// TestServerInvokeTimeout: a server-initiated call the client never answers
// times out and leaves nothing pending.
func TestServerInvokeTimeout(t *testing.T) {
	type result struct {
		err     error
		pending int
	}
	res := make(chan result, 1)
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.Register(20, ProcessorFunc(func(ctx context.Context, c Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
			ictx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			_, err := c.Invoke(ictx, codec.NewRequest(21))
			res <- result{err, c.(*endpoint).pending.len()}
			return codec.NewResponse(req, 0, ""), nil
		}))
	})
	c := newClient(t)
	b := newBlocker()
	defer close(b.release)
	c.Register(21, b)
	_, err := c.InvokeSync(tctx(t, 5*time.Second), s.Addr().String(), codec.NewRequest(20))
	require.NoError(t, err)
	r := <-res
	require.ErrorIs(t, r.err, context.DeadlineExceeded)
	assert.Zero(t, r.pending)
}
