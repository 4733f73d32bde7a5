package integration

import (
	"context"
	"os"
	"testing"
	"time"

	"rmqd/integration/harness"
	"rmqd/integration/loadgen/lg"
)

// TestLoadgenPaths runs the load generator's path modes that make bench's timer, transaction and BatchCQ
// rows (integration/bench/paths.go) a little against each target, and checks what each broker made of
// them: timers and DELAY-level messages all delivered to their topic (the lag is logged, not asserted);
// committed half messages all visible; inner batches of a BatchCQ topic counted and read back by offset.
func TestLoadgenPaths(t *testing.T) {
	for _, kind := range targetsFromEnv(t) {
		t.Run(kind, func(t *testing.T) {
			if kind == harness.KindApache {
				if os.Getenv("RMQD_LOADGEN_APACHE") != "1" {
					t.Skip("the load generator against Apache: RMQD_LOADGEN_APACHE=1 (make bench checks its counts anyway)")
				}
				harness.RequireJars(t, "apache")
			}
			tg := harness.Start(t, kind, harness.Options{})
			ctx := t.Context()
			fresh := func(topic, attrs string) lg.Route {
				t.Helper()
				if err := lg.CreateTopicAttrs(ctx, tg.BrokerAddr, topic, 2, attrs); err != nil {
					t.Fatal(err)
				}
				rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				route, err := lg.WaitRoute(rctx, tg.NamesrvAddr, topic)
				if err != nil {
					t.Fatal(err)
				}
				return route
			}
			send := func(cfg lg.SendConfig) lg.SendResult {
				t.Helper()
				cfg.Size, cfg.InFlight = 256, 4
				cfg.Duration = time.Minute
				r, err := lg.Send(ctx, cfg)
				if err != nil || r.Failed > 0 {
					t.Fatalf("%s: %v %d failed: %v", cfg.Topic, err, r.Failed, r.Errors)
				}
				return r
			}
			// stored waits (bounded) until topic holds want messages, and fails on more.
			stored := func(route lg.Route, topic string, want int64) {
				t.Helper()
				var sum int64
				for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
					var err error
					if _, sum, err = lg.MaxOffsets(ctx, route.BrokerAddr, topic, route.Queues); err != nil {
						t.Fatal(err)
					}
					if sum >= want {
						break
					}
				}
				if sum != want {
					t.Fatalf("%s holds %d messages, %d acknowledged", topic, sum, want)
				}
			}

			for _, c := range []struct {
				name string
				cfg  lg.SendConfig
			}{
				{"timer", lg.SendConfig{TimerDelay: time.Second, TimerSpread: time.Second}},
				{"delay", lg.SendConfig{DelayLevel: 1}},
			} {
				topic := "IT_lgp_" + c.name
				route := fresh(topic, "")
				cfg := c.cfg
				cfg.Route, cfg.Topic, cfg.Count = route, topic, 200
				r := send(cfg)
				stored(route, topic, r.Sent)
				p, err := lg.Pull(ctx, lg.PullConfig{Route: route, Topic: topic, Expect: r.Sent, Latency: true, StoreLatency: true,
					Timeout: 30 * time.Second, Full: true})
				if err != nil || p.Consumed != r.Sent {
					t.Fatalf("%s: read %d of %d: %v", c.name, p.Consumed, r.Sent, err)
				}
				t.Logf("%s %s: lag %s", kind, c.name, p.Lat.String())
			}

			topic := "IT_lgp_txn"
			route := fresh(topic, "")
			r := send(lg.SendConfig{Route: route, Topic: topic, Txn: true, Count: 300})
			stored(route, topic, r.Sent)

			topic = "IT_lgp_bcq"
			route = fresh(topic, "+queue.type=BatchCQ")
			r = send(lg.SendConfig{Route: route, Topic: topic, Batch: 16, Count: 20})
			if r.Sent != 320 {
				t.Fatalf("bcq: %d messages acknowledged, want 320", r.Sent)
			}
			stored(route, topic, r.Sent)
			p, err := lg.Pull(ctx, lg.PullConfig{Route: route, Topic: topic, Expect: r.Sent, CountOffsets: true, Timeout: 30 * time.Second})
			if err != nil || p.Consumed != r.Sent {
				t.Fatalf("bcq: read %d of %d: %v", p.Consumed, r.Sent, err)
			}
		})
	}
}

// TestLoadgenLite runs the load generator's lite mode (make bench's lite row): sends spread over lite topics
// of a LITE topic, then four clients subscribed to a share of them each pop and ack every message.
func TestLoadgenLite(t *testing.T) {
	for _, kind := range targetsFromEnv(t) {
		t.Run(kind, func(t *testing.T) {
			if kind == harness.KindApache {
				if os.Getenv("RMQD_LOADGEN_APACHE") != "1" {
					t.Skip("the load generator against Apache: RMQD_LOADGEN_APACHE=1 (with the 5.5 build)")
				}
				harness.RequireJars(t, "apache")
				if !libAtLeast(t, "apache", "rocketmq-broker", 5, 5) {
					t.Skip("lite topics need broker 5.5")
				}
			}
			tg := harness.Start(t, kind, harness.Options{BrokerConf: map[string]string{
				"enableLmq": "true", "enableMultiDispatch": "true"}})
			ctx := t.Context()
			const topic, group, lites = "IT_lgl", "IT_lgl_g", 20
			if err := lg.CreateTopicAttrs(ctx, tg.BrokerAddr, topic, 4, "+message.type=LITE"); err != nil {
				t.Fatal(err)
			}
			if err := lg.CreateLiteGroup(ctx, tg.BrokerAddr, group, topic); err != nil {
				t.Fatal(err)
			}
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			route, err := lg.WaitRoute(rctx, tg.NamesrvAddr, topic)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			lc := lg.LiteConfig{Route: route, Topic: topic, Group: group, Lites: lites, Clients: 4, Timeout: time.Minute}
			if err := lg.LiteSubscribe(ctx, lc); err != nil {
				t.Fatal(err)
			}
			r, err := lg.Send(ctx, lg.SendConfig{Route: route, Topic: topic, Size: 256, InFlight: 4, Count: 400,
				Duration: time.Minute, Lites: lites})
			if err != nil || r.Failed > 0 || r.Sent != 400 {
				t.Fatalf("sent %d: %v %d failed: %v", r.Sent, err, r.Failed, r.Errors)
			}
			lc.Expect = r.Sent
			p, err := lg.Lite(ctx, lc)
			if err != nil || p.Acked != r.Sent {
				t.Fatalf("lite: acked %d of %d: %v", p.Acked, r.Sent, err)
			}
			t.Logf("%s lite: %.0f msg/s, pop %s, ack %s", kind, p.MsgPerS, p.PopLat.String(), p.AckLat.String())
		})
	}
}
