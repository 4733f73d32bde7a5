package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"rmqd/compat"
)

// Kinds of target.
const (
	KindApache = "apache" // Apache RocketMQ 5.3.3 name server + broker from the Maven jars: the reference
	KindRmqd   = "rmqd"   // our binary, built from ./cmd/rmqd
)

// Target is a running name server + broker pair that clients are pointed at.
type Target struct {
	Kind        string
	NamesrvAddr string // "127.0.0.1:port"
	BrokerAddr  string // "127.0.0.1:port" (listenPort)
	ClusterName string
	BrokerName  string
	LogDir      string // this target's logs (and, for Apache, the JVMs' user.home with their own log files)
	StoreDir    string // storePathRootDir
	Procs       []*Proc
	// FailpointsFile is the file rmqd's failpoints are read from (Options.Failpoints; SetFailpoint writes it).
	FailpointsFile string
	ports          []int
	brokerID       string // as registered: "" or "0" for a master
}

// id is the broker id the target registers under.
func (t *Target) id() string {
	if t.brokerID == "" {
		return "0"
	}
	return t.brokerID
}

// Options tune a target. The zero value is a standalone broker "broker-a" in "DefaultCluster".
type Options struct {
	ClusterName  string            // default "DefaultCluster"
	BrokerName   string            // default "broker-a"
	BrokerConf   map[string]string // extra or overriding broker.conf keys (Java names)
	NamesrvConf  map[string]string // extra or overriding namesrv.conf keys
	StartTimeout time.Duration     // default 120s: both processes up and the broker's route served
	// JVMArgs are extra JVM options for the Apache processes started with these options (name server,
	// broker, controller), after the harness's own: "-Dtls.server.mode=enforcing" (Java reads TLS from
	// system properties), "-Xmx1g". Ignored for rmqd.
	JVMArgs []string
	// Split runs rmqd as two processes (`rmqd namesrv` and `rmqd broker`) instead of the standalone default.
	// Apache always runs as two processes.
	Split bool
	// NoNamesrvAddr leaves namesrvAddr out of a StartBroker broker's configuration (and rmqd's -n): the
	// broker finds its name servers otherwise (fetchNamesrvAddrByAddressServer). StartBroker's name server
	// address is still where the harness waits for the broker's route.
	NoNamesrvAddr bool
	// Failpoints runs rmqd built with -tags failpoint, reading its failpoints from Target.FailpointsFile
	// (rmqd only; see store/failpoint.go and Target.SetFailpoint).
	Failpoints bool
}

func (o *Options) defaults() {
	if o.ClusterName == "" {
		o.ClusterName = "DefaultCluster"
	}
	if o.BrokerName == "" {
		o.BrokerName = "broker-a"
	}
	if o.StartTimeout == 0 {
		// Apache needs ~10 s on an idle 2-core machine, over a minute when the machine is busy.
		o.StartTimeout = 120 * time.Second
	}
}

// Start starts a target of the given kind (KindApache or KindRmqd).
func Start(tb TB, kind string, opts Options) *Target {
	tb.Helper()
	switch kind {
	case KindApache:
		return StartApache(tb, opts)
	case KindRmqd:
		return StartRmqd(tb, opts)
	}
	tb.Fatalf("harness: unknown target kind %q", kind)
	return nil
}

// newTarget reserves ports and folders for a target.
func newTarget(tb TB, kind string, opts Options) *Target {
	tb.Helper()
	nsPort := FreePort(tb)
	base := FreePortBlock(tb, 4) // VIP = listen-2, listen, HA = listen+1
	t := &Target{
		Kind:        kind,
		NamesrvAddr: Addr(nsPort),
		BrokerAddr:  Addr(base + 2),
		ClusterName: opts.ClusterName,
		BrokerName:  opts.BrokerName,
		LogDir:      filepath.Join(LogDir(tb), kind),
		StoreDir:    filepath.Join(tb.TempDir(), "store"),
		ports:       []int{nsPort, base, base + 1, base + 2, base + 3},
	}
	if err := os.MkdirAll(t.LogDir, 0o755); err != nil {
		tb.Fatalf("harness: %v", err)
	}
	// Registered before any process: cleanups run last-in first-out, so this runs after every process stop.
	tb.Cleanup(func() { t.checkPortsReleased(tb) })
	return t
}

// brokerConf is the broker.conf both kinds get (Java key names), plus opts.BrokerConf.
func (t *Target) brokerConf(opts Options) map[string]string {
	listen := t.ports[3]
	c := map[string]string{
		"brokerClusterName":     t.ClusterName,
		"brokerName":            t.BrokerName,
		"brokerId":              "0",
		"listenPort":            fmt.Sprint(listen),
		"haListenPort":          fmt.Sprint(listen + 1),
		"bindAddress":           "127.0.0.1",
		"brokerIP1":             "127.0.0.1",
		"brokerIP2":             "127.0.0.1",
		"namesrvAddr":           t.NamesrvAddr,
		"storePathRootDir":      t.StoreDir,
		"storePathCommitLog":    filepath.Join(t.StoreDir, "commitlog"),
		"autoCreateTopicEnable": "true",
		"enablePropertyFilter":  "true",
		"flushDiskType":         "ASYNC_FLUSH",
		// Check unknown transactions after 1 s instead of 6 s, every second instead of every 30 s.
		"transactionTimeOut":       "1000",
		"transactionCheckInterval": "1000",
		// A starved CPU must not look like a full broker: Apache answers SYSTEM_BUSY (2) when a send waited
		// 200 ms in its queue or the page cache lock was held 1 s, and the Go client does not retry that.
		"waitTimeMillsInSendQueue":    "5000",
		"osPageCacheBusyTimeOutMills": "5000",
	}
	for k, v := range opts.BrokerConf {
		c[k] = v
	}
	return c
}

func (t *Target) namesrvConf(opts Options) map[string]string {
	c := map[string]string{
		"listenPort":  fmt.Sprint(t.ports[0]),
		"bindAddress": "127.0.0.1",
	}
	for k, v := range opts.NamesrvConf {
		c[k] = v
	}
	return c
}

// writeConf writes kv as a Java properties file, keys sorted (compat.FormatProperties: what rmqd and Java read back).
func writeConf(tb TB, path string, kv map[string]string) string {
	tb.Helper()
	if err := os.WriteFile(path, compat.FormatProperties(kv), 0o644); err != nil {
		tb.Fatalf("harness: write %s: %v", path, err)
	}
	return path
}

// waitReady waits, within timeout, until the name server port accepts, the broker port accepts and the name
// server serves the broker as master of TBW102 (the broker registered with autoCreateTopicEnable).
// A process that exits meanwhile fails at once with its log tail.
func (t *Target) waitReady(tb TB, timeout time.Duration) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), timeout)
	defer cancel()
	start := time.Now()
	stage, last := "name server port", ""
	var routeSince time.Time
	poked := false
	for {
		for _, p := range t.Procs {
			if exited, err := p.Exited(); exited {
				tb.Fatalf("harness: %s %s exited during start-up (%v) while waiting for %s; log %s:\n%s",
					t.Kind, p.Name, err, stage, p.LogPath, Tail(p.LogPath, tailLines))
			}
		}
		switch stage {
		case "name server port":
			if portOpen(ctx, t.NamesrvAddr) {
				stage = "broker port"
				continue
			}
		case "broker port":
			if portOpen(ctx, t.BrokerAddr) {
				stage, routeSince = "TBW102 route", time.Now()
				continue
			}
		case "TBW102 route":
			ok, why, err := routeHasBrokerID(ctx, t.NamesrvAddr, "TBW102", t.BrokerAddr, t.id())
			if ok {
				tb.Logf("harness: %s ready in %v (namesrv %s, broker %s, logs %s)",
					t.Kind, time.Since(start).Round(time.Millisecond), t.NamesrvAddr, t.BrokerAddr, t.LogDir)
				return
			}
			if err != nil {
				last = err.Error()
			} else {
				last = why
			}
			if t.Kind == KindApache && !poked && time.Since(routeSince) > time.Second {
				poked = true
				t.pokeRegistration(ctx)
			}
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("harness: %s not ready after %v: still waiting for %s (last: %s); logs in %s",
				t.Kind, timeout, stage, last, t.LogDir)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// checkPortsReleased fails the test if anything still listens on the target's ports after its processes
// were stopped (a leaked child, or a server that ignored its process group).
func (t *Target) checkPortsReleased(tb TB) {
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range t.ports {
		for !portFree(p) {
			if time.Now().After(deadline) {
				tb.Errorf("harness: port %d of %s target still bound after stop", p, t.Kind)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// pokeRegistration makes an Apache broker register with its name servers now. Its registration at start
// goes only to the name servers its client's scan (on another thread) has connected by then, and when the
// scan lost that race the first registration came 10 s later: half of the starts of a run. Java registers
// everything again when brokerPermission is updated (AdminBrokerProcessor.updateBrokerConfig), so the
// broker is sent its own value back. Java also rewrites its broker.conf then, with the same values.
// Best effort: a broker that refuses (ACL) registers on its own schedule.
func (t *Target) pokeRegistration(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, body, err := probeRequestBody(ctx, t.BrokerAddr, 26, nil, nil) // GET_BROKER_CONFIG
	if err != nil || resp.Code != 0 {
		return
	}
	props, err := compat.ParseProperties(bytes.NewReader(body))
	perm, ok := props["brokerPermission"]
	if err != nil || !ok {
		return
	}
	_, _, _ = probeRequestBody(ctx, t.BrokerAddr, 25, nil, compat.FormatProperties(map[string]string{"brokerPermission": perm})) // UPDATE_BROKER_CONFIG
}
