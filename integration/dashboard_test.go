package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"rmqd/integration/harness"
)

// dashboardJar is where `make dashboard-deps` puts apache/rocketmq-dashboard, built from source with its
// frontend (it is on no registry); RMQD_DASHBOARD_JAR overrides.
func dashboardJar(t *testing.T) string {
	if p := os.Getenv("RMQD_DASHBOARD_JAR"); p != "" {
		return p
	}
	return filepath.Join(harness.ToolsDir(t), "rocketmq-dashboard", "rocketmq-dashboard.jar")
}

// TestDashboard runs apache/rocketmq-dashboard pointed at a target with an online producer and consumer:
// the REST endpoint of every page (GET queries, and the POST message queries with the page's CSRF token)
// must answer HTTP 200 with status 0, the cluster and topic lists must hold the target's broker and topics,
// and, when RMQD_CHROMIUM and RMQD_PLAYWRIGHT are set, headless Chromium captures the cluster and topic
// pages (into RMQD_DASHBOARD_SHOTS, else the test's log folder).
//
//	make dashboard-test
func TestDashboard(t *testing.T) {
	jar := dashboardJar(t)
	harness.RequireTool(t, jar, "dashboard-test")
	for _, kind := range targetsFromEnv(t) {
		t.Run(kind, func(t *testing.T) { dashboard(t, kind, jar) })
	}
}

func dashboard(t *testing.T, kind, jar string) {
	target := harness.Start(t, kind, harness.Options{StartTimeout: 5 * time.Minute}) // Apache, on a loaded machine
	topic := uniq("DashboardT")
	group := uniq("DashboardG")
	pgroup := uniq("DashboardPG")

	// An online producer and consumer, so the producer, consumer and message pages have something to show.
	gp := newGoProducer(t, target, producer.WithGroupName(pgroup))
	const n = 10
	var msgID string
	for i := 0; i < n; i++ {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("dashboard-%d", i)))
		m.WithKeys([]string{fmt.Sprintf("dk-%d", i)})
		m.WithTag("a")
		r, err := gp.p.SendSync(t.Context(), m)
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if msgID == "" {
			msgID = r.MsgID
		}
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	done := make(chan struct{})
	pc, err := consumer.NewPushConsumer(consumer.WithNameServer([]string{target.NamesrvAddr}), consumer.WithGroupName(group),
		consumer.WithInstance(uniq("dash-c")), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	err = pc.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, ms ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range ms {
				seen[m.MsgId] = true
			}
			if len(seen) == n {
				close(done)
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Shutdown() })
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		t.Fatalf("consumer got %d of %d messages", len(seen), n)
	}

	port := harness.FreePort(t)
	home := filepath.Join(harness.LogDir(t), "dashboard-home")
	homeArgs, err := harness.JVMHome(home)
	if err != nil {
		t.Fatal(err)
	}
	p := harness.StartTool(t, "dashboard", append(append([]string{"java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx512m"},
		homeArgs...), "-jar", jar,
		"--server.address=127.0.0.1", "--server.port="+strconv.Itoa(port),
		"--rocketmq.config.namesrvAddrs[0]="+target.NamesrvAddr,
		"--rocketmq.config.dataPath="+filepath.Join(home, "data"),
		"--rocketmq.config.loginRequired=false")...)
	base := "http://" + harness.Addr(port)
	if !waitHTTP(p, base+"/cluster/list.query", 300*time.Second) {
		t.Fatalf("dashboard did not serve %s; see %s\n%s", base, p.LogPath, harness.Tail(p.LogPath, 40))
	}

	d := &dashClient{t: t, base: base}
	brokerAddr := target.BrokerAddr
	clusterData := d.get("/cluster/list.query", nil)
	if !strings.Contains(string(clusterData), target.BrokerName) {
		t.Errorf("cluster/list.query lacks broker %s: %s", target.BrokerName, clusterData)
	}
	topics := d.get("/topic/list.query", url.Values{"skipSysProcess": {"false"}, "skipRetryAndDlq": {"false"}})
	if !strings.Contains(string(topics), topic) {
		t.Errorf("topic/list.query lacks %s: %.500s", topic, topics)
	}
	today := time.Now().Format("2006-01-02")
	now := time.Now().UnixMilli()
	// The REST calls each page of the frontend makes (frontend-new/src/api/remoteApi/remoteApi.js), GETs.
	for _, c := range []struct {
		page, path string
		q          url.Values
	}{
		{"dashboard", "/dashboard/broker.query", url.Values{"date": {today}}},
		{"dashboard", "/dashboard/topic.query", url.Values{"date": {today}, "topicName": {topic}}},
		{"dashboard", "/dashboard/topicCurrent.query", nil},
		{"ops", "/ops/homePage.query", nil},
		{"ops", "/ops/rocketMqStatus.query", nil},
		{"proxy", "/proxy/homePage.query", nil},
		{"cluster", "/cluster/brokerConfig.query", url.Values{"brokerAddr": {brokerAddr}}},
		{"topic", "/topic/list.queryTopicType", nil},
		{"topic", "/topic/stats.query", url.Values{"topic": {topic}}},
		{"topic", "/topic/route.query", url.Values{"topic": {topic}}},
		{"topic", "/topic/queryConsumerByTopic.query", url.Values{"topic": {topic}}},
		{"topic", "/topic/queryTopicConsumerInfo.query", url.Values{"topic": {topic}}},
		{"topic", "/topic/examineTopicConfig.query", url.Values{"topic": {topic}}},
		{"consumer", "/consumer/groupList.query", url.Values{"skipSysGroup": {"false"}, "address": {""}}},
		{"consumer", "/consumer/group.query", url.Values{"consumerGroup": {group}}},
		{"consumer", "/consumer/group.refresh", url.Values{"consumerGroup": {group}}},
		// The page passes the group's broker addresses, as groupList.query answered them.
		{"consumer", "/consumer/consumerConnection.query", url.Values{"consumerGroup": {group}, "address": {brokerAddr}}},
		{"consumer", "/consumer/queryTopicByConsumer.query", url.Values{"consumerGroup": {group}, "address": {brokerAddr}}},
		{"consumer", "/consumer/examineSubscriptionGroupConfig.query", url.Values{"consumerGroup": {group}}},
		{"consumer", "/consumer/fetchBrokerNameList.query", url.Values{"consumerGroup": {group}}},
		{"producer", "/producer/producerConnection.query", url.Values{"topic": {topic}, "producerGroup": {pgroup}}},
		{"message", "/message/queryMessageByTopic.query", url.Values{"topic": {topic}, "begin": {strconv.FormatInt(now-3600_000, 10)}, "end": {strconv.FormatInt(now+60_000, 10)}}},
		{"message", "/message/queryMessageByTopicAndKey.query", url.Values{"topic": {topic}, "key": {"dk-3"}}},
		{"message", "/message/viewMessage.query", url.Values{"topic": {topic}, "msgId": {msgID}}},
	} {
		data := d.get(c.path, c.q)
		t.Logf("%s page: %s answered %.160s", c.page, c.path, data)
	}
	// The name server address the ops page shows is plain text, not a JsonResult.
	if resp, err := exporterHTTP.Get(base + "/rocketmq/nsaddr.query"); err != nil {
		t.Errorf("nsaddr.query: %v", err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), target.NamesrvAddr) {
			t.Errorf("nsaddr.query: HTTP %d %q", resp.StatusCode, b)
		}
	}
	// The message trace page reads the trace topic: without traced clients there is nothing, and the
	// dashboard says so (as against Apache); it must answer, not fail with HTTP errors.
	d.getAllowErr("/messageTrace/viewMessage.query", url.Values{"msgId": {msgID}}, "Failed to query message by Id")
	// The ACL pages list users and ACLs with AUTH_LIST_USER / AUTH_LIST_ACL: with authentication and
	// authorization off (the default) the broker answers Java's refusal, which the page shows.
	d.getAllowErr("/acl/users.query", url.Values{"clusterName": {target.ClusterName}, "brokerName": {target.BrokerName}}, "Failed to list users")
	d.getAllowErr("/acl/acls.query", url.Values{"clusterName": {target.ClusterName}, "brokerName": {target.BrokerName}, "searchParam": {""}}, "Failed to list ACLs")

	// The message and DLQ pages query with POST and the CSRF token the page fetches first.
	d.post("/message/queryMessagePageByTopic.query", map[string]any{"topic": topic, "begin": now - 3600_000,
		"end": now + 60_000, "pageNum": 1, "pageSize": 20, "taskId": ""})
	d.post("/dlqMessage/queryDlqMessageByConsumerGroup.query", map[string]any{"topic": "%DLQ%" + group,
		"begin": now - 3600_000, "end": now + 60_000, "pageNum": 1, "pageSize": 20, "taskId": ""})

	if bad := errorLines(t, p.LogPath); len(bad) > 0 {
		t.Logf("%s: the dashboard logged %d ERROR/exception lines:\n%s", kind, len(bad), strings.Join(bad, "\n"))
	}
	shots(t, base, target.BrokerName, topic)
}

// shots runs integration/testdata/dashboard/shots.js when Chromium and playwright-core are given.
func shots(t *testing.T, base, brokerName, topic string) {
	chromium, pw := os.Getenv("RMQD_CHROMIUM"), os.Getenv("RMQD_PLAYWRIGHT")
	if chromium == "" || pw == "" {
		t.Log("RMQD_CHROMIUM / RMQD_PLAYWRIGHT unset: no screenshots (make dashboard-test sets them)")
		return
	}
	out := os.Getenv("RMQD_DASHBOARD_SHOTS")
	if out == "" {
		out = harness.LogDir(t)
	}
	script := filepath.Join(harness.RepoRoot(t), "integration", "testdata", "dashboard", "shots.js")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script, pw, chromium, base, out, brokerName, "DashboardT", topic)
	res, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("screenshots: %v\n%s", err, res)
	}
	t.Logf("screenshots of the cluster and topic pages in %s: %s", out, strings.TrimSpace(string(res)))
}

// dashClient calls the dashboard's REST API as its frontend does.
type dashClient struct {
	t    *testing.T
	base string
	csrf string
	// cookie carries the XSRF-TOKEN cookie for the POSTs.
	cookie string
}

// get calls path and returns its JsonResult's data; any HTTP error or non-zero status fails the test.
func (d *dashClient) get(path string, q url.Values) json.RawMessage {
	u := d.base + path
	if q != nil {
		u += "?" + q.Encode()
	}
	resp, err := exporterHTTP.Get(u)
	if err != nil {
		d.t.Errorf("GET %s: %v", path, err)
		return nil
	}
	return d.result("GET "+path, resp.StatusCode, resp.Body)
}

func (d *dashClient) post(path string, body map[string]any) json.RawMessage {
	if d.csrf == "" { // the frontend fetches the token first (remoteApi.getCsrfToken)
		resp, err := exporterHTTP.Get(d.base + "/rocketmq-dashboard/csrf-token")
		if err != nil {
			d.t.Fatalf("csrf token: %v", err)
		}
		var tok struct {
			Data struct {
				Token string `json:"token"`
			} `json:"data"`
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err := json.Unmarshal(b, &tok); err != nil || tok.Data.Token == "" {
			d.t.Fatalf("csrf token: %v: %s", err, b)
		}
		d.csrf = tok.Data.Token
		for _, c := range resp.Cookies() {
			if c.Name == "XSRF-TOKEN" {
				d.cookie = c.Value
			}
		}
		if d.cookie == "" {
			d.cookie = tok.Data.Token
		}
	}
	b, _ := json.Marshal(body)
	req, _ := newJSONPost(d.base+path, b)
	req.Header.Set("X-XSRF-TOKEN", d.csrf)
	req.Header.Set("Cookie", "XSRF-TOKEN="+d.cookie)
	resp, err := exporterHTTP.Do(req)
	if err != nil {
		d.t.Errorf("POST %s: %v", path, err)
		return nil
	}
	data := d.result("POST "+path, resp.StatusCode, resp.Body)
	d.t.Logf("POST %s answered %.160s", path, data)
	return data
}

// getAllowErr is get for a query whose JsonResult may carry an error starting with allowed.
func (d *dashClient) getAllowErr(path string, q url.Values, allowed string) {
	resp, err := exporterHTTP.Get(d.base + path + "?" + q.Encode())
	if err != nil {
		d.t.Errorf("GET %s: %v", path, err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r struct {
		Status int    `json:"status"`
		ErrMsg string `json:"errMsg"`
	}
	if err := json.Unmarshal(b, &r); resp.StatusCode != 200 || err != nil ||
		r.Status != 0 && !strings.HasPrefix(r.ErrMsg, allowed) {
		d.t.Errorf("GET %s: HTTP %d: %.500s", path, resp.StatusCode, b)
	}
	d.t.Logf("GET %s answered %.160s", path, b)
}

func (d *dashClient) result(what string, code int, body io.ReadCloser) json.RawMessage {
	defer body.Close()
	b, _ := io.ReadAll(body)
	if code != 200 {
		d.t.Errorf("%s: HTTP %d: %.500s", what, code, b)
		return nil
	}
	if len(b) == 0 {
		return nil // a controller returning null (the dashboard page before its first collection)
	}
	var r struct {
		Status int             `json:"status"`
		Data   json.RawMessage `json:"data"`
		ErrMsg string          `json:"errMsg"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		d.t.Errorf("%s: not a JsonResult: %v: %.500s", what, err, b)
		return nil
	}
	if r.Status != 0 {
		d.t.Errorf("%s: status %d: %s", what, r.Status, r.ErrMsg)
	}
	return r.Data
}

func newJSONPost(u string, body []byte) (*http.Request, error) {
	req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return req, nil
}
