package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"rmqd/integration/harness"
)

// TestMqadmin runs one administration session of mqadmin 5.3.3 against each selected target (in parallel,
// one broker each), checks every command's output for what it must show, and then compares the outputs of
// the two targets command by command, modulo addresses, times, ids and version strings. A live Go producer
// and push consumer (client-go v2.1.2) provide the connections producerConnection, consumerConnection and
// consumerStatus list, and the messages the query commands look up.
//
// Select a target with RMQD_TARGET; the comparison runs only when both ran.
func TestMqadmin(t *testing.T) {
	outputs := runAdminSessions(t, "mqadmin-session", harness.Options{}, (*adminSession).run)
	if len(outputs) < 2 {
		t.Logf("comparison skipped: only %d target(s) ran", len(outputs))
		return
	}
	compareAdminOutputs(t, outputs[harness.KindApache], outputs[harness.KindRmqd])
}

// runAdminSessions starts one target of each selected kind with opts (in parallel, under "targets/<kind>") and
// runs session on each once all are up, a JVM broker starting next to an mqadmin JVM starving the latter on
// 2 cores (its 3 s request timeouts fire). It returns each kind's step outputs. A session listed in
// expectedFailures under name runs soft.
func runAdminSessions(t *testing.T, name string, opts harness.Options, session func(*adminSession)) map[string]map[string]string {
	harness.RequireJars(t, "apache", "mqadmin")
	kinds := targetsFromEnv(t)
	var mu sync.Mutex
	outputs := map[string]map[string]string{}
	var started sync.WaitGroup
	started.Add(len(kinds))
	t.Run("targets", func(t *testing.T) {
		for _, kind := range kinds {
			t.Run(kind, func(t *testing.T) {
				t.Parallel()
				var once sync.Once
				ready := func() { once.Do(started.Done) }
				defer ready()
				body := func(tb harness.TB) {
					tg := harness.Start(tb, kind, opts)
					ready()
					started.Wait()
					s := &adminSession{tb: tb, tg: tg, out: map[string]string{}}
					defer func() {
						mu.Lock()
						outputs[kind] = s.out
						mu.Unlock()
					}()
					session(s)
				}
				if reason, ok := expectedFailures[caseKey{kind, name}]; ok {
					report(t, kind, name, reason, harness.Soft(t, body))
					return
				}
				body(t)
			})
		}
	})
	return outputs
}

const (
	mqaTopic     = "IT_mqa"
	mqaGroup     = "IT_mqa_cg"
	mqaProducer  = "IT_mqa_pg"
	mqaJavaGroup = "IT_mqa_jcg"
	mqaMsgs      = 8
)

// adminSession is one target's run; out keeps each step's raw stdout for the comparison.
type adminSession struct {
	tb  harness.TB
	tg  *harness.Target
	out map[string]string
}

func (s *adminSession) admin(step string, args ...string) string {
	s.tb.Helper()
	return s.record(step, harness.Mqadmin(s.tb, s.tg, args...))
}

// record keeps a step's output for the comparison and in the test's log folder.
func (s *adminSession) record(step, out string) string {
	s.out[step] = out
	_ = os.WriteFile(filepath.Join(harness.LogDir(s.tb), "mqadmin-"+step+".out"), []byte(out), 0o644)
	return out
}

func (s *adminSession) must(step, out string, wants ...string) {
	s.tb.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			s.tb.Fatalf("%s: output lacks %q:\n%s", step, w, out)
		}
	}
}

// producerConnection lists the Go producer once the broker knows it: the Go client's first heartbeat
// leaves a second after Start, so sends and topicStatus can finish before it arrives ("the producer
// group[...] not exist" on either broker). It asks again for up to 10 s.
func (s *adminSession) producerConnection() string {
	s.tb.Helper()
	args := []string{"producerConnection", "-g", mqaProducer, "-t", mqaTopic}
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := harness.TryMqadmin(s.tb, s.tg, args...)
		if err == nil {
			return s.record("producerConnection", out)
		}
		if time.Now().After(deadline) || !strings.Contains(err.Error(), "not exist") {
			s.tb.Fatalf("producerConnection: %v\n%s", err, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (s *adminSession) run() {
	tb, tg := s.tb, s.tg
	addr := tg.BrokerAddr

	out := s.admin("updateTopic", "updateTopic", "-b", addr, "-t", mqaTopic, "-r", "4", "-w", "4")
	s.must("updateTopic", out, "create topic to "+addr+" success")
	s.must("topicList", s.admin("topicList", "topicList"), mqaTopic)
	out = s.admin("topicRoute", "topicRoute", "-t", mqaTopic)
	s.must("topicRoute", out, `"readQueueNums":4`, `"writeQueueNums":4`, addr)
	out = s.admin("updateSubGroup", "updateSubGroup", "-b", addr, "-g", mqaGroup)
	s.must("updateSubGroup", out, "create subscription group to "+addr+" success")

	// A Java push consumer of its own group: consumerStatus needs a client that answers
	// GET_CONSUMER_RUNNING_INFO (the Go client v2.1.2 fails to encode its running info: NaN).
	javaDone := make(chan struct{})
	// It waits for messages that never come until the session ends (the stop file) or its timeout; one
	// that dies early (a start-up request timing out on a starved CPU) gets one more try.
	stop := filepath.Join(harness.LogDir(tb), "mqadmin-session-done")
	go func() {
		defer close(javaDone)
		for try := 0; try < 2; try++ {
			t0 := time.Now()
			_, _ = harness.TryJava(tb, tg, "5", "consume", "--topic", mqaTopic, "--group", mqaJavaGroup,
				"--count", "1000", "--timeout", "100000", "--until", stop, "--deadline", "110000")
			if _, err := os.Stat(stop); err == nil || time.Since(t0) > 30*time.Second {
				return
			}
		}
	}()
	defer func() {
		if err := os.WriteFile(stop, nil, 0o644); err != nil {
			tb.Errorf("stop the java consumer: %v", err)
		}
		select {
		case <-javaDone:
		case <-time.After(150 * time.Second):
			tb.Errorf("java consumer still running after 150 s")
		}
	}()

	// A live producer: producerConnection lists it, its messages feed the queries.
	before := time.Now().Add(-time.Second).UnixMilli()
	rlog.SetLogLevel("error")
	pr, err := producer.NewDefaultProducer(producer.WithNameServer([]string{tg.NamesrvAddr}),
		producer.WithGroupName(mqaProducer), producer.WithInstanceName("mqa-"+tg.Kind), producer.WithRetry(2))
	if err != nil {
		tb.Fatalf("go producer: %v", err)
	}
	if err := pr.Start(); err != nil {
		tb.Fatalf("go producer start: %v", err)
	}
	tb.Cleanup(func() { _ = pr.Shutdown() })
	type sent struct{ msgID, offsetMsgID, key string }
	var msgs []sent
	ctx, cancel := context.WithTimeout(tb.Context(), 30*time.Second)
	defer cancel()
	for i := range mqaMsgs {
		m := primitive.NewMessage(mqaTopic, harness.MakeBody("mqa", i, 40))
		key := fmt.Sprintf("k-mqa-%d", i)
		m.WithTag("A").WithKeys([]string{key})
		r, err := pr.SendSync(ctx, m)
		if err != nil || r.Status != primitive.SendOK {
			tb.Fatalf("send %d: %v %v", i, r, err)
		}
		msgs = append(msgs, sent{r.MsgID, r.OffsetMsgID, key})
	}

	out = s.admin("topicStatus", "topicStatus", "-t", mqaTopic)
	total := int64(0)
	rows := tableRows(out, tg.BrokerName)
	for _, r := range rows {
		if len(r) < 4 {
			tb.Fatalf("topicStatus row %q", r)
		}
		total += atoi64(tb, r[3])
	}
	if len(rows) != 4 || total != mqaMsgs {
		tb.Fatalf("topicStatus: want 4 queues with max offsets summing to %d, got %d rows, sum %d:\n%s", mqaMsgs, len(rows), total, out)
	}
	s.must("producerConnection", s.producerConnection(), "GO")

	m3 := msgs[3]
	out = s.admin("queryMsgByKey", "queryMsgByKey", "-t", mqaTopic, "-k", m3.key, "-b", fmt.Sprint(before))
	s.must("queryMsgByKey", out, m3.msgID)

	// A live push consumer: consumerConnection and consumerStatus ask the broker, which asks the client.
	var (
		cmu  sync.Mutex
		seen = map[string]int{}
	)
	pc, err := consumer.NewPushConsumer(consumer.WithNameServer([]string{tg.NamesrvAddr}),
		consumer.WithGroupName(mqaGroup), consumer.WithInstance("mqa-"+tg.Kind),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		tb.Fatalf("go consumer: %v", err)
	}
	err = pc.Subscribe(mqaTopic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, ms ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			cmu.Lock()
			defer cmu.Unlock()
			for _, m := range ms {
				seen[m.MsgId]++
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		tb.Fatalf("go consumer subscribe: %v", err)
	}
	if err := pc.Start(); err != nil {
		tb.Fatalf("go consumer start: %v", err)
	}
	tb.Cleanup(func() { _ = pc.Shutdown() })
	consumed := func(atLeast int) bool {
		cmu.Lock()
		defer cmu.Unlock()
		n := 0
		for _, m := range msgs {
			if seen[m.msgID] >= atLeast {
				n++
			}
		}
		return n == len(msgs)
	}
	waitFor(tb, 45*time.Second, "consumer to receive every message", func() bool { return consumed(1) })

	// The client commits offsets every 5 s; consumerProgress shows Diff Total 0 once it did.
	diff0 := regexp.MustCompile(`Diff Total:\s*0\b`)
	waitFor(tb, 30*time.Second, "consumerProgress Diff Total 0", func() bool {
		out = harness.Mqadmin(tb, tg, "consumerProgress", "-g", mqaGroup)
		return diff0.MatchString(out) && strings.Contains(out, mqaTopic)
	})
	s.out["consumerProgress"] = out
	s.must("consumerProgress", out, mqaTopic)

	out = s.admin("consumerConnection", "consumerConnection", "-g", mqaGroup)
	s.must("consumerConnection", out, "GO", "CLUSTERING", "CONSUME_PASSIVELY", mqaTopic)
	waitFor(tb, 60*time.Second, "the Java consumer to be online", func() bool {
		out, err := harness.TryMqadmin(tb, tg, "consumerConnection", "-g", mqaJavaGroup)
		return err == nil && strings.Contains(out, "JAVA")
	})
	out = s.admin("consumerStatus", "consumerStatus", "-g", mqaJavaGroup)
	s.must("consumerStatus", out, "Same subscription in the same group of consumer", "Rebalance OK")

	// queryMsgById and queryMsgByUniqueKey print a MessageTrack per group that consumes the topic
	// (QUERY_TOPIC_CONSUME_BY_WHO) with CONSUMED once the group's committed offset is past the message. Both
	// push consumers are online and have committed every offset by now (the Go one: Diff Total 0 above; the
	// Java one commits every 5 s), so the tracks no longer depend on timing.
	waitFor(tb, 30*time.Second, "consumerProgress of the Java group Diff Total 0", func() bool {
		out, err := harness.TryMqadmin(tb, tg, "consumerProgress", "-g", mqaJavaGroup)
		return err == nil && diff0.MatchString(out) && strings.Contains(out, mqaTopic)
	})
	out = s.admin("queryMsgById", "queryMsgById", "-t", mqaTopic, "-i", m3.offsetMsgID)
	s.must("queryMsgById", out, mqaTopic, m3.key, m3.offsetMsgID,
		"MessageTrack [consumerGroup="+mqaGroup+", trackType=CONSUMED", "MessageTrack [consumerGroup="+mqaJavaGroup+", trackType=CONSUMED")
	out = s.admin("queryMsgByUniqueKey", "queryMsgByUniqueKey", "-t", mqaTopic, "-i", m3.msgID)
	s.must("queryMsgByUniqueKey", out, mqaTopic, m3.key, m3.msgID,
		"MessageTrack [consumerGroup="+mqaGroup+", trackType=CONSUMED", "MessageTrack [consumerGroup="+mqaJavaGroup+", trackType=CONSUMED")

	// Every group's stats at once (GET_BROKER_CONSUME_STATS): both groups committed everything (above).
	out = s.admin("brokerConsumeStats", "brokerConsumeStats", "-b", addr)
	s.must("brokerConsumeStats", out, mqaTopic, mqaGroup, mqaJavaGroup, "Diff Total:")
	// DELETE_EXPIRED_COMMITLOG: nothing has expired, so this only arms the clean-up passes.
	out = s.admin("deleteExpiredCommitLog", "deleteExpiredCommitLog", "-b", addr)
	s.must("deleteExpiredCommitLog", out, "success")

	// Back to before the first send: every message must come again (5.x resets on the broker side).
	out = s.admin("resetOffsetByTime", "resetOffsetByTime", "-g", mqaGroup, "-t", mqaTopic, "-s", fmt.Sprint(before))
	s.must("resetOffsetByTime", out, "start reset consumer offset by specified", mqaTopic)
	// Apache 5.x answers OFFSET_MOVED only when the group's held pull wakes (up to 20 s of long polling); the
	// Go client then sleeps 10 s and waits for its 20 s rebalance, which on a loaded CI box passed 90 s. One
	// new message per write queue (the producer's round robin) wakes every held pull at once.
	wctx, wcancel := context.WithTimeout(tb.Context(), 30*time.Second)
	defer wcancel()
	for i := range 4 {
		m := primitive.NewMessage(mqaTopic, harness.MakeBody("mqa-wake", i, 40))
		if r, err := pr.SendSync(wctx, m); err != nil || r.Status != primitive.SendOK {
			tb.Fatalf("wake-up send %d: %v %v", i, r, err)
		}
	}
	deadline := time.Now().Add(120 * time.Second)
	for !consumed(2) {
		if time.Now().After(deadline) {
			cmu.Lock()
			counts := make([]string, 0, len(msgs))
			for _, m := range msgs {
				counts = append(counts, fmt.Sprintf("%s=%d", m.msgID, seen[m.msgID]))
			}
			cmu.Unlock()
			tb.Fatalf("timed out after 120 s waiting for every message again after the reset; deliveries: %s",
				strings.Join(counts, " "))
		}
		time.Sleep(500 * time.Millisecond)
	}

	out = s.admin("brokerStatus", "brokerStatus", "-b", addr)
	s.must("brokerStatus", out, "msgPutTotalTodayNow", "commitLogDiskRatio", "earliestMessageTimeStamp", "brokerVersionDesc")
	if v := statusValue(out, "msgPutTotalTodayNow"); v < mqaMsgs {
		tb.Fatalf("brokerStatus: msgPutTotalTodayNow %d, want >= %d:\n%s", v, mqaMsgs, out)
	}
	if v := statusValue(out, "msgGetTotalTodayNow"); v < mqaMsgs {
		tb.Fatalf("brokerStatus: msgGetTotalTodayNow %d, want >= %d:\n%s", v, mqaMsgs, out)
	}

	out = s.admin("getBrokerConfig", "getBrokerConfig", "-b", addr)
	s.must("getBrokerConfig", out, "brokerName", "brokerClusterName", "autoCreateTopicEnable")
	out = s.admin("updateBrokerConfig", "updateBrokerConfig", "-b", addr, "-k", "consumerFallbehindThreshold", "-v", "1234567")
	s.must("updateBrokerConfig", out, "update broker config success, "+addr)
	out = harness.Mqadmin(tb, tg, "getBrokerConfig", "-b", addr)
	if !regexp.MustCompile(`consumerFallbehindThreshold\s*=\s*1234567`).MatchString(out) {
		tb.Fatalf("getBrokerConfig after updateBrokerConfig lacks consumerFallbehindThreshold = 1234567:\n%s", out)
	}
	// Both persist the update into the broker's -c file (Java: Configuration.persist to brokerConfigPath).
	conf, err := os.ReadFile(filepath.Join(tg.LogDir, "broker.conf"))
	if err != nil || !regexp.MustCompile(`(?m)^consumerFallbehindThreshold=1234567$`).Match(conf) {
		tb.Fatalf("broker.conf after updateBrokerConfig lacks consumerFallbehindThreshold=1234567 (%v):\n%s", err, conf)
	}

	out = s.admin("clusterList", "clusterList")
	s.must("clusterList", out, tg.ClusterName, tg.BrokerName, addr)

	_ = pc.Shutdown()
	out = s.admin("deleteSubGroup", "deleteSubGroup", "-b", addr, "-g", mqaGroup)
	s.must("deleteSubGroup", out, "delete subscription group ["+mqaGroup+"] from broker ["+addr+"] success.")
	out = s.admin("deleteTopic", "deleteTopic", "-t", mqaTopic, "-c", tg.ClusterName)
	s.must("deleteTopic", out, "delete topic ["+mqaTopic+"] from cluster ["+tg.ClusterName+"] success")
	if out := harness.Mqadmin(tb, tg, "topicList"); strings.Contains(out, mqaTopic+"\n") {
		tb.Fatalf("topicList still lists %s after deleteTopic:\n%s", mqaTopic, out)
	}
}

func waitFor(tb harness.TB, d time.Duration, what string, ok func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// statusValue reads "key : value" from brokerStatus output; -1 when absent or not a number.
func statusValue(out, key string) int64 {
	for _, l := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(l, ":")
		if ok && strings.TrimSpace(k) == key {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

var adminNormalizers = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\d{4}-\d{2}-\d{2}[ #]\d{2}:\d{2}:\d{2}([,.:]\d{3})?`), "<time>"},
	{regexp.MustCompile(`\d+\.\d+\.\d+\.\d+(:\d+)?(@[\w#.:-]+)?`), "<addr>"},
	{regexp.MustCompile(`\b[0-9A-Fa-f]{32}\b`), "<id>"},
	{regexp.MustCompile(`(?i)(tps:?\s*)\d+\.\d+`), "${1}<tps>"},
	{regexp.MustCompile(`\b\d+ms\b`), "<n>ms"}, // round trips and cost times
	{regexp.MustCompile(`\b\d{12,13}\b`), "<ms>"},
	{regexp.MustCompile(`V\d+_\d+_\d+(_SNAPSHOT)?`), "<version>"},
	{regexp.MustCompile(`mqa-(apache|rmqd)`), "mqa-<kind>"},
	{regexp.MustCompile(`/[\w./-]*/(apache|rmqd)[\w./-]*`), "<path>"},
	{regexp.MustCompile(`[ \t]+`), " "},
}

func normalizeAdmin(s string) string {
	for _, n := range adminNormalizers {
		s = n.re.ReplaceAllString(s, n.with)
	}
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// adminCompare says how a step's outputs must agree. Commands that dump the whole broker (configuration keys,
// runtime counters, client stack traces) are compared on the lines named here; everything else line for line.
var adminCompare = map[string]func(line string) bool{
	// Values of these depend on timing and on how much each broker writes for itself.
	"brokerStatus": keyIn("brokerActive", "brokerVersionDesc", "msgPutTotalTodayNow", "msgGetTotalTodayNow",
		"commitLogDiskRatio", "earliestMessageTimeStamp", "putTps", "getTransferredTps", "bootTimestamp",
		"sendThreadPoolQueueCapacity", "pullThreadPoolQueueCapacity"),
	"getBrokerConfig": keyIn("brokerName", "brokerClusterName", "brokerId", "autoCreateTopicEnable",
		"autoCreateSubscriptionGroup", "defaultTopicQueueNums", "brokerPermission", "maxMessageSize",
		"longPollingEnable", "messageDelayLevel", "flushDiskType", "consumerFallbehindThreshold", "listenPort"),
	"consumerStatus": func(l string) bool {
		return !strings.Contains(l, "jstack") && !strings.HasPrefix(l, "at ") && !strings.HasPrefix(l, "\"")
	},
	// The rates, the hours since the first message and the disk ratio (#InTPS, #OutTPS, #Hour, #SPACE) depend
	// on when the command runs: a consumer's re-delivery after resetOffsetByTime may still be inside the 10 s
	// rate window on one target and not on the other. Decimals are blanked in filterLines.
	"clusterList": func(string) bool { return true },
	// Each broker has groups of its own (system groups, the tools' and clients' retry topics): compare the
	// rows of the test's topic; "Diff Total" sums every group's.
	"brokerConsumeStats": func(l string) bool { return strings.HasPrefix(l, mqaTopic+" ") },
	// Apache lists its own system topics (RMQ_SYS_*, rmq_sys_*, SCHEDULE_TOPIC, ...): compare ours.
	"topicList": func(l string) bool { return strings.HasPrefix(l, "IT_") || l == "TBW102" },
	// TestMqadminSweep's. The round-trip times are the machine's (numbers blanked in filterLines).
	"checkMsgSendRT": func(string) bool { return true },
	// NamesrvConfig's own keys: the Netty keys next to them are each server's (Java lists every
	// NettyServerConfig field; rmqd those it binds, docs/compatibility.md), and so are its paths.
	"getNamesrvConfig":      namesrvConfigKeys,
	"getNamesrvConfigAfter": namesrvConfigKeys,
}

var namesrvConfigKeys = keyIn("orderMessageEnable", "clusterTest", "productEnvName", "scanNotActiveBrokerInterval",
	"enableAllTopicList", "enableTopicList", "returnOrderTopicConfigToBroker", "supportActingMaster",
	"deleteTopicWithBrokerRegistration", "notifyMinBrokerIdChanged", "waitSecondsForService", "needWaitForService",
	"enableControllerInNamesrv", "configBlackList", "defaultThreadPoolNums", "defaultThreadPoolQueueCapacity",
	"clientRequestThreadPoolNums", "clientRequestThreadPoolQueueCapacity", "unRegisterBrokerQueueCapacity",
	"serverChannelMaxIdleTimeSeconds", "bindAddress")

// keyIn keeps "key = value" and "key : value" lines of the given keys, with the value blanked when it is a
// number or timing (the key's presence and type is what clients rely on).
func keyIn(keys ...string) func(string) bool {
	set := map[string]bool{}
	for _, k := range keys {
		set[k] = true
	}
	return func(l string) bool {
		k, _, ok := strings.Cut(l, "=")
		if !ok {
			k, _, ok = strings.Cut(l, ":")
		}
		return ok && set[strings.TrimSpace(k)]
	}
}

// knownAdminDiffs lists the commands whose rmqd output is known to differ from Apache's, with the reason
// (same rules as expectedFailures: the comparison still runs, a pass is reported as UNEXPECTED PASS).
var knownAdminDiffs = map[string]string{}

// apacheTopicAsGroup matches the MessageTrack Apache 5.3.3 prints for a "group" named like the topic itself.
// 5.3.3 introduced ConsumerManager.topicGroupTable for QUERY_TOPIC_CONSUME_BY_WHO (apache/rocketmq 7ef36102)
// and filled it with the subscription's topic instead of the group (groups.add(subscriptionData.getTopic()));
// upstream fixed it right after the release (577371e2, 921664f4: groups.add(group)). 4.9.x, 5.3.2 and the
// fixed code answer the online groups subscribing the topic plus the groups with offsets on it, as rmqd does,
// so this one line is dropped from Apache's output rather than copied: mqadmin reports the bogus group as
// UNKNOWN, "No topic route info ... %RETRY%<topic>", spread over two lines.
var apacheTopicAsGroup = regexp.MustCompile(`(?s)MessageTrack \[consumerGroup=` + regexp.QuoteMeta(mqaTopic) +
	`, trackType=UNKNOWN, exceptionDesc=[^\]]*\]\n?`)

// permTopicCount is the number of topics wipeWritePerm and addWritePerm report.
var permTopicCount = regexp.MustCompile(`(write perm of broker\[[^\]]*\] in name server\[[^\]]*\] OK, )(\d+)`)

// apacheRocksDBTransTopics are the topics an Apache 5.4+ broker registers that rmqd does not create
// (RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC and _OP_HALF_TOPIC; docs/compatibility.md, Apache RocketMQ 5.4 and later).
const apacheRocksDBTransTopics = 2

// dropApacheBugs removes from Apache's output of step what only its release's bugs print (see above),
// and, against Apache 5.4 or newer (make integration-rocketmq55), its two RocksDB transaction topics from the counts
// of the write-permission steps.
func dropApacheBugs(tb harness.TB, step, out string) string {
	switch step {
	case "queryMsgById", "queryMsgByUniqueKey":
		return apacheTopicAsGroup.ReplaceAllString(out, "")
	case "wipeWritePerm", "addWritePerm":
		if !libAtLeast(tb, "apache", "rocketmq-broker", 5, 4) {
			return out
		}
		return permTopicCount.ReplaceAllStringFunc(out, func(m string) string {
			sub := permTopicCount.FindStringSubmatch(m)
			n, err := strconv.Atoi(sub[2])
			if err != nil || n < apacheRocksDBTransTopics {
				return m
			}
			return sub[1] + strconv.Itoa(n-apacheRocksDBTransTopics)
		})
	}
	return out
}

var decimalValue = regexp.MustCompile(`\b\d+\.\d+\b`)

var anyNumber = regexp.MustCompile(`\d+(\.\d+)?`)

var timerReadBehind = regexp.MustCompile(` \d+-(\d+)\(`)

var numericValue = regexp.MustCompile(`^([\w.]+ ?[=:]) ?-?[\d. <>a-z]*$`)

func compareAdminOutputs(t *testing.T, apache, rmqd map[string]string) {
	steps := make([]string, 0, len(apache))
	for k := range apache {
		steps = append(steps, k)
	}
	sort.Strings(steps)
	for step, reason := range knownAdminDiffs {
		if _, ok := apache[step]; !ok {
			t.Errorf("knownAdminDiffs[%q] (%s) names no step the session ran: delete the entry", step, reason)
		}
	}
	for _, step := range steps {
		t.Run("compare/"+step, func(t *testing.T) {
			body := func(tb harness.TB) {
				got, ok := rmqd[step]
				if !ok {
					tb.Fatalf("rmqd never got to %s", step)
				}
				a, r := normalizeAdmin(dropApacheBugs(tb, step, apache[step])), normalizeAdmin(got)
				if keep, ok := adminCompare[step]; ok {
					a, r = filterLines(a, keep, step), filterLines(r, keep, step)
				}
				if a != r {
					if os.Getenv("RMQD_MQADMIN_RAW") == "1" {
						tb.Logf("apache raw:\n%s\nrmqd raw:\n%s", apache[step], got)
					}
					tb.Errorf("%s output differs (normalized, - apache + rmqd):\n%s", step, lineDiff(a, r))
				}
			}
			if reason, ok := knownAdminDiffs[step]; ok {
				report(t, "rmqd", "mqadmin-"+step, reason, harness.Soft(t, body))
				return
			}
			body(t)
		})
	}
}

func filterLines(s string, keep func(string) bool, step string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !keep(l) {
			continue
		}
		if step == "brokerStatus" || step == "getBrokerConfig" {
			if m := numericValue.FindStringSubmatch(l); m != nil && !strings.Contains(l, "consumerFallbehindThreshold") &&
				!strings.Contains(l, "brokerId") && !strings.Contains(l, "defaultTopicQueueNums") {
				l = m[1] + " <n>"
			}
		}
		if step == "checkMsgSendRT" {
			l = anyNumber.ReplaceAllString(l, "<n>")
		}
		if step == "clusterList" {
			l = decimalValue.ReplaceAllString(l, "<n>")
			// The timer column starts with how many seconds the timer's delivery
			// cursor lags the clock: 0, or 1 on a loaded machine, either broker.
			l = timerReadBehind.ReplaceAllString(l, " <n>-$1(")
		}
		out = append(out, l)
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// lineDiff lists lines only one side has (order-insensitive: mqadmin prints hash-ordered tables).
func lineDiff(a, b string) string {
	count := map[string]int{}
	for _, l := range strings.Split(a, "\n") {
		count[l]++
	}
	for _, l := range strings.Split(b, "\n") {
		count[l]--
	}
	var sb strings.Builder
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for n := count[k]; n > 0; n-- {
			fmt.Fprintf(&sb, "- %s\n", k)
		}
		for n := count[k]; n < 0; n++ {
			fmt.Fprintf(&sb, "+ %s\n", k)
		}
	}
	if sb.Len() == 0 {
		return "(same lines, different order)\n--- apache\n" + a + "\n--- rmqd\n" + b
	}
	return sb.String()
}
