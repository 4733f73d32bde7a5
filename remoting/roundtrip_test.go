package remoting

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

func TestConnAddresses(t *testing.T) {
	type addrs struct{ local, remote string }
	got := make(chan addrs, 1)
	s := startServer(t, ServerConfig{Addr: ":0"}, func(s *Server) {
		s.Register(10, ProcessorFunc(func(_ context.Context, c Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
			got <- addrs{c.LocalAddr().String(), c.RemoteAddr().String()}
			return codec.NewResponse(req, 0, ""), nil
		}))
	})
	port := s.Addr().(*net.TCPAddr).Port
	require.NotZero(t, port)
	c := newClient(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	_, err := c.InvokeSync(tctx(t, 5*time.Second), addr, codec.NewRequest(10))
	require.NoError(t, err)
	cc, err := c.Conn(context.Background(), addr)
	require.NoError(t, err)
	a := <-got
	assert.Equal(t, addr, a.local)
	assert.Equal(t, cc.LocalAddr().String(), a.remote)
}

func TestInvokeSync(t *testing.T) {
	for _, st := range []codec.SerializeType{codec.SerializeJSON, codec.SerializeRocketMQ} {
		t.Run(fmt.Sprint(st), func(t *testing.T) {
			s := startServer(t, ServerConfig{}, func(s *Server) { s.Register(10, echo()) })
			c := newClient(t)
			req := codec.NewRequest(10)
			req.SerializeType = st
			req.Ext.Set("topic", "TopicTest")
			req.Body = []byte("hello")
			resp, err := c.InvokeSync(tctx(t, 5*time.Second), s.Addr().String(), req)
			require.NoError(t, err)
			assert.Equal(t, int32(0), resp.Code)
			assert.True(t, resp.IsResponse())
			assert.Equal(t, req.Opaque, resp.Opaque)
			assert.Equal(t, st, resp.SerializeType, "response mirrors the request's serialize type")
			v, _ := resp.Ext.Get("topic")
			assert.Equal(t, "TopicTest", v)
			assert.Equal(t, []byte("hello"), resp.Body)
		})
	}
}

func TestInvokeAsync(t *testing.T) {
	s := startServer(t, ServerConfig{}, func(s *Server) { s.Register(10, echo()) })
	c := newClient(t)
	const n = 50
	var wg sync.WaitGroup
	wg.Add(n)
	var ok atomic.Int32
	for i := range n {
		req := codec.NewRequest(10)
		req.Body = []byte(strconv.Itoa(i))
		want := string(req.Body)
		err := c.InvokeAsync(tctx(t, 5*time.Second), s.Addr().String(), req, func(resp *codec.RemotingCommand, err error) {
			defer wg.Done()
			if assert.NoError(t, err) && assert.Equal(t, want, string(resp.Body)) {
				ok.Add(1)
			}
		})
		require.NoError(t, err)
	}
	wg.Wait()
	assert.Equal(t, int32(n), ok.Load())
}

func TestInvokeOnewayClient(t *testing.T) {
	got := make(chan string, 1)
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.Register(11, ProcessorFunc(func(_ context.Context, _ Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
			assert.True(t, req.IsOneway())
			got <- string(req.Body)
			return nil, nil
		}))
	})
	c := newClient(t)
	req := codec.NewRequest(11)
	req.Body = []byte("fire")
	require.NoError(t, c.InvokeOneway(tctx(t, 5*time.Second), s.Addr().String(), req))
	select {
	case b := <-got:
		assert.Equal(t, "fire", b)
	case <-time.After(5 * time.Second):
		t.Fatal("oneway request not processed")
	}
}

// TestServerInvokesClient: a server processor calls back into the client that
// sent the request, as the broker does with GET_CONSUMER_RUNNING_INFO.
func TestServerInvokesClient(t *testing.T) {
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.Register(20, ProcessorFunc(func(ctx context.Context, c Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
			ask := codec.NewRequest(21)
			ask.Body = []byte("ping")
			ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			answer, err := c.Invoke(ictx, ask)
			if err != nil {
				return nil, err
			}
			resp := codec.NewResponse(req, 0, "")
			resp.Body = append([]byte("client said "), answer.Body...)
			return resp, nil
		}))
		s.Register(22, ProcessorFunc(func(_ context.Context, c Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
			return codec.NewResponse(req, 0, ""), c.InvokeOneway(codec.NewRequest(23))
		}))
	})
	c := newClient(t)
	notified := make(chan bool, 1)
	c.Register(21, ProcessorFunc(func(_ context.Context, _ Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
		resp := codec.NewResponse(req, 0, "")
		resp.Body = append([]byte("pong to "), req.Body...)
		return resp, nil
	}))
	c.Register(23, ProcessorFunc(func(_ context.Context, _ Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
		notified <- req.IsOneway()
		return nil, nil
	}))
	resp, err := c.InvokeSync(tctx(t, 5*time.Second), s.Addr().String(), codec.NewRequest(20))
	require.NoError(t, err)
	assert.Equal(t, int32(0), resp.Code, resp.Remark)
	assert.Equal(t, "client said pong to ping", string(resp.Body))

	_, err = c.InvokeSync(tctx(t, 5*time.Second), s.Addr().String(), codec.NewRequest(22))
	require.NoError(t, err)
	select {
	case oneway := <-notified:
		assert.True(t, oneway)
	case <-time.After(5 * time.Second):
		t.Fatal("server oneway request not served by the client")
	}
}

// blocker is a processor that holds requests until released.
type blocker struct {
	entered chan struct{}
	release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{entered: make(chan struct{}, 100), release: make(chan struct{})}
}

func (b *blocker) ProcessRequest(ctx context.Context, _ Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	b.entered <- struct{}{}
	select {
	case <-b.release:
	case <-ctx.Done():
	}
	return codec.NewResponse(req, 0, ""), nil
}

func TestInvokeTimeout(t *testing.T) {
	b := newBlocker()
	s := startServer(t, ServerConfig{}, func(s *Server) { s.Register(30, b) })
	defer close(b.release)
	c := newClient(t)
	addr := s.Addr().String()

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.InvokeSync(ctx, addr, codec.NewRequest(30))
	require.ErrorIs(t, err, context.DeadlineExceeded)

	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	done := make(chan error, 1)
	require.NoError(t, c.InvokeAsync(ctx2, addr, codec.NewRequest(30), func(_ *codec.RemotingCommand, err error) { done <- err }))
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(5 * time.Second):
		t.Fatal("async call did not time out")
	}

	cc, err := c.conn(context.Background(), addr)
	require.NoError(t, err)
	assert.Equal(t, 0, cc.ep.pending.len(), "timed-out calls leave no pending entry")
}

func TestConnCloseFailsPending(t *testing.T) {
	b := newBlocker()
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.Register(30, b)
		s.Register(31, ProcessorFunc(func(_ context.Context, c Conn, _ *codec.RemotingCommand) (*codec.RemotingCommand, error) {
			return nil, c.Close()
		}))
	})
	defer close(b.release)
	c := newClient(t)
	addr := s.Addr().String()

	syncErr := make(chan error, 1)
	go func() {
		_, err := c.InvokeSync(tctx(t, 10*time.Second), addr, codec.NewRequest(30))
		syncErr <- err
	}()
	asyncErr := make(chan error, 1)
	require.NoError(t, c.InvokeAsync(tctx(t, 10*time.Second), addr, codec.NewRequest(30), func(_ *codec.RemotingCommand, err error) {
		asyncErr <- err
	}))
	<-b.entered
	<-b.entered
	// The server closes the connection while both calls wait.
	require.NoError(t, c.InvokeOneway(tctx(t, 5*time.Second), addr, codec.NewRequest(31)))
	for _, ch := range []chan error{syncErr, asyncErr} {
		select {
		case err := <-ch:
			require.ErrorIs(t, err, ErrConnClosed)
		case <-time.After(5 * time.Second):
			t.Fatal("pending call not failed on close")
		}
	}

	// The client redials on the next call.
	c2 := codec.NewRequest(999)
	resp, err := c.InvokeSync(tctx(t, 5*time.Second), addr, c2)
	require.NoError(t, err)
	assert.Equal(t, codec.RespRequestCodeNotSupported, resp.Code)
}

func TestClientCloseConnFailsPending(t *testing.T) {
	b := newBlocker()
	s := startServer(t, ServerConfig{}, func(s *Server) { s.Register(30, b) })
	defer close(b.release)
	c := newClient(t)
	addr := s.Addr().String()
	errc := make(chan error, 1)
	go func() {
		_, err := c.InvokeSync(tctx(t, 10*time.Second), addr, codec.NewRequest(30))
		errc <- err
	}()
	<-b.entered
	c.CloseConn(addr)
	select {
	case err := <-errc:
		require.ErrorIs(t, err, ErrConnClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("pending call not failed on CloseConn")
	}
}

func TestFrameTooLongClosesOnlyThatConnection(t *testing.T) {
	s := startServer(t, ServerConfig{MaxFrameLength: 1 << 20}, func(s *Server) { s.Register(10, echo()) })
	big, small := newClient(t), newClient(t)
	addr := s.Addr().String()

	_, err := small.InvokeSync(tctx(t, 5*time.Second), addr, codec.NewRequest(10))
	require.NoError(t, err)
	smallConn, err := small.conn(context.Background(), addr)
	require.NoError(t, err)

	req := codec.NewRequest(10)
	req.Body = make([]byte, 2<<20)
	_, err = big.InvokeSync(tctx(t, 5*time.Second), addr, req)
	require.ErrorIs(t, err, ErrConnClosed)

	// Just under the limit passes.
	req = codec.NewRequest(10)
	req.Body = bytes.Repeat([]byte{'x'}, (1<<20)-1024)
	resp, err := big.InvokeSync(tctx(t, 5*time.Second), addr, req)
	require.NoError(t, err)
	assert.Equal(t, req.Body, resp.Body)

	_, err = small.InvokeSync(tctx(t, 5*time.Second), addr, codec.NewRequest(10))
	require.NoError(t, err)
	again, err := small.conn(context.Background(), addr)
	require.NoError(t, err)
	assert.Same(t, smallConn, again, "the other connection stayed open")
}

func TestManyConcurrentRequests(t *testing.T) {
	s := startServer(t, ServerConfig{Multicore: true}, func(s *Server) {
		s.Register(10, echo(), WithWorkers(8))
		s.Register(12, echo(), Inline())
	})
	const clients, goroutines, perG = 3, 16, 100
	addr := s.Addr().String()
	var wg sync.WaitGroup
	var failures atomic.Int32
	for ci := range clients {
		c := newClient(t)
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perG {
					req := codec.NewRequest(10 + int32(i%2)*2)
					if i%3 == 0 {
						req.SerializeType = codec.SerializeRocketMQ
					}
					want := fmt.Sprintf("%d/%d/%d", ci, g, i)
					req.Ext.Set("k", want)
					req.Body = []byte(want)
					resp, err := c.InvokeSync(tctx(t, 10*time.Second), addr, req)
					if err != nil || string(resp.Body) != want {
						failures.Add(1)
						continue
					}
					if v, _ := resp.Ext.Get("k"); v != want {
						failures.Add(1)
					}
				}
			}()
		}
	}
	wg.Wait()
	assert.Zero(t, failures.Load())
}

func TestProcessorErrorAndPanic(t *testing.T) {
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.Register(40, ProcessorFunc(func(context.Context, Conn, *codec.RemotingCommand) (*codec.RemotingCommand, error) {
			return nil, errors.New("disk on fire")
		}))
		s.Register(41, ProcessorFunc(func(context.Context, Conn, *codec.RemotingCommand) (*codec.RemotingCommand, error) {
			panic("boom")
		}))
		s.Register(42, ProcessorFunc(func(context.Context, Conn, *codec.RemotingCommand) (*codec.RemotingCommand, error) {
			panic("inline boom")
		}), Inline())
		s.Register(10, echo())
	})
	c := newClient(t)
	addr := s.Addr().String()
	resp, err := c.InvokeSync(tctx(t, 5*time.Second), addr, codec.NewRequest(40))
	require.NoError(t, err)
	assert.Equal(t, codec.RespSystemError, resp.Code)
	assert.Equal(t, "disk on fire", resp.Remark)

	for _, code := range []int32{41, 42} {
		resp, err = c.InvokeSync(tctx(t, 5*time.Second), addr, codec.NewRequest(code))
		require.NoError(t, err)
		assert.Equal(t, codec.RespSystemError, resp.Code)
		assert.Contains(t, resp.Remark, "boom")
	}
	resp, err = c.InvokeSync(tctx(t, 5*time.Second), addr, codec.NewRequest(10))
	require.NoError(t, err)
	assert.Equal(t, int32(0), resp.Code, "the server lives on")
}

func TestDeferredResponse(t *testing.T) {
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.Register(50, ProcessorFunc(func(_ context.Context, c Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
			// The request is ours after returning (nil, nil): keep it and answer later.
			go func() {
				time.Sleep(20 * time.Millisecond)
				resp := codec.NewResponse(req, 0, "later")
				resp.Body = req.Body
				_ = c.WriteResponse(resp)
			}()
			return nil, nil
		}))
	})
	c := newClient(t)
	req := codec.NewRequest(50)
	req.Body = []byte("long poll")
	resp, err := c.InvokeSync(tctx(t, 5*time.Second), s.Addr().String(), req)
	require.NoError(t, err)
	assert.Equal(t, "later", resp.Remark)
	assert.Equal(t, "long poll", string(resp.Body))
}

func TestWriteResponseBodies(t *testing.T) {
	var doneCalls atomic.Int32
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.Register(60, ProcessorFunc(func(_ context.Context, c Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
			resp := codec.NewResponse(req, 0, "")
			resp.Ext.Set("n", "3")
			bodies := [][]byte{[]byte("one|"), bytes.Repeat([]byte("two|"), 50000), []byte("three")}
			return nil, WriteResponseBodies(c, resp, bodies, ReleaseFunc(func() { doneCalls.Add(1) }))
		}))
	})
	c := newClient(t)
	for _, st := range []codec.SerializeType{codec.SerializeJSON, codec.SerializeRocketMQ} {
		req := codec.NewRequest(60)
		req.SerializeType = st
		resp, err := c.InvokeSync(tctx(t, 5*time.Second), s.Addr().String(), req)
		require.NoError(t, err)
		want := "one|" + string(bytes.Repeat([]byte("two|"), 50000)) + "three"
		assert.Equal(t, want, string(resp.Body))
		n, _ := resp.Ext.Get("n")
		assert.Equal(t, "3", n)
	}
	assert.Eventually(t, func() bool { return doneCalls.Load() == 2 }, 5*time.Second, 5*time.Millisecond)
}

type recordingListener struct {
	mu     sync.Mutex
	events []string
}

func (l *recordingListener) OnConnect(c Conn) { l.add("open", c) }
func (l *recordingListener) OnClose(c Conn)   { l.add("close", c) }
func (l *recordingListener) add(ev string, c Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, fmt.Sprintf("%s %d", ev, c.ID()))
}
func (l *recordingListener) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}

func TestConnListenerAndIdleTimeout(t *testing.T) {
	l := &recordingListener{}
	var connID atomic.Uint64
	s := startServer(t, ServerConfig{IdleTimeout: 200 * time.Millisecond}, func(s *Server) {
		s.AddConnListener(l)
		s.Register(10, ProcessorFunc(func(_ context.Context, c Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
			connID.Store(c.ID())
			return codec.NewResponse(req, 0, ""), nil
		}))
	})
	raw := dialRaw(t, s)
	_, err := raw.Write(rawJSONFrame(t, rawJSONHeader{Code: 10, Language: "JAVA", Opaque: 1}, nil))
	require.NoError(t, err)
	readRawFrame(t, raw)
	start := time.Now()
	expectClosedByPeer(t, raw)
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "not closed before it was idle")
	id := connID.Load()
	assert.Eventually(t, func() bool {
		ev := l.snapshot()
		return len(ev) == 2 && ev[0] == fmt.Sprintf("open %d", id) && ev[1] == fmt.Sprintf("close %d", id)
	}, 5*time.Second, 5*time.Millisecond, "events %v", l.snapshot())
}

type shortCircuit struct{ after atomic.Int32 }

func (h *shortCircuit) Before(_ Conn, req *codec.RemotingCommand) *codec.RemotingCommand {
	if v, _ := req.Ext.Get("AccessKey"); v != "ok" {
		return codec.NewResponse(req, codec.RespNoPermission, "no permission")
	}
	return nil
}
func (h *shortCircuit) After(_ Conn, _, resp *codec.RemotingCommand) {
	if resp != nil {
		h.after.Add(1)
	}
}

func TestRPCHook(t *testing.T) {
	h := &shortCircuit{}
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.AddRPCHook(h)
		s.Register(10, echo())
	})
	c := newClient(t)
	resp, err := c.InvokeSync(tctx(t, 5*time.Second), s.Addr().String(), codec.NewRequest(10))
	require.NoError(t, err)
	assert.Equal(t, codec.RespNoPermission, resp.Code)
	req := codec.NewRequest(10)
	req.Ext.Set("AccessKey", "ok")
	resp, err = c.InvokeSync(tctx(t, 5*time.Second), s.Addr().String(), req)
	require.NoError(t, err)
	assert.Equal(t, int32(0), resp.Code)
	assert.Equal(t, int32(2), h.after.Load())
}

func TestRegisterDefault(t *testing.T) {
	s := startServer(t, ServerConfig{}, func(s *Server) { s.RegisterDefault(echo()) })
	c := newClient(t)
	req := codec.NewRequest(12345)
	req.Body = []byte("x")
	resp, err := c.InvokeSync(tctx(t, 5*time.Second), s.Addr().String(), req)
	require.NoError(t, err)
	assert.Equal(t, int32(0), resp.Code)
	assert.Equal(t, "x", string(resp.Body))
}

func TestSystemBusyWhenPoolFull(t *testing.T) {
	b := newBlocker()
	s := startServer(t, ServerConfig{}, func(s *Server) { s.Register(30, b, WithWorkers(1), WithQueue(1)) })
	c := newClient(t)
	addr := s.Addr().String()
	results := make(chan *codec.RemotingCommand, 3)
	call := func() {
		require.NoError(t, c.InvokeAsync(tctx(t, 10*time.Second), addr, codec.NewRequest(30), func(r *codec.RemotingCommand, err error) {
			assert.NoError(t, err)
			results <- r
		}))
	}
	call()
	<-b.entered // the worker is busy
	call()      // queued
	call()      // rejected
	select {
	case r := <-results:
		assert.Equal(t, codec.RespSystemBusy, r.Code)
		assert.Contains(t, r.Remark, "system busy")
	case <-time.After(5 * time.Second):
		t.Fatal("no SYSTEM_BUSY")
	}
	close(b.release)
	for range 2 {
		r := <-results
		assert.Equal(t, int32(0), r.Code)
	}
}

func TestShutdownFailsServerInvokeAndRefusesRestart(t *testing.T) {
	cfg := ServerConfig{Addr: "127.0.0.1:0", Logger: testLogger()}
	s := NewServer(cfg)
	connCh := make(chan Conn, 1)
	s.Register(10, ProcessorFunc(func(_ context.Context, c Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
		connCh <- c
		return codec.NewResponse(req, 0, ""), nil
	}))
	require.NoError(t, s.Start(tctx(t, 5*time.Second)))
	c := newClient(t)
	c.Register(70, newBlocker()) // never answers in time
	_, err := c.InvokeSync(tctx(t, 5*time.Second), s.Addr().String(), codec.NewRequest(10))
	require.NoError(t, err)
	sc := <-connCh
	errc := make(chan error, 1)
	go func() {
		_, err := sc.Invoke(tctx(t, 10*time.Second), codec.NewRequest(70))
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, s.Shutdown(tctx(t, 5*time.Second)))
	select {
	case err := <-errc:
		require.ErrorIs(t, err, ErrConnClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("server-initiated call not failed at shutdown")
	}
	assert.True(t, sc.Closed())
	require.ErrorIs(t, s.Start(tctx(t, time.Second)), ErrServerClosed)
	require.Error(t, sc.WriteResponse(codec.NewRequest(1)))
}

func TestStartOnBusyPortFails(t *testing.T) {
	s := startServer(t, ServerConfig{}, nil)
	other := NewServer(ServerConfig{Addr: s.Addr().String(), Logger: testLogger()})
	err := other.Start(tctx(t, 5*time.Second))
	require.Error(t, err)
	require.NoError(t, other.Shutdown(tctx(t, time.Second)))
	// The first server is unaffected.
	resp, err := newClient(t).InvokeSync(tctx(t, 5*time.Second), s.Addr().String(), codec.NewRequest(1))
	require.NoError(t, err)
	assert.Equal(t, codec.RespRequestCodeNotSupported, resp.Code)
}

func TestExtraAddrs(t *testing.T) {
	s := startServer(t, ServerConfig{ExtraAddrs: []string{"127.0.0.2:0"}}, func(s *Server) { s.Register(10, echo()) })
	addrs := s.Addrs()
	require.Len(t, addrs, 2)
	assert.Equal(t, addrs[0], s.Addr())
	c := newClient(t)
	for _, a := range addrs {
		require.NotZero(t, a.(*net.TCPAddr).Port, a)
		req := codec.NewRequest(10)
		req.Body = []byte(a.String())
		resp, err := c.InvokeSync(tctx(t, 5*time.Second), a.String(), req)
		require.NoError(t, err)
		assert.Equal(t, a.String(), string(resp.Body))
	}
	assert.NotEqual(t, addrs[0].String(), addrs[1].String())
}

// TestInlineWhenSplitsRequests: requests the predicate picks run on the event
// loop, the others on the pool: an inline request is answered while the pool's
// only worker is stuck. OnLoop tells the processor which it is.
func TestInlineWhenSplitsRequests(t *testing.T) {
	unblock, blocked := make(chan struct{}), make(chan struct{})
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.Register(13, ProcessorFunc(func(ctx context.Context, _ Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
			if string(req.Body) == "pool" {
				close(blocked)
				<-unblock
			}
			resp := codec.NewResponse(req, codec.RespSuccess, fmt.Sprint(OnLoop(ctx)))
			resp.Body = req.Body
			return resp, nil
		}), WithWorkers(1), InlineWhen(func(req *codec.RemotingCommand) bool {
			v, _ := req.Ext.Get("inline")
			return v == "1"
		}))
	})
	c := newClient(t)
	addr := s.Addr().String()
	pooled := make(chan error, 1)
	go func() {
		req := codec.NewRequest(13)
		req.Body = []byte("pool")
		_, err := c.InvokeSync(tctx(t, 10*time.Second), addr, req)
		pooled <- err
	}()
	<-blocked
	for i := range 20 {
		req := codec.NewRequest(13)
		req.Ext.Set("inline", "1")
		req.Body = []byte(fmt.Sprint(i))
		resp, err := c.InvokeSync(tctx(t, 5*time.Second), addr, req)
		require.NoError(t, err)
		require.Equal(t, req.Body, resp.Body)
		require.Equal(t, "true", resp.Remark, "OnLoop on the loop")
	}
	select {
	case err := <-pooled:
		t.Fatalf("the pooled request finished while its worker was blocked: %v", err)
	default:
	}
	close(unblock)
	require.NoError(t, <-pooled)
	require.False(t, OnLoop(context.Background()))
	req := codec.NewRequest(13)
	resp, err := c.InvokeSync(tctx(t, 5*time.Second), addr, req)
	require.NoError(t, err)
	require.Equal(t, "false", resp.Remark, "OnLoop on a worker")
}

// With no connection in use the ticker sleeps and its clock stops; the first
// connection after such a spell wakes it, is not taken for long idle, and is
// still closed once it really is idle; a connection used now and then keeps
// its last use exact while the ticker sleeps between uses.
func TestTickerSleepsWhileConnectionsIdle(t *testing.T) {
	s := startServer(t, ServerConfig{IdleTimeout: 3 * time.Second}, func(s *Server) {
		s.Register(10, echo())
	})
	stopped := s.clock.stopped.Load
	require.Eventually(t, stopped, 10*time.Second, 5*time.Millisecond, "the ticker never slept")
	s.clock.now.Store(time.Now().Add(-time.Hour).UnixNano()) // as a long sleep leaves it
	raw := dialRaw(t, s)
	call := func(opaque int32) {
		_, err := raw.Write(rawJSONFrame(t, rawJSONHeader{Code: 10, Language: "JAVA", Opaque: opaque}, nil))
		require.NoError(t, err)
		readRawFrame(t, raw)
	}
	call(1)
	// Idle within a tick, the ticker sleeps again, with the connection open.
	require.Eventually(t, stopped, 10*time.Second, 5*time.Millisecond, "the ticker did not sleep with an idle connection")
	s.clock.now.Store(time.Now().Add(-time.Hour).UnixNano())
	call(2) // stamped from the restarted clock, not the stopped one
	start := time.Now()
	expectClosedByPeer(t, raw)
	assert.GreaterOrEqual(t, time.Since(start), 2*time.Second, "not closed before it was idle")
	require.Eventually(t, stopped, 10*time.Second, 5*time.Millisecond, "the ticker did not sleep again")
}

// TestRunOnLoop: answers written from a task on the connection's loop go out,
// and so does one another goroutine queues while the task runs (it joins the
// flush the task's first write scheduled).
func TestRunOnLoop(t *testing.T) {
	type held struct {
		c   Conn
		req *codec.RemotingCommand
	}
	got := make(chan held, 3)
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.Register(70, ProcessorFunc(func(_ context.Context, c Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
			got <- held{c, req}
			return nil, nil
		}))
	})
	c := newClient(t)
	type answer struct {
		resp *codec.RemotingCommand
		err  error
	}
	answers := make(chan answer, 3)
	for i := range 3 {
		req := codec.NewRequest(70)
		req.Body = []byte{byte('a' + i)}
		go func() {
			resp, err := c.InvokeSync(tctx(t, 5*time.Second), s.Addr().String(), req)
			answers <- answer{resp, err}
		}()
	}
	var hs []held
	for range 3 {
		select {
		case h := <-got:
			hs = append(hs, h)
		case <-time.After(5 * time.Second):
			t.Fatal("requests not received")
		}
	}
	answerOf := func(h held) *codec.RemotingCommand {
		resp := codec.NewResponse(h.req, 0, "")
		resp.Body = append([]byte(nil), h.req.Body...)
		return resp
	}
	inTask, release := make(chan struct{}), make(chan struct{})
	ok := RunOnLoop(hs[0].c, func() {
		_ = hs[0].c.WriteResponse(answerOf(hs[0]))
		_ = WriteResponseBodies(hs[1].c, answerOf(hs[1]), [][]byte{hs[1].req.Body}, nil)
		close(inTask)
		<-release
	})
	require.True(t, ok)
	<-inTask
	require.NoError(t, hs[2].c.WriteResponse(answerOf(hs[2]))) // queued while the task runs
	close(release)
	bodies := map[string]bool{}
	for range 3 {
		select {
		case a := <-answers:
			require.NoError(t, a.err)
			bodies[string(a.resp.Body)] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("answers missing, got %v", bodies)
		}
	}
	assert.Equal(t, map[string]bool{"a": true, "b": true, "c": true}, bodies)
	assert.False(t, RunOnLoop(nil, func() {}), "not a server connection")
}
