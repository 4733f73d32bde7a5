package harness

import (
	"context"
	"syscall"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// This file crashes and restarts the broker of either kind, for durability checks: what a broker
// acknowledged under flushDiskType=SYNC_FLUSH must survive a SIGKILL.

// brokerProc is the process serving the broker: the last one started (rmqd standalone runs both roles in
// one process, so killing it takes its name server down too).
func (t *Target) brokerProc(tb TB) *Proc {
	tb.Helper()
	if len(t.Procs) == 0 {
		tb.Fatalf("harness: %s target has no processes", t.Kind)
	}
	return t.Procs[len(t.Procs)-1]
}

// KillBroker sends SIGKILL to the broker's process group (no graceful stop, no flush) and waits until it
// is gone and its ports are free.
func (t *Target) KillBroker(tb TB) {
	tb.Helper()
	p := t.brokerProc(tb)
	killProc(tb, p, t.ports[1:]...)
	tb.Logf("harness: %s killed (SIGKILL)", p.Name)
}

// killProc sends SIGKILL to p's process group and waits until it is gone and ports are free (10 s at
// most for the ports: a port still held then shows in the restart's error).
func killProc(tb TB, p *Proc, ports ...int) {
	tb.Helper()
	_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(killGrace):
		tb.Fatalf("harness: %s (pid %d) still running %v after SIGKILL", p.Name, p.Pid(), killGrace)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, port := range ports {
		for !portFree(port) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// RestartBroker starts the broker KillBroker killed again with the same command line, configuration, store
// directory and ports, and waits (120 s at most) until the name server serves it again. A separate name
// server is first given a moment to drop the dead broker, so readiness is not judged on a stale route.
// It returns when the new process was started (the end of the fault, for recovery times).
func (t *Target) RestartBroker(tb TB) time.Time {
	tb.Helper()
	old := t.brokerProc(tb)
	if exited, _ := old.Exited(); !exited {
		tb.Fatalf("harness: RestartBroker: %s is still running; KillBroker first", old.Name)
	}
	if len(t.Procs) > 1 {
		ctx, cancel := context.WithTimeout(tb.Context(), 15*time.Second)
		for ctx.Err() == nil {
			if ok, _, err := routeHasBrokerID(ctx, t.NamesrvAddr, "TBW102", t.BrokerAddr, t.id()); err == nil && !ok {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
	}
	started := time.Now()
	p := startProc(tb, old.Name, old.LogPath, old.cmd.Dir, old.cmd.Env, old.cmd.Args...)
	p.TermGrace = old.TermGrace
	t.Procs[len(t.Procs)-1] = p
	t.waitReady(tb, 120*time.Second)
	return started
}

// FromGoMessage converts a message the Go client delivered into the runner's view, as RunGoConsume does.
func FromGoMessage(m *primitive.MessageExt) Msg { return fromGoExt(m) }
