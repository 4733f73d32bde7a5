package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"rmqd/integration/harness"
	"rmqd/integration/loadgen/lg"
)

// JVM flags for the Apache processes: a fixed heap stated in the report, G1 and the full JIT (the broker's
// own runbroker.sh defaults, scaled to this machine), plus the --add-opens Java 17 needs for the store.
var apacheBrokerJVM = []string{
	"-server", "-Xms1g", "-Xmx1g", "-XX:MaxDirectMemorySize=1g", "-XX:+UseG1GC", "-XX:G1HeapRegionSize=16m",
	"-XX:-OmitStackTraceInFastThrow", "-Djava.net.preferIPv4Stack=true",
	"--add-opens=java.base/java.nio=ALL-UNNAMED", "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
	"--add-exports=java.base/sun.nio.ch=ALL-UNNAMED", "--add-opens=java.base/java.lang=ALL-UNNAMED",
}

var apacheNamesrvJVM = []string{
	"-server", "-Xms256m", "-Xmx256m", "-XX:+UseG1GC", "-Djava.net.preferIPv4Stack=true",
	"--add-opens=java.base/java.nio=ALL-UNNAMED", "--add-opens=java.base/java.lang=ALL-UNNAMED",
}

// proc is one server process in its own process group.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	log  string
}

func startProc(name, logPath, dir string, env []string, argv ...string) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s log: %w", name, err)
	}
	fmt.Fprintf(f, "# %s\n", strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() {
		p.err = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) stop(grace time.Duration) {
	pg := -p.cmd.Process.Pid
	if !p.exited() {
		_ = syscall.Kill(pg, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
		}
	}
	_ = syscall.Kill(pg, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
}

// broker is one running target: name server + broker (Apache: two JVMs; rmqd: one standalone process).
type broker struct {
	kind             string
	flush            string
	namesrv          string
	addr             string
	storeDir         string
	keepStore        bool // -keep-stores: leave the store behind when stopped
	logDir           string
	procs            []*proc
	brokerProc       *proc // the process whose RSS and CPU we measure
	nsProc           *proc // Apache only
	slaveProc        *proc // with spec.role: the slave broker
	slaveAddr        string
	sign             *lg.Credentials // spec.sign: every request to the broker is signed
	startToFirstSend time.Duration
}

// brokerSpec is what a run needs beyond the defaults: a label for its directories, extra broker.conf keys
// (ACL, TLS...), credentials its requests must be signed with, and a replication role (SYNC_MASTER or
// ASYNC_MASTER: a slave is started beside the master, on the same name server).
type brokerSpec struct {
	label string
	conf  map[string]string
	sign  *lg.Credentials
	role  string
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// freeBlock finds four free consecutive ports: VIP (listen-2), -, listen, HA (listen+1).
func freeBlock() (int, error) {
	for range 200 {
		base, err := freePort()
		if err != nil {
			return 0, err
		}
		ok := true
		for p := base; p < base+4 && ok; p++ {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				ok = false
				continue
			}
			_ = l.Close()
		}
		if ok && base+4 < 65535 {
			return base, nil
		}
	}
	return 0, fmt.Errorf("no block of 4 free ports")
}

func writeConf(path string, kv map[string]string) error {
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, kv[k])
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// startBroker starts kind with flushDiskType flush and measures start to first accepted send: from the
// first exec until a SEND_MESSAGE_V2 to a freshly created topic, routed through the name server, returns
// SEND_OK.
func startBroker(ctx context.Context, e *env, kind, flush string) (*broker, error) {
	return startBrokerSpec(ctx, e, kind, flush, brokerSpec{})
}

func startBrokerSpec(ctx context.Context, e *env, kind, flush string, spec brokerSpec) (*broker, error) {
	if spec.label == "" {
		spec.label = strings.ToLower(flush)
	}
	nsPort, err := freePort()
	if err != nil {
		return nil, err
	}
	base, err := freeBlock()
	if err != nil {
		return nil, err
	}
	listen := base + 2
	b := &broker{kind: kind, flush: flush, namesrv: harness.Addr(nsPort), addr: harness.Addr(listen),
		logDir: filepath.Join(e.outDir, "logs", kind+"-"+spec.label), sign: spec.sign, keepStore: e.keepStores}
	b.storeDir = filepath.Join(e.storeRoot, kind+"-"+spec.label)
	_ = os.RemoveAll(b.logDir)
	_ = os.RemoveAll(b.storeDir)
	for _, d := range []string{b.logDir, b.storeDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	conf := map[string]string{
		"brokerClusterName": "BenchCluster", "brokerName": "bench-a", "brokerId": "0",
		"listenPort": fmt.Sprint(listen), "haListenPort": fmt.Sprint(listen + 1),
		"bindAddress": "127.0.0.1", "brokerIP1": "127.0.0.1", "brokerIP2": "127.0.0.1",
		"namesrvAddr": b.namesrv, "storePathRootDir": b.storeDir,
		"storePathCommitLog":    filepath.Join(b.storeDir, "commitlog"),
		"autoCreateTopicEnable": "true", "flushDiskType": flush,
		"mappedFileSizeCommitLog": fmt.Sprint(1 << 30),
	}
	for k, v := range spec.conf {
		conf[k] = v
	}
	if spec.role != "" {
		conf["brokerRole"] = spec.role
	}
	var start time.Time // the first exec: set right before it in each case
	switch kind {
	case "rmqd":
		conf["namesrvListenPort"] = fmt.Sprint(nsPort)
		for k, v := range e.rmqdConf {
			conf[k] = v
		}
		cf := filepath.Join(b.logDir, "broker.conf")
		if err := writeConf(cf, conf); err != nil {
			return nil, err
		}
		start = time.Now()
		p, err := startProc("rmqd", filepath.Join(b.logDir, "rmqd.log"), b.logDir, nil, e.rmqdBin, "-c", cf)
		if err != nil {
			return nil, err
		}
		b.procs, b.brokerProc = []*proc{p}, p
	case "apache":
		home := filepath.Join(b.logDir, "home")
		homeArgs, err := harness.JVMHome(home)
		if err != nil {
			return nil, err
		}
		nsConf := filepath.Join(b.logDir, "namesrv.conf")
		if err := writeConf(nsConf, map[string]string{"listenPort": fmt.Sprint(nsPort), "bindAddress": "127.0.0.1"}); err != nil {
			return nil, err
		}
		bConf := filepath.Join(b.logDir, "broker.conf")
		if err := writeConf(bConf, conf); err != nil {
			return nil, err
		}
		cp := filepath.Join(e.apacheLib, "*")
		envv := []string{"ROCKETMQ_HOME=" + home}
		common := append(homeArgs, "-Drmqd.it.bindAddress=127.0.0.1", "-cp", cp)
		start = time.Now()
		ns, err := startProc("apache namesrv", filepath.Join(b.logDir, "namesrv.log"), b.logDir, envv,
			append(append(append([]string{"java"}, apacheNamesrvJVM...), common...), "org.apache.rocketmq.namesrv.NamesrvStartup", "-c", nsConf)...)
		if err != nil {
			return nil, err
		}
		br, err := startProc("apache broker", filepath.Join(b.logDir, "broker.log"), b.logDir, envv,
			append(append(append([]string{"java"}, apacheBrokerJVM...), common...), "org.apache.rocketmq.broker.BrokerStartup", "-c", bConf)...)
		if err != nil {
			ns.stop(2 * time.Second)
			return nil, err
		}
		b.procs, b.brokerProc, b.nsProc = []*proc{ns, br}, br, ns
	default:
		return nil, fmt.Errorf("unknown broker kind %q", kind)
	}
	if spec.role != "" {
		// The master answers SLAVE_NOT_AVAILABLE until its slave connects: the first-send probe waits for both.
		if err := b.startSlave(e, conf); err != nil {
			b.stop()
			return nil, err
		}
	}
	if err := b.firstSend(ctx, start, 180*time.Second); err != nil {
		b.stop()
		return nil, err
	}
	return b, nil
}

// startSlave starts the slave of master b (brokerId 1, same name server and broker name), its own store.
func (b *broker) startSlave(e *env, master map[string]string) error {
	base, err := freeBlock()
	if err != nil {
		return err
	}
	listen := base + 2
	conf := make(map[string]string, len(master))
	for k, v := range master {
		conf[k] = v
	}
	dir := b.logDir + "-slave"
	store := b.storeDir + "-slave"
	_ = os.RemoveAll(dir)
	_ = os.RemoveAll(store)
	for _, d := range []string{dir, store} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	delete(conf, "namesrvListenPort")
	conf["brokerId"], conf["brokerRole"] = "1", "SLAVE"
	conf["listenPort"], conf["haListenPort"] = fmt.Sprint(listen), fmt.Sprint(listen+1)
	conf["storePathRootDir"], conf["storePathCommitLog"] = store, filepath.Join(store, "commitlog")
	cf := filepath.Join(dir, "broker.conf")
	if err := writeConf(cf, conf); err != nil {
		return err
	}
	var p *proc
	switch b.kind {
	case "rmqd":
		p, err = startProc("rmqd slave", filepath.Join(dir, "rmqd.log"), dir, nil, e.rmqdBin, "broker", "-c", cf, "-n", b.namesrv)
	default:
		home := filepath.Join(dir, "home")
		homeArgs, herr := harness.JVMHome(home)
		if herr != nil {
			return herr
		}
		cp := filepath.Join(e.apacheLib, "*")
		common := append(homeArgs, "-Drmqd.it.bindAddress=127.0.0.1", "-cp", cp)
		p, err = startProc("apache slave", filepath.Join(dir, "broker.log"), dir, []string{"ROCKETMQ_HOME=" + home},
			append(append(append([]string{"java"}, apacheBrokerJVM...), common...), "org.apache.rocketmq.broker.BrokerStartup", "-c", cf)...)
	}
	if err != nil {
		return err
	}
	b.procs = append(b.procs, p)
	b.slaveProc, b.slaveAddr = p, harness.Addr(listen)
	return nil
}

// firstSend polls every 10 ms: create topic, route lookup, one send.
func (b *broker) firstSend(ctx context.Context, start time.Time, bound time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	const topic = "BenchFirstSend"
	stage, last := "create topic", error(nil)
	var route lg.Route
	for {
		if err := b.alive(); err != nil {
			return err
		}
		switch stage {
		case "create topic":
			if last = lg.CreateTopic(ctx, b.addr, topic, 8, b.opts()...); last == nil {
				stage = "route"
				continue
			}
		case "route":
			if route, last = lg.LookupRoute(ctx, b.namesrv, topic); last == nil {
				stage = "send"
				continue
			}
		case "send":
			r, err := lg.Send(ctx, lg.SendConfig{Route: route, Topic: topic, Size: 128, InFlight: 1, Count: 1, Timeout: 5 * time.Second, Sign: b.sign})
			if err == nil && r.Sent == 1 {
				b.startToFirstSend = time.Since(start)
				return nil
			}
			last = fmt.Errorf("send: %v %v", err, r.Errors)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s %s: no accepted send within %v (stage %s: %v); logs in %s", b.kind, b.flush, bound, stage, last, b.logDir)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// opts are the control-request options the broker needs (signing).
func (b *broker) opts() []lg.Option {
	if b.sign == nil {
		return nil
	}
	return []lg.Option{lg.WithCredentials(b.sign)}
}

func (b *broker) alive() error {
	for _, p := range b.procs {
		if p.exited() {
			return fmt.Errorf("%s exited (%v); log %s:\n%s", p.name, p.err, p.log, harness.Tail(p.log, 30))
		}
	}
	return nil
}

func (b *broker) stop() {
	for i := len(b.procs) - 1; i >= 0; i-- {
		grace := 10 * time.Second
		if b.kind == "apache" {
			grace = 3 * time.Second
		}
		b.procs[i].stop(grace)
	}
	// A quick run leaves ~21 GB of stores (1 GiB commitlog files, both brokers,
	// every configuration): gone once measured, unless asked for.
	if !b.keepStore {
		_ = os.RemoveAll(b.storeDir)
		_ = os.RemoveAll(b.storeDir + "-slave")
	}
}
