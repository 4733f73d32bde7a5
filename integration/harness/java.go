package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Msg is one message as the Java runner reports it, sent ("sent") or delivered ("received").
// Field names follow integration/java/runner/src/main/java/rmqd/it/Views.java.
type Msg struct {
	Index           int               `json:"index"` // sent only: position in the producer's sequence
	Topic           string            `json:"topic"`
	Tags            string            `json:"tags"`
	Keys            string            `json:"keys"`
	BodySize        int               `json:"bodySize"`
	BodySha256      string            `json:"bodySha256"`
	BodyHead        string            `json:"bodyHead"`
	Properties      map[string]string `json:"properties"`
	Status          string            `json:"status"` // sent only: SEND_OK, FLUSH_DISK_TIMEOUT, ..., ONEWAY
	Error           string            `json:"error"`  // sent only: why this send failed
	MsgID           string            `json:"msgId"`  // UNIQ_KEY (client id)
	OffsetMsgID     string            `json:"offsetMsgId"`
	BatchMsgID      string            `json:"batchMsgId"` // sent in a batch: the batch result's joined ids
	BrokerName      string            `json:"brokerName"`
	QueueID         int               `json:"queueId"`
	QueueOffset     int64             `json:"queueOffset"`
	CommitLogOffset int64             `json:"commitLogOffset"`
	BodyCRC         int64             `json:"bodyCRC"`
	SysFlag         int               `json:"sysFlag"`
	ReconsumeTimes  int               `json:"reconsumeTimes"`
	BornHost        string            `json:"bornHost"`
	StoreHost       string            `json:"storeHost"`
	BornTimestamp   int64             `json:"bornTimestamp"`
	StoreTimestamp  int64             `json:"storeTimestamp"`
	Outcome         string            `json:"outcome"`    // received (Java push): SUCCESS or RECONSUME_LATER
	LocalState      string            `json:"localState"` // txproduce: COMMIT_MESSAGE, ROLLBACK_MESSAGE, UNKNOW
	Checks          int               `json:"checks"`     // txproduce: CHECK_TRANSACTION_STATE calls received for it
}

// JavaResult is the runner's one JSON line. Fields of scenarios added later are in Raw.
type JavaResult struct {
	Scenario   string   `json:"scenario"`
	Client     string   `json:"client"` // e.g. "V5_3_3", "V4_9_7"
	OK         bool     `json:"ok"`
	Error      string   `json:"error"`
	ElapsedMs  int64    `json:"elapsedMs"`
	Sent       []Msg    `json:"sent"`
	Errors     []string `json:"errors"`
	Received   []Msg    `json:"received"`
	Distinct   int      `json:"distinct"`
	Duplicates int      `json:"duplicates"`
	Succeeded  int      `json:"succeeded"` // consume: messages consumed with SUCCESS
	TimedOut   bool     `json:"timedOut"`

	Raw     map[string]json.RawMessage `json:"-"`
	LogPath string                     `json:"-"` // the JVM's stderr
}

// Unmarshal decodes Raw[field] into v (for fields of newer scenarios).
func (r *JavaResult) Unmarshal(field string, v any) error {
	raw, ok := r.Raw[field]
	if !ok {
		return fmt.Errorf("result of %s has no field %q", r.Scenario, field)
	}
	return json.Unmarshal(raw, v)
}

// jvmClientOpts: clients are short-lived, so favour start-up time.
var jvmClientOpts = []string{
	"-Xms64m", "-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
	"-Djava.net.preferIPv4Stack=true",
}

// isJVMOpt reports a runner argument that is a JVM option: a system property or an -X setting.
func isJVMOpt(a string) bool { return strings.HasPrefix(a, "-D") || strings.HasPrefix(a, "-X") }

// JavaTimeout bounds one runner or mqadmin invocation unless its args say otherwise (--deadline).
const JavaTimeout = 120 * time.Second

var javaSeq atomic.Int64

// RunJava runs the scenario runner built against rocketmq-client 5.3.3 (client "5") or 4.9.7 ("4") against
// target (--namesrv is added unless given) and returns its result. The test fails unless the runner printed
// a result with ok=true. Args are runner flags: "--topic", "T", "--count", "10", ..., and JVM system
// properties "-Dtls.enable=true" and JVM options "-Xmx768m" (passed to the JVM, wherever they stand).
// The JVM's stderr goes to <LogDir>/java<client>-<n>-<scenario>.log, its own log files under
// <LogDir>/java-home/logs/rocketmqlogs/.
func RunJava(tb TB, target *Target, client, scenario string, args ...string) *JavaResult {
	tb.Helper()
	r, err := TryJava(tb, target, client, scenario, args...)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	if !r.OK {
		tb.Fatalf("java%s %s failed: %s (stderr %s:\n%s)", client, scenario, r.Error, r.LogPath, Tail(r.LogPath, 15))
	}
	return r
}

// TryJava is RunJava without judging ok: err only when no result line could be had (JVM crash, timeout,
// garbage on stdout). Use it when a scenario is expected to report ok=false.
func TryJava(tb TB, target *Target, client, scenario string, args ...string) (*JavaResult, error) {
	tb.Helper()
	lib := "client" + client
	if client != "5" && client != "4" {
		tb.Fatalf("harness: client %q: want \"5\" or \"4\"", client)
	}
	RequireJars(tb, lib)
	// "-Dkey=value" args are JVM system properties (tls.enable, ...) and "-X..." ones JVM options (-Xmx768m
	// for a consumer reporting tens of thousands of messages), the rest runner flags.
	var sysProps []string
	var flags []string
	for _, a := range args {
		if isJVMOpt(a) {
			sysProps = append(sysProps, a)
		} else {
			flags = append(flags, a)
		}
	}
	args = flags
	argv := append(sysProps, "rmqd.it.Main", scenario)
	if target != nil && !hasFlag(args, "--namesrv") {
		argv = append(argv, "--namesrv", target.NamesrvAddr)
	}
	timeout := JavaTimeout
	for i := 0; i+1 < len(args); i++ {
		// A longer --deadline of the runner's own gets the JVM as long, plus time to print its result.
		if ms, err := strconv.ParseInt(args[i+1], 10, 64); args[i] == "--deadline" && err == nil {
			timeout = max(timeout, time.Duration(ms)*time.Millisecond+10*time.Second)
		}
	}
	if !hasFlag(args, "--deadline") {
		// The runner's own watchdog fires first and still prints a result line.
		argv = append(argv, "--deadline", fmt.Sprint((timeout - 10*time.Second).Milliseconds()))
	}
	argv = append(argv, args...)
	name := fmt.Sprintf("java%s-%02d-%s", client, javaSeq.Add(1), scenario)
	stdout, logPath, err := runJVM(tb, name, filepath.Join(LibDir(tb, lib), "*"), timeout, argv)
	res := &JavaResult{LogPath: logPath}
	line := lastJSONLine(stdout)
	if line == nil {
		return res, fmt.Errorf("java%s %s: no result line (run error: %v); stdout %.300q; stderr %s:\n%s",
			client, scenario, err, stdout, logPath, Tail(logPath, 20))
	}
	if jerr := json.Unmarshal(line, res); jerr != nil {
		return res, fmt.Errorf("java%s %s: result %.300q: %w", client, scenario, line, jerr)
	}
	_ = json.Unmarshal(line, &res.Raw)
	return res, nil
}

// Mqadmin runs mqadmin 5.3.3 (MQAdminStartup, through rmqd.it.mqadmin.Admin which halts the JVM once the
// command returned instead of idling in Netty's graceful shutdown) with args against target (-n added unless given) and returns
// its stdout. Args "-Dkey=value" are JVM system properties (-Dtls.enable=true). The test fails if it exits non-zero or reports a failed sub command (mqadmin prints the
// exception and still exits 0).
func Mqadmin(tb TB, target *Target, args ...string) string {
	tb.Helper()
	out, err := TryMqadmin(tb, target, args...)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	return out
}

// TryMqadmin is Mqadmin returning the failure instead of failing the test.
func TryMqadmin(tb TB, target *Target, args ...string) (string, error) {
	tb.Helper()
	RequireJars(tb, "mqadmin")
	// "-Dkey=value" args are JVM system properties (tls.enable, ...), as for RunJava.
	var argv, flags []string
	for _, a := range args {
		if strings.HasPrefix(a, "-D") {
			argv = append(argv, a)
		} else {
			flags = append(flags, a)
		}
	}
	args = flags
	argv = append(append(argv, "rmqd.it.mqadmin.Admin"), args...)
	if target != nil && !hasFlag(args, "-n") {
		argv = append(argv, "-n", target.NamesrvAddr)
	}
	sub := "help"
	if len(args) > 0 {
		sub = args[0]
	}
	name := fmt.Sprintf("mqadmin-%02d-%s", javaSeq.Add(1), sub)
	stdout, logPath, err := runJVM(tb, name, filepath.Join(LibDir(tb, "mqadmin"), "*"), JavaTimeout, argv)
	removeBodyFiles(stdout)
	if err != nil {
		return string(stdout), fmt.Errorf("mqadmin %s: %w; stderr %s:\n%s", strings.Join(args, " "), err, logPath, Tail(logPath, 20))
	}
	stderr, _ := os.ReadFile(logPath)
	for _, bad := range []string{"SubCommandException", "command failed", "sub command " + sub + " not exist"} {
		if bytes.Contains(stderr, []byte(bad)) || bytes.Contains(stdout, []byte(bad)) {
			return string(stdout), fmt.Errorf("mqadmin %s failed (%q); stdout:\n%s\nstderr %s:\n%s",
				strings.Join(args, " "), bad, stdout, logPath, Tail(logPath, 20))
		}
	}
	return string(stdout), nil
}

// removeBodyFiles deletes the files mqadmin's queryMsgById and queryMsgByUniqueKey wrote each message's
// body to (the "Message Body Path:" they print; /tmp/rocketmq/msgbodys, a path fixed in the tool), so that
// test runs leave nothing behind them.
func removeBodyFiles(stdout []byte) {
	for _, line := range strings.Split(string(stdout), "\n") {
		if _, path, ok := strings.Cut(line, "Message Body Path:"); ok {
			if path = strings.TrimSpace(path); strings.HasPrefix(path, "/tmp/rocketmq/msgbodys/") {
				_ = os.Remove(path)
			}
		}
	}
}

// runJVM runs java with the client options, mainAndArgs after -cp, stdout captured and stderr in a log
// file; the whole process group is killed at timeout or when the test's context ends.
func runJVM(tb TB, name, classpath string, timeout time.Duration, mainAndArgs []string) ([]byte, string, error) {
	tb.Helper()
	dir := LogDir(tb)
	home := filepath.Join(dir, "java-home")
	homeArgs, err := JVMHome(home)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		tb.Fatalf("harness: %v", err)
	}
	defer f.Close()
	// Leading "-D" and "-X" entries of mainAndArgs are JVM options: they go before -cp, after the harness's
	// own so that a caller's -Drocketmq.home.dir or -Xmx wins (the JVM takes the last of a repeated one).
	i := 0
	for i < len(mainAndArgs) && isJVMOpt(mainAndArgs[i]) {
		i++
	}
	// The runner's scenarios load different classes: an archive each; mqadmin's commands share one.
	app := ""
	if i < len(mainAndArgs) {
		app = mainAndArgs[i]
		if app == "rmqd.it.Main" && i+1 < len(mainAndArgs) {
			app += "-" + mainAndArgs[i+1]
		}
	}
	cds, cdsDone := cdsArgs(classpath, app)
	argv := append(append(append(append(cloneArgs(jvmClientOpts), cds...), homeArgs...), mainAndArgs[:i]...), "-cp", classpath)
	argv = append(argv, mainAndArgs[i:]...)
	fmt.Fprintf(f, "# %s: java %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(argv, " "))

	ctx, cancel := context.WithTimeout(tb.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "java", argv...)
	cmd.Dir = dir
	// A UTF-8 locale makes the JVM decode non-ASCII arguments (property values) as UTF-8.
	cmd.Env = append(os.Environ(), "ROCKETMQ_HOME="+home, "LC_ALL=C.UTF-8")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err = cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // stragglers of the group, if any
	}
	cdsDone(err == nil)
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("killed after %v: %w", timeout, ctx.Err())
	}
	tb.Logf("harness: %s took %v (exit: %v)", name, time.Since(start).Round(time.Millisecond), errOrOK(err))
	return stdout.Bytes(), logPath, err
}

func errOrOK(err error) string {
	if err == nil {
		return "0"
	}
	return err.Error()
}

func hasFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}

// lastJSONLine is the last stdout line that looks like a JSON object.
func lastJSONLine(out []byte) []byte {
	lines := bytes.Split(out, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		l := bytes.TrimSpace(lines[i])
		if len(l) > 0 && l[0] == '{' {
			return l
		}
	}
	return nil
}
