package main

import (
	"log/slog"
	"net"
	"strconv"
	"strings"

	"rmqd/codec"
	"rmqd/processor"
	"rmqd/processor/metrics"
	"rmqd/store"
)

// metricsSetup reads Java's metrics keys (BrokerConfig.metricsExporterType,
// metricsPromExporterHost/Port, metricsLabel, metricsInDelta). Only PROM is
// served; the OpenTelemetry push exporters (OTLP_GRPC, LOG) are refused
// rather than silently ignored. A nil exporter means metrics are off.
func metricsSetup(bcfg processor.BrokerConfig, b *processor.Broker,
	st *store.DefaultStore, logger *slog.Logger) (*metrics.Exporter, string, error) {
	if err := bcfg.CheckStart(); err != nil {
		return nil, "", err
	}
	switch bcfg.MetricsExporterType {
	case "", "DISABLE", "0":
		return nil, "", nil
	}
	host := bcfg.MetricsPromExporterHost
	if host == "" {
		host = bcfg.BrokerIP1 // as BrokerMetricsManager does
	}
	host = codec.BareHost(host) // "[::1]", Java's IPv6 default form
	labels := map[string]string{}
	for _, kv := range strings.Split(bcfg.MetricsLabel, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), ":"); ok && k != "" {
			labels[k] = v
		}
	}
	cfg := metrics.Config{Cluster: bcfg.BrokerClusterName, BrokerName: bcfg.BrokerName, Labels: labels,
		Delta: bcfg.MetricsInDelta}
	return metrics.New(cfg, b, st, logger.With("component", "metrics")), net.JoinHostPort(host, strconv.Itoa(bcfg.MetricsPromExporterPort)), nil
}
