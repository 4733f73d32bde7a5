package harness

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Proc is one server process the harness started: its own process group, output to LogPath.
type Proc struct {
	Name    string
	LogPath string
	// TermGrace is how long Stop waits after SIGTERM before SIGKILL.
	TermGrace time.Duration
	cmd       *exec.Cmd
	done      chan struct{}
	waitErr   error
	logFile   *os.File
}

const (
	termGrace = 10 * time.Second // SIGTERM → SIGKILL, for servers whose graceful stop we test (rmqd)
	killGrace = 5 * time.Second  // SIGKILL → give up
	tailLines = 40
)

// startProc runs argv with stdout and stderr appended to logPath, in a new process group that t.Cleanup
// kills (SIGTERM, then SIGKILL). Pdeathsig kills it too if the test binary dies without running cleanups
// (go test -timeout panics), so no server outlives its test.
func startProc(tb TB, name, logPath, dir string, env []string, argv ...string) *Proc {
	tb.Helper()
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		tb.Fatalf("harness: %s log: %v", name, err)
	}
	fmt.Fprintf(f, "# %s: %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		tb.Fatalf("harness: start %s (%s): %v", name, argv[0], err)
	}
	p := &Proc{Name: name, LogPath: logPath, TermGrace: termGrace, cmd: cmd, done: make(chan struct{}), logFile: f}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	tb.Cleanup(func() {
		p.Stop(tb)
		if tb.Failed() {
			tb.Logf("--- last %d lines of %s (%s) ---\n%s", tailLines, p.Name, p.LogPath, Tail(p.LogPath, tailLines))
		}
	})
	return p
}

// Pid is the process (and process group) id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended, and how.
func (p *Proc) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// Stop ends the whole process group: SIGTERM (graceful stop), then SIGKILL after termGrace.
// Calling it again is harmless.
func (p *Proc) Stop(tb TB) {
	pg := -p.cmd.Process.Pid
	if exited, _ := p.Exited(); !exited {
		_ = syscall.Kill(pg, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(p.TermGrace):
			tb.Logf("harness: %s still running %v after SIGTERM; killing", p.Name, p.TermGrace)
		}
	}
	// The leader may be gone while children of the group live on: kill the group regardless.
	_ = syscall.Kill(pg, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(killGrace):
		tb.Errorf("harness: %s (pid %d) still running %v after SIGKILL", p.Name, -pg, killGrace)
	}
	_ = p.logFile.Close()
}

// Tail returns the last n lines of a file ("" if unreadable).
func Tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const maxRead = 64 << 10
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(st.Size()-maxRead, 0)
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return ""
	}
	b, err := io.ReadAll(f)
	if err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	// RocketMQ's shaded logback prints its whole configuration on stdout; it is never the interesting part.
	kept := lines[:0]
	for _, l := range lines {
		if !bytes.Contains(l, []byte("|-INFO in org.apache.rocketmq.logging")) && !bytes.Contains(l, []byte("|-WARN in org.apache.rocketmq.logging")) {
			kept = append(kept, l)
		}
	}
	lines = kept
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
