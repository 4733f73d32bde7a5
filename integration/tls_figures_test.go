package integration

import (
	"context"
	"crypto/tls"
	"os"
	"testing"
	"time"

	"rmqd/integration/harness"
	"rmqd/integration/loadgen/lg"
)

// TestTLSSendFigures logs send throughput and latency of one connection, plain and TLS, against each target
// in its default TLS mode (permissive, test-mode certificate: Java's defaults, rmqd's too). It asserts only
// that sends succeed; the figures are for docs/tls.md. Opt-in, it takes ~1 min per target:
//
//	RMQD_TLS_FIGURES=1 RMQD_TARGET=all go test -count=1 -v -run 'TestTLSSendFigures' ./integration/
func TestTLSSendFigures(t *testing.T) {
	if os.Getenv("RMQD_TLS_FIGURES") == "" {
		t.Skip("set RMQD_TLS_FIGURES=1")
	}
	for _, kind := range targetsFromEnv(t) {
		t.Run(kind, func(t *testing.T) {
			if kind == harness.KindApache {
				harness.RequireJars(t, "apache")
			}
			tg := harness.Start(t, kind, harness.Options{})
			ctx := t.Context()
			topic := "IT_tls_fig"
			if err := lg.CreateTopic(ctx, tg.BrokerAddr, topic, 4); err != nil {
				t.Fatal(err)
			}
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			route, err := lg.WaitRoute(rctx, tg.NamesrvAddr, topic)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			for _, inflight := range []int{1, 16} {
				for _, tr := range []struct {
					name string
					cfg  *tls.Config
				}{{"plain", nil}, {"tls", &tls.Config{InsecureSkipVerify: true}}} {
					r, err := lg.Send(ctx, lg.SendConfig{Route: route, Topic: topic, Size: 1024, InFlight: inflight,
						Duration: 5 * time.Second, Warmup: 2 * time.Second, TLS: tr.cfg})
					if err != nil {
						t.Fatal(err)
					}
					if r.Failed > 0 || r.Measured == 0 {
						t.Fatalf("%s inflight %d: %d failed, %d measured: %v", tr.name, inflight, r.Failed, r.Measured, r.Errors)
					}
					t.Logf("FIGURE %s %s inflight=%d size=1024: %.0f msg/s, p50 %.0fus p99 %.0fus", kind, tr.name, inflight,
						r.MsgPerS, r.Lat.P50Us, r.Lat.P99Us)
				}
			}
		})
	}
}
