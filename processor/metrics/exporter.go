// Package metrics exports the broker's statistics in Prometheus text format
// under the names, labels and units Apache RocketMQ 5.x's OpenTelemetry metrics
// carry when metricsExporterType=PROM, so Grafana dashboards written for the
// Java broker work unchanged; Go runtime and process metrics come with them.
//
// Nothing is counted here per message: the broker's own atomic counters are
// read at scrape time (a prometheus.Collector), and RPC latency is kept in
// per-code atomic buckets found through a copy-on-write map.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"golang.org/x/sys/unix"

	"rmqd/processor"
)

// BrokerSource is the broker side of a scrape (processor.Broker).
type BrokerSource interface {
	MetricsSnapshot(now time.Time) processor.MetricsSnapshot
}

// StoreSource is the store side of a scrape (store.DefaultStore).
type StoreSource interface {
	FlushBehindBytes() int64
	DispatchBehindBytes() int64
	EarliestStoreTime() int64
	RootDir() string
}

// Config holds the Java keys that shape the export.
type Config struct {
	Cluster, BrokerName string
	// Labels are metricsLabel's extra key:value pairs.
	Labels map[string]string
	// Delta is metricsInDelta: Java then adds aggregation="delta".
	Delta bool
}

// Exporter serves /metrics.
type Exporter struct {
	reg *prometheus.Registry
	rpc *rpcLatency
	log *slog.Logger
}

// New builds an exporter over a broker and its store (st may be nil).
func New(cfg Config, b BrokerSource, st StoreSource, logger *slog.Logger) *Exporter {
	if logger == nil {
		logger = slog.Default()
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Every Java series carries the scope and the node labels
	// (BrokerMetricsManager.newAttributesBuilder plus the exporter's scope).
	common := prometheus.Labels{"otel_scope_name": "broker-meter", "cluster": cfg.Cluster,
		"node_type": "broker", "node_id": cfg.BrokerName}
	for k, v := range cfg.Labels {
		common[k] = v
	}
	if cfg.Delta {
		common["aggregation"] = "delta"
	}
	e := &Exporter{reg: reg, rpc: newRPCLatency(), log: logger}
	wrapped := prometheus.WrapRegistererWith(common, reg)
	wrapped.MustRegister(&brokerCollector{b: b, st: st}, e.rpc)
	return e
}

// Hook is the remoting hook that times every request for rocketmq_rpc_latency;
// add it to the broker's server.
func (e *Exporter) Hook() *RPCHook { return &RPCHook{l: e.rpc} }

// Handler serves the Prometheus text format. The endpoint has no auth (as
// Java's) and each gathering walks every group's queues: scrapes within
// gatherTTL share one gathering, and at most maxScrapes are served at once
// (others get 503), so a peer scraping in a loop cannot take a core.
func (e *Exporter) Handler() http.Handler {
	return promhttp.HandlerFor(&cachedGatherer{g: e.reg, ttl: gatherTTL},
		promhttp.HandlerOpts{ErrorLog: slogAdapter{e.log}, MaxRequestsInFlight: maxScrapes})
}

const (
	gatherTTL  = time.Second
	maxScrapes = 4
)

// cachedGatherer hands out one gathering for ttl: the families it returns are
// only read by the encoder, so concurrent scrapes may share them.
type cachedGatherer struct {
	g   prometheus.Gatherer
	ttl time.Duration

	mu  sync.Mutex
	at  time.Time
	mfs []*dto.MetricFamily
	err error
}

func (c *cachedGatherer) Gather() ([]*dto.MetricFamily, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at.IsZero() || time.Since(c.at) >= c.ttl {
		c.mfs, c.err = c.g.Gather()
		c.at = time.Now()
	}
	return c.mfs, c.err
}

// Serve listens on addr and serves /metrics until ctx ends (Java's
// PrometheusHttpServer on metricsPromExporterHost:metricsPromExporterPort).
// It returns once listening; the listen error, if any, is returned.
func (e *Exporter) Serve(ctx context.Context, addr string) (net.Addr, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", e.Handler())
	// Java's exporter answers on every path; so does this one.
	mux.Handle("/", e.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.log.Error("metrics server stopped", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return ln.Addr(), nil
}

type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Println(v ...any) { a.l.Warn("metrics: " + fmt.Sprint(v...)) }

var (
	labelsIn    = []string{"topic", "message_type", "is_system"}
	labelsOut   = []string{"topic", "consumer_group", "is_system"}
	labelsLag   = []string{"consumer_group", "topic", "is_retry", "is_system"}
	labelsStore = []string{"storage_type", "storage_medium"}

	descMessagesIn     = prometheus.NewDesc("rocketmq_messages_in_total", "Total number of incoming messages", labelsIn, nil)
	descThroughputIn   = prometheus.NewDesc("rocketmq_throughput_in_total", "Total traffic of incoming messages", labelsIn, nil)
	descMessageSize    = prometheus.NewDesc("rocketmq_message_size", "Incoming messages size", labelsIn, nil)
	descMessagesOut    = prometheus.NewDesc("rocketmq_messages_out_total", "Total number of outgoing messages", labelsOut, nil)
	descThroughputOut  = prometheus.NewDesc("rocketmq_throughput_out_total", "Total traffic of outgoing messages", labelsOut, nil)
	descProducerConns  = prometheus.NewDesc("rocketmq_producer_connections", "Producer connections", []string{"language", "version", "protocol_type"}, nil)
	descConsumerConns  = prometheus.NewDesc("rocketmq_consumer_connections", "Consumer connections", []string{"consumer_group", "language", "version", "consume_mode", "protocol_type", "is_system"}, nil)
	descLagMessages    = prometheus.NewDesc("rocketmq_consumer_lag_messages", "Consumer lag messages", labelsLag, nil)
	descLagLatency     = prometheus.NewDesc("rocketmq_consumer_lag_latency_milliseconds", "Consumer lag time", labelsLag, nil)
	descInflight       = prometheus.NewDesc("rocketmq_consumer_inflight_messages", "Consumer inflight messages", labelsLag, nil)
	descQueueing       = prometheus.NewDesc("rocketmq_consumer_queueing_latency_milliseconds", "Consumer queueing time", labelsLag, nil)
	descReady          = prometheus.NewDesc("rocketmq_consumer_ready_messages", "Consumer ready messages", labelsLag, nil)
	descPermission     = prometheus.NewDesc("rocketmq_broker_permission", "Broker permission", nil, nil)
	descTopicNum       = prometheus.NewDesc("rocketmq_topic_number", "Active topic number", nil, nil)
	descGroupNum       = prometheus.NewDesc("rocketmq_consumer_group_number", "Active subscription group number", nil, nil)
	descStorageSize    = prometheus.NewDesc("rocketmq_storage_size_bytes", "Broker storage size", labelsStore, nil)
	descFlushBehind    = prometheus.NewDesc("rocketmq_storage_flush_behind_bytes", "Broker flush behind bytes", labelsStore, nil)
	descDispatchBehind = prometheus.NewDesc("rocketmq_storage_dispatch_behind_bytes", "Broker dispatch behind bytes", labelsStore, nil)
	descReserveTime    = prometheus.NewDesc("rocketmq_storage_message_reserve_time_milliseconds", "Broker message reserve time", labelsStore, nil)
	descTimerEnqLag    = prometheus.NewDesc("rocketmq_timer_enqueue_lag", "Timer enqueue messages lag", labelsStore, nil)
	descTimerEnqLat    = prometheus.NewDesc("rocketmq_timer_enqueue_latency_milliseconds", "Timer enqueue latency", labelsStore, nil)
	descTimerDeqLag    = prometheus.NewDesc("rocketmq_timer_dequeue_lag", "Timer dequeue messages lag", labelsStore, nil)
	descTimerDeqLat    = prometheus.NewDesc("rocketmq_timer_dequeue_latency_milliseconds", "Timer dequeue latency", labelsStore, nil)
	descTimerSnapshot  = prometheus.NewDesc("rocketmq_timer_message_snapshot", "Timer message distribution snapshot, only count timing messages in 24h.", append(append([]string(nil), labelsStore...), "timer_bound_s"), nil)
)

// messageSizeBounds are processor.MessageSizeBuckets as histogram bounds.
var messageSizeBounds = func() []float64 {
	b := make([]float64, len(processor.MessageSizeBuckets))
	for i, v := range processor.MessageSizeBuckets {
		b[i] = float64(v)
	}
	return b
}()

type brokerCollector struct {
	b  BrokerSource
	st StoreSource
}

// Describe sends nothing: the series depend on the broker's topics and groups,
// so the collector is unchecked.
func (c *brokerCollector) Describe(chan<- *prometheus.Desc) {}

func (c *brokerCollector) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	s := c.b.MetricsSnapshot(now)
	gauge := func(d *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
	}
	counter := func(d *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, lv...)
	}
	gauge(descPermission, float64(s.Permission))
	gauge(descTopicNum, float64(s.TopicNum))
	gauge(descGroupNum, float64(s.GroupNum))

	for _, t := range s.Topics {
		lv := []string{t.Topic, t.MessageType, bools(t.System)}
		counter(descMessagesIn, float64(t.Messages), lv...)
		counter(descThroughputIn, float64(t.Bytes), lv...)
		buckets := make(map[float64]uint64, len(messageSizeBounds))
		var cum uint64
		for i, bound := range messageSizeBounds {
			cum += t.Sizes.Counts[i]
			buckets[bound] = cum
		}
		cum += t.Sizes.Counts[len(messageSizeBounds)]
		ch <- prometheus.MustNewConstHistogram(descMessageSize, cum, float64(t.Sizes.Sum), buckets, lv...)
	}
	for _, g := range s.Groups {
		lv := []string{g.Topic, g.Group, bools(g.System)}
		counter(descMessagesOut, float64(g.Messages), lv...)
		counter(descThroughputOut, float64(g.Bytes), lv...)
	}

	type prodKey struct{ lang, ver string }
	prods := map[prodKey]int{}
	for _, p := range s.Producers {
		prods[prodKey{strings.ToLower(p.Language), VersionDesc(p.Version)}]++
	}
	for k, n := range prods {
		gauge(descProducerConns, float64(n), k.lang, k.ver, "remoting")
	}
	type consKey struct{ group, lang, ver, mode string }
	cons := map[consKey]int{}
	for _, p := range s.Consumers {
		cons[consKey{p.Group, strings.ToLower(p.Language), VersionDesc(p.Version), consumeMode(p.ConsumeMode)}]++
	}
	for k, n := range cons {
		gauge(descConsumerConns, float64(n), k.group, k.lang, k.ver, k.mode, "remoting",
			bools(strings.HasPrefix(strings.ToLower(k.group), "cid_rmq_sys_")))
	}

	for _, l := range s.Lags {
		lv := []string{l.Group, l.Topic, bools(l.Retry), bools(l.System)}
		gauge(descLagMessages, float64(l.Lag), lv...)
		gauge(descLagLatency, float64(l.LagLatencyMs), lv...)
		// rmqd hands a pulled message's offset back with the next pull and keeps
		// no separate pull offset: nothing is counted as in flight, so ready
		// equals lag and queueing time equals lag time.
		gauge(descInflight, 0, lv...)
		gauge(descQueueing, float64(l.LagLatencyMs), lv...)
		gauge(descReady, float64(l.Lag), lv...)
	}

	sv := []string{"local", "disk"}
	gauge(descTimerEnqLag, float64(s.Timer.EnqueueLag), sv...)
	gauge(descTimerEnqLat, float64(s.Timer.EnqueueLatencyMs), sv...)
	gauge(descTimerDeqLag, float64(s.Timer.DequeueLag), sv...)
	// Java records whole seconds here under a milliseconds unit; rmqd reports
	// the milliseconds the name promises.
	gauge(descTimerDeqLat, float64(s.Timer.DequeueLatencyMs), sv...)
	for i, bound := range processor.TimerBoundsSec {
		gauge(descTimerSnapshot, float64(s.Timer.Due[i]), "local", "disk", strconv.FormatInt(bound, 10))
	}

	if c.st == nil {
		return
	}
	// DefaultStoreMetricsManager: the used space of the store's file system.
	var fs unix.Statfs_t
	if err := unix.Statfs(c.st.RootDir(), &fs); err == nil {
		gauge(descStorageSize, float64((fs.Blocks-fs.Bfree)*uint64(fs.Bsize)), sv...)
	}
	gauge(descFlushBehind, float64(c.st.FlushBehindBytes()), sv...)
	gauge(descDispatchBehind, float64(c.st.DispatchBehindBytes()), sv...)
	if t := c.st.EarliestStoreTime(); t > 0 {
		gauge(descReserveTime, float64(max(0, now.UnixMilli()-t)), sv...)
	}
}

func bools(b bool) string { return strconv.FormatBool(b) }

// consumeMode is ConsumeType.getTypeCN in lower case.
func consumeMode(t string) string {
	switch t {
	case "CONSUME_ACTIVELY":
		return "pull"
	case "CONSUME_PASSIVELY":
		return "push"
	case "CONSUME_POP":
		return "pop"
	}
	return strings.ToLower(t)
}

// VersionDesc is MQVersion.getVersionDesc in lower case for a client's version
// ordinal. From V4_0_0_SNAPSHOT (212) on the enum runs SNAPSHOT, release for
// every x.y.z up to V5_9_9, the last name, which Java also answers for anything
// newer; the 3.x names before it are irregular and answered as "v3_<ordinal>".
func VersionDesc(v int32) string {
	const first, last = 212, 611
	switch {
	case v < 0:
		return "v3_0_0_snapshot"
	case v < first:
		return "v3_" + strconv.Itoa(int(v))
	case v > last:
		v = last
	}
	n := int(v - first)
	rel := n / 2
	s := fmt.Sprintf("v%d_%d_%d", 4+rel/100, rel/10%10, rel%10)
	if n%2 == 0 {
		s += "_snapshot"
	}
	return s
}
