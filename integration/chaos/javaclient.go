package chaos

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"rmqd/integration/harness"
)

// javaKey is the key of the Java producer's messages on both topics (the Go senders use 0..Producers-1).
const javaKey = 100

// javaClients is one JVM running java/ChaosClient.java (rocketmq-client 5.3.3): a producer on both topics
// and a push consumer per topic in the Go consumers' groups. Its stdout lines are entered in the ledger as
// the Go clients' sends and deliveries are.
type javaClients struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	ready   chan struct{} // closed on "READY": consumers and producer started, sends wait for startSending
	stopped chan struct{} // closed on the producer's "D"
	done    chan struct{} // closed when stdout ended
	once    sync.Once
}

// startJava starts the JVM; onSend and onDeliver are called from its reader goroutine.
func startJava(tb harness.TB, tg *harness.Target, topic string, every time.Duration,
	onSend func(id string, ok bool, start, end time.Time), onDeliver func(id string, born, now time.Time)) *javaClients {
	tb.Helper()
	harness.RequireJars(tb, "client5")
	dir := filepath.Join(tg.LogDir, "java-clients")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatalf("chaos: %v", err)
	}
	src := filepath.Join(harness.RepoRoot(tb), "integration", "chaos", "java", "ChaosClient.java")
	logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("client-%d.log", time.Now().UnixNano())))
	if err != nil {
		tb.Fatalf("chaos: %v", err)
	}
	// Source-file mode (JEP 330): compiled in memory at start, so the shared Maven build stays untouched.
	homeArgs, err := harness.JVMHome(dir)
	if err != nil {
		tb.Fatalf("chaos: %v", err)
	}
	argv := append(append([]string{"-Xms64m", "-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Djava.net.preferIPv4Stack=true"}, homeArgs...), "-Drocketmq.client.logRoot="+filepath.Join(dir, "logs"),
		"-cp", filepath.Join(harness.LibDir(tb, "client5"), "*"), src,
		tg.NamesrvAddr, topic, strconv.Itoa(javaKey), strconv.FormatInt(every.Milliseconds(), 10))
	cmd := exec.Command("java", argv...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ROCKETMQ_HOME="+dir)
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatalf("chaos: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatalf("chaos: %v", err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("chaos: java clients: %v", err)
	}
	j := &javaClients{cmd: cmd, stdin: stdin, ready: make(chan struct{}), stopped: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(j.done)
		defer logf.Close()
		sc := bufio.NewScanner(stdout)
		ms := func(s string) time.Time { n, _ := strconv.ParseInt(s, 10, 64); return time.UnixMilli(n) }
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 5 && f[0] == "S":
				onSend(f[1], f[2] == "1", ms(f[3]), ms(f[4]))
			case len(f) == 4 && f[0] == "R":
				onDeliver(f[1], ms(f[2]), ms(f[3]))
			case len(f) == 1 && f[0] == "READY":
				close(j.ready)
			case len(f) == 1 && f[0] == "D":
				close(j.stopped)
			default:
				fmt.Fprintf(logf, "# unexpected stdout line %q\n", sc.Text())
			}
		}
	}()
	tb.Cleanup(func() { j.kill() })
	return j
}

// startSending starts the Java producer.
func (j *javaClients) startSending() { _, _ = io.WriteString(j.stdin, "start-send\n") }

// stopSending stops the Java producer and waits (bounded) until its last send was reported.
func (j *javaClients) stopSending(ctx context.Context) {
	_, _ = io.WriteString(j.stdin, "stop-send\n")
	select {
	case <-j.stopped:
	case <-j.done:
	case <-ctx.Done():
	case <-time.After(30 * time.Second):
	}
}

// stop ends the consumers (end of stdin) and waits, bounded, for the JVM's last line.
func (j *javaClients) stop() {
	_ = j.stdin.Close()
	select {
	case <-j.done:
	case <-time.After(20 * time.Second):
	}
	j.kill()
}

func (j *javaClients) kill() {
	j.once.Do(func() {
		_ = syscall.Kill(-j.cmd.Process.Pid, syscall.SIGKILL)
		_ = j.cmd.Wait()
	})
}
