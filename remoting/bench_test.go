package remoting

import (
	"context"
	"sync"
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
			for range b.N {
				if _, err := c.InvokeSync(ctx, addr, req); err != nil {
					b.Fatal(err)
				}
			}
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
		})
	}
}
