// Package metrics exports the broker's statistics in Prometheus text format
// under the names, labels and units Apache RocketMQ 5.x's OpenTelemetry metrics
// carry when metricsExporterType=PROM, so Grafana dashboards written for the
// Java broker work unchanged; Go runtime and process metrics come with them.
//
// Nothing is counted here per message: the broker's own atomic counters
// (including POP's revive counts and the timer's per-topic counts) are read at
// scrape time, and RPC latency is kept in per-code atomic buckets found
// through a copy-on-write map.
package metrics

import (
	"compress/gzip"
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
	common map[string]string
	broker *brokerCollector
	rpc    *rpcLatency
	log    *slog.Logger
	cache  scrapeCache
	slots  chan struct{} // one per scrape being served (maxScrapes)
}

// New builds an exporter over a broker and its store (st may be nil).
func New(cfg Config, b BrokerSource, st StoreSource, logger *slog.Logger) *Exporter {
	if logger == nil {
		logger = slog.Default()
	}
	// Every Java series carries the scope and the node labels
	// (BrokerMetricsManager.newAttributesBuilder plus the exporter's scope).
	common := map[string]string{"otel_scope_name": "broker-meter", "cluster": cfg.Cluster,
		"node_type": "broker", "node_id": cfg.BrokerName}
	for k, v := range cfg.Labels {
		common[k] = v
	}
	if cfg.Delta {
		common["aggregation"] = "delta"
	}
	e := &Exporter{common: common, broker: &brokerCollector{b: b, st: st}, rpc: newRPCLatency(), log: logger,
		slots: make(chan struct{}, maxScrapes)}
	e.cache.ttl = gatherTTL
	e.cache.render = e.render
	return e
}

// render gathers every series once and writes them in the text format.
func (e *Exporter) render() []byte {
	s := newSink()
	collectGo(s)
	collectProcess(s)
	rs := s.withCommon(e.common)
	e.broker.collect(rs)
	e.rpc.collect(rs)
	return s.appendText(make([]byte, 0, 16<<10))
}

// Hook is the remoting hook that times every request for rocketmq_rpc_latency;
// add it to the broker's server.
func (e *Exporter) Hook() *RPCHook { return &RPCHook{l: e.rpc} }

// Handler serves the Prometheus text format. The endpoint has no auth (as
// Java's) and each gathering walks every group's queues: scrapes within
// gatherTTL share one gathering, and at most maxScrapes are served at once
// (others get 503), so a peer scraping in a loop cannot take a core.
func (e *Exporter) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case e.slots <- struct{}{}:
			defer func() { <-e.slots }()
		default:
			http.Error(w, fmt.Sprintf("limit of concurrent requests reached (%d), try again later", maxScrapes),
				http.StatusServiceUnavailable)
			return
		}
		body := e.cache.get()
		h := w.Header()
		h.Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		if !acceptsGzip(r) {
			_, _ = w.Write(body)
			return
		}
		h.Set("Content-Encoding", "gzip")
		h.Add("Vary", "Accept-Encoding")
		// A failed write is the scraper's own hang-up: nothing to answer.
		zw := gzip.NewWriter(w)
		_, _ = zw.Write(body)
		_ = zw.Close()
	})
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		if enc, _, _ := strings.Cut(strings.TrimSpace(part), ";"); enc == "gzip" {
			return true
		}
	}
	return false
}

const (
	gatherTTL  = time.Second
	maxScrapes = 4
)

// scrapeCache hands out one rendering for ttl: the bytes are only read once
// made, so concurrent scrapes may share them.
type scrapeCache struct {
	render func() []byte
	ttl    time.Duration

	mu   sync.Mutex
	at   time.Time
	body []byte
}

func (c *scrapeCache) get() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at.IsZero() || time.Since(c.at) >= c.ttl {
		c.body = c.render()
		c.at = time.Now()
	}
	return c.body
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

var (
	labelsIn    = []string{"topic", "message_type", "is_system"}
	labelsOut   = []string{"topic", "consumer_group", "is_system"}
	labelsLag   = []string{"consumer_group", "topic", "is_retry", "is_system"}
	labelsStore = []string{"storage_type", "storage_medium"}

	descMessagesIn     = newDesc("rocketmq_messages_in_total", "Total number of incoming messages", typeCounter, labelsIn...)
	descThroughputIn   = newDesc("rocketmq_throughput_in_total", "Total traffic of incoming messages", typeCounter, labelsIn...)
	descMessageSize    = newDesc("rocketmq_message_size", "Incoming messages size", typeHistogram, labelsIn...)
	descMessagesOut    = newDesc("rocketmq_messages_out_total", "Total number of outgoing messages", typeCounter, labelsOut...)
	descThroughputOut  = newDesc("rocketmq_throughput_out_total", "Total traffic of outgoing messages", typeCounter, labelsOut...)
	descProducerConns  = newDesc("rocketmq_producer_connections", "Producer connections", typeGauge, "language", "version", "protocol_type")
	descConsumerConns  = newDesc("rocketmq_consumer_connections", "Consumer connections", typeGauge, "consumer_group", "language", "version", "consume_mode", "protocol_type", "is_system")
	descLagMessages    = newDesc("rocketmq_consumer_lag_messages", "Consumer lag messages", typeGauge, labelsLag...)
	descLagLatency     = newDesc("rocketmq_consumer_lag_latency_milliseconds", "Consumer lag time", typeGauge, labelsLag...)
	descInflight       = newDesc("rocketmq_consumer_inflight_messages", "Consumer inflight messages", typeGauge, labelsLag...)
	descQueueing       = newDesc("rocketmq_consumer_queueing_latency_milliseconds", "Consumer queueing time", typeGauge, labelsLag...)
	descReady          = newDesc("rocketmq_consumer_ready_messages", "Consumer ready messages", typeGauge, labelsLag...)
	descPermission     = newDesc("rocketmq_broker_permission", "Broker permission", typeGauge)
	descTopicNum       = newDesc("rocketmq_topic_number", "Active topic number", typeGauge)
	descGroupNum       = newDesc("rocketmq_consumer_group_number", "Active subscription group number", typeGauge)
	descStorageSize    = newDesc("rocketmq_storage_size_bytes", "Broker storage size", typeGauge, labelsStore...)
	descFlushBehind    = newDesc("rocketmq_storage_flush_behind_bytes", "Broker flush behind bytes", typeGauge, labelsStore...)
	descDispatchBehind = newDesc("rocketmq_storage_dispatch_behind_bytes", "Broker dispatch behind bytes", typeGauge, labelsStore...)
	descReserveTime    = newDesc("rocketmq_storage_message_reserve_time_milliseconds", "Broker message reserve time", typeGauge, labelsStore...)
	descTimerEnqLag    = newDesc("rocketmq_timer_enqueue_lag", "Timer enqueue messages lag", typeGauge, labelsStore...)
	descTimerEnqLat    = newDesc("rocketmq_timer_enqueue_latency_milliseconds", "Timer enqueue latency", typeGauge, labelsStore...)
	descTimerDeqLag    = newDesc("rocketmq_timer_dequeue_lag", "Timer dequeue messages lag", typeGauge, labelsStore...)
	descTimerDeqLat    = newDesc("rocketmq_timer_dequeue_latency_milliseconds", "Timer dequeue latency", typeGauge, labelsStore...)
	descTimerSnapshot  = newDesc("rocketmq_timer_message_snapshot", "Timer message distribution snapshot, only count timing messages in 24h.", typeGauge, append(append([]string(nil), labelsStore...), "timer_bound_s")...)
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

func (c *brokerCollector) collect(out *sink) {
	now := time.Now()
	s := c.b.MetricsSnapshot(now)
	gauge, counter := out.gauge, out.counter
	gauge(descPermission, float64(s.Permission))
	gauge(descTopicNum, float64(s.TopicNum))
	gauge(descGroupNum, float64(s.GroupNum))

	for _, t := range s.Topics {
		lv := []string{t.Topic, t.MessageType, bools(t.System)}
		counter(descMessagesIn, float64(t.Messages), lv...)
		counter(descThroughputIn, float64(t.Bytes), lv...)
		cum := make([]uint64, len(messageSizeBounds))
		var n uint64
		for i := range messageSizeBounds {
			n += t.Sizes.Counts[i]
			cum[i] = n
		}
		n += t.Sizes.Counts[len(messageSizeBounds)]
		out.histogram(descMessageSize, messageSizeBounds, cum, n, float64(t.Sizes.Sum), lv...)
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
	collectTimerTopics(out, &s)
	collectPop(out, &s)
	collectCreateTimes(out, &s)
	collectEvents(out, &s)

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
