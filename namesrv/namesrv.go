package namesrv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/remoting"
)

// NameServer is the name server: route table, KV store, liveness scan and the
// request processor (see processor.go). It implements remoting.Processor and
// remoting.ConnListener.
type NameServer struct {
	log     *slog.Logger
	cfg     atomic.Pointer[Config]
	cfgMu   sync.Mutex // serializes UPDATE_NAMESRV_CONFIG
	routes  *RouteInfoManager
	kv      *KVConfigManager
	started time.Time // for needWaitForService

	orderConfWarned atomic.Int64 // unix nanos of the last "order config too big" warning

	routeBufs sync.Pool // *[]byte scratch for route JSON

	lifeMu  sync.Mutex
	cancel  context.CancelFunc
	scanned chan struct{} // closed when the scan goroutine exits
}

// New makes a name server and loads the KV store from cfg.KvConfigPath.
func New(cfg Config, logger *slog.Logger) (*NameServer, error) {
	if logger == nil {
		logger = slog.Default()
	}
	if cfg.ScanNotActiveBrokerInterval <= 0 {
		return nil, fmt.Errorf("namesrv: scanNotActiveBrokerInterval must be positive, got %d", cfg.ScanNotActiveBrokerInterval)
	}
	ns := &NameServer{log: logger, kv: NewKVConfigManager(cfg.KvConfigPath)}
	ns.cfg.Store(&cfg)
	ns.routes = NewRouteInfoManager(ns.cfg.Load, logger)
	ns.started = cfg.now()
	ns.routeBufs.New = func() any { b := make([]byte, 0, 1024); return &b }
	if err := ns.kv.Load(); err != nil {
		return nil, fmt.Errorf("namesrv: %w", err)
	}
	if n := ns.kv.TableSize(); n > MaxKVTableSize {
		logger.Warn("kv config is above its bound: loaded whole, but PUT_KV_CONFIG may not grow it further",
			"path", cfg.KvConfigPath, "bytes", n, "max", MaxKVTableSize)
	}
	return ns, nil
}

// Config returns a copy of the current configuration.
func (ns *NameServer) Config() Config { return *ns.cfg.Load() }

// Routes is the route table (for wiring and tests).
func (ns *NameServer) Routes() *RouteInfoManager { return ns.routes }

// KV is the KV config store.
func (ns *NameServer) KV() *KVConfigManager { return ns.kv }

// Register installs the name server on srv: GET_ROUTEINFO_BY_TOPIC on its own
// worker pool (clientRequestThreadPoolNums, like Java's client request executor),
// every other code on the default registration (defaultThreadPoolNums), and the
// name server as a connection listener so a closed broker connection unregisters
// the brokers registered over it. Adding it as a listener again is harmless.
func (ns *NameServer) Register(srv *remoting.Server) {
	cfg := ns.cfg.Load()
	srv.Register(codec.ReqGetRouteinfoByTopic, ns,
		remoting.WithWorkers(int(max(cfg.ClientRequestThreadPoolNums, 1))),
		remoting.WithQueue(int(max(cfg.ClientRequestThreadPoolQueueCap, 1))))
	srv.RegisterDefault(ns,
		remoting.WithWorkers(int(max(cfg.DefaultThreadPoolNums, 1))),
		remoting.WithQueue(int(max(cfg.DefaultThreadPoolQueueCapacity, 1))))
	srv.AddConnListener(ns)
}

// Start runs the liveness scan every scanNotActiveBrokerInterval until ctx ends
// or Shutdown.
func (ns *NameServer) Start(ctx context.Context) error {
	ns.lifeMu.Lock()
	defer ns.lifeMu.Unlock()
	if ns.cancel != nil {
		return errors.New("namesrv: already started")
	}
	ctx, cancel := context.WithCancel(ctx)
	ns.cancel = cancel
	ns.scanned = make(chan struct{})
	interval := compat.Millis(int64(ns.cfg.Load().ScanNotActiveBrokerInterval))
	go ns.scanLoop(ctx, interval)
	ns.log.Info("name server started", "scanInterval", interval)
	return nil
}

func (ns *NameServer) scanLoop(ctx context.Context, interval time.Duration) {
	defer close(ns.scanned)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			ns.routes.ScanNotActiveBrokers()
		}
	}
}

// Shutdown stops the liveness scan and waits for it.
func (ns *NameServer) Shutdown() error {
	ns.lifeMu.Lock()
	cancel, done := ns.cancel, ns.scanned
	ns.lifeMu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	<-done
	return nil
}

// OnConnect implements remoting.ConnListener.
func (ns *NameServer) OnConnect(remoting.Conn) {}

// OnClose unregisters the brokers registered over c (Java's
// BrokerHousekeepingService on close, exception and idle).
func (ns *NameServer) OnClose(c remoting.Conn) {
	if n := ns.routes.OnConnClosed(c.ID()); n > 0 {
		ns.log.Info("broker connection closed, brokers unregistered", "conn", c.ID(), "remote", c.RemoteAddr(), "brokers", n)
	}
}
