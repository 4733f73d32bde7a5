package remoting

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"rmqd/codec"
)

func benchServer(b *testing.B, opts ...RegisterOption) (*Server, *Client) {
	s := startServer(b, ServerConfig{Multicore: true}, func(s *Server) {
		s.Register(10, ProcessorFunc(func(_ context.Context, _ Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
			return codec.NewResponse(req, 0, ""), nil
		}), opts...)
	})
	return s, newClient(b)
}

func benchRequest() *codec.RemotingCommand {
	req := codec.NewRequest(10)
	req.Ext.Set("topic", "TopicTest")
	req.Ext.Set("queueId", "3")
	req.Body = make([]byte, 128)
	return req
}

// BenchmarkRoundTrip is one synchronous call at a time on one connection.
func BenchmarkRoundTrip(b *testing.B) {
	for _, mode := range []struct {
		name string
		opts []RegisterOption
	}{{"pool", nil}, {"inline", []RegisterOption{Inline()}}} {
		b.Run(mode.name, func(b *testing.B) {
			s, c := benchServer(b, mode.opts...)
			addr := s.Addr().String()
			ctx := context.Background()
			req := benchRequest()
			b.ReportAllocs()
			b.ResetTimer()
			m := startCPU()
			for range b.N {
				if _, err := c.InvokeSync(ctx, addr, req); err != nil {
					b.Fatal(err)
				}
			}
			m.report(b)
		})
	}
}

// BenchmarkPipelined keeps many calls in flight on one connection.
func BenchmarkPipelined(b *testing.B) {
	for _, mode := range []struct {
		name string
		opts []RegisterOption
	}{{"pool", nil}, {"inline", []RegisterOption{Inline()}}} {
		b.Run(mode.name, func(b *testing.B) {
			s, c := benchServer(b, mode.opts...)
			addr := s.Addr().String()
			const inFlight = 256
			sem := make(chan struct{}, inFlight)
			var wg sync.WaitGroup
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			b.ReportAllocs()
			b.ResetTimer()
			m := startCPU()
			for range b.N {
				sem <- struct{}{}
				wg.Add(1)
				err := c.InvokeAsync(ctx, addr, benchRequest(), func(_ *codec.RemotingCommand, err error) {
					if err != nil {
						b.Error(err)
					}
					<-sem
					wg.Done()
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			wg.Wait()
			m.report(b)
		})
	}
}

// BenchmarkBaselineNetConn is the same round trip against a minimal
// goroutine-per-connection server on the standard library, to tell what gnet
// and the worker hop cost on this machine.
func BenchmarkBaselineNetConn(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go serveBaseline(nc)
		}
	}()
	c := newClient(b)
	addr := ln.Addr().String()
	req := benchRequest()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	m := startCPU()
	for range b.N {
		if _, err := c.InvokeSync(ctx, addr, req); err != nil {
			b.Fatal(err)
		}
	}
	m.report(b)
}

func serveBaseline(nc net.Conn) {
	defer nc.Close()
	r := bufio.NewReader(nc)
	var lb [4]byte
	var frame, out []byte
	var cmd codec.RemotingCommand
	for {
		if _, err := io.ReadFull(r, lb[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(lb[:]))
		frame = slices.Grow(frame[:0], n)[:n]
		if _, err := io.ReadFull(r, frame); err != nil {
			return
		}
		if codec.DecodeCommand(frame, &cmd) != nil {
			return
		}
		out = codec.NewResponse(&cmd, 0, "").Encode(out[:0])
		if _, err := nc.Write(out); err != nil {
			return
		}
	}
}

// cpuMeter reports the process CPU time (user+system, client and server
// together) per operation: on a shared, loaded machine it is steadier than wall
// time.
type cpuMeter struct{ start time.Duration }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU() cpuMeter { return cpuMeter{start: cpuTime()} }

func (m cpuMeter) report(b *testing.B) {
	b.ReportMetric(float64(cpuTime()-m.start)/float64(b.N), "cpu-ns/op")
}
