package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"strings"
	"time"

	"rmqd/integration/loadgen/lg"
)

// Capability runs (issue 22: every capability of wave 2 beside Apache's): the same 1 KiB sends over TLS,
// signed with ACL 2.0 on, and to a SYNC_MASTER / ASYNC_MASTER with its slave. Each is a closed-loop ×64 run
// (throughput, p99) and an open-loop run at the CPU rate (broker CPU per message).

// benchAuthConf turns ACL 2.0 on as a 5.3.3 broker.conf does (the keys of integration/auth_test.go).
func benchAuthConf() map[string]string {
	return map[string]string{
		"authenticationMetadataProvider":       "org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider",
		"authorizationMetadataProvider":        "org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider",
		"authenticationEnabled":                "true",
		"authorizationEnabled":                 "true",
		"initAuthenticationUser":               `{"username":"benchSuper","password":"benchSuperSecret"}`,
		"innerClientAuthenticationCredentials": `{"accessKey":"benchSuper","secretKey":"benchSuperSecret"}`,
	}
}

var benchCreds = &lg.Credentials{AccessKey: "benchSuper", SecretKey: "benchSuperSecret"}

// capRuns runs the two sends of a capability on r.b and appends them to into.
func (r *runner) capRuns(ctx context.Context, flush string, into *[]SendRun) {
	if run := r.send(ctx, flush, 1024, 64, 0, r.e.dur, 0); run != nil {
		*into = append(*into, *run)
	}
	if run := r.send(ctx, flush, 1024, 128, r.e.cpuRate, r.e.dur+2*time.Second, 0); run != nil {
		*into = append(*into, *run)
	}
}

// withBroker starts a broker of r's kind as spec says, runs fn on it and stops it.
func (r *runner) withBroker(ctx context.Context, flush string, spec brokerSpec, fn func()) {
	r.e.log.Info("starting", "broker", r.res.Kind, "flush", flush, "for", spec.label, "load", loadAvg())
	b, err := startBrokerSpec(ctx, r.e, r.res.Kind, flush, spec)
	if err != nil {
		r.fail("%s %s: %v", r.res.Kind, spec.label, err)
		return
	}
	prev := r.b
	r.b = b
	defer func() { b.stop(); r.b = prev }()
	r.send(ctx, flush, 1024, 64, 0, 0, syncWarmN) // warm-up by count, not recorded
	fn()
	if err := b.alive(); err != nil {
		r.fail("%v", err)
	}
}

// tlsRuns sends over TLS to the running broker (both listen in permissive mode by default: TLS and plain
// on one port), or to one of its own when there is none (-caps-only).
func (r *runner) tlsRuns(ctx context.Context) {
	run := func() {
		r.tls = &tls.Config{InsecureSkipVerify: true} // both brokers' default test-mode certificate
		defer func() { r.tls = nil }()
		r.capRuns(ctx, "ASYNC_FLUSH", &r.res.TLS)
	}
	if r.b != nil {
		run()
		return
	}
	r.withBroker(ctx, "ASYNC_FLUSH", brokerSpec{label: "tls"}, run)
}

// signedRuns sends signed requests to a broker with ACL 2.0 authentication and authorization on.
func (r *runner) signedRuns(ctx context.Context) {
	r.withBroker(ctx, "ASYNC_FLUSH", brokerSpec{label: "signed", conf: benchAuthConf(), sign: benchCreds}, func() {
		r.capRuns(ctx, "ASYNC_FLUSH", &r.res.Signed)
	})
}

// replicationRuns sends to a SYNC_MASTER, then an ASYNC_MASTER, each with one slave of the same kind.
func (r *runner) replicationRuns(ctx context.Context) {
	r.withBroker(ctx, "ASYNC_FLUSH", brokerSpec{label: "sync-master", role: "SYNC_MASTER"}, func() {
		r.capRuns(ctx, "ASYNC_FLUSH", &r.res.SyncMaster)
	})
	r.withBroker(ctx, "ASYNC_FLUSH", brokerSpec{label: "async-master", role: "ASYNC_MASTER"}, func() {
		r.capRuns(ctx, "ASYNC_FLUSH", &r.res.AsyncMaster)
	})
}

// slaveLag is how long after the run the slave's consume queues count every message the master stored:
// the replication lag as a consumer reading from the slave would see it (-1: not within 30 s).
func (r *runner) slaveLag(ctx context.Context, route lg.Route, topic string, stored int64) float64 {
	start := time.Now()
	for time.Since(start) < 30*time.Second && ctx.Err() == nil {
		_, sum, err := lg.MaxOffsets(ctx, r.b.slaveAddr, topic, route.Queues, r.b.opts()...)
		if err == nil && sum >= stored {
			return float64(time.Since(start).Microseconds()) / 1e3
		}
		sleepCtx(ctx, 5*time.Millisecond)
	}
	r.e.log.Warn("slave never caught up", "broker", r.res.Kind, "topic", topic, "stored", stored)
	return -1
}

// PopRun is one POP consumer run (issue 18): a topic filled first, then popped and acked by the raw-wire
// loop of lg.Pop (what rocketmq-proxy sends for a gRPC SimpleConsumer). The broker's CPU is counted over the
// run and the revive of its checkpoints after it (the checkpoints and acks go through the timer wheel and are
// matched when the invisible time ends), less the broker's idle CPU over as long a window after it.
type PopRun struct {
	BatchAck  bool         `json:"batchAck"`
	N         int64        `json:"n"`
	Invisible float64      `json:"invisibleS"`
	Result    lg.PopResult `json:"result"`
	CPUUs     float64      `json:"cpuUsPerMsg"`     // run + max(tail - idle, 0)
	RunCPUUs  float64      `json:"runCpuUsPerMsg"`  // the run alone
	TailCPUUs float64      `json:"tailCpuUsPerMsg"` // the revive tail after it (invisible time + 3 s)
	IdleCPUUs float64      `json:"idleCpuUsPerMsg"` // as long a window after the tail
	Load      string       `json:"loadavg"`
}

// popInvisible is the bench pops' invisible time: longer than any pop-to-ack gap of the run (nothing is
// redelivered), short enough that the revive of every checkpoint is inside the measured tail.
const popInvisible = 10 * time.Second

// popRuns fills a topic once and pops and acks all of it twice, with two groups: one ACK_MESSAGE per message,
// then one BATCH_ACK_MESSAGE per pop; on the running broker or on one of its own (-caps-only).
func (r *runner) popRuns(ctx context.Context) {
	run := func() {
		topic := r.topic("pop")
		route, err := r.route(ctx, topic)
		if err != nil {
			r.fail("%s pop: %v", r.res.Kind, err)
			return
		}
		n := int64(20_000) // quick; the full run pops a tenth of its catch-up
		if r.e.full {
			n = min(r.e.consumeN/10, 200_000)
		}
		s, err := lg.Send(ctx, lg.SendConfig{Route: route, Topic: topic, Size: 1024, InFlight: 64, Count: n, Duration: 0})
		if err != nil || s.Sent != n {
			r.fail("%s pop: stored %d of %d messages first (%v %v)", r.res.Kind, s.Sent, n, err, s.Errors)
			return
		}
		r.checkStored(ctx, "pop fill", route, topic, n)
		sleepCtx(ctx, 2*time.Second) // dispatch done before timing
		for _, batch := range []bool{false, true} {
			if p := r.pop(ctx, route, topic, n, batch); p != nil {
				r.res.Pop = append(r.res.Pop, *p)
			}
		}
	}
	if r.b != nil {
		run()
		return
	}
	r.withBroker(ctx, "ASYNC_FLUSH", brokerSpec{label: "pop"}, run)
}

func (r *runner) pop(ctx context.Context, route lg.Route, topic string, n int64, batchAck bool) *PopRun {
	group := topic + "_ack"
	if batchAck {
		group = topic + "_batch"
	}
	pid := r.b.brokerProc.pid()
	tail := popInvisible + 3*time.Second
	cpu0, _ := cpuMicros(pid)
	res, err := lg.Pop(ctx, lg.PopConfig{Route: route, Topic: topic, Group: group, Expect: n, BatchAck: batchAck,
		Invisible: popInvisible, Timeout: 5 * time.Minute})
	cpu1, _ := cpuMicros(pid)
	load := loadAvg()
	sleepCtx(ctx, tail)
	cpu2, _ := cpuMicros(pid)
	// Idle CPU over a window as long as the tail, after it (every checkpoint revived by then; right after
	// the fill a JVM is still compiling and collecting), taken out of the tail.
	sleepCtx(ctx, tail)
	cpu3, _ := cpuMicros(pid)
	p := &PopRun{BatchAck: batchAck, N: n, Invisible: popInvisible.Seconds(), Result: res, Load: load}
	if res.Acked > 0 {
		n := float64(res.Acked)
		p.RunCPUUs = float64(cpu1-cpu0) / n
		p.TailCPUUs, p.IdleCPUUs = float64(cpu2-cpu1)/n, float64(cpu3-cpu2)/n
		// A JVM's "idle" can burn more than the tail (collection, compilation): a revive costs no less than
		// nothing, so the tail's excess over idle is floored at 0.
		p.CPUUs = p.RunCPUUs + max(p.TailCPUUs-p.IdleCPUUs, 0)
	}
	if err != nil {
		r.fail("%s pop (batch ack %v): %v", r.res.Kind, batchAck, err)
		return p
	}
	if res.Redelivered > 0 {
		r.e.log.Warn("pop: messages revived during the run (a pop-to-ack gap above the invisible time)", "broker", r.res.Kind,
			"batchAck", batchAck, "redelivered", res.Redelivered)
	}
	r.e.log.Info("pop", "broker", r.res.Kind, "batchAck", batchAck, "n", n, "msg/s", int(res.MsgPerS), "pop", res.PopLat.String(),
		"ack", res.AckLat.String(), "redelivered", res.Redelivered, "cpuUs/msg", fmt.Sprintf("%.1f", p.CPUUs), "runCpuUs/msg", fmt.Sprintf("%.1f", p.RunCPUUs), "load", load)
	return p
}

// capsRow says whether -caps-rows names row (tls, signed, repl, timer, txn, bcq).
func (e *env) capsRow(row string) bool { return slices.Contains(strings.Split(e.capsRows, ","), row) }
