package main

import (
	"context"
	"fmt"
	"time"

	"rmqd/integration/loadgen/lg"
)

// Message paths beside plain sends (issue 22: every capability of wave 2 beside Apache's): messages sent for
// later delivery (the 5.x timer wheel, TIMER_DELAY_MS, and the classic DELAY level), transactions (half
// message + oneway commit) and BatchCQ topics fed with inner batches. Each run's broker CPU is counted from
// the first send until the target topic holds every acknowledged message, so what the broker does after
// the acknowledgement (the wheel's delivery, the commit) is paid for by the same messages.

// PathRun is one run of a path.
type PathRun struct {
	Path     string         `json:"path"` // timer | delay | txn | bcq
	Rate     float64        `json:"rate,omitempty"`
	Batch    int            `json:"batch,omitempty"`
	InFlight int            `json:"inFlight"`
	Send     lg.SendResult  `json:"send"`
	Stored   int64          `json:"stored"`                      // in the target topic once complete
	CPUUs    float64        `json:"cpuUsPerMsg"`                 // first send → target topic complete
	DoneMs   float64        `json:"completeAfterLastAckMs"`      // last acknowledgement → target topic complete
	Lag      *lg.Summary    `json:"lag,omitempty"`               // timer, delay: due time → stored in the topic
	Read     *lg.PullResult `json:"read,omitempty"`              // bcq: catch-up read of what was stored
	ReadCPU  float64        `json:"readCpuUsPerMsg,omitempty"`   // bcq: broker CPU per message read
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
)

// pathRows says which path rows run: -caps-rows names them (timer also runs the DELAY level); the full run
// has them all.
func (e *env) pathRows() (timer, txn, bcq bool) {
	if e.full && !e.capsOnly {
		return true, true, true
	}
	return e.capsRow("timer"), e.capsRow("txn"), e.capsRow("bcq")
}

// pathRuns starts a broker of its own and runs the chosen paths on it.
func (r *runner) pathRuns(ctx context.Context) {
	timer, txn, bcq := r.e.pathRows()
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
	if _, err := r.pathSend(ctx, path+"_warm", path, warm); err != nil {
		r.fail("%s %s warm-up: %v", r.res.Kind, path, err)
		return
	}
	cfg.Duration = r.e.dur + 2*time.Second
	if cfg.Rate == 0 {
		cfg.Duration, cfg.Warmup = r.e.dur, r.e.warm
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
		sleepCtx(ctx, 2*time.Second) // dispatch done before timing reads
		c0, _ := cpuMicros(pid)
		p, err := lg.Pull(ctx, lg.PullConfig{Route: ps.route, Topic: ps.topic, Expect: run.Stored, CountOffsets: true, Timeout: time.Minute})
		c1, _ := cpuMicros(pid)
		run.Read = &p
		if p.Consumed > 0 {
			run.ReadCPU = float64(c1-c0) / float64(p.Consumed)
		}
		if err != nil {
			r.fail("%s bcq catch-up: %v", r.res.Kind, err)
		} else if p.Consumed != run.Stored {
			r.fail("%s bcq catch-up: read %d messages, %d stored", r.res.Kind, p.Consumed, run.Stored)
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
	r.e.log.Info("path", "broker", r.res.Kind, "path", path, "sent", run.Send.Sent, "msg/s", int(run.Send.MsgPerS),
		"send", run.Send.Lat.String(), "cpuUs/msg", fmt.Sprintf("%.1f", run.CPUUs), "clientUs/msg", fmt.Sprintf("%.1f", run.ClientUs), "completeAfterMs", int(run.DoneMs),
		"lag", lag, "read", read, "load", run.Load)
}

// pathSent is one path's sends to a fresh topic and when its target topic was complete.
type pathSent struct {
	route  lg.Route
	topic  string
	res    lg.SendResult
	doneMs float64
}

// pathSend sends cfg to a fresh topic (BatchCQ for bcq) and waits until the topic holds every acknowledged
// message (GET_MAX_OFFSET summed over its queues: delivered timers, committed half messages, the messages
// of stored batches).
func (r *runner) pathSend(ctx context.Context, what, path string, cfg lg.SendConfig) (pathSent, error) {
	ps := pathSent{topic: r.topic(what)}
	attrs := ""
	if path == "bcq" {
		attrs = "+queue.type=BatchCQ"
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
