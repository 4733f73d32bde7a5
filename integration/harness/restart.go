package harness

import (
	"context"
	"path/filepath"
	"syscall"
	"time"
)

// RestartRmqd stops a standalone rmqd target with sig (syscall.SIGTERM: graceful stop, SIGKILL after the
// grace period; syscall.SIGKILL: a crash) and starts it again on the same ports, config and store
// directory, waiting until it serves its route again. Pending delayed, timer and half messages must survive.
func (t *Target) RestartRmqd(tb TB, sig syscall.Signal) {
	tb.Helper()
	if t.Kind != KindRmqd || len(t.Procs) != 1 {
		tb.Fatalf("harness: RestartRmqd needs a standalone rmqd target (kind %s, %d processes)", t.Kind, len(t.Procs))
	}
	p := t.Procs[0]
	if sig == syscall.SIGKILL {
		_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(killGrace):
			tb.Fatalf("harness: rmqd (pid %d) still running %v after SIGKILL", p.Pid(), killGrace)
		}
	}
	p.Stop(tb)
	tb.Logf("harness: rmqd stopped with %v: %v", sig, p.waitErr)
	conf := filepath.Join(t.LogDir, "broker.conf")
	t.Procs[0] = startProc(tb, "rmqd", filepath.Join(t.LogDir, "rmqd.log"), t.LogDir, nil, RmqdBinary(tb), "-c", conf)
	t.waitReady(tb, 120*time.Second)
}

// WaitRoute waits until the name server serves topic's route with this target's broker as master and
// returns how long that took. Apache registers a topic created by a send before it answers the send.
func (t *Target) WaitRoute(tb TB, topic string, timeout time.Duration) time.Duration {
	tb.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(tb.Context(), timeout)
	defer cancel()
	last := ""
	for {
		ok, why, err := routeHasBroker(ctx, t.NamesrvAddr, topic, t.BrokerAddr)
		if ok {
			return time.Since(start)
		}
		if err != nil {
			last = err.Error()
		} else {
			last = why
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("harness: no route for %s after %v (last: %s)", topic, timeout, last)
			return timeout
		case <-time.After(20 * time.Millisecond):
		}
	}
}
