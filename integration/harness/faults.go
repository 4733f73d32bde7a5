package harness

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

// This file injects the faults the chaos driver (integration/chaos) schedules, beyond the broker crash of
// crash.go: a name server crash, a paused broker, and the store's failpoints.

// namesrvProc is the separate name server (Apache, or rmqd with Options.Split).
func (t *Target) namesrvProc(tb TB) *Proc {
	tb.Helper()
	if len(t.Procs) != 2 {
		tb.Fatalf("harness: %s target has no separate name server (%d processes; rmqd needs Options.Split)", t.Kind, len(t.Procs))
	}
	return t.Procs[0]
}

// KillNamesrv sends SIGKILL to the separate name server and waits until it is gone and its port is free.
func (t *Target) KillNamesrv(tb TB) {
	tb.Helper()
	killProc(tb, t.namesrvProc(tb), t.ports[0])
}

// RestartNamesrv starts the name server KillNamesrv killed with the same command line and port, and returns
// when it was started. It waits only for its port: the broker registers again on its own period.
func (t *Target) RestartNamesrv(tb TB) time.Time {
	tb.Helper()
	old := t.namesrvProc(tb)
	if exited, _ := old.Exited(); !exited {
		tb.Fatalf("harness: RestartNamesrv: %s is still running; KillNamesrv first", old.Name)
	}
	started := time.Now()
	p := startProc(tb, old.Name, old.LogPath, old.cmd.Dir, old.cmd.Env, old.cmd.Args...)
	p.TermGrace = old.TermGrace
	t.Procs[0] = p
	deadline := time.Now().Add(120 * time.Second)
	for !portOpen(tb.Context(), t.NamesrvAddr) {
		if exited, err := p.Exited(); exited {
			tb.Fatalf("harness: %s exited on restart (%v):\n%s", p.Name, err, Tail(p.LogPath, tailLines))
		}
		if time.Now().After(deadline) {
			tb.Fatalf("harness: %s not listening 120s after restart", p.Name)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return started
}

// SignalBroker sends sig (SIGSTOP, SIGCONT) to the broker's process group.
func (t *Target) SignalBroker(tb TB, sig syscall.Signal) {
	tb.Helper()
	p := t.brokerProc(tb)
	if err := syscall.Kill(-p.Pid(), sig); err != nil {
		tb.Fatalf("harness: %v to %s: %v", sig, p.Name, err)
	}
}

// SetFailpoint makes name=value the only active failpoint of rmqd (value "" clears all), e.g. "flush-delay"
// = "300ms"; the running broker sees it at its next pass through the hook. Needs Options.Failpoints.
func (t *Target) SetFailpoint(tb TB, name, value string) {
	tb.Helper()
	if t.FailpointsFile == "" {
		tb.Fatalf("harness: %s target was started without Options.Failpoints", t.Kind)
	}
	body := ""
	if value != "" {
		body = fmt.Sprintf("%s=%s\n", name, value)
	}
	// Write a new file and rename it over the old: the broker never reads half a line.
	tmp := t.FailpointsFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		tb.Fatalf("harness: %v", err)
	}
	if err := os.Rename(tmp, t.FailpointsFile); err != nil {
		tb.Fatalf("harness: %v", err)
	}
}
