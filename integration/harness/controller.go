package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// This file runs RocketMQ 5.x controller mode: a Raft group of Apache controllers (ControllerStartup, the
// DLedger controller from the 5.3.3 jars) and brokers of either kind that take their role from it
// (enableControllerMode=true) instead of their brokerId.

const codeControllerGetMetadata = 1005 // CONTROLLER_GET_METADATA_INFO

// ControllerNode is one controller process.
type ControllerNode struct {
	ID string // DLedger self id: n0, n1...
	// Addr is the DLedger (Raft) peer address, which is also where the DLedger controller serves brokers'
	// requests (DLedgerController's remoting server): controllerAddr lists these.
	Addr       string
	listenPort int // NettyServerConfig.listenPort, set apart from the 19876 default
	LogDir     string
	Proc       *Proc
	killed     bool // by KillNode: its exit is expected
}

// Controller is a running controller group.
type Controller struct {
	Nodes   []*ControllerNode
	jvmArgs []string // Options.JVMArgs, for restarts too
}

// Addr is the controllerAddr brokers are given: every node, ';'-separated.
func (c *Controller) Addr() string {
	a := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		a[i] = n.Addr
	}
	return strings.Join(a, ";")
}

// StartController starts n Apache DLedger controllers on free loopback ports and waits (opts.StartTimeout)
// until one of them is the Raft leader. Logs go to <LogDir(tb)>/controller-n<i>/.
func StartController(tb TB, n int, opts Options) *Controller {
	tb.Helper()
	RequireJars(tb, "apache")
	opts.defaults()
	c := &Controller{jvmArgs: opts.JVMArgs}
	var peers []string
	for i := 0; i < n; i++ {
		base := FreePortBlock(tb, 2)
		node := &ControllerNode{ID: fmt.Sprintf("n%d", i), Addr: Addr(base), listenPort: base + 1,
			LogDir: uniqueDir(tb, fmt.Sprintf("controller-n%d", i))}
		c.Nodes = append(c.Nodes, node)
		peers = append(peers, node.ID+"-"+node.Addr)
		tb.Cleanup(func() { checkPortsFree(tb, "controller "+node.ID, []int{base, base + 1}) })
	}
	for _, node := range c.Nodes {
		conf := map[string]string{
			"controllerType":         "DLedger",
			"controllerDLegerGroup":  "rmqd-it",
			"controllerDLegerPeers":  strings.Join(peers, ";"),
			"controllerDLegerSelfId": node.ID,
			"controllerStorePath":    filepath.Join(tb.TempDir(), "controller-"+node.ID),
			"configStorePath":        filepath.Join(node.LogDir, "controller.properties"),
			"listenPort":             strings.TrimPrefix(node.Addr, "127.0.0.1:"),
			"bindAddress":            "127.0.0.1",
			// A small store: the default maps 1 GiB files.
			"mappedFileSize":          fmt.Sprint(64 << 20),
			"notifyBrokerRoleChanged": "true",
		}
		for k, v := range opts.NamesrvConf {
			conf[k] = v
		}
		writeConf(tb, filepath.Join(node.LogDir, "controller.conf"), conf)
		c.startNode(tb, node)
	}
	c.WaitLeader(tb, opts.StartTimeout)
	return c
}

func (c *Controller) startNode(tb TB, node *ControllerNode) {
	tb.Helper()
	jvm, env := apacheJVM(tb, node.LogDir, c.jvmArgs)
	node.Proc = startProc(tb, "apache controller "+node.ID, filepath.Join(node.LogDir, "controller.log"), node.LogDir, env,
		append(jvm, "org.apache.rocketmq.controller.ControllerStartup", "-c",
			filepath.Join(node.LogDir, "controller.conf"))...)
	node.Proc.TermGrace = 2 * time.Second
}

// Leader asks the live nodes who leads; it returns the leader's index, or -1 with the last answer.
func (c *Controller) Leader(ctx context.Context) (int, string) {
	last := "no live node"
	for _, node := range c.Nodes {
		if node.Proc == nil {
			continue
		}
		if exited, _ := node.Proc.Exited(); exited {
			continue
		}
		resp, _, err := probeRequest(ctx, node.Addr, codeControllerGetMetadata, nil)
		if err != nil {
			last = err.Error()
			continue
		}
		if resp.Code != 0 {
			last = fmt.Sprintf("%s: code %d %s", node.ID, resp.Code, resp.Remark)
			continue
		}
		leader := resp.ExtFields["controllerLeaderAddress"]
		for i, m := range c.Nodes {
			if leader != "" && m.Addr == leader {
				if exited, _ := m.Proc.Exited(); !exited {
					return i, ""
				}
			}
		}
		last = fmt.Sprintf("%s: leader %q (%v)", node.ID, leader, resp.ExtFields)
	}
	return -1, last
}

// WaitLeader waits until a live node is the leader and returns its index.
func (c *Controller) WaitLeader(tb TB, timeout time.Duration) int {
	tb.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(tb.Context(), timeout)
	defer cancel()
	for {
		for _, node := range c.Nodes {
			if exited, err := node.Proc.Exited(); exited && !node.killed {
				tb.Fatalf("harness: controller %s exited (%v); log %s:\n%s", node.ID, err, node.Proc.LogPath,
					Tail(node.Proc.LogPath, tailLines))
			}
		}
		i, last := c.Leader(ctx)
		if i >= 0 {
			tb.Logf("harness: controller leader %s (%s) after %v", c.Nodes[i].ID, c.Nodes[i].Addr,
				time.Since(start).Round(time.Millisecond))
			return i
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("harness: no controller leader after %v (last: %s)", timeout, last)
			return -1
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// KillNode sends SIGKILL to controller i.
func (c *Controller) KillNode(tb TB, i int) {
	tb.Helper()
	node := c.Nodes[i]
	node.killed = true
	killProc(tb, node.Proc)
	tb.Logf("harness: controller %s killed (SIGKILL)", node.ID)
}

// RestartNode starts controller i again with its configuration and Raft store.
func (c *Controller) RestartNode(tb TB, i int) {
	tb.Helper()
	c.Nodes[i].killed = false
	c.startNode(tb, c.Nodes[i])
}

// GroupBroker is one broker of a controller-mode group.
type GroupBroker struct {
	*Target
	confPath string
	jvmArgs  []string // Options.JVMArgs (Apache), for restarts too
}

// StartGroupBroker starts a broker of the given kind in controller mode (enableControllerMode=true,
// controllerAddr=ctrl) registered with namesrvAddr, and waits only until its port accepts: which role it
// takes is the controller's to say (see GroupMaster).
func StartGroupBroker(tb TB, kind, namesrvAddr string, ctrl *Controller, opts Options) *GroupBroker {
	tb.Helper()
	opts.defaults()
	base := FreePortBlock(tb, 4)
	t := &Target{
		Kind:        kind,
		NamesrvAddr: namesrvAddr,
		BrokerAddr:  Addr(base + 2),
		ClusterName: opts.ClusterName,
		BrokerName:  opts.BrokerName,
		LogDir:      uniqueDir(tb, kind+"-broker"),
		StoreDir:    filepath.Join(tb.TempDir(), "store"),
		ports:       []int{base, base, base + 1, base + 2, base + 3},
	}
	tb.Cleanup(func() { t.checkPortsReleased(tb) })
	bc := t.brokerConf(opts)
	bc["enableControllerMode"] = "true"
	bc["controllerAddr"] = ctrl.Addr()
	bc["brokerRole"] = "SYNC_MASTER"
	bc["namesrvAddr"] = namesrvAddr
	for k, v := range opts.BrokerConf {
		bc[k] = v
	}
	delete(bc, "brokerId")
	if err := mkdirs(t.StoreDir); err != nil {
		tb.Fatalf("harness: %v", err)
	}
	g := &GroupBroker{Target: t, confPath: writeConf(tb, filepath.Join(t.LogDir, "broker.conf"), bc), jvmArgs: opts.JVMArgs}
	g.start(tb)
	g.waitPort(tb, opts.StartTimeout)
	return g
}

func (g *GroupBroker) start(tb TB) {
	tb.Helper()
	logPath := filepath.Join(g.LogDir, "broker.log")
	var p *Proc
	switch g.Kind {
	case KindApache:
		RequireJars(tb, "apache")
		jvm, env := apacheJVM(tb, g.LogDir, g.jvmArgs)
		p = startProc(tb, "apache broker", logPath, g.LogDir, env,
			append(jvm, "org.apache.rocketmq.broker.BrokerStartup", "-c", g.confPath)...)
		p.TermGrace = 2 * time.Second
	case KindRmqd:
		p = startProc(tb, "rmqd broker", logPath, g.LogDir, nil,
			RmqdBinary(tb), "broker", "-c", g.confPath, "-n", g.NamesrvAddr)
	default:
		tb.Fatalf("harness: unknown broker kind %q", g.Kind)
	}
	if len(g.Procs) == 0 {
		g.Procs = append(g.Procs, p)
	} else {
		g.Procs[0] = p
	}
}

func (g *GroupBroker) waitPort(tb TB, timeout time.Duration) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), timeout)
	defer cancel()
	for !portOpen(ctx, g.BrokerAddr) {
		if exited, err := g.Procs[0].Exited(); exited {
			tb.Fatalf("harness: %s broker exited during start-up (%v); log %s:\n%s", g.Kind, err,
				g.Procs[0].LogPath, Tail(g.Procs[0].LogPath, tailLines))
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("harness: %s broker %s port not open after %v; logs in %s", g.Kind, g.BrokerAddr, timeout, g.LogDir)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Kill sends SIGKILL to the broker.
func (g *GroupBroker) Kill(tb TB) {
	tb.Helper()
	killProc(tb, g.Procs[0], g.ports[1:]...)
	tb.Logf("harness: %s broker %s killed (SIGKILL)", g.Kind, g.BrokerAddr)
}

// Restart starts a killed broker again with its configuration and store and waits for its port.
func (g *GroupBroker) Restart(tb TB) {
	tb.Helper()
	if exited, _ := g.Procs[0].Exited(); !exited {
		tb.Fatalf("harness: Restart: %s broker %s still running", g.Kind, g.BrokerAddr)
	}
	g.start(tb)
	g.waitPort(tb, 120*time.Second)
}

// Signal sends sig to the broker's process group.
func (g *GroupBroker) Signal(sig syscall.Signal) { _ = syscall.Kill(-g.Procs[0].Pid(), sig) }

// RouteBrokers returns brokerName's addresses by broker id in the name server's route of topic.
func RouteBrokers(ctx context.Context, namesrv, topic, brokerName string) (map[string]string, error) {
	resp, body, err := probeRequest(ctx, namesrv, codeGetRouteInfoByTopic, map[string]string{"topic": topic})
	if err != nil {
		return nil, err
	}
	if resp.Code != 0 {
		return nil, fmt.Errorf("route %s: code %d %s", topic, resp.Code, resp.Remark)
	}
	var r routeBody
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("route %s: %w", topic, err)
	}
	for _, bd := range r.BrokerDatas {
		if bd.BrokerName == brokerName {
			return bd.BrokerAddrs, nil
		}
	}
	return nil, fmt.Errorf("route %s: no broker %s in %.300s", topic, brokerName, body)
}

// WaitGroupMaster waits until the name server serves, in TBW102's route of brokerName, a master (id 0)
// among addrs that is not the excluded address, and returns it with the time waited.
func WaitGroupMaster(tb TB, namesrv, brokerName string, addrs []string, exclude string, timeout time.Duration) (string, time.Duration) {
	tb.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(tb.Context(), timeout)
	defer cancel()
	last := ""
	for {
		m, err := RouteBrokers(ctx, namesrv, "TBW102", brokerName)
		if err != nil {
			last = err.Error()
		} else {
			last = fmt.Sprint(m)
			for _, a := range addrs {
				if a != exclude && m["0"] == a {
					return a, time.Since(start)
				}
			}
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("harness: no master of %s among %v (not %q) after %v (last route: %s)", brokerName, addrs,
				exclude, timeout, last)
			return "", timeout
		case <-time.After(100 * time.Millisecond):
		}
	}
}
