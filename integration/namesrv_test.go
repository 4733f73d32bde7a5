package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"rmqd/codec"
	"rmqd/integration/harness"
	"rmqd/remoting"
)

// TestNamesrvInterop mixes kinds around the name server:
//   - the Apache 5.3.3 broker registers with rmqd's name server AND Apache's at once (namesrvAddr "r;a");
//     the Go and Java clients send and consume through it with routes from rmqd's name server;
//   - mqadmin clusterList/topicList/topicRoute/getNamesrvConfig print the same against both name servers
//     (same broker behind both), after explicit normalisation;
//   - rmqd's broker registers with the Apache name server and the clients find it there.
//
// Whole test: one rmqd name server, one Apache name server, one Apache broker, one rmqd broker, ~12 JVM runs.
func TestNamesrvInterop(t *testing.T) {
	harness.RequireJars(t, "apache", "mqadmin", "client5")
	rns := harness.StartNamesrv(t, harness.KindRmqd, harness.Options{})
	ans := harness.StartNamesrv(t, harness.KindApache, harness.Options{})
	ab := harness.StartBroker(t, harness.KindApache, rns.Addr+";"+ans.Addr, harness.Options{})
	cl := remoting.NewClient(remoting.ClientConfig{})
	t.Cleanup(func() { _ = cl.Close() })

	t.Run("apache-broker-via-rmqd-namesrv", func(t *testing.T) {
		tg := ab.Via(rns.Addr)
		const goTopic, javaTopic = "NSIT_go", "NSIT_java"
		sent := harness.RunGoProduce(t, tg, harness.GoProduce{Topic: goTopic, Count: 8, Tags: []string{"a", "b"}, KeyPrefix: "k"})
		onlyOK(t, sent)
		got := harness.RunGoConsume(t, tg, harness.GoConsume{Topic: goTopic, Group: "NSIT_go_cg", Count: len(sent)})
		expectDelivered(t, sent, got, nil)

		p, javaUsed := javaProduceConsume(t, tg, javaTopic, "NSIT_java_cg", "--tags", "a,b", "--keys", "k")

		// The routes the clients used came from rmqd's name server, naming the Apache broker.
		for _, topic := range []string{goTopic, javaUsed} {
			r := mustRoute(t, cl, rns.Addr, topic)
			if len(r.BrokerDatas) != 1 || r.BrokerDatas[0].BrokerAddrs["0"] != ab.BrokerAddr {
				t.Errorf("rmqd namesrv route of %s: %+v, want only %s at %s", topic, r.BrokerDatas, ab.BrokerName, ab.BrokerAddr)
			}
			for _, m := range p.Sent {
				if m.BrokerName != ab.BrokerName {
					t.Errorf("java sent #%d to broker %q, want %q", m.Index, m.BrokerName, ab.BrokerName)
				}
			}
		}
	})

	t.Run("mqadmin-same-as-apache", func(t *testing.T) {
		// Same broker behind both: wait until both name servers hold the same topic set (the broker
		// registers new topics with each name server on its own schedule).
		var rt, at []string
		waitFor(t, 60*time.Second, "same topic list on both name servers", func() bool {
			rt, at = topicList(t, cl, rns.Addr), topicList(t, cl, ans.Addr)
			return strings.Join(rt, ",") == strings.Join(at, ",")
		})
		// Route bodies straight from the protocol, compared as data (brokerDatas/queueDatas order is
		// map order on both sides).
		for _, topic := range []string{"TBW102", "NSIT_go", "%RETRY%NSIT_go_cg"} {
			rb, ab := rawRoute(t, cl, rns.Addr, topic), rawRoute(t, cl, ans.Addr, topic)
			if rb != ab {
				t.Errorf("GET_ROUTEINFO_BY_TOPIC %s differs:\n--- apache:\n%s\n--- rmqd:\n%s", topic, ab, rb)
			}
		}
		cmds := [][]string{
			{"clusterList"},
			{"topicList"},
			{"topicRoute", "-t", "NSIT_go"},
			{"getNamesrvConfig"},
		}
		for _, cmd := range cmds {
			name := strings.Join(cmd, " ")
			outs := runAdminPair(t, ab, rns.Addr, ans.Addr, cmd)
			rn, an := normalizeNsAdmin(cmd[0], outs[0], ab), normalizeNsAdmin(cmd[0], outs[1], ab)
			if cmd[0] == "getNamesrvConfig" {
				rn, an = commonConfig(t, rn, an)
			}
			t.Logf("mqadmin %s normalised (%d lines):\n%s", name, strings.Count(an, "\n")+1, an)
			if rn != an {
				t.Errorf("mqadmin %s differs after normalisation.\n--- apache (raw):\n%s\n--- rmqd (raw):\n%s\n--- diff (- apache, + rmqd):\n%s",
					name, outs[1], outs[0], nsLineDiff(an, rn))
			}
			if strings.TrimSpace(an) == "" {
				t.Errorf("mqadmin %s: empty output against apache; nothing compared", name)
			}
		}
	})

	t.Run("rmqd-broker-via-apache-namesrv", func(t *testing.T) {
		rb := harness.StartBroker(t, harness.KindRmqd, ans.Addr,
			harness.Options{ClusterName: "RmqdCluster", BrokerName: "broker-rmqd"})
		// TBW102 now has two auto-creating brokers behind the Apache name server: create the topics on
		// rmqd's broker only, so the clients can only reach them through it.
		const goTopic, javaTopic = "NSIT_rmqd_go", "NSIT_rmqd_java"
		for _, topic := range []string{goTopic, javaTopic, javaTopic + "_retry"} {
			createTopic(t, cl, rb.BrokerAddr, topic)
			waitFor(t, 60*time.Second, "route of "+topic+" on the apache name server", func() bool {
				r, err := route(t.Context(), cl, ans.Addr, topic)
				return err == nil && len(r.BrokerDatas) == 1 && r.BrokerDatas[0].BrokerAddrs["0"] == rb.BrokerAddr
			})
		}
		sent := harness.RunGoProduce(t, rb, harness.GoProduce{Topic: goTopic, Count: 8, Tags: []string{"a"}})
		onlyOK(t, sent)
		got := harness.RunGoConsume(t, rb, harness.GoConsume{Topic: goTopic, Group: "NSIT_rmqd_go_cg", Count: len(sent)})
		expectDelivered(t, sent, got, nil)

		p, _ := javaProduceConsume(t, rb, javaTopic, "NSIT_rmqd_java_cg")
		for _, m := range append(sent, p.Sent...) {
			if m.BrokerName != "" && m.BrokerName != rb.BrokerName {
				t.Errorf("sent %s #%d to broker %q, want %q", m.Topic, m.Index, m.BrokerName, rb.BrokerName)
			}
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		resp, err := cl.InvokeSync(ctx, ans.Addr, codec.NewRequest(codec.ReqGetBrokerClusterInfo))
		if err != nil || resp.Code != codec.RespSuccess {
			t.Fatalf("GET_BROKER_CLUSTER_INFO from apache: %v %+v", err, resp)
		}
		if body := string(resp.Body); !strings.Contains(body, `"RmqdCluster"`) || !strings.Contains(body, `"broker-rmqd"`) ||
			!strings.Contains(body, rb.BrokerAddr) {
			t.Errorf("apache cluster info does not show rmqd's broker: %s", body)
		}
	})
}

// javaProduceConsume sends 8 messages to topic with the Java 5.3.3 client and consumes them in group.
// A starved client JVM (load 30 on 2 cores) can miss its fixed 3 s name-server call timeout: when the
// produce failed with a RemotingTimeoutException only, it is retried once on a fresh topic, and logged.
func javaProduceConsume(t *testing.T, tg *harness.Target, topic, group string, extra ...string) (*harness.JavaResult, string) {
	t.Helper()
	args := append([]string{"--topic", topic, "--count", "8"}, extra...)
	p, err := harness.TryJava(t, tg, "5", "produce", args...)
	if err == nil && !p.OK && strings.Contains(p.Error, "RemotingTimeoutException") {
		t.Logf("java produce to %s timed out on a remoting call (%s); retrying once on %s_retry", topic, p.Error, topic)
		topic += "_retry"
		args[1] = topic
		p, err = harness.TryJava(t, tg, "5", "produce", args...)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !p.OK {
		t.Fatalf("java5 produce failed: %s (stderr %s)", p.Error, p.LogPath)
	}
	onlyOK(t, p.Sent)
	c := harness.RunJava(t, tg, "5", "consume", "--topic", topic, "--group", group, "--count", "8")
	expectDelivered(t, p.Sent, c.Received, nil)
	return p, topic
}

// runAdminPair runs the same mqadmin command against both name servers, two JVMs at once.
func runAdminPair(t *testing.T, tg *harness.Target, a, b string, cmd []string) [2]string {
	t.Helper()
	var outs [2]string
	var errs [2]error
	var wg sync.WaitGroup
	for i, addr := range []string{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = harness.TryMqadmin(t, tg.Via(addr), cmd...)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("against %s: %v", []string{"rmqd", "apache"}[i], err)
		}
	}
	return outs
}

// ---- normalisation of mqadmin output ----

// normalizeNsAdmin removes from one mqadmin output what may differ between two name servers with the same
// broker behind them and nothing else: the name server's own address and port, times, versions of the
// runtime, run-to-run counters (TPS, clusterList's in/out totals), row and JSON-key order. Each step is
// listed here; anything it does not cover must be equal.
func normalizeNsAdmin(cmd, out string, broker *harness.Target) string {
	lines := []string{}
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimRight(l, " \t\r")
		if l == "" {
			continue
		}
		lines = append(lines, l)
	}
	switch cmd {
	case "clusterList":
		// Columns: #Cluster Name, #Broker Name, #BID, #Addr, #Version, #InTPS(LOAD), #OutTPS(LOAD),
		// #Timer(Progress), #PCWait(ms), #Hour, #SPACE, #ACTIVATED. The broker is asked directly for its
		// runtime figures, so two calls may see different TPS, timer progress, hour and disk figures:
		// keep cluster, broker, id, address, version, activation.
		for i, l := range lines {
			f := strings.Fields(l)
			if len(f) >= 5 && i > 0 {
				keep := append([]string{}, f[:5]...)
				keep = append(keep, f[len(f)-1])
				lines[i] = strings.Join(keep, " ")
			} else {
				lines[i] = strings.Join(f, " ")
			}
		}
		if len(lines) > 1 {
			sort.Strings(lines[1:])
		}
	case "topicList":
		sort.Strings(lines)
	case "topicRoute":
		// A pretty JSON TopicRouteData: compare it as data (key order and spacing are not output).
		js := strings.Join(lines, "\n")
		var v any
		if err := json.Unmarshal([]byte(fastjsonToJSON(js)), &v); err == nil {
			b, _ := json.MarshalIndent(sortRoute(v), "", " ")
			return string(b)
		}
	case "getNamesrvConfig":
		// "============127.0.0.1:port============" then "key = value" lines: the header names the name server
		// queried; values that are the name server's own port or paths are set per instance.
		var kept []string
		for _, l := range lines {
			if strings.HasPrefix(l, "====") {
				continue
			}
			kept = append(kept, l)
		}
		sort.Strings(kept)
		lines = kept
	}
	return strings.Join(lines, "\n")
}

// sortRoute orders the lists of a TopicRouteData whose order follows map iteration on the server side.
func sortRoute(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	for _, k := range []string{"brokerDatas", "queueDatas"} {
		if l, ok := m[k].([]any); ok {
			sort.Slice(l, func(i, j int) bool {
				bi, _ := json.Marshal(l[i])
				bj, _ := json.Marshal(l[j])
				return string(bi) < string(bj)
			})
		}
	}
	return m
}

// perInstanceConfig are getNamesrvConfig keys whose values are per process by construction (ports, paths
// under the process's home, the host's name): compared present-on-both only.
var perInstanceConfig = map[string]bool{
	"listenPort": true, "rocketmqHome": true, "kvConfigPath": true, "configStorePath": true,
	// rmqd's network layer's own values, listed under Java's names (docs/compatibility.md): its
	// write-buffer marks where Java shows 0 (Netty's defaults), 0 selector threads (one per CPU) where
	// Java shows its 3 Netty selectors.
	"writeBufferHighWaterMark": true, "writeBufferLowWaterMark": true, "serverSelectorThreads": true,
}

// commonConfig reduces two getNamesrvConfig outputs to the keys rmqd reports (Java has more: those are
// logged, not failed), values of per-instance keys replaced by a marker.
func commonConfig(t *testing.T, rmqd, apache string) (string, string) {
	t.Helper()
	parse := func(s string) map[string]string {
		m := map[string]string{}
		for _, l := range strings.Split(s, "\n") {
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				continue
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if perInstanceConfig[k] {
				v = "<per-instance>"
			}
			m[k] = v
		}
		return m
	}
	r, a := parse(rmqd), parse(apache)
	var javaOnly []string
	for k := range a {
		if _, ok := r[k]; !ok {
			javaOnly = append(javaOnly, k)
			delete(a, k)
		}
	}
	sort.Strings(javaOnly)
	t.Logf("getNamesrvConfig: %d keys on both, %d only on the Java side (not compared): %s", len(a), len(javaOnly),
		strings.Join(javaOnly, " "))
	dump := func(m map[string]string) string {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&b, "%s = %s\n", k, m[k])
		}
		return b.String()
	}
	return dump(r), dump(a)
}

func nsLineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	in := func(l []string) map[string]int {
		m := map[string]int{}
		for _, s := range l {
			m[s]++
		}
		return m
	}
	am, bm := in(al), in(bl)
	var d []string
	for _, s := range al {
		if bm[s] == 0 {
			d = append(d, "- "+s)
		}
	}
	for _, s := range bl {
		if am[s] == 0 {
			d = append(d, "+ "+s)
		}
	}
	if len(d) == 0 {
		return "(same lines, different order or count)"
	}
	return strings.Join(d, "\n")
}

// ---- direct name-server and broker requests ----

type nsRoute struct {
	BrokerDatas []struct {
		Cluster     string            `json:"cluster"`
		BrokerName  string            `json:"brokerName"`
		BrokerAddrs map[string]string `json:"brokerAddrs"`
	} `json:"brokerDatas"`
	QueueDatas []struct {
		BrokerName     string `json:"brokerName"`
		ReadQueueNums  int    `json:"readQueueNums"`
		WriteQueueNums int    `json:"writeQueueNums"`
		Perm           int    `json:"perm"`
	} `json:"queueDatas"`
}

func route(ctx context.Context, cl *remoting.Client, addr, topic string) (*nsRoute, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req := codec.NewRequest(codec.ReqGetRouteinfoByTopic)
	req.Ext.Set("topic", topic)
	resp, err := cl.InvokeSync(ctx, addr, req)
	if err != nil {
		return nil, fmt.Errorf("route %s from %s: %w", topic, addr, err)
	}
	if resp.Code != codec.RespSuccess {
		return nil, fmt.Errorf("route %s from %s: code %d %s", topic, addr, resp.Code, resp.Remark)
	}
	var r nsRoute
	if err := json.Unmarshal(resp.Body, &r); err != nil {
		return nil, fmt.Errorf("route %s from %s: %w (body %.300q)", topic, addr, err, resp.Body)
	}
	return &r, nil
}

// rawRoute is a route body re-encoded with sorted keys and lists, for comparing two servers' answers.
func rawRoute(t *testing.T, cl *remoting.Client, addr, topic string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req := codec.NewRequest(codec.ReqGetRouteinfoByTopic)
	req.Ext.Set("topic", topic)
	resp, err := cl.InvokeSync(ctx, addr, req)
	if err != nil {
		t.Fatalf("route %s from %s: %v", topic, addr, err)
	}
	if resp.Code != codec.RespSuccess {
		return fmt.Sprintf("code %d", resp.Code)
	}
	var v any
	if err := json.Unmarshal(resp.Body, &v); err != nil {
		t.Fatalf("route %s from %s: %v (body %.300q)", topic, addr, err, resp.Body)
	}
	b, _ := json.MarshalIndent(sortRoute(v), "", " ")
	return string(b)
}

func mustRoute(t *testing.T, cl *remoting.Client, addr, topic string) *nsRoute {
	t.Helper()
	r, err := route(t.Context(), cl, addr, topic)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func topicList(t *testing.T, cl *remoting.Client, addr string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	resp, err := cl.InvokeSync(ctx, addr, codec.NewRequest(codec.ReqGetAllTopicListFromNameserver))
	if err != nil || resp.Code != codec.RespSuccess {
		t.Logf("topic list from %s: %v %+v", addr, err, resp)
		return nil
	}
	var tl struct {
		TopicList []string `json:"topicList"`
	}
	if err := json.Unmarshal(resp.Body, &tl); err != nil {
		t.Logf("topic list from %s: %v", addr, err)
		return nil
	}
	sort.Strings(tl.TopicList)
	return tl.TopicList
}

// createTopic sends UPDATE_AND_CREATE_TOPIC (8 queues, read+write) to one broker.
func createTopic(t *testing.T, cl *remoting.Client, broker, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req := codec.NewRequest(codec.ReqUpdateAndCreateTopic)
	for _, kv := range [][2]string{{"topic", topic}, {"defaultTopic", "TBW102"}, {"readQueueNums", "8"},
		{"writeQueueNums", "8"}, {"perm", "6"}, {"topicFilterType", "SINGLE_TAG"}, {"topicSysFlag", "0"},
		{"order", "false"}} {
		req.Ext.Set(kv[0], kv[1])
	}
	resp, err := cl.InvokeSync(ctx, broker, req)
	if err != nil || resp.Code != codec.RespSuccess {
		t.Fatalf("create topic %s on %s: %v %+v", topic, broker, err, resp)
	}
}
