package remoting

import (
	"context"
	"crypto/tls"
	"testing"

	"rmqd/codec"
)

// BenchmarkTLS compares one connection's calls: plain on a server without
// TLS, plain on a permissive server (the first-byte check must cost
// nothing), and TLS on the same permissive server; one call at a time
// ("sync") and 64 in flight ("pipelined").
func BenchmarkTLS(b *testing.B) {
	p := newTestPKI(b)
	cases := []struct {
		name   string
		mode   TLSMode
		client bool
	}{{"plain-disabled", TLSDisabled, false}, {"plain-permissive", TLSPermissive, false}, {"tls-permissive", TLSPermissive, true}}
	for _, tc := range cases {
		var scfg *tls.Config
		if tc.mode != TLSDisabled {
			var err error
			if scfg, err = p.serverSettings(tc.mode, "none").ServerConfig(); err != nil {
				b.Fatal(err)
			}
		}
		for _, shape := range []string{"sync", "pipelined"} {
			b.Run(tc.name+"/"+shape, func(b *testing.B) {
				s := startServer(b, ServerConfig{Multicore: true, TLSMode: tc.mode, TLS: scfg}, func(s *Server) {
					s.Register(10, ProcessorFunc(func(_ context.Context, _ Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
						return codec.NewResponse(req, 0, ""), nil
					}))
				})
				var c *Client
				if tc.client {
					c = tlsClient(b, p.clientTLS(b, "", ""))
				} else {
					c = newClient(b)
				}
				addr := s.Addr().String()
				ctx := context.Background()
				if _, err := c.InvokeSync(ctx, addr, benchRequest()); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				if shape == "sync" {
					req := benchRequest()
					for range b.N {
						if _, err := c.InvokeSync(ctx, addr, req); err != nil {
							b.Fatal(err)
						}
					}
					return
				}
				b.SetParallelism(32) // 64 callers on 2 cores
				b.RunParallel(func(pb *testing.PB) {
					req := benchRequest()
					for pb.Next() {
						if _, err := c.InvokeSync(ctx, addr, req); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}
