package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// This file mixes kinds: a name server of one kind with a broker of another (an Apache broker registered
// with rmqd's name server, rmqd's broker with Apache's), and one broker registered with several name servers.

// Namesrv is a running name server alone (no broker).
type Namesrv struct {
	Kind   string
	Addr   string // "127.0.0.1:port"
	LogDir string // namesrv.conf, namesrv.log (and, for Apache, home/logs/rocketmqlogs/)
	Procs  []*Proc
}

// StartNamesrv starts a name server of the given kind (KindApache: NamesrvStartup from the Maven jars;
// KindRmqd: `rmqd namesrv -c namesrv.conf`) on a free loopback port and waits, within opts.StartTimeout,
// until it answers a GET_ROUTEINFO_BY_TOPIC. Only opts.NamesrvConf, opts.JVMArgs (so
// "-XX:TieredStopAtLevel=4" overrides the harness's C1-only set-up for benchmarks) and opts.StartTimeout
// are used. Logs go to <LogDir(tb)>/<kind>-namesrv[-n]/. The process is stopped by tb.Cleanup.
func StartNamesrv(tb TB, kind string, opts Options) *Namesrv {
	tb.Helper()
	opts.defaults()
	port := FreePort(tb)
	ns := &Namesrv{Kind: kind, Addr: Addr(port), LogDir: uniqueDir(tb, kind+"-namesrv")}
	tb.Cleanup(func() { checkPortsFree(tb, kind+" namesrv", []int{port}) })
	conf := map[string]string{"listenPort": fmt.Sprint(port), "bindAddress": "127.0.0.1"}
	for k, v := range opts.NamesrvConf {
		conf[k] = v
	}
	confPath := writeConf(tb, filepath.Join(ns.LogDir, "namesrv.conf"), conf)
	logPath := filepath.Join(ns.LogDir, "namesrv.log")
	switch kind {
	case KindApache:
		RequireJars(tb, "apache")
		jvm, env := apacheJVM(tb, ns.LogDir, opts.JVMArgs)
		p := startProc(tb, "apache namesrv", logPath, ns.LogDir, env,
			append(jvm, "org.apache.rocketmq.namesrv.NamesrvStartup", "-c", confPath)...)
		p.TermGrace = 2 * time.Second
		ns.Procs = append(ns.Procs, p)
	case KindRmqd:
		bin := RmqdBinary(tb)
		ns.Procs = append(ns.Procs, startProc(tb, "rmqd namesrv", logPath, ns.LogDir, nil,
			bin, "namesrv", "-c", confPath))
	default:
		tb.Fatalf("harness: unknown name server kind %q", kind)
	}
	ns.waitServing(tb, opts.StartTimeout)
	return ns
}

// waitServing waits until the name server answers a request (any response code).
func (ns *Namesrv) waitServing(tb TB, timeout time.Duration) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), timeout)
	defer cancel()
	start := time.Now()
	last := "no attempt"
	for {
		for _, p := range ns.Procs {
			if exited, err := p.Exited(); exited {
				tb.Fatalf("harness: %s exited during start-up (%v); log %s:\n%s", p.Name, err, p.LogPath,
					Tail(p.LogPath, tailLines))
			}
		}
		if portOpen(ctx, ns.Addr) {
			_, _, err := probeRequest(ctx, ns.Addr, codeGetRouteInfoByTopic, map[string]string{"topic": "TBW102"})
			if err == nil {
				tb.Logf("harness: %s namesrv ready in %v (%s, logs %s)", ns.Kind,
					time.Since(start).Round(time.Millisecond), ns.Addr, ns.LogDir)
				return
			}
			last = err.Error()
		} else {
			last = "port not open"
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("harness: %s namesrv %s not serving after %v (last: %s); logs in %s", ns.Kind, ns.Addr,
				timeout, last, ns.LogDir)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// StartBroker starts a broker of the given kind (KindApache: BrokerStartup; KindRmqd: `rmqd broker -c
// broker.conf -n <namesrvAddr>`) registered with namesrvAddr, one address or several separated by ';' (the
// Java namesrvAddr form), and waits until every one of those name servers serves the broker as master of
// TBW102. The broker.conf is the one Start writes (opts.BrokerConf may override keys).
//
// The returned Target's NamesrvAddr is the first address; Via gives a copy pointed at another one. Its Procs
// are the broker's only: the name servers belong to whoever started them. Logs go to
// <LogDir(tb)>/<kind>-broker[-n]/.
func StartBroker(tb TB, kind, namesrvAddr string, opts Options) *Target {
	tb.Helper()
	opts.defaults()
	addrs := splitAddrs(namesrvAddr)
	if len(addrs) == 0 {
		tb.Fatalf("harness: StartBroker: empty name server address")
	}
	base := FreePortBlock(tb, 4) // VIP = listen-2, listen, HA = listen+1
	t := &Target{
		Kind:        kind,
		NamesrvAddr: addrs[0],
		BrokerAddr:  Addr(base + 2),
		ClusterName: opts.ClusterName,
		BrokerName:  opts.BrokerName,
		LogDir:      uniqueDir(tb, kind+"-broker"),
		StoreDir:    filepath.Join(tb.TempDir(), "store"),
		// brokerConf reads the listen port at index 3; index 0 (the name server of Start) repeats base.
		ports: []int{base, base, base + 1, base + 2, base + 3},
	}
	tb.Cleanup(func() { t.checkPortsReleased(tb) })
	bc := t.brokerConf(opts)
	t.brokerID = bc["brokerId"]
	if _, set := opts.BrokerConf["namesrvAddr"]; !set {
		bc["namesrvAddr"] = strings.Join(addrs, ";")
	}
	var nsFlag []string
	if opts.NoNamesrvAddr {
		delete(bc, "namesrvAddr")
	} else {
		nsFlag = []string{"-n", bc["namesrvAddr"]}
	}
	confPath := writeConf(tb, filepath.Join(t.LogDir, "broker.conf"), bc)
	logPath := filepath.Join(t.LogDir, "broker.log")
	switch kind {
	case KindApache:
		RequireJars(tb, "apache")
		jvm, env := apacheJVM(tb, t.LogDir, opts.JVMArgs)
		p := startProc(tb, "apache broker", logPath, t.LogDir, env,
			append(jvm, "org.apache.rocketmq.broker.BrokerStartup", "-c", confPath)...)
		p.TermGrace = 2 * time.Second
		t.Procs = append(t.Procs, p)
	case KindRmqd:
		bin := RmqdBinary(tb)
		if err := mkdirs(t.StoreDir); err != nil {
			tb.Fatalf("harness: %v", err)
		}
		t.Procs = append(t.Procs, startProc(tb, "rmqd broker", logPath, t.LogDir, nil,
			append([]string{bin, "broker", "-c", confPath}, nsFlag...)...))
	default:
		tb.Fatalf("harness: unknown broker kind %q", kind)
	}
	deadline := time.Now().Add(opts.StartTimeout)
	for _, a := range addrs {
		left := time.Until(deadline)
		if left < time.Second {
			left = time.Second
		}
		t.Via(a).waitReady(tb, left)
	}
	return t
}

// Via returns a copy of t whose clients (RunJava, Mqadmin, RunGoProduce...) use the name server addr.
func (t *Target) Via(addr string) *Target {
	c := *t
	c.NamesrvAddr = addr
	return &c
}

// apacheJVM is the java command line (up to the main class) and environment the Apache servers run with;
// user.home and ROCKETMQ_HOME are <dir>/home so their own logs land there. extra (Options.JVMArgs) follow the
// harness's options, so that a later -X or -XX setting wins.
func apacheJVM(tb TB, dir string, extra []string) ([]string, []string) {
	tb.Helper()
	home := filepath.Join(dir, "home")
	homeArgs, err := JVMHome(home)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	jvm := append(append(append([]string{"java"}, jvmServerOpts...), homeArgs...),
		"-Drmqd.it.bindAddress=127.0.0.1")
	jvm = append(append(jvm, extra...), "-cp", filepath.Join(LibDir(tb, "apache"), "*"))
	return jvm, []string{"ROCKETMQ_HOME=" + home}
}

// uniqueDir makes <LogDir(tb)>/name, or name-2, name-3... when a process of the same test already used it.
func uniqueDir(tb TB, name string) string {
	tb.Helper()
	root := LogDir(tb)
	for i := 1; i < 100; i++ {
		d := filepath.Join(root, name)
		if i > 1 {
			d = fmt.Sprintf("%s-%d", d, i)
		}
		if err := os.Mkdir(d, 0o755); err == nil {
			return d
		} else if !os.IsExist(err) {
			tb.Fatalf("harness: %v", err)
		}
	}
	tb.Fatalf("harness: too many %s folders under %s", name, root)
	return ""
}

func splitAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ";") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// checkPortsFree fails the test if a port is still bound 5 s after its server was stopped.
func checkPortsFree(tb TB, what string, ports []int) {
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range ports {
		for !portFree(p) {
			if time.Now().After(deadline) {
				tb.Errorf("harness: port %d of %s still bound after stop", p, what)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
