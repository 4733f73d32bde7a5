package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"time"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/namesrv"
	"rmqd/processor"
	"rmqd/remoting"
	"rmqd/store"
	"rmqd/store/ha"
)

// Keys of rmqd's own, beside the Java ones.
const (
	keyNamesrvListenPort = "namesrvListenPort" // standalone: the name server's port
	// keyNamesrvAddrProperty is Java's JVM system property for the name
	// servers (MixAll.NAMESRV_ADDR_PROPERTY), a -c key here as
	// rocketmq.namesrv.domain is: below namesrvAddr, above NAMESRV_ADDR.
	keyNamesrvAddrProperty = "rocketmq.namesrv.addr"
	keyBindAddress         = "bindAddress" // NettyServerConfig.bindAddress (5.x)
)

// shutdownGrace bounds a graceful stop so a stuck peer cannot hold the process.
const shutdownGrace = 10 * time.Second

func loadProperties(path string) (map[string]string, error) {
	if path == "" {
		return map[string]string{}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	props, err := compat.ParseProperties(f)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return props, nil
}

// standaloneBind is where standalone listens: loopback only, as Redis'
// protected mode, unless the configuration names an address (bindAddress) or
// advertises one other hosts must reach (brokerIP1), in which case it is
// Java's wildcard; an IPv6 loopback brokerIP1 makes it ::1. It runs before
// standaloneDefaults fills brokerIP1 in.
func standaloneBind(props map[string]string) string {
	if b := props[keyBindAddress]; b != "" {
		return b
	}
	if ip := props["brokerIP1"]; ip != "" {
		a := net.ParseIP(codec.BareHost(ip))
		if a == nil || !a.IsLoopback() {
			return "0.0.0.0"
		}
		if a.To4() == nil {
			return "::1" // listen where it advertises: 127.0.0.1 is not reachable as [::1]
		}
	}
	return "127.0.0.1"
}

// standaloneDefaults are what a first run on one machine wants; keys in the
// config file still win.
func standaloneDefaults(props map[string]string) {
	defaults := map[string]string{
		"brokerIP1":             "127.0.0.1",
		"autoCreateTopicEnable": "true",
		"enablePropertyFilter":  "true",
		"storePathRootDir":      "store",
	}
	for k, v := range defaults {
		if _, ok := props[k]; !ok {
			props[k] = v
		}
	}
	// The HA address follows the advertised one unless set apart, as on a Java
	// broker whose two IPs are both detected.
	if _, ok := props["brokerIP2"]; !ok {
		props["brokerIP2"] = props["brokerIP1"]
	}
}

type node struct {
	name  string
	srv   *remoting.Server
	start func(context.Context) error
	// drain runs before the server closes its connections (nil: nothing to do).
	drain func(context.Context)
	// stop releases what the node holds, started or not: a store opened for a
	// node that never started still holds its lock and abort file.
	stop func() error
}

func serve(ctx context.Context, opts options, stdout io.Writer, logger *slog.Logger) error {
	props, err := loadProperties(opts.configFile)
	if err != nil {
		return err
	}
	reportUnboundKeys(props, logger)
	bind := props[keyBindAddress]
	if opts.mode == "standalone" {
		bind = standaloneBind(props)
		if (bind == "127.0.0.1" || bind == "::1") && props[keyBindAddress] == "" {
			logger.Info("standalone listens on loopback only; set bindAddress=0.0.0.0 (or brokerIP1) in -c to serve other hosts")
		}
		standaloneDefaults(props)
	}

	var nodes []node
	var printed []map[string]string
	started := 0 // nodes whose start was called
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		for i := len(nodes) - 1; i >= 0; i-- {
			stopNode(stopCtx, nodes[i], i < started, logger)
		}
	}()
	if opts.mode != "broker" {
		n, cfgProps, err := newNamesrv(props, opts, bind, logger)
		if err != nil {
			return err
		}
		if n.srv != nil {
			nodes = append(nodes, n)
		}
		printed = append(printed, cfgProps)
	}
	if opts.mode != "namesrv" {
		if props["namesrvAddr"] == "" && props[keyNamesrvAddrProperty] != "" {
			props["namesrvAddr"] = props[keyNamesrvAddrProperty]
		}
		if opts.mode == "standalone" && opts.namesrv == "" && props["namesrvAddr"] == "" {
			port := props[keyNamesrvListenPort]
			if port == "" {
				port = "9876"
			}
			props["namesrvAddr"] = net.JoinHostPort(loopbackFor(bind), port)
		}
		if opts.namesrv != "" {
			props["namesrvAddr"] = opts.namesrv
		}
		// As BrokerStartup does: UPDATE_BROKER_CONFIG persists into the -c file.
		if _, ok := props["brokerConfigPath"]; !ok && opts.configFile != "" {
			props["brokerConfigPath"] = opts.configFile
		}
		n, cfgProps, err := newBroker(props, bind, logger, opts.print)
		if err != nil {
			return err
		}
		if n.srv != nil {
			nodes = append(nodes, n)
		}
		printed = append(printed, cfgProps)
	}
	if opts.print {
		printConfig(stdout, printed)
		return nil
	}

	if err := startPprof(ctx, logger); err != nil {
		return fmt.Errorf("pprof: %w", err)
	}
	for _, n := range nodes {
		if err := n.srv.Start(ctx); err != nil {
			return fmt.Errorf("%s: listen: %w", n.name, err)
		}
		started++
		if err := n.start(ctx); err != nil {
			return fmt.Errorf("%s: start: %w", n.name, err)
		}
		logger.Info(n.name+" listening", "addr", n.srv.Addr().String())
	}
	<-ctx.Done()
	logger.Info("stopping", "reason", context.Cause(ctx))
	return nil
}

func stopNode(ctx context.Context, n node, started bool, logger *slog.Logger) {
	if started && n.drain != nil {
		n.drain(ctx)
	}
	// Stop taking requests, then the services behind them. A server never
	// started is left as it is (Shutdown does nothing then).
	if err := n.srv.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
		logger.Error(n.name+" shutdown", "err", err)
	}
	if err := n.stop(); err != nil {
		logger.Error(n.name+" stop", "err", err)
		return
	}
	if started {
		logger.Info(n.name + " stopped")
	}
}

// loopbackFor is where a standalone broker finds its own name server.
func loopbackFor(bind string) string {
	if bind == "" || bind == "0.0.0.0" || bind == "::" {
		return "127.0.0.1"
	}
	return bind
}

func newNamesrv(props map[string]string, opts options, bind string, logger *slog.Logger) (node, map[string]string, error) {
	cfg := namesrv.DefaultConfig()
	nsProps := props
	if opts.mode == "standalone" {
		// The broker's listenPort is not the name server's: standalone names it apart.
		nsProps = make(map[string]string, len(props))
		for k, v := range props {
			if k != "listenPort" {
				nsProps[k] = v
			}
		}
		if p, ok := props[keyNamesrvListenPort]; ok {
			nsProps["listenPort"] = p
		}
		// What the embedded name server writes lives in the store too, not in
		// Java's user.home/namesrv: the KV table, and UPDATE_NAMESRV_CONFIG's
		// file (not the shared -c file, which it would rewrite with its keys only).
		if _, ok := props["kvConfigPath"]; !ok {
			nsProps["kvConfigPath"] = filepath.Join(props["storePathRootDir"], "namesrv", "kvConfig.json")
		}
		if _, ok := props["configStorePath"]; !ok {
			nsProps["configStorePath"] = filepath.Join(props["storePathRootDir"], "namesrv", "namesrv.properties")
		}
	}
	if _, err := cfg.ApplyProperties(nsProps); err != nil {
		return node{}, nil, fmt.Errorf("name server config: %w", err)
	}
	if bind != "" {
		cfg.BindAddress = bind
	}
	// As NamesrvStartup does: UPDATE_NAMESRV_CONFIG persists into the -c file.
	if _, ok := nsProps["configStorePath"]; !ok && opts.configFile != "" && opts.mode == "namesrv" {
		cfg.ConfigStorePath = opts.configFile
	}
	scfg := remoting.ServerConfig{
		Addr:      net.JoinHostPort(cfg.BindAddress, strconv.Itoa(int(cfg.ListenPort))),
		Multicore: true,
		Logger:    logger.With("server", "namesrv"),
	}
	lim, err := limits(props, &scfg)
	if err != nil {
		return node{}, nil, fmt.Errorf("name server config: %w", err)
	}
	cfg.NetProperties = javaNetKeys(lim)
	tlsSt, err := tlsSettings(props)
	if err == nil {
		err = applyServerTLS(tlsSt, &scfg)
	}
	if err != nil {
		return node{}, nil, fmt.Errorf("name server config: %w", err)
	}
	if opts.print {
		printed := cfg.Properties()
		maps.Copy(printed, lim)
		return node{}, printed, nil
	}
	ns, err := namesrv.New(cfg, logger)
	if err != nil {
		return node{}, nil, err
	}
	srv := remoting.NewServer(scfg)
	ns.Register(srv)
	return node{name: "namesrv", srv: srv, start: ns.Start, stop: ns.Shutdown}, cfg.Properties(), nil
}

func newBroker(props map[string]string, bind string, logger *slog.Logger, printOnly bool) (node, map[string]string, error) {
	bcfg := processor.DefaultBrokerConfig()
	if _, err := bcfg.ApplyProperties(props); err != nil {
		return node{}, nil, err
	}
	// As BrokerStartup: the HA port follows the listen port, a master is
	// broker 0 and a slave must be another.
	if _, ok := props["haListenPort"]; !ok {
		bcfg.Store.HaListenPort = bcfg.ListenPort + 1
	}
	switch {
	case bcfg.Controller.EnableControllerMode:
		// The controller assigns id and role; the broker starts fenced as a slave.
		bcfg.Store.BrokerRole = processor.RoleSlave
	case bcfg.Store.BrokerRole == processor.RoleSlave:
		if bcfg.BrokerID <= 0 {
			return node{}, nil, fmt.Errorf("broker config: a SLAVE's brokerId must be > 0")
		}
	case bcfg.Store.BrokerRole == processor.RoleAsyncMaster, bcfg.Store.BrokerRole == processor.RoleSyncMaster:
		bcfg.BrokerID = 0
	default:
		return node{}, nil, fmt.Errorf("broker config brokerRole=%q: want ASYNC_MASTER, SYNC_MASTER or SLAVE", bcfg.Store.BrokerRole)
	}
	scfg := bcfg.Store
	scfg.MinInSyncReplicas = bcfg.Controller.MinInSyncReplicas // the store's SYNC_MASTER wait reads it
	merged := bcfg.Properties()
	if bind == "" {
		bind = "0.0.0.0"
	}
	rcfg := remoting.ServerConfig{
		Addr: net.JoinHostPort(bind, strconv.Itoa(bcfg.ListenPort)),
		// The "VIP" port Java brokers also serve (listenPort-2); old clients with
		// sendMessageWithVIPChannel=true dial it.
		ExtraAddrs: []string{net.JoinHostPort(bind, strconv.Itoa(bcfg.ListenPort-2))},
		Multicore:  true,
		Logger:     logger.With("server", "broker"),
	}
	lim, err := limits(props, &rcfg)
	if err != nil {
		return node{}, nil, fmt.Errorf("broker config: %w", err)
	}
	tlsSt, err := tlsSettings(props)
	if err == nil {
		err = applyServerTLS(tlsSt, &rcfg)
	}
	if err != nil {
		return node{}, nil, fmt.Errorf("broker config: %w", err)
	}
	nsTLS, err := clientTLS(tlsSt)
	if err != nil {
		return node{}, nil, fmt.Errorf("broker config: %w", err)
	}
	maps.Copy(merged, lim)
	if printOnly {
		return node{}, merged, nil
	}
	bcfg.NetProperties = brokerNetKeys(lim, bind, tlsSt)
	if scfg.BatchTopics, err = processor.BatchCQTopics(bcfg); err != nil {
		return node{}, nil, err
	}
	st, err := store.Open(scfg, logger)
	if err != nil {
		return node{}, nil, fmt.Errorf("open store: %w", err)
	}
	b, err := processor.NewBroker(bcfg, st, logger)
	if err != nil {
		_ = st.Shutdown()
		return node{}, nil, err
	}
	b.SetMaxHeldPulls(int(bcfg.MaxHeldPullRequests))
	closeNS := func() error { return nil }
	if nsTLS != nil && bcfg.NamesrvAddr != "" {
		// tls.enable: the broker's requests to the name server go over TLS too.
		c := remoting.NewClient(remoting.ClientConfig{Logger: logger.With("client", "namesrv"), TLS: nsTLS})
		b.SetNameServerInvoker(c)
		closeNS = c.Close
	}
	srv := remoting.NewServer(rcfg)
	b.Register(srv)
	haCfg := ha.Config{
		SyncFrameInterval:  time.Duration(scfg.HaSyncFrameIntervalMicros) * time.Microsecond,
		AsyncFrameInterval: time.Duration(scfg.HaAsyncFrameIntervalMicros) * time.Microsecond,
		SyncAckHold:        time.Duration(scfg.HaSyncAckHoldMicros) * time.Microsecond,
		// The heartbeat, housekeeping, batch and flow-control settings come
		// from the store's live snapshot, so updateBrokerConfig moves them.
		Live:   func() ha.Tunables { return ha.StoreTunables(st.LiveConfig()) },
		Logger: logger,
	}
	var haMaster *ha.Master
	var haSlave *ha.Slave
	var haSwitch *ha.AutoSwitch
	if cc := bcfg.Controller; cc.EnableControllerMode {
		// Controller mode: the auto-switch HA service, master or slave as the controller says.
		haSwitch, err = ha.NewAutoSwitch(st, ha.AutoConfig{Config: haCfg,
			ListenAddr: net.JoinHostPort(bind, strconv.Itoa(scfg.HaListenPort)), EpochFile: scfg.EpochFile(),
			SyncFromLastFile: cc.SyncFromLastFile, AsyncLearner: cc.AsyncLearner,
			HaMaxTimeSlaveNotCatchup: compat.Millis(int64(cc.HaMaxTimeSlaveNotCatchup)),
			CheckSyncStateSetPeriod:  compat.Millis(int64(cc.CheckSyncStateSetPeriod)),
			InSyncReplicas:           cc.InSyncReplicas, MinInSyncReplicas: cc.MinInSyncReplicas, AllAckInSyncStateSet: cc.AllAckInSyncStateSet})
		if err == nil {
			if err = b.EnableControllerMode(haSwitch); err != nil {
				_ = haSwitch.Close()
			}
		}
		if err != nil {
			_ = st.Shutdown()
			return node{}, nil, err
		}
		st.SetReplicaWaiter(processor.ControllerReplicaWaiter(haSwitch.WaitAckedAsync))
		b.SetHAStatus(func() ([]byte, error) { return codec.MarshalBody(haSwitch.Status()) })
	} else if bcfg.IsSlave() {
		haSlave = ha.NewSlave(st, haCfg)
		if scfg.HaMasterAddress != "" {
			haSlave.SetMasterAddr(scfg.HaMasterAddress)
		} else {
			b.OnMasterHAAddr(haSlave.SetMasterAddr)
		}
		b.SetHAStatus(func() ([]byte, error) { return codec.MarshalBody(haSlave.RuntimeInfo()) })
		b.SetHATransfer(haSlave)
	} else {
		haMaster = ha.NewMaster(st, haCfg)
		b.SetHAStatus(func() ([]byte, error) { return codec.MarshalBody(haMaster.RuntimeInfo(scfg.HaMaxGapNotInSync)) })
		b.SetHATransfer(haMaster)
	}
	exp, metricsAddr, err := metricsSetup(bcfg, b, st, logger)
	if err != nil {
		_ = st.Shutdown()
		return node{}, nil, err
	}
	if exp != nil {
		srv.AddRPCHook(exp.Hook())
		b.SetDeferredRPCObserver(exp.Hook()) // pulls and SYNC_FLUSH puts answered after their handler returned
	}
	start := func(ctx context.Context) error {
		if err := st.Start(); err != nil {
			return fmt.Errorf("start store: %w", err)
		}
		if haMaster != nil {
			if err := haMaster.Start(net.JoinHostPort(bind, strconv.Itoa(scfg.HaListenPort))); err != nil {
				return err
			}
		}
		if haSlave != nil {
			haSlave.Start()
		}
		if err := b.Start(ctx); err != nil {
			return err
		}
		if exp != nil {
			addr, err := exp.Serve(ctx, metricsAddr)
			if err != nil {
				return err
			}
			logger.Info("metrics listening", "addr", addr.String(), "path", "/metrics")
		}
		return nil
	}
	stop := func() error {
		var haErr error
		if haMaster != nil {
			haErr = haMaster.Close()
		}
		if haSlave != nil {
			haErr = haSlave.Close()
		}
		if haSwitch != nil {
			haErr = haSwitch.Close()
		}
		return errors.Join(b.Shutdown(), haErr, closeNS(), st.Shutdown())
	}
	return node{name: "broker", srv: srv, start: start, drain: b.Drain, stop: stop}, merged, nil
}

// netConfig is the NettyServerConfig side of a configuration file and rmqd's
// own connection limits (README "Limits"), bound like every other key.
type netConfig struct {
	MaxConns              int   `prop:"serverMaxConnections"`
	MaxConnsPerIP         int   `prop:"serverMaxConnectionsPerIP"`
	FirstFrameTimeoutSecs int64 `prop:"serverFirstFrameTimeoutSeconds"`
	HighWaterMark         int   `prop:"writeBufferHighWaterMark"`
	LowWaterMark          int   `prop:"writeBufferLowWaterMark"`
	WriteStallTimeoutSecs int64 `prop:"serverWriteStallTimeoutSeconds"`
	MaxQueuedRequestBytes int64 `prop:"serverMaxQueuedRequestBytes"`
	MaxRequestsPerConn    int   `prop:"serverMaxRequestsPerConnection"`
	IdleTimeoutSecs       int   `prop:"serverChannelMaxIdleTimeSeconds"`
	// SelectorThreads is Java's serverSelectorThreads, Netty's I/O threads:
	// here the gnet event loops. 0 (rmqd's default): remoting.DefaultEventLoops.
	SelectorThreads int `prop:"serverSelectorThreads"`
}

func defaultNetConfig() netConfig {
	return netConfig{
		MaxConns:              remoting.DefaultMaxConns,
		MaxConnsPerIP:         remoting.DefaultMaxConnsPerIP,
		FirstFrameTimeoutSecs: int64(remoting.DefaultFirstFrameTimeout / time.Second),
		WriteStallTimeoutSecs: int64(remoting.DefaultWriteStallTimeout / time.Second),
		MaxQueuedRequestBytes: remoting.DefaultMaxQueuedRequestBytes,
		MaxRequestsPerConn:    remoting.DefaultMaxRequestsPerConn,
		IdleTimeoutSecs:       int(remoting.DefaultIdleTimeout / time.Second),
	}
}

// limits reads the connection limits of a server from the configuration
// into cfg, and returns them as they take effect, for -p.
func limits(props map[string]string, cfg *remoting.ServerConfig) (map[string]string, error) {
	n := defaultNetConfig()
	if _, err := compat.BindConfig(props, &n); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	// Java's 0 means Netty's own marks; rmqd's defaults apply then too.
	cfg.MaxConns = n.MaxConns
	cfg.MaxConnsPerIP = n.MaxConnsPerIP
	cfg.FirstFrameTimeout = compat.Seconds(int64(n.FirstFrameTimeoutSecs))
	cfg.WriteBufferHighWaterMark = n.HighWaterMark
	cfg.WriteBufferLowWaterMark = n.LowWaterMark
	cfg.WriteStallTimeout = compat.Seconds(int64(n.WriteStallTimeoutSecs))
	cfg.MaxQueuedRequestBytes = n.MaxQueuedRequestBytes
	cfg.MaxRequestsPerConn = n.MaxRequestsPerConn
	if n.SelectorThreads < 0 || n.SelectorThreads > 1024 {
		return nil, fmt.Errorf("config: serverSelectorThreads=%d: want 0 (one per CPU but one) to 1024", n.SelectorThreads)
	}
	cfg.NumEventLoop = n.SelectorThreads
	if n.IdleTimeoutSecs > 0 {
		cfg.IdleTimeout = compat.Seconds(int64(n.IdleTimeoutSecs))
	}
	// Zero in a config means "no limit" for rmqd's own keys, as negative does.
	for _, p := range []*int{&cfg.MaxConns, &cfg.MaxConnsPerIP, &cfg.MaxRequestsPerConn} {
		if *p == 0 {
			*p = -1
		}
	}
	if cfg.MaxQueuedRequestBytes == 0 {
		cfg.MaxQueuedRequestBytes = -1
	}
	if cfg.WriteStallTimeout == 0 {
		cfg.WriteStallTimeout = -1
	}
	if cfg.FirstFrameTimeout == 0 {
		cfg.FirstFrameTimeout = -1
	}
	high, low := cfg.WriteBufferHighWaterMark, cfg.WriteBufferLowWaterMark
	if high == 0 {
		high = remoting.DefaultWriteBufferHighWaterMark
	}
	if low == 0 {
		low = min(remoting.DefaultWriteBufferLowWaterMark, high/2)
	}
	n.HighWaterMark, n.LowWaterMark = high, low
	n.MaxConns, n.MaxConnsPerIP, n.MaxRequestsPerConn = cfg.MaxConns, cfg.MaxConnsPerIP, cfg.MaxRequestsPerConn
	n.FirstFrameTimeoutSecs = int64(cfg.FirstFrameTimeout / time.Second)
	n.MaxQueuedRequestBytes = cfg.MaxQueuedRequestBytes
	n.WriteStallTimeoutSecs = int64(cfg.WriteStallTimeout / time.Second)
	n.IdleTimeoutSecs = int(cfg.IdleTimeout / time.Second)
	return compat.ConfigProperties(&n), nil
}

// javaNetKeys picks the keys of lim that are Java's NettyServerConfig fields,
// the ones Java's GET_NAMESRV_CONFIG lists (rmqd's own limits are not).
func javaNetKeys(lim map[string]string) map[string]string {
	out := map[string]string{}
	for _, k := range []string{"writeBufferHighWaterMark", "writeBufferLowWaterMark", "serverSelectorThreads",
		"serverChannelMaxIdleTimeSeconds"} {
		if v, ok := lim[k]; ok {
			out[k] = v
		}
	}
	return out
}

// brokerNetKeys are the NettyServerConfig and NettyClientConfig keys Java's
// GET_BROKER_CONFIG lists that rmqd binds outside BrokerConfig.
func brokerNetKeys(lim map[string]string, bind string, st remoting.TLSSettings) map[string]string {
	out := javaNetKeys(lim)
	out["bindAddress"] = bind
	out["useTLS"] = strconv.FormatBool(st.ClientEnable)
	// NettyClientConfig's default, the machine's CPU count: mqadmin's exportMetrics
	// reports it as the broker's cpuNum.
	out["clientCallbackExecutorThreads"] = strconv.Itoa(runtime.NumCPU())
	return out
}

// unknownKeys are the keys of props that no part of rmqd binds and that are no
// Java key rmqd knows of (compat.ClassifyJavaKey): most likely a typo.
func unknownKeys(props map[string]string) []string {
	return unboundKeys(props)[compat.KeyUnknown]
}

// unboundKeys sorts the keys of props no config struct binds by their class
// (compat.ClassifyJavaKey): unknown, no effect, not honoured, or refused.
func unboundKeys(props map[string]string) map[compat.KeyClass][]string {
	known := boundKeys()
	out := map[compat.KeyClass][]string{}
	for k, v := range props {
		if !known[k] {
			c, _ := compat.ClassifyJavaKey(k, v)
			out[c] = append(out[c], k)
		}
	}
	for _, keys := range out {
		sort.Strings(keys)
	}
	return out
}

// boundKeys are the keys some config struct of rmqd binds.
func boundKeys() map[string]bool {
	ns, b, n, tc := namesrv.DefaultConfig(), processor.DefaultBrokerConfig(), defaultNetConfig(), defaultTLSConfig()
	known := map[string]bool{keyNamesrvListenPort: true, keyNamesrvAddrProperty: true}
	for _, cfg := range []any{&ns, &b, &n, &tc} {
		keys, _ := compat.ConfigKeys(cfg)
		for _, k := range keys {
			known[k] = true
		}
	}
	return known
}

// reportUnboundKeys tells what becomes of the keys nothing binds. Java
// ignores them all silently, so a typo goes unnoticed there; here a key that
// is no Java key is warned about, a Java behaviour rmqd does not give is
// warned about apart, and a Java setting that means nothing to rmqd is only
// noted. Refused values fail the config binding later.
func reportUnboundKeys(props map[string]string, logger *slog.Logger) {
	u := unboundKeys(props)
	if k := u[compat.KeyUnknown]; len(k) > 0 {
		logger.Warn("configuration keys rmqd does not know are ignored: a typo, or a Java setting newer than rmqd", "keys", k)
	}
	if k := u[compat.KeyNotHonoured]; len(k) > 0 {
		logger.Warn("Java settings rmqd does not honour: it behaves as Java's default does (docs/compatibility.md)", "keys", k)
	}
	if k := u[compat.KeyNoEffect]; len(k) > 0 {
		logger.Info("Java settings with no effect in rmqd", "keys", k)
	}
}

func printConfig(w io.Writer, sets []map[string]string) {
	for _, m := range sets {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "%s=%s\n", k, m[k])
		}
	}
}
