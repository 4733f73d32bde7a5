package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"rmqd/codec"
	"rmqd/integration/harness"
)

// TestMqadminSweep runs the mqadmin 5.3.3 commands TestMqadmin leaves out against each target: the
// list forms of updateTopic and updateSubGroup, permissions, KV and order configuration, the name server's
// configuration, mqadmin's own sends and reads, consume-queue and offset queries, group offsets copied and
// skipped, send round trips, clean-ups, exports, and the commands of features a broker may not run (the
// controller, cold-data flow control, RocksDB). Each command's output, or its failure, is compared between the
// targets as TestMqadmin's are.
func TestMqadminSweep(t *testing.T) {
	// traceTopicEnable: the traced send's records need RMQ_SYS_TRACE_TOPIC, which mqadmin may not create.
	// registerNameServerPeriod: the order configuration reaches the broker with a registration (Java's shortest period).
	outputs := runAdminSessions(t, "mqadmin-sweep", harness.Options{BrokerConf: map[string]string{"traceTopicEnable": "true",
		"registerNameServerPeriod": "10000"}}, (*adminSession).sweep)
	if len(outputs) < 2 {
		t.Logf("comparison skipped: only %d target(s) ran", len(outputs))
		return
	}
	compareAdminOutputs(t, outputs[harness.KindApache], outputs[harness.KindRmqd])
	logs := filepath.Join(harness.LogDir(t), "targets")
	compareExports(t, filepath.Join(logs, harness.KindApache), filepath.Join(logs, harness.KindRmqd))
}

const (
	mqsTopic = "IT_mqs"
	mqsGroup = "IT_mqs_cg"
)

// try runs a command that may fail on both targets; its output, or "FAILED" and the failure's first line,
// is what the comparison sees.
func (s *adminSession) try(step string, args ...string) string {
	s.tb.Helper()
	out, err := harness.TryMqadmin(s.tb, s.tg, args...)
	if err != nil {
		first, _, _ := strings.Cut(err.Error(), "\n")
		out = "FAILED: " + first + "\n" + out
	}
	return s.record(step, out)
}

func (s *adminSession) sweep() {
	tb, tg := s.tb, s.tg
	addr, name := tg.BrokerAddr, tg.BrokerName
	dir, logs := tb.TempDir(), harness.LogDir(tb)
	write := func(file, body string) string {
		p := filepath.Join(dir, file)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			tb.Fatalf("%v", err)
		}
		return p
	}

	s.must("updateTopic", s.try("updateTopic", "updateTopic", "-b", addr, "-t", mqsTopic, "-r", "4", "-w", "4"), "success")
	// consumerProgress and cloneGroupOffset look up the groups' retry topics, which consumers would have made.
	for _, g := range []string{mqsGroup, "IT_mqs_g2"} {
		s.try("updateRetryTopic"+g, "updateTopic", "-b", addr, "-t", "%RETRY%"+g, "-r", "1", "-w", "1")
	}
	s.must("updateTopicList", s.try("updateTopicList", "updateTopicList", "-b", addr, "-f", write("topics.json",
		`[{"topicName":"IT_mqs_l1","readQueueNums":2,"writeQueueNums":2,"perm":6},{"topicName":"IT_mqs_l2","readQueueNums":1,"writeQueueNums":1,"perm":6}]`)),
		"submit batch of topic config to "+addr+" success")
	s.must("updateSubGroupList", s.try("updateSubGroupList", "updateSubGroupList", "-b", addr, "-f", write("groups.json",
		`[{"groupName":"`+mqsGroup+`","consumeEnable":true,"retryMaxTimes":3},{"groupName":"IT_mqs_g2","consumeEnable":true}]`)),
		"submit batch of group config to "+addr+" success")
	waitFor(tb, 30*time.Second, "the listed topics in topicList", func() bool {
		out, err := harness.TryMqadmin(tb, tg, "topicList")
		return err == nil && strings.Contains(out, "IT_mqs_l1\n") && strings.Contains(out, "IT_mqs_l2\n")
	})
	s.must("getConsumerConfig", s.try("getConsumerConfig", "getConsumerConfig", "-g", mqsGroup), "retryMaxTimes", "=  3")
	s.must("topicClusterList", s.try("topicClusterList", "topicClusterList", "-t", mqsTopic), tg.ClusterName)

	for _, body := range []string{"m0", "m1", "m2"} {
		s.must("sendMessage"+body, s.try("sendMessage"+body, "sendMessage", "-t", mqsTopic, "-p", body, "-k", "key"+body,
			"-c", "tagA", "-b", name, "-i", "0"), "SEND_OK")
	}
	out := s.try("sendMessageTraced", "sendMessage", "-t", mqsTopic, "-p", "traced", "-b", name, "-i", "1", "-m", "true")
	s.must("sendMessageTraced", out, "SEND_OK")
	traced := regexp.MustCompile(`\b[0-9A-F]{32}\b`).FindString(out)
	s.must("consumeMessage", s.try("consumeMessage", "consumeMessage", "-t", mqsTopic, "-b", name, "-i", "0", "-o", "0", "-c", "3"),
		"Consume ok", "BODY: m0", "BODY: m1", "BODY: m2")
	s.must("printMsgByQueue", s.try("printMsgByQueue", "printMsgByQueue", "-t", mqsTopic, "-a", name, "-i", "0", "-c", "UTF-8",
		"-p", "true", "-d", "true"), "BODY: m2")
	s.must("printMsg", s.try("printMsg", "printMsg", "-t", mqsTopic, "-c", "UTF-8", "-d", "true"), "maxOffset=3", "BODY: m1")
	s.must("queryMsgByOffset", s.try("queryMsgByOffset", "queryMsgByOffset", "-t", mqsTopic, "-b", name, "-i", "0", "-o", "1"),
		"Queue Offset:        1", "[keym1]")
	s.must("queryCq", s.try("queryCq", "queryCq", "-t", mqsTopic, "-q", "0", "-i", "0", "-c", "3", "-b", addr),
		"max: 3, min: 0", "idx: 2")
	s.must("allocateMQ", s.try("allocateMQ", "allocateMQ", "-t", mqsTopic, "-i", "10.0.0.1,10.0.0.2"), `"10.0.0.1":[`, `"queueId":3`)
	traced = s.awaitTrace(traced)
	s.must("queryMsgTraceById", s.try("queryMsgTraceById", "queryMsgTraceById", "-i", traced), "success")

	s.must("updateTopicPerm4", s.try("updateTopicPerm4", "updateTopicPerm", "-b", addr, "-t", mqsTopic, "-p", "4"),
		"update topic perm from 6 to 4")
	s.must("topicRouteR", s.try("topicRouteR", "topicRoute", "-t", mqsTopic), `"perm":4`)
	s.must("updateTopicPerm6", s.try("updateTopicPerm6", "updateTopicPerm", "-b", addr, "-t", mqsTopic, "-p", "6"),
		"update topic perm from 4 to 6")
	s.must("wipeWritePerm", s.try("wipeWritePerm", "wipeWritePerm", "-b", name), "wipe write perm of broker["+name+"]")
	s.must("topicRouteWiped", s.try("topicRouteWiped", "topicRoute", "-t", mqsTopic), `"perm":4`)
	s.must("addWritePerm", s.try("addWritePerm", "addWritePerm", "-b", name), "add write perm of broker["+name+"]")
	s.must("topicRouteAdded", s.try("topicRouteAdded", "topicRoute", "-t", mqsTopic), `"perm":6`)

	s.must("updateKvConfig", s.try("updateKvConfig", "updateKvConfig", "-s", "IT_NS", "-k", "k1", "-v", "v1"), "success")
	s.must("deleteKvConfig", s.try("deleteKvConfig", "deleteKvConfig", "-s", "IT_NS", "-k", "k1"), "success")
	s.must("getNamesrvConfig", s.try("getNamesrvConfig", "getNamesrvConfig"), "orderMessageEnable")
	s.must("updateNamesrvConfig", s.try("updateNamesrvConfig", "updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true"),
		"update name server config success")
	if out := s.try("getNamesrvConfigAfter", "getNamesrvConfig"); !regexp.MustCompile(`orderMessageEnable\s*=\s*true`).MatchString(out) {
		tb.Fatalf("getNamesrvConfig after updateNamesrvConfig lacks orderMessageEnable = true:\n%s", out)
	}

	s.must("skipAccumulatedMessage", s.try("skipAccumulatedMessage", "skipAccumulatedMessage", "-g", mqsGroup, "-t", mqsTopic, "-f", "true"),
		"#brokerName")
	// Skipped to the end, offsets 3 (queue 0) and 1 (queue 1), which the clone copies.
	progress := regexp.MustCompile(`(?m)^` + mqsTopic + `\s+` + name + `\s+0\s+3\s+3\s+0\b`)
	if out := s.try("consumerProgressSkipped", "consumerProgress", "-g", mqsGroup); !progress.MatchString(out) {
		tb.Fatalf("consumerProgress after skipAccumulatedMessage: no row of queue 0 at 3 of 3:\n%s", out)
	}
	s.must("cloneGroupOffset", s.try("cloneGroupOffset", "cloneGroupOffset", "-s", mqsGroup, "-d", "IT_mqs_g2", "-t", mqsTopic,
		"-o", "true"), "clone group offset success")
	if out := s.try("consumerProgressCloned", "consumerProgress", "-g", "IT_mqs_g2"); !progress.MatchString(out) {
		tb.Fatalf("consumerProgress of the cloned group: no row of queue 0 at 3 of 3:\n%s", out)
	}

	s.must("sendMsgStatus", s.try("sendMsgStatus", "sendMsgStatus", "-b", name, "-s", "64", "-c", "3"), "sendStatus=SEND_OK")
	s.must("checkMsgSendRT", s.try("checkMsgSendRT", "checkMsgSendRT", "-t", mqsTopic, "-a", "3", "-s", "64"), "Avg RT")
	s.must("cleanExpiredCQ", s.try("cleanExpiredCQ", "cleanExpiredCQ", "-b", addr), "success")
	s.must("cleanUnusedTopic", s.try("cleanUnusedTopic", "cleanUnusedTopic", "-b", addr), "success")
	// Exported where the logs are, to be read side by side.
	for _, e := range mqsExports {
		s.must(e.step, s.try(e.step, append([]string{e.step, "-c", tg.ClusterName, "-f", filepath.Join(logs, e.dir)}, e.args...)...),
			"export "+filepath.Join(logs, e.dir, e.file)+" success")
	}
	// Last, as it changes the topic for good: the name server's order configuration reaches the broker with
	// its next registration (registerNameServerPeriod, 10 s here) and marks the topic order, which the name
	// server's delete does not undo (TopicConfigManager.updateOrderTopicConfig only sets the flag).
	s.must("updateOrderConfPut", s.try("updateOrderConfPut", "updateOrderConf", "-t", mqsTopic, "-m", "put", "-v", name+":4"), "success")
	s.must("updateOrderConfGet", s.try("updateOrderConfGet", "updateOrderConf", "-t", mqsTopic, "-m", "get"), "orderConf=["+name+":4]")
	raw := newRawClient(tb, tg)
	waitFor(tb, 40*time.Second, "the order flag from the name server", func() bool {
		resp := raw.invoke(codec.ReqGetTopicConfig, map[string]string{"topic": mqsTopic}, nil, 10*time.Second)
		return resp.Code == codec.RespSuccess && strings.Contains(string(resp.Body), `"order":true`)
	})
	s.must("updateOrderConfDelete", s.try("updateOrderConfDelete", "updateOrderConf", "-t", mqsTopic, "-m", "delete"), "success")
	s.must("exportPopRecord", s.try("exportPopRecord", "exportPopRecord", "-b", addr, "-d", "true"), "Export broker records")
	s.must("resetMasterFlushOffset", s.try("resetMasterFlushOffset", "resetMasterFlushOffset", "-b", addr, "-o", "0"),
		"reset master flush offset to 0 success")
	s.must("getColdDataFlowCtrInfo", s.try("getColdDataFlowCtrInfo", "getColdDataFlowCtrInfo", "-b", addr), "globalColdReadThreshold")
	s.try("setCommitLogReadAheadMode", "setCommitLogReadAheadMode", "-b", addr, "-m", "0")
	// RocksDB's commands: neither broker keeps a RocksDB store, both answer as one without it.
	s.must("rocksDBConfigToJson", s.try("rocksDBConfigToJson", "rocksDBConfigToJson", "-c", tg.ClusterName), "broker export done.")
	s.must("checkRocksdbCqWriteProgress", s.try("checkRocksdbCqWriteProgress", "checkRocksdbCqWriteProgress", "-c", tg.ClusterName),
		name+" check doing")
	// Java 5.4's timer engine switch (mqadmin 5.4+, make integration-rocketmq55): neither broker has the RocksDB
	// timeline, both go back to the wheel.
	if libAtLeast(tb, "mqadmin", "rocketmq-tools", 5, 4) {
		const noRocks = "timerRocksDBEnable must be configured true when broker start"
		if _, err := harness.TryMqadmin(tb, tg, "switchTimerEngine", "-b", addr, "-e", "R"); err == nil || !strings.Contains(err.Error(), noRocks) {
			tb.Fatalf("switchTimerEngine -e R: %v, want the refusal %q", err, noRocks)
		}
		s.record("switchTimerEngineR", "FAILED: "+noRocks)
		s.must("switchTimerEngineF", s.try("switchTimerEngineF", "switchTimerEngine", "-b", addr, "-e", "F"),
			"switchTimerEngine to FILE_TIME_WHEEL success, "+addr)
	}
	// Controller mode only: both brokers refuse it outside.
	if out := s.try("getBrokerEpoch", "getBrokerEpoch", "-b", name); !strings.HasPrefix(out, "FAILED") {
		tb.Fatalf("getBrokerEpoch outside controller mode: %s", out)
	}
}

// awaitTrace waits for the Pub record of the traced send and returns the id whose trace arrived. mqadmin's
// producer can lose its own trace: AsyncTraceDispatcher.shutdown flushes only what its worker has not taken
// yet, and its trace producer's send is asynchronous and stopped with it. So a send whose trace is not there
// after 20 s is repeated, twice at most, on IT_mqs_l1, whose counts no step compares.
func (s *adminSession) awaitTrace(id string) string {
	tb, tg := s.tb, s.tg
	found := func() bool {
		out, err := harness.TryMqadmin(tb, tg, "queryMsgTraceById", "-i", id)
		return err == nil && strings.Contains(out, "Pub")
	}
	for attempt := 1; ; attempt++ {
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if found() {
				return id
			}
			time.Sleep(500 * time.Millisecond)
		}
		if attempt == 3 {
			tb.Fatalf("no trace of %d traced sends within 20 s each (last id %s)", attempt, id)
		}
		tb.Logf("no trace of traced send %s after 20 s (mqadmin drops it when it stops first): sending another", id)
		out, err := harness.TryMqadmin(tb, tg, "sendMessage", "-t", "IT_mqs_l1", "-p", "traced", "-m", "true")
		if id = regexp.MustCompile(`\b[0-9A-F]{32}\b`).FindString(out); err != nil || id == "" {
			tb.Fatalf("traced re-send: %v\n%s", err, out)
		}
	}
}

// mqsExports are the sweep's export commands (run with -c <cluster> -f <log dir>/<dir>) and the file each
// writes, compared between the targets by compareExports.
var mqsExports = []struct {
	step, dir, file string
	args            []string
}{
	{"exportMetadata", "export-metadata", "metadata.json", []string{"-s"}},
	{"exportConfigs", "export-configs", "configs.json", nil},
	{"exportMetrics", "export-metrics", "metrics.json", nil},
}

// compareExports compares the files of mqsExports between the targets' log folders: as JSON with sorted
// keys, every number blanked (counts, sizes and times are each run's), metadata restricted to the test's
// topics and groups (each broker has system ones of its own).
func compareExports(t *testing.T, apacheDir, rmqdDir string) {
	for _, e := range mqsExports {
		t.Run("compare/"+e.file, func(t *testing.T) {
			a, r := exportShape(t, filepath.Join(apacheDir, e.dir, e.file)), exportShape(t, filepath.Join(rmqdDir, e.dir, e.file))
			if a != r {
				t.Errorf("%s differs (- apache + rmqd):\n%s", e.file, lineDiff(a, r))
			}
		})
	}
}

func exportShape(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v", err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, table := range []string{"topicConfigTable", "subscriptionGroupTable"} {
		if m, ok := v[table].(map[string]any); ok {
			for k := range m {
				if !strings.Contains(k, "IT_mqs") {
					delete(m, k)
				}
			}
		}
	}
	out, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatalf("%v", err)
	}
	return anyNumber.ReplaceAllString(string(out), "N")
}
