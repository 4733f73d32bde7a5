package main

import (
	"context"
	"fmt"
	"time"

	"rmqd/integration/loadgen/lg"
)

// Message paths beside plain sends (issue 22: every capability of wave 2 beside Apache's): messages sent for
// later delivery (the 5.x timer wheel, TIMER_DELAY_MS, and the classic DELAY level), transactions (half
// message + oneway commit), BatchCQ topics fed with inner batches, and RocketMQ 5.5's lite topics (sends
// spread over lite topics, then POP_LITE_MESSAGE + ACK; Apache 5.5 only: -apache-lib of the 5.5 build). Each run's broker CPU is counted from
// the first send until the target topic holds every acknowledged message, so what the broker does after
// the acknowledgement (the wheel's delivery, the commit) is paid for by the same messages.

// PathRun is one run of a path.
type PathRun struct {
	Path     string         `json:"path"` // timer | delay | txn | bcq | lite
	Rate     float64        `json:"rate,omitempty"`
	Batch    int            `json:"batch,omitempty"`
	InFlight int            `json:"inFlight"`
	Send     lg.SendResult  `json:"send"`
	Stored   int64          `json:"stored"`                      // in the target topic once complete
	CPUUs    float64        `json:"cpuUsPerMsg"`                 // first send → target topic complete
	DoneMs   float64        `json:"completeAfterLastAckMs"`      // last acknowledgement → target topic complete
	Lag      *lg.Summary    `json:"lag,omitempty"`               // timer, delay: due time → stored in the topic
	Read     *lg.PullResult `json:"read,omitempty"`              // bcq: catch-up read of what was stored
	ReadCPU  float64        `json:"readCpuUsPerMsg,omitempty"`   // bcq, lite: broker CPU per message read
	Pop      *lg.PopResult  `json:"pop,omitempty"`               // lite: POP_LITE_MESSAGE + ACK of what was stored
	ClientUs float64        `json:"clientCpuUsPerMsg,omitempty"` // load generator (this process), same window as CPUUs
	Load     string         `json:"loadavg"`
}

// Path settings: the open-loop paths run at pathRate for the open-loop runs' length; timers are due 1-2 s
// after their send (the wheel's precision is 1 s on both brokers); BatchCQ batches are 16 × 1 KiB, 16
// batches in flight.
const (
	pathRate          = 2000
	timerDelay        = time.Second
	timerSpread       = time.Second
	bcqBatch          = 16
	bcqInFlight       = 16
	pathWarmN         = 2000 // unrecorded warm-up of each path (the JIT of Apache's timer, transaction, batch code)
	pathCompleteBound = 60 * time.Second
	// The lite row: liteN 1 KiB messages over liteTopics lite topics, ×64 in flight, then consumed by
	// liteClients clients subscribed to a share of the lite topics each.
	liteN       = 20_000
	liteTopics  = 100
	liteClients = 4
)

// pathRows says which path rows run: -caps-rows names them (timer also runs the DELAY level); the full run
// has them all but lite, which runs only when named (the pinned Apache 5.3.3 has no lite topics).
func (e *env) pathRows() (timer, txn, bcq, lite bool) {
	if e.full && !e.capsOnly {
		return true, true, true, e.capsRow("lite")
	}
	return e.capsRow("timer"), e.capsRow("txn"), e.capsRow("bcq"), e.capsRow("lite")
}

// pathRuns starts a broker of its own and runs the chosen paths on it (lite on one more, with LMQ on).
func (r *runner) pathRuns(ctx context.Context) {
	timer, txn, bcq, lite := r.e.pathRows()
	if lite {
		r.withBroker(ctx, "ASYNC_FLUSH", brokerSpec{label: "lite", conf: map[string]string{
			"enableLmq": "true", "enableMultiDispatch": "true"}}, func() {
			r.pathRun(ctx, "lite", lg.SendConfig{Size: 1024, InFlight: 64, Count: liteN, Lites: liteTopics})
		})
	}
	if !timer && !txn && !bcq {
		return
	}
	r.withBroker(ctx, "ASYNC_FLUSH", brokerSpec{label: "paths"}, func() {
		if timer {
			r.pathRun(ctx, "timer", lg.SendConfig{Size: 1024, InFlight: 128, Rate: pathRate, TimerDelay: timerDelay, TimerSpread: timerSpread})
			r.pathRun(ctx, "delay", lg.SendConfig{Size: 1024, InFlight: 128, Rate: pathRate, DelayLevel: 1})
		}
		if txn {
			r.pathRun(ctx, "txn", lg.SendConfig{Size: 1024, InFlight: 128, Rate: pathRate, Txn: true})
		}
		if bcq {
			r.pathRun(ctx, "bcq", lg.SendConfig{Size: 1024, InFlight: bcqInFlight, Batch: bcqBatch})
		}
	})
}

// pathRun warms the path up on a topic of its own, then measures it on a fresh one.
func (r *runner) pathRun(ctx context.Context, path string, cfg lg.SendConfig) {
	warm := cfg
	warm.Rate, warm.Count = 0, pathWarmN/int64(max(cfg.Batch, 1))
	if cfg.Rate > 0 {
		warm.InFlight = 32
	}
	wps, err := r.pathSend(ctx, path+"_warm", path, warm)
	if err != nil {
		r.fail("%s %s warm-up: %v", r.res.Kind, path, err)
		return
	}
	if path == "lite" {
		if _, err := lg.Lite(ctx, wps.lite(wps.res.Sent)); err != nil {
			r.fail("%s lite warm-up consume: %v", r.res.Kind, err)
			return
		}
	}
	cfg.Duration = r.e.dur + 2*time.Second
	if cfg.Rate == 0 {
		cfg.Duration, cfg.Warmup = r.e.dur, r.e.warm
	}
	if cfg.Count > 0 {
		cfg.Duration, cfg.Warmup = 5*time.Minute, 0 // a count is the run
	}
	cfg.Full = true
	run := PathRun{Path: path, Rate: cfg.Rate, Batch: cfg.Batch, InFlight: cfg.InFlight}
	pid := r.b.brokerProc.pid()
	cpu0, _ := cpuMicros(pid)
	self0 := selfCPUMicros()
	ps, err := r.pathSend(ctx, path, path, cfg)
	cpu1, _ := cpuMicros(pid)
	self1 := selfCPUMicros()
	run.Send, run.DoneMs, run.Load = ps.res, ps.doneMs, loadAvg()
	if run.Send.Sent > 0 {
		run.CPUUs = float64(cpu1-cpu0) / float64(run.Send.Sent)
		run.ClientUs = float64(self1-self0) / float64(run.Send.Sent)
	}
	if err != nil {
		r.res.Paths = append(r.res.Paths, run)
		r.fail("%s %s: %v", r.res.Kind, path, err)
		return
	}
	run.Stored = run.Send.Sent
	switch path {
	case "timer", "delay":
		// After the CPU window: each delivered record's store time against the due time its body carries.
		p, err := lg.Pull(ctx, lg.PullConfig{Route: ps.route, Topic: ps.topic, Expect: run.Stored, Latency: true, StoreLatency: true,
			Full: true, Timeout: time.Minute})
		if err != nil {
			r.fail("%s %s: reading the delivered messages: %v", r.res.Kind, path, err)
		}
		run.Lag = &p.Lat
	case "bcq":
		var p lg.PullResult
		var err error
		run.ReadCPU = readCPU(ctx, pid, func() int64 {
			p, err = lg.Pull(ctx, lg.PullConfig{Route: ps.route, Topic: ps.topic, Expect: run.Stored, CountOffsets: true, Timeout: time.Minute})
			return p.Consumed
		})
		run.Read = &p
		if err != nil {
			r.fail("%s bcq catch-up: %v", r.res.Kind, err)
		} else if p.Consumed != run.Stored {
			r.fail("%s bcq catch-up: read %d messages, %d stored", r.res.Kind, p.Consumed, run.Stored)
		}
	case "lite":
		var p lg.PopResult
		var err error
		run.ReadCPU = readCPU(ctx, pid, func() int64 {
			p, err = lg.Lite(ctx, ps.lite(run.Stored))
			return p.Acked
		})
		run.Pop = &p
		if err != nil {
			r.fail("%s lite consume: %v", r.res.Kind, err)
		}
	}
	r.res.Paths = append(r.res.Paths, run)
	lag, read := "", ""
	if run.Lag != nil {
		lag = run.Lag.String()
	}
	if run.Read != nil {
		read = fmt.Sprintf("%.0f msg/s, %.2f µs/msg", run.Read.MsgPerS, run.ReadCPU)
	}
	if run.Pop != nil {
		read = fmt.Sprintf("%.0f msg/s, %.2f µs/msg, pop %s, ack %s", run.Pop.MsgPerS, run.ReadCPU, run.Pop.PopLat.String(), run.Pop.AckLat.String())
	}
	r.e.log.Info("path", "broker", r.res.Kind, "path", path, "sent", run.Send.Sent, "msg/s", int(run.Send.MsgPerS),
		"send", run.Send.Lat.String(), "cpuUs/msg", fmt.Sprintf("%.1f", run.CPUUs), "clientUs/msg", fmt.Sprintf("%.1f", run.ClientUs), "completeAfterMs", int(run.DoneMs),
		"lag", lag, "read", read, "load", run.Load)
}

// readCPU lets dispatch settle, then runs read and returns the broker's CPU per message it says it read.
func readCPU(ctx context.Context, pid int, read func() int64) float64 {
	sleepCtx(ctx, 2*time.Second)
	c0, _ := cpuMicros(pid)
	n := read()
	c1, _ := cpuMicros(pid)
	if n <= 0 {
		return 0
	}
	return float64(c1-c0) / float64(n)
}

// pathSent is one path's sends to a fresh topic and when its target topic was complete.
type pathSent struct {
	route  lg.Route
	topic  string
	res    lg.SendResult
	doneMs float64
}

// lite is the consumer run of a lite path's topic: every message acked.
func (ps *pathSent) lite(expect int64) lg.LiteConfig {
	return lg.LiteConfig{Route: ps.route, Topic: ps.topic, Group: ps.topic + "_g", Lites: liteTopics, Clients: liteClients,
		Expect: expect, Timeout: 3 * time.Minute, Full: true}
}

// pathSend sends cfg to a fresh topic (BatchCQ for bcq) and waits until the topic holds every acknowledged
// message (GET_MAX_OFFSET summed over its queues: delivered timers, committed half messages, the messages
// of stored batches).
func (r *runner) pathSend(ctx context.Context, what, path string, cfg lg.SendConfig) (pathSent, error) {
	ps := pathSent{topic: r.topic(what)}
	attrs := ""
	switch path {
	case "bcq":
		attrs = "+queue.type=BatchCQ"
	case "lite":
		attrs = "+message.type=LITE"
	}
	if err := lg.CreateTopicAttrs(ctx, r.b.addr, ps.topic, 8, attrs, r.b.opts()...); err != nil {
		return ps, err
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	route, err := lg.WaitRoute(rctx, r.b.namesrv, ps.topic)
	cancel()
	if err != nil {
		return ps, err
	}
	ps.route = route
	if path == "lite" {
		// Subscribed before the sends: Java's broker tells a client of the lite topics that get messages.
		if err := lg.CreateLiteGroup(ctx, r.b.addr, ps.topic+"_g", ps.topic, r.b.opts()...); err != nil {
			return ps, err
		}
		if err := lg.LiteSubscribe(ctx, ps.lite(0), r.b.opts()...); err != nil {
			return ps, err
		}
	}
	cfg.Route, cfg.Topic, cfg.Sign = route, ps.topic, r.b.sign
	ps.res, err = lg.Send(ctx, cfg)
	if err != nil {
		return ps, err
	}
	lastAck := time.Now()
	if ps.res.Failed > 0 {
		return ps, fmt.Errorf("%d failed sends: %v", ps.res.Failed, ps.res.Errors)
	}
	var stored int64
	for time.Since(lastAck) < pathCompleteBound && ctx.Err() == nil {
		_, stored, err = lg.MaxOffsets(ctx, route.BrokerAddr, ps.topic, route.Queues, r.b.opts()...)
		if err != nil {
			return ps, fmt.Errorf("stored count: %w", err)
		}
		if stored >= ps.res.Sent {
			break
		}
		sleepCtx(ctx, 20*time.Millisecond)
	}
	ps.doneMs = float64(time.Since(lastAck).Microseconds()) / 1e3
	if stored != ps.res.Sent {
		return ps, fmt.Errorf("topic %s holds %d messages %v after the last of %d acknowledged", ps.topic, stored,
			time.Since(lastAck).Round(time.Millisecond), ps.res.Sent)
	}
	return ps, nil
}
