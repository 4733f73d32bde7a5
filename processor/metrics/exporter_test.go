package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"rmqd/codec"
	"rmqd/processor"
)

func TestVersionDescMatchesMQVersion(t *testing.T) {
	for v, want := range map[int32]string{
		212: "v4_0_0_snapshot", 213: "v4_0_0", 401: "v4_9_4", 479: "v5_3_3", 611: "v5_9_9", 900: "v5_9_9",
	} {
		if got := VersionDesc(v); got != want {
			t.Errorf("VersionDesc(%d) = %q, want %q", v, got, want)
		}
	}
}

type snap processor.MetricsSnapshot

func (s snap) MetricsSnapshot(time.Time) processor.MetricsSnapshot {
	return processor.MetricsSnapshot(s)
}

// TestScrapeShowsSnapshotAndLatency checks the exposition of a snapshot and of
// timed requests, and that timing a request allocates nothing once its code
// pair was seen.
func TestScrapeShowsSnapshotAndLatency(t *testing.T) {
	s := snap{Cluster: "C", BrokerName: "b", Permission: 6, TopicNum: 3,
		Topics: []processor.TopicMetrics{{Topic: "T", MessageType: "normal", Messages: 5, Bytes: 1000,
			Sizes: processor.SizeHistogram{Counts: [7]uint64{5}, Sum: 1000}}},
		Groups:    []processor.GroupMetrics{{Topic: "T", Group: "G", Messages: 4, Bytes: 800}},
		Consumers: []processor.ClientMetrics{{Group: "G", Language: "GO", Version: 479, ConsumeMode: "CONSUME_PASSIVELY"}},
		Lags:      []processor.LagMetrics{{Topic: "T", Group: "G", Lag: 1, LagLatencyMs: 7}},
	}
	e := New(Config{Cluster: "C", BrokerName: "b"}, s, nil, nil)
	h := e.Hook()
	req := codec.NewRequest(codec.ReqSendMessageV2)
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	h.Timed(nil, req, resp, 2*time.Millisecond)
	if n := testing.AllocsPerRun(100, func() { h.Timed(nil, req, resp, time.Millisecond) }); n != 0 {
		t.Errorf("Timed allocates %v per request", n)
	}
	// A held pull: the remoting hook sees it unanswered (nil), the broker
	// reports it once answered.
	pull := codec.NewRequest(codec.ReqPullMessage)
	h.Timed(nil, pull, nil, time.Millisecond)
	h.ObserveDeferred(codec.ReqPullMessage, codec.RespSuccess, 1500*time.Millisecond, true, true)
	h.ObserveDeferred(codec.ReqPullMessage, codec.RespPullNotFound, 20*time.Second, true, false)
	if n := testing.AllocsPerRun(100, func() {
		h.ObserveDeferred(codec.ReqPullMessage, codec.RespSuccess, 2*time.Millisecond, false, true)
	}); n != 0 {
		t.Errorf("ObserveDeferred allocates %v per request", n)
	}
	rec := httptest.NewRecorder()
	e.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`rocketmq_messages_in_total{cluster="C",is_system="false",message_type="normal",node_id="b",node_type="broker",otel_scope_name="broker-meter",topic="T"} 5`,
		`rocketmq_message_size_bucket{cluster="C",is_system="false",message_type="normal",node_id="b",node_type="broker",otel_scope_name="broker-meter",topic="T",le="1024"} 5`,
		`rocketmq_messages_out_total{cluster="C",consumer_group="G",is_system="false",node_id="b",node_type="broker",otel_scope_name="broker-meter",topic="T"} 4`,
		`rocketmq_consumer_connections{cluster="C",consume_mode="push",consumer_group="G",is_system="false",language="go",node_id="b",node_type="broker",otel_scope_name="broker-meter",protocol_type="remoting",version="v5_3_3"} 1`,
		`rocketmq_consumer_lag_latency_milliseconds{cluster="C",consumer_group="G",is_retry="false",is_system="false",node_id="b",node_type="broker",otel_scope_name="broker-meter",topic="T"} 7`,
		`rocketmq_rpc_latency_milliseconds_count{cluster="C",is_long_polling="false",node_id="b",node_type="broker",otel_scope_name="broker-meter",protocol_type="remoting",request_code="send_message_v2",response_code="success",result="success"} 102`,
		`rocketmq_rpc_latency_milliseconds_bucket{cluster="C",is_long_polling="true",node_id="b",node_type="broker",otel_scope_name="broker-meter",protocol_type="remoting",request_code="pull_message",response_code="success",result="success",le="2000"} 1`,
		`rocketmq_rpc_latency_milliseconds_bucket{cluster="C",is_long_polling="true",node_id="b",node_type="broker",otel_scope_name="broker-meter",protocol_type="remoting",request_code="pull_message",response_code="success",result="success",le="1000"} 0`,
		`rocketmq_rpc_latency_milliseconds_count{cluster="C",is_long_polling="true",node_id="b",node_type="broker",otel_scope_name="broker-meter",protocol_type="remoting",request_code="pull_message",response_code="pull_not_found",result="write_channel_failed"} 1`,
		`rocketmq_rpc_latency_milliseconds_count{cluster="C",is_long_polling="false",node_id="b",node_type="broker",otel_scope_name="broker-meter",protocol_type="remoting",request_code="pull_message",response_code="success",result="success"} 101`, // AllocsPerRun runs once more
		`rocketmq_broker_permission{cluster="C",node_id="b",node_type="broker",otel_scope_name="broker-meter"} 6`,
		"go_goroutines ",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("scrape lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("scrape:\n%s", body)
	}
}
