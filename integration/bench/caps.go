package main

import (
	"context"
	"crypto/tls"
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

// capsRow says whether -caps-rows names row (tls, signed, repl).
func (e *env) capsRow(row string) bool { return slices.Contains(strings.Split(e.capsRows, ","), row) }
