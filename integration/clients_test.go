package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"rmqd/integration/harness"
	"rmqd/integration/loadgen/lg"
)

// Clients in other languages, installed by `make integration-clients` into integration/.clients (git-ignored):
//   - rocketmq-client-cpp, as librocketmq.so inside PyPI's rocketmq 0.4.4, driven by clients/cpp_driver.py;
//   - ali-ons 3.12.0 (npm, pure JavaScript), driven by clients/ons_driver.js.
// Each scenario runs against Apache 5.3.3 (the control) and rmqd. See docs/compatibility.md for the matrix.

const otherClientTimeout = 150 * time.Second

type otherClient struct {
	Name    string // "cpp" or "ons"
	argv    []string
	env     []string
	missing string // why the client cannot run here; the tests skip with it
}

func findOtherClient(tb harness.TB, name string) otherClient {
	root := filepath.Join(harness.RepoRoot(tb), "integration")
	dir := filepath.Join(root, ".clients")
	switch name {
	case "cpp":
		py := filepath.Join(dir, "venv", "bin", "python")
		if _, err := os.Stat(filepath.Join(dir, "venv", ".rocketmq-0.4.4")); err != nil {
			return otherClient{Name: name, missing: "PyPI rocketmq 0.4.4 is not installed in " + filepath.Join(dir, "venv") +
				": run `make integration-clients` (needs python3 with venv, x86-64 Linux, and PyPI the first time)"}
		}
		return otherClient{Name: name, argv: []string{py, filepath.Join(root, "clients", "cpp_driver.py")}}
	case "ons":
		mods := filepath.Join(dir, "node", "node_modules")
		if _, err := os.Stat(filepath.Join(mods, "ali-ons", "package.json")); err != nil {
			return otherClient{Name: name, missing: "ali-ons is not installed in " + mods +
				": run `make integration-clients` (needs node and npm, and the npm registry the first time)"}
		}
		return otherClient{Name: name, argv: []string{"node", filepath.Join(root, "clients", "ons_driver.js")},
			env: []string{"NODE_PATH=" + mods}}
	}
	tb.Fatalf("unknown client %s", name)
	return otherClient{}
}

// clientMsg is one message as a driver reports it, sent or received.
type clientMsg struct {
	I           int    `json:"i"`
	Status      string `json:"status"`
	MsgID       string `json:"msgId"`
	Topic       string `json:"topic"`
	Tags        string `json:"tags"`
	Keys        string `json:"keys"`
	QueueID     any    `json:"queueId"` // ali-ons reports the send's queueId as a string
	QueueOffset int64  `json:"queueOffset"`
	Body        string `json:"body"`
	Color       string `json:"color"`
}

type clientResult struct {
	OK       bool        `json:"ok"`
	Error    string      `json:"error"`
	Sent     []clientMsg `json:"sent"`
	Received []clientMsg `json:"received"`
}

var clientSeq int

// run runs the driver with args against tg and returns its one JSON line; a failed run fails tb.
func (c otherClient) run(tb harness.TB, tg *harness.Target, args ...string) clientResult {
	tb.Helper()
	dir := harness.LogDir(tb)
	home := filepath.Join(dir, c.Name+"-home") // the C++ client logs under $HOME/logs/rocketmq-cpp
	if err := os.MkdirAll(home, 0o755); err != nil {
		tb.Fatalf("%v", err)
	}
	clientSeq++
	logPath := filepath.Join(dir, fmt.Sprintf("%s-%02d-%s.log", c.Name, clientSeq, args[0]))
	f, err := os.Create(logPath)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	defer f.Close()
	argv := append(append(slices.Clone(c.argv), args...), "--namesrv", tg.NamesrvAddr)
	fmt.Fprintf(f, "# %s\n", argv)
	ctx, cancel := context.WithTimeout(tb.Context(), otherClientTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "HOME="+home, "LC_ALL=C.UTF-8"), c.env...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	runErr := cmd.Run()
	tb.Logf("%s %v took %v (exit: %v)", c.Name, args, time.Since(start).Round(time.Millisecond), runErr)
	var r clientResult
	line := bytes.TrimSpace(stdout.Bytes())
	if i := bytes.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	if err := json.Unmarshal(line, &r); err != nil {
		tb.Fatalf("%s %v: no result line (%v, exit %v); stdout %q; stderr %s:\n%s", c.Name, args, err, runErr, stdout.String(), logPath, harness.Tail(logPath, 30))
	}
	if !r.OK || runErr != nil {
		tb.Fatalf("%s %v failed (exit %v): %s; sent %d received %d; stderr %s:\n%s", c.Name, args, runErr, r.Error,
			len(r.Sent), len(r.Received), logPath, harness.Tail(logPath, 30))
	}
	return r
}

// createClientTopic creates topic with queues queues on tg's broker and waits for its route: neither client
// creates topics through TBW102 reliably (ali-ons never does).
func createClientTopic(tb harness.TB, tg *harness.Target, topic string, queues int) {
	tb.Helper()
	if err := lg.CreateTopic(tb.Context(), tg.BrokerAddr, topic, queues); err != nil {
		tb.Fatalf("%v", err)
	}
	tg.WaitRoute(tb, topic, 60*time.Second)
}

// expectBodies checks that received holds exactly the sent messages wanted (by body), each once, with the
// tag and the user property they were sent with.
func expectBodies(tb harness.TB, sent []clientMsg, want func(clientMsg) bool, received []clientMsg) {
	tb.Helper()
	exp := map[string]clientMsg{}
	for _, s := range sent {
		if want(s) {
			exp[s.Body] = s
		}
	}
	seen := map[string]bool{}
	for _, r := range received {
		s, ok := exp[r.Body]
		switch {
		case !ok:
			tb.Errorf("received %q (tag %q), which was not expected", r.Body, r.Tags)
		case seen[r.Body]:
			tb.Errorf("received %q twice", r.Body)
		case r.Tags != s.Tags || r.Color != "red":
			tb.Errorf("received %q with tag %q color %q, sent with tag %q color red", r.Body, r.Tags, r.Color, s.Tags)
		}
		seen[r.Body] = true
	}
	for b := range exp {
		if !seen[b] {
			tb.Errorf("%q was sent but not received", b)
		}
	}
}

type clientScenario struct {
	Name   string
	Client string
	Run    func(tb harness.TB, tg *harness.Target, c otherClient)
}

var clientScenarios = []clientScenario{
	{
		// Send with tags, then a push consumer subscribed to one tag: the C++ client's heartbeat carries enums
		// as ordinals and subVersion as a string, which rmqd once refused.
		Name: "cpp-send-push-tag", Client: "cpp",
		Run: func(tb harness.TB, tg *harness.Target, c otherClient) {
			const topic = "IT_cpp_push"
			createClientTopic(tb, tg, topic, 4)
			p := c.run(tb, tg, "produce", "--topic", topic, "--group", "IT_cpp_pg", "--count", "8", "--tags", "a,b")
			r := c.run(tb, tg, "consume", "--topic", topic, "--group", "IT_cpp_push_cg", "--count", "4", "--expr", "a",
				"--linger", "2", "--timeout", "90")
			expectBodies(tb, p.Sent, func(m clientMsg) bool { return m.Tags == "a" }, r.Received)
		},
	},
	{
		Name: "cpp-pull", Client: "cpp",
		Run: func(tb harness.TB, tg *harness.Target, c otherClient) {
			const topic = "IT_cpp_pull"
			createClientTopic(tb, tg, topic, 4)
			p := c.run(tb, tg, "produce", "--topic", topic, "--group", "IT_cpp_pg", "--count", "6", "--tags", "x,y")
			r := c.run(tb, tg, "consume", "--mode", "pull", "--topic", topic, "--group", "IT_cpp_pull_cg", "--count", "6", "--timeout", "60")
			expectBodies(tb, p.Sent, func(clientMsg) bool { return true }, r.Received)
		},
	},
	{
		// Orderly send (one queue) and an orderly push consumer (LOCK_BATCH_MQ / UNLOCK_BATCH_MQ bodies).
		Name: "cpp-orderly", Client: "cpp",
		Run: func(tb harness.TB, tg *harness.Target, c otherClient) {
			const topic = "IT_cpp_order"
			createClientTopic(tb, tg, topic, 4)
			p := c.run(tb, tg, "produce", "--topic", topic, "--group", "IT_cpp_pg", "--count", "8", "--tags", "o", "--orderly")
			r := c.run(tb, tg, "consume", "--orderly", "--topic", topic, "--group", "IT_cpp_order_cg", "--count", "8", "--timeout", "90")
			expectBodies(tb, p.Sent, func(clientMsg) bool { return true }, r.Received)
			for i := 1; i < len(r.Received); i++ {
				if a, b := r.Received[i-1], r.Received[i]; a.QueueID != b.QueueID || a.QueueOffset >= b.QueueOffset {
					tb.Errorf("orderly delivery out of order: %q (queue %v offset %d) then %q (queue %v offset %d)",
						a.Body, a.QueueID, a.QueueOffset, b.Body, b.QueueID, b.QueueOffset)
				}
			}
		},
	},
	{
		Name: "ons-send-push-tag", Client: "ons",
		Run: func(tb harness.TB, tg *harness.Target, c otherClient) {
			const topic = "IT_ons_push"
			createClientTopic(tb, tg, topic, 4)
			p := c.run(tb, tg, "produce", "--topic", topic, "--group", "IT_ons_pg", "--count", "8", "--tags", "a,b")
			r := c.run(tb, tg, "consume", "--topic", topic, "--group", "IT_ons_push_cg", "--count", "4", "--expr", "a",
				"--linger", "2", "--timeout", "90")
			expectBodies(tb, p.Sent, func(m clientMsg) bool { return m.Tags == "a" }, r.Received)
		},
	},
	{
		// A SQL92 subscription: ali-ons adds expressionType to the heartbeat and the pull.
		Name: "ons-push-sql", Client: "ons",
		Run: func(tb harness.TB, tg *harness.Target, c otherClient) {
			const topic = "IT_ons_sql"
			createClientTopic(tb, tg, topic, 4)
			p := c.run(tb, tg, "produce", "--topic", topic, "--group", "IT_ons_pg", "--count", "6", "--tags", "a,b,c")
			r := c.run(tb, tg, "consume", "--topic", topic, "--group", "IT_ons_sql_cg", "--count", "4", "--sql",
				"--expr", "color = 'red' AND TAGS IN ('a', 'c')", "--linger", "2", "--timeout", "90")
			expectBodies(tb, p.Sent, func(m clientMsg) bool { return m.Tags != "b" }, r.Received)
		},
	},
}

// TestOtherClients runs clientScenarios against every selected target. Select with RMQD_TARGET and -run:
//
//	RMQD_TARGET=rmqd go test -count=1 -v -run 'TestOtherClients/rmqd/cpp-orderly' ./integration/
func TestOtherClients(t *testing.T) {
	kinds := targetsFromEnv(t)
	if slices.Contains(kinds, harness.KindApache) {
		harness.RequireJars(t, "apache")
	}
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			clients := map[string]otherClient{}
			for _, sc := range clientScenarios {
				clients[sc.Client] = findOtherClient(t, sc.Client)
			}
			var tg *harness.Target // shared by the scenarios; started once one of them can run
			for _, sc := range clientScenarios {
				c := clients[sc.Client]
				if c.missing == "" && tg == nil {
					tg = harness.Start(t, kind, harness.Options{})
				}
				t.Run(sc.Name, func(t *testing.T) {
					tb := harness.Reported(t)
					if c.missing != "" {
						t.Skip(c.missing)
					}
					sc.Run(tb, tg, c)
				})
			}
		})
	}
}
