package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"rmqd/compat"
	"rmqd/namesrv"
	"rmqd/processor"
	"rmqd/remoting"
	"rmqd/store"
)

// Keys of rmqd's own, beside the Java ones.
const (
	keyNamesrvListenPort = "namesrvListenPort" // standalone: the name server's port
	keyBindAddress       = "bindAddress"       // NettyServerConfig.bindAddress (5.x)
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
	stop  func() error
}

func serve(ctx context.Context, opts options, stdout io.Writer, logger *slog.Logger) error {
	props, err := loadProperties(opts.configFile)
	if err != nil {
		return err
	}
	if opts.mode == "standalone" {
		standaloneDefaults(props)
	}
	bind := props[keyBindAddress]

	var nodes []node
	var printed []map[string]string
	if opts.mode != "broker" {
		n, cfgProps, err := newNamesrv(props, opts, bind, logger)
		if err != nil {
			return err
		}
		nodes = append(nodes, n)
		printed = append(printed, cfgProps)
	}
	if opts.mode != "namesrv" {
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
	started := 0
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		for i := started - 1; i >= 0; i-- {
			stopNode(stopCtx, nodes[i], logger)
		}
	}()
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

func stopNode(ctx context.Context, n node, logger *slog.Logger) {
	// Stop taking requests first, then the services behind them.
	if err := n.srv.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
		logger.Error(n.name+" shutdown", "err", err)
	}
	if err := n.stop(); err != nil {
		logger.Error(n.name+" stop", "err", err)
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
		if _, ok := props["kvConfigPath"]; !ok {
			nsProps["kvConfigPath"] = filepath.Join(props["storePathRootDir"], "namesrv", "kvConfig.json")
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
	if opts.print {
		return node{}, cfg.Properties(), nil
	}
	ns, err := namesrv.New(cfg, logger)
	if err != nil {
		return node{}, nil, err
	}
	srv := remoting.NewServer(remoting.ServerConfig{
		Addr:        net.JoinHostPort(cfg.BindAddress, strconv.Itoa(int(cfg.ListenPort))),
		Multicore:   true,
		IdleTimeout: idleTimeout(props),
		Logger:      logger.With("server", "namesrv"),
	})
	ns.Register(srv)
	return node{name: "namesrv", srv: srv, start: ns.Start, stop: ns.Shutdown}, cfg.Properties(), nil
}

func newBroker(props map[string]string, bind string, logger *slog.Logger, printOnly bool) (node, map[string]string, error) {
	bcfg := processor.DefaultBrokerConfig()
	if err := bcfg.ApplyProperties(props); err != nil {
		return node{}, nil, fmt.Errorf("broker config: %w", err)
	}
	scfg := store.DefaultConfig()
	if _, ok := props["storePathRootDir"]; !ok {
		props["storePathRootDir"] = bcfg.StorePathRootDir
	}
	if err := scfg.ApplyProperties(props); err != nil {
		return node{}, nil, fmt.Errorf("store config: %w", err)
	}
	bcfg.Others = scfg.Properties()
	merged := bcfg.Properties()
	if printOnly {
		return node{}, merged, nil
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
	if bind == "" {
		bind = "0.0.0.0"
	}
	srv := remoting.NewServer(remoting.ServerConfig{
		Addr: net.JoinHostPort(bind, strconv.Itoa(bcfg.ListenPort)),
		// The "VIP" port Java brokers also serve (listenPort-2); old clients with
		// sendMessageWithVIPChannel=true dial it.
		ExtraAddrs:  []string{net.JoinHostPort(bind, strconv.Itoa(bcfg.ListenPort-2))},
		Multicore:   true,
		IdleTimeout: idleTimeout(props),
		Logger:      logger.With("server", "broker"),
	})
	b.Register(srv)
	exp, metricsAddr, err := metricsSetup(props, bcfg, b, st, logger)
	if err != nil {
		_ = st.Shutdown()
		return node{}, nil, err
	}
	if exp != nil {
		srv.AddRPCHook(exp.Hook())
	}
	start := func(ctx context.Context) error {
		if err := st.Start(); err != nil {
			return fmt.Errorf("start store: %w", err)
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
		return errors.Join(b.Shutdown(), st.Shutdown())
	}
	return node{name: "broker", srv: srv, start: start, stop: stop}, merged, nil
}

// idleTimeout is NettyServerConfig.serverChannelMaxIdleTimeSeconds (120 s).
func idleTimeout(props map[string]string) time.Duration {
	if v, err := strconv.Atoi(props["serverChannelMaxIdleTimeSeconds"]); err == nil && v > 0 {
		return time.Duration(v) * time.Second
	}
	return remoting.DefaultIdleTimeout
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
