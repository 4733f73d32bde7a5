package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Proxy is an Apache rocketmq-proxy 5.3.3 in cluster mode in front of a target: gRPC clients (the 5.x
// rocketmq-clients) talk to Endpoints, the proxy talks remoting to the target's name server and broker.
type Proxy struct {
	Endpoints    string // gRPC "127.0.0.1:port"
	RemotingAddr string // the proxy's own remoting port
	LogDir       string
	Proc         *Proc
	ports        []int
}

// ProxyConfig is what StartProxy writes to rmq-proxy.json beside the keys it sets itself
// (proxyMode, rocketMQClusterName, namesrvAddr, grpcServerPort, remotingListenPort).
type ProxyConfig map[string]any

// StartProxy starts rocketmq-proxy 5.3.3 (ProxyStartup from integration/java/target/lib/proxy) in cluster
// mode in front of tg on free loopback ports and waits until its gRPC and remoting ports accept.
// Its logs: <LogDir>/proxy/proxy.log (stdout+stderr), rmq-proxy.json, home/logs/rocketmqlogs/.
//
// Defaults changed from Java's for tests (extra overrides them): the shortest invisible time a receive
// may ask for is 1 s instead of 10 s, so redelivery scenarios take seconds.
func StartProxy(tb TB, tg *Target, extra ProxyConfig) *Proxy {
	tb.Helper()
	RequireJars(tb, "proxy")
	grpcPort, remotingPort := FreePort(tb), FreePort(tb)
	p := &Proxy{
		Endpoints:    Addr(grpcPort),
		RemotingAddr: Addr(remotingPort),
		LogDir:       filepath.Join(LogDir(tb), "proxy"),
		ports:        []int{grpcPort, remotingPort},
	}
	home := filepath.Join(p.LogDir, "home")
	if err := mkdirs(filepath.Join(home, "conf")); err != nil {
		tb.Fatalf("harness: %v", err)
	}
	cfg := ProxyConfig{
		"proxyMode":                    "cluster",
		"rocketMQClusterName":          tg.ClusterName,
		"namesrvAddr":                  tg.NamesrvAddr,
		"grpcServerPort":               grpcPort,
		"remotingListenPort":           remotingPort,
		"proxyName":                    "rmqd-it-proxy",
		"localServeAddr":               "127.0.0.1",
		"minInvisibleTimeMillsForRecv": 1000,
		"enablePrintJstack":            false,
		// Java sizes these by cores (2 here): a few long polls then starve the rest.
		"grpcConsumerThreadPoolNums":      8,
		"consumerProcessorThreadPoolNums": 8,
		"grpcClientManagerThreadPoolNums": 4,
		"producerProcessorThreadPoolNums": 4,
		// metricsExporterType is left at its default, DISABLE: proxy 5.4.0's fastjson2 binds "DISABLE" to the
		// setter taking an int and fails to start.
	}
	for k, v := range extra {
		cfg[k] = v
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		tb.Fatalf("harness: proxy config: %v", err)
	}
	conf := filepath.Join(home, "conf", "rmq-proxy.json")
	if err := os.WriteFile(conf, b, 0o644); err != nil {
		tb.Fatalf("harness: %v", err)
	}
	// Registered before the process: cleanups run last-in first-out, so this runs after it stopped.
	tb.Cleanup(func() { p.checkPortsReleased(tb) })
	homeArgs, err := JVMHome(home)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	jvm := append(append(append([]string{"java"}, jvmServerOpts...), homeArgs...),
		"-cp", filepath.Join(LibDir(tb, "proxy"), "*"), "org.apache.rocketmq.proxy.ProxyStartup", "-pc", conf)
	p.Proc = startProc(tb, "proxy", filepath.Join(p.LogDir, "proxy.log"), p.LogDir, []string{"ROCKETMQ_HOME=" + home}, jvm...)
	// Nothing of the proxy's graceful stop (30 s for gRPC) is under test.
	p.Proc.TermGrace = 2 * time.Second
	p.waitReady(tb, 120*time.Second)
	return p
}

func (p *Proxy) waitReady(tb TB, timeout time.Duration) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), timeout)
	defer cancel()
	start := time.Now()
	for {
		if exited, err := p.Proc.Exited(); exited {
			tb.Fatalf("harness: proxy exited during start-up (%v); log %s:\n%s", err, p.Proc.LogPath, Tail(p.Proc.LogPath, tailLines))
		}
		if portOpen(ctx, p.Endpoints) && portOpen(ctx, p.RemotingAddr) {
			tb.Logf("harness: proxy ready in %v (gRPC %s, remoting %s, logs %s)",
				time.Since(start).Round(time.Millisecond), p.Endpoints, p.RemotingAddr, p.LogDir)
			return
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("harness: proxy not ready after %v; log %s:\n%s", timeout, p.Proc.LogPath, Tail(p.Proc.LogPath, tailLines))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (p *Proxy) checkPortsReleased(tb TB) {
	deadline := time.Now().Add(5 * time.Second)
	for _, port := range p.ports {
		for !portFree(port) {
			if time.Now().After(deadline) {
				tb.Errorf("harness: port %d of the proxy still bound after stop", port)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// GrpcMsg is one message as the gRPC scenario program (integration/java/grpcclient) reports it.
type GrpcMsg struct {
	Index             int               `json:"index"` // sent only
	MsgID             string            `json:"msgId"`
	Topic             string            `json:"topic"`
	Tags              string            `json:"tags"`
	Keys              string            `json:"keys"`
	MessageGroup      string            `json:"messageGroup"`
	DeliveryTimestamp int64             `json:"deliveryTimestamp"`
	BodySha256        string            `json:"bodySha256"`
	BodySize          int               `json:"bodySize"`
	Properties        map[string]string `json:"properties"`
	SentAt            int64             `json:"sentAt"`     // sent: when send was called (ms)
	LocalState        string            `json:"localState"` // sent, tx: commit, rollback, unknown
	Recalled          bool              `json:"recalled"`   // sent, delay: recalled by its recall handle
	DeliveryAttempt   int               `json:"deliveryAttempt"`
	ReceivedAt        int64             `json:"receivedAt"` // received: when the client got it (ms)
	Action            string            `json:"action"`     // received: ack, skip, change, change+ack, error, SUCCESS, FAILURE
}

// GrpcResult is the gRPC scenario program's result line.
type GrpcResult struct {
	Scenario  string    `json:"scenario"`
	OK        bool      `json:"ok"`
	Error     string    `json:"error"`
	ElapsedMs int64     `json:"elapsedMs"`
	Sent      []GrpcMsg `json:"sent"`
	Received  []GrpcMsg `json:"received"`
	Errors    []string  `json:"errors"`
	Acked     int       `json:"acked"`
	Checks    int       `json:"checks"` // tx: transaction checks the client answered
	LogPath   string    `json:"-"`
}

// TryGrpc runs rmqd.it.GrpcMain roundtrip (rocketmq-client-java 5.0.8) against the proxy with args
// (flags of GrpcRoundtrip; --endpoints is added). err only when no result line could be had.
func TryGrpc(tb TB, p *Proxy, args ...string) (*GrpcResult, error) {
	tb.Helper()
	res := &GrpcResult{}
	var err error
	res.LogPath, err = runGrpcProgram(tb, p, "grpcclient", append([]string{"rmqd.it.GrpcMain", "roundtrip"}, args...), res)
	return res, err
}

// LiteResult is rmqd.it.LiteMain's result line.
type LiteResult struct {
	OK              bool           `json:"ok"`
	Error           string         `json:"error"`
	Sent            []string       `json:"sent"`
	Received        []LiteDelivery `json:"received"`
	SubscribedAfter []string       `json:"subscribedAfter"`
	// With --exclusive-group: the lite topics of the consumer that subscribed
	// first and of the one after it, and who got the next message ("A:..." or "B:...").
	ExclusiveA   []string `json:"exclusiveA"`
	ExclusiveB   []string `json:"exclusiveB"`
	ExclusiveGot []string `json:"exclusiveGot"`
	// WildcardGot: what the --wildcard-group consumer received, "lite:body".
	WildcardGot []string `json:"wildcardGot"`
	LogPath     string   `json:"-"`
}

// LiteDelivery is one message the lite consumer's listener was given.
type LiteDelivery struct {
	Lite    string `json:"lite"`
	Body    string `json:"body"`
	Attempt int    `json:"attempt"`
	Result  string `json:"result"`
}

// RunGrpcLite runs rmqd.it.LiteMain (lib/grpclite: rocketmq-client-java 5.2.0's LitePushConsumer) against the
// proxy with args (--topic, --group, --lites, --count, --fail-first), failing the test unless it reported ok.
func RunGrpcLite(tb TB, p *Proxy, args ...string) *LiteResult {
	tb.Helper()
	res := &LiteResult{}
	var err error
	res.LogPath, err = runGrpcProgram(tb, p, "grpclite", append([]string{"rmqd.it.LiteMain"}, args...), res)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	if !res.OK {
		tb.Fatalf("grpc lite %s failed: %s (stderr %s:\n%s)", strings.Join(args, " "), res.Error, res.LogPath, Tail(res.LogPath, 15))
	}
	return res
}

// runGrpcProgram runs a gRPC scenario program of lib against the proxy (--endpoints and --deadline added)
// and reads its result line into res. err only when no result line could be had.
func runGrpcProgram(tb TB, p *Proxy, lib string, argv []string, res any) (string, error) {
	tb.Helper()
	RequireJars(tb, lib)
	argv = append(argv, "--endpoints", p.Endpoints, "--deadline", fmt.Sprint((JavaTimeout - 10*time.Second).Milliseconds()))
	name := fmt.Sprintf("grpc-%02d", javaSeq.Add(1))
	stdout, logPath, err := runJVM(tb, name, filepath.Join(LibDir(tb, lib), "*"), JavaTimeout, argv)
	line := lastJSONLine(stdout)
	if line == nil {
		return logPath, fmt.Errorf("%s: no result line (run error: %v); stdout %.300q; stderr %s:\n%s",
			argv[0], err, stdout, logPath, Tail(logPath, 20))
	}
	// The whole result line beside the JVM's stderr, for reading a failure afterwards.
	_ = os.WriteFile(strings.TrimSuffix(logPath, ".log")+".json", line, 0o644)
	if jerr := json.Unmarshal(line, res); jerr != nil {
		return logPath, fmt.Errorf("%s: result %.300q: %w", argv[0], line, jerr)
	}
	return logPath, nil
}

// RunGrpc is TryGrpc failing the test unless the program reported ok.
func RunGrpc(tb TB, p *Proxy, args ...string) *GrpcResult {
	tb.Helper()
	r, err := TryGrpc(tb, p, args...)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	if !r.OK {
		tb.Fatalf("grpc roundtrip %s failed: %s; errors %v (stderr %s:\n%s)", strings.Join(args, " "), r.Error,
			r.Errors, r.LogPath, Tail(r.LogPath, 15))
	}
	return r
}

// CreateTopic creates topic on tg's broker over the wire (UPDATE_AND_CREATE_TOPIC, as mqadmin updateTopic
// does) with queues read/write queues and attributes such as "+message.type=FIFO", then waits until the
// name server serves its route.
func CreateTopic(tb TB, tg *Target, topic string, queues int, attributes string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), 30*time.Second)
	defer cancel()
	ext := map[string]string{
		"topic": topic, "defaultTopic": "TBW102", "readQueueNums": fmt.Sprint(queues),
		"writeQueueNums": fmt.Sprint(queues), "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0",
		"order": "false", "attributes": attributes,
	}
	resp, _, err := probeRequest(ctx, tg.BrokerAddr, 17, ext)
	if err != nil || resp.Code != 0 {
		tb.Fatalf("harness: create topic %s on %s: code %d %s %v", topic, tg.BrokerAddr, resp.Code, resp.Remark, err)
	}
	for {
		ok, why, err := routeHasBroker(ctx, tg.NamesrvAddr, topic, tg.BrokerAddr)
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("harness: route of %s not served after create: %s %v", topic, why, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// CreateGroup creates or updates a subscription group on tg's broker (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
// as mqadmin updateSubGroup does): orderly = consumeMessageOrderly (FIFO for POP consumers), retryMaxTimes
// (a gRPC consumer gets retryMaxTimes+1 delivery attempts before the message goes to %DLQ%group).
func CreateGroup(tb TB, tg *Target, group string, orderly bool, retryMaxTimes int) {
	tb.Helper()
	CreateGroupConfig(tb, tg, group, map[string]any{"consumeMessageOrderly": orderly, "retryMaxTimes": retryMaxTimes})
}

// CreateGroupConfig is CreateGroup with any SubscriptionGroupConfig fields (Java's JSON names), e.g.
// "groupRetryPolicy": {"type": "EXPONENTIAL", "exponentialRetryPolicy": {...}}.
func CreateGroupConfig(tb TB, tg *Target, group string, fields map[string]any) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), 30*time.Second)
	defer cancel()
	cfg := map[string]any{
		"groupName": group, "consumeEnable": true, "consumeFromMinEnable": true, "consumeBroadcastEnable": true,
		"consumeMessageOrderly": false, "retryQueueNums": 1, "retryMaxTimes": 16, "brokerId": 0,
		"whichBrokerWhenConsumeSlowly": 1, "notifyConsumerIdsChangedEnable": true,
	}
	for k, v := range fields {
		cfg[k] = v
	}
	body, err := json.Marshal(cfg)
	if err != nil {
		tb.Fatalf("harness: %v", err)
	}
	resp, _, err := probeRequestBody(ctx, tg.BrokerAddr, 200, nil, body)
	if err != nil || resp.Code != 0 {
		tb.Fatalf("harness: create group %s on %s: code %d %s %v", group, tg.BrokerAddr, resp.Code, resp.Remark, err)
	}
}
