package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/integration/harness"
	"rmqd/remoting"
)

// TestSecurityNames is the black-box check of issue 13 (docs/security.md): with the raw protocol and no
// credentials, every request code that carries a topic or group name gets climbing, absolute, NUL,
// over-long and "x/../../y" names, and a transactional half message smuggles REAL_TOPIC=../../evil before
// its commit. The file tree around the store (the test's own temporary root, which holds the store's
// parent) is compared before and after each round: nothing may appear or vanish outside the store, nothing
// may vanish inside it, and afterwards the broker still stores and serves a message.
//
// rmqd must pass every check. Where Apache 5.3.3 creates or removes something, the test logs it as
// "APACHE WEAKER" (recorded in docs/security.md) instead of failing.
//
//	RMQD_TARGET=rmqd go test -count=1 -v -run 'TestSecurityNames' ./integration/
func TestSecurityNames(t *testing.T) {
	kinds := targetsFromEnv(t)
	for _, k := range kinds {
		if k == harness.KindApache {
			harness.RequireJars(t, "apache")
		}
	}
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			tg := harness.Start(t, kind, harness.Options{})
			runSecurityNames(t, tg)
		})
	}
}

// secClient is a raw client that records transport failures instead of failing: a broker may close a
// connection on a request it cannot decode, which is allowed.
type secClient struct {
	t  *testing.T
	c  *remoting.Client
	tg *harness.Target
}

func (s *secClient) call(code int32, ext map[string]string, body []byte) (*codec.RemotingCommand, error) {
	req := rawRequest(code, ext)
	req.Body = body
	ctx, cancel := context.WithTimeout(s.t.Context(), 5*time.Second)
	defer cancel()
	return s.c.InvokeSync(ctx, s.tg.BrokerAddr, req)
}

// must is call for the set-up and the final check: anything but SUCCESS fails the test.
func (s *secClient) must(what string, code int32, ext map[string]string, body []byte) *codec.RemotingCommand {
	s.t.Helper()
	resp, err := s.call(code, ext, body)
	if err != nil {
		s.t.Fatalf("%s: %v", what, err)
	}
	if resp.Code != codec.RespSuccess {
		s.t.Fatalf("%s: code %d %q", what, resp.Code, resp.Remark)
	}
	return resp
}

// fileTree lists every path under root, relative, directories with a trailing "/".
func fileTree(t *testing.T, root string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) { // replaced between listing and visiting (config files are)
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			rel += "/"
		}
		out[rel] = true
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	return out
}

// treeDiff compares two trees of root: created outside store, removed outside, removed inside. A path
// missing from after is looked at again a second later: both brokers replace their config files by
// delete and rename, which a walk may catch half-way.
func treeDiff(root, store string, before, after map[string]bool) (outCreated, outRemoved, inRemoved []string) {
	storeRel, _ := filepath.Rel(root, store)
	storeRel += "/"
	inside := func(p string) bool { return strings.HasPrefix(p, storeRel) || p == storeRel }
	for p := range after {
		if !before[p] && !inside(p) {
			outCreated = append(outCreated, p)
		}
	}
	var missing []string
	for p := range before {
		if !after[p] && !strings.HasSuffix(p, ".tmp") {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		time.Sleep(time.Second)
	}
	for _, p := range missing {
		if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
			continue
		}
		if inside(p) {
			inRemoved = append(inRemoved, p)
		} else {
			outRemoved = append(outRemoved, p)
		}
	}
	sort.Strings(outCreated)
	sort.Strings(outRemoved)
	sort.Strings(inRemoved)
	return
}

// secCase is one request: a code and a header and body made from the attack name.
type secCase struct {
	name string
	code int32
	ext  func(n string) map[string]string
	body func(n string) []byte
}

func jsonStr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// secCases are the name-carrying codes a broker serves, each with the name in every field that takes
// one. offset is a commitlog offset of a stored message (send-back needs one), keep a topic that exists.
func secCases(offset int64, msgID, keep string) []secCase {
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	off := strconv.FormatInt(offset, 10)
	v2 := func(topic string, batch bool) map[string]string {
		return map[string]string{"a": "IT_sec_pg", "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": now,
			"h": "0", "i": "", "j": "0", "k": "false", "m": strconv.FormatBool(batch)}
	}
	hb := func(group, topic string) []byte {
		return []byte(`{"clientID":"IT_sec_client","consumerDataSet":[{"groupName":` + jsonStr(group) +
			`,"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",` +
			`"subscriptionDataSet":[{"topic":` + jsonStr(topic) + `,"subString":"*","tagsSet":[],"codeSet":[],"subVersion":1,"expressionType":"TAG"}],"unitMode":false}],` +
			`"producerDataSet":[{"groupName":"IT_sec_pg"}]}`)
	}
	lock := func(group, topic string) []byte {
		return []byte(`{"consumerGroup":` + jsonStr(group) + `,"clientId":"IT_sec_client","onlyThisBroker":true,` +
			`"mqSet":[{"topic":` + jsonStr(topic) + `,"brokerName":"broker-a","queueId":0}]}`)
	}
	pull := func(group, topic string) map[string]string {
		return map[string]string{"consumerGroup": group, "topic": topic, "queueId": "0", "queueOffset": "0",
			"maxMsgNums": "32", "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*",
			"subVersion": "0", "expressionType": "TAG"}
	}
	h := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	none := func(string) []byte { return nil }
	return []secCase{
		// Creation first, so the codes after it find the group and topic if a broker took them.
		{"UPDATE_AND_CREATE_SUBSCRIPTIONGROUP", codec.ReqUpdateAndCreateSubscriptiongroup, func(string) map[string]string { return nil },
			func(n string) []byte {
				return []byte(`{"groupName":` + jsonStr(n) + `,"consumeEnable":true,"retryQueueNums":1,"retryMaxTimes":16,"brokerId":0,"whichBrokerWhenConsumeSlowly":1}`)
			}},
		{"UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST", codec.ReqUpdateAndCreateSubscriptiongroupList, func(string) map[string]string { return nil },
			func(n string) []byte {
				return []byte(`{"groupConfigList":[{"groupName":` + jsonStr(n+"_l") + `,"consumeEnable":true,"retryQueueNums":1,"retryMaxTimes":16}]}`)
			}},
		{"UPDATE_AND_CREATE_TOPIC", codec.ReqUpdateAndCreateTopic, func(n string) map[string]string {
			return h("topic", n, "defaultTopic", "TBW102", "readQueueNums", "1", "writeQueueNums", "1", "perm", "6",
				"topicFilterType", "SINGLE_TAG", "topicSysFlag", "0", "order", "false")
		}, none},
		{"UPDATE_AND_CREATE_TOPIC_LIST", codec.ReqUpdateAndCreateTopicList, func(string) map[string]string { return nil },
			func(n string) []byte {
				return []byte(`{"topicConfigList":[{"topicName":` + jsonStr(n+"_l") + `,"readQueueNums":1,"writeQueueNums":1,"perm":6,"topicFilterType":"SINGLE_TAG"}]}`)
			}},
		{"HEART_BEAT group", codec.ReqHeartBeat, func(string) map[string]string { return nil }, func(n string) []byte { return hb(n, keep) }},
		{"HEART_BEAT topic", codec.ReqHeartBeat, func(string) map[string]string { return nil }, func(n string) []byte { return hb("IT_sec_cg", n) }},
		{"SEND_MESSAGE", codec.ReqSendMessage, func(n string) map[string]string { return sendHeader(n, 0, "") },
			func(string) []byte { return []byte("x") }},
		{"SEND_MESSAGE_V2", codec.ReqSendMessageV2, func(n string) map[string]string { return v2(n, false) },
			func(string) []byte { return []byte("x") }},
		{"SEND_BATCH_MESSAGE", codec.ReqSendBatchMessage, func(n string) map[string]string { return v2(n, true) },
			func(string) []byte { return codec.AppendBatchEntry(nil, 0, []byte("x"), "") }},
		{"SEND_REPLY_MESSAGE_V2", codec.ReqSendReplyMessageV2, func(n string) map[string]string { return v2(n, false) },
			func(string) []byte { return []byte("x") }},
		{"CONSUMER_SEND_MSG_BACK to DLQ", codec.ReqConsumerSendMsgBack, func(n string) map[string]string {
			return h("group", n, "offset", off, "delayLevel", "-1", "originMsgId", msgID, "originTopic", keep,
				"unitMode", "false", "maxReconsumeTimes", "16")
		}, none},
		{"CONSUMER_SEND_MSG_BACK to retry", codec.ReqConsumerSendMsgBack, func(n string) map[string]string {
			return h("group", n, "offset", off, "delayLevel", "1", "originMsgId", msgID, "originTopic", n,
				"unitMode", "false", "maxReconsumeTimes", "16")
		}, none},
		{"PULL_MESSAGE topic", codec.ReqPullMessage, func(n string) map[string]string { return pull("IT_sec_cg", n) }, none},
		{"PULL_MESSAGE group", codec.ReqPullMessage, func(n string) map[string]string { return pull(n, keep) }, none},
		{"LITE_PULL_MESSAGE", codec.ReqLitePullMessage, func(n string) map[string]string { return pull(n, n) }, none},
		{"QUERY_MESSAGE", codec.ReqQueryMessage, func(n string) map[string]string {
			return h("topic", n, "key", "k", "maxNum", "1", "beginTimestamp", "0", "endTimestamp", now)
		}, none},
		{"QUERY_CONSUMER_OFFSET", codec.ReqQueryConsumerOffset, func(n string) map[string]string {
			return h("consumerGroup", n, "topic", n, "queueId", "0")
		}, none},
		{"UPDATE_CONSUMER_OFFSET", codec.ReqUpdateConsumerOffset, func(n string) map[string]string {
			return h("consumerGroup", n, "topic", n, "queueId", "0", "commitOffset", "1")
		}, none},
		{"SEARCH_OFFSET_BY_TIMESTAMP", codec.ReqSearchOffsetByTimestamp, func(n string) map[string]string {
			return h("topic", n, "queueId", "0", "timestamp", now)
		}, none},
		{"GET_MAX_OFFSET", codec.ReqGetMaxOffset, func(n string) map[string]string { return h("topic", n, "queueId", "0") }, none},
		{"GET_MIN_OFFSET", codec.ReqGetMinOffset, func(n string) map[string]string { return h("topic", n, "queueId", "0") }, none},
		{"GET_EARLIEST_MSG_STORETIME", codec.ReqGetEarliestMsgStoretime, func(n string) map[string]string { return h("topic", n, "queueId", "0") }, none},
		{"LOCK_BATCH_MQ", codec.ReqLockBatchMq, func(string) map[string]string { return nil }, func(n string) []byte { return lock(n, n) }},
		{"UNLOCK_BATCH_MQ", codec.ReqUnlockBatchMq, func(string) map[string]string { return nil }, func(n string) []byte { return lock(n, n) }},
		{"CHECK_CLIENT_CONFIG", codec.ReqCheckClientConfig, func(string) map[string]string { return nil }, func(n string) []byte {
			return []byte(`{"clientId":"c","group":` + jsonStr(n) + `,"subscriptionData":{"topic":` + jsonStr(n) + `,"subString":"*","expressionType":"TAG"}}`)
		}},
		{"GET_CONSUMER_LIST_BY_GROUP", codec.ReqGetConsumerListByGroup, func(n string) map[string]string { return h("consumerGroup", n) }, none},
		{"GET_TOPIC_CONFIG", codec.ReqGetTopicConfig, func(n string) map[string]string { return h("topic", n) }, none},
		{"GET_SUBSCRIPTIONGROUP_CONFIG", codec.ReqGetSubscriptiongroupConfig, func(n string) map[string]string { return h("group", n) }, none},
		{"GET_TOPIC_STATS_INFO", codec.ReqGetTopicStatsInfo, func(n string) map[string]string { return h("topic", n) }, none},
		{"GET_CONSUME_STATS", codec.ReqGetConsumeStats, func(n string) map[string]string { return h("consumerGroup", n, "topic", n) }, none},
		{"GET_CONSUMER_CONNECTION_LIST", codec.ReqGetConsumerConnectionList, func(n string) map[string]string { return h("consumerGroup", n) }, none},
		{"QUERY_TOPIC_CONSUME_BY_WHO", codec.ReqQueryTopicConsumeByWho, func(n string) map[string]string { return h("topic", n) }, none},
		{"INVOKE_BROKER_TO_RESET_OFFSET", codec.ReqInvokeBrokerToResetOffset, func(n string) map[string]string {
			return h("topic", n, "group", n, "timestamp", "0", "isForce", "true")
		}, none},
		{"GET_CONSUMER_RUNNING_INFO", codec.ReqGetConsumerRunningInfo, func(n string) map[string]string {
			return h("consumerGroup", n, "clientId", "IT_sec_client", "jstackEnable", "false")
		}, none},
		{"CONSUME_MESSAGE_DIRECTLY", codec.ReqConsumeMessageDirectly, func(n string) map[string]string {
			return h("consumerGroup", n, "clientId", "IT_sec_client", "msgId", msgID, "topic", n)
		}, none},
		{"QUERY_CONSUME_QUEUE", codec.ReqQueryConsumeQueue, func(n string) map[string]string {
			return h("topic", n, "queueId", "0", "index", "0", "count", "1", "consumerGroup", n)
		}, none},
		{"UNREGISTER_CLIENT", codec.ReqUnregisterClient, func(n string) map[string]string {
			return h("clientID", "IT_sec_client", "consumerGroup", n, "producerGroup", "IT_sec_pg")
		}, none},
		// Deletion last: of the attack name itself and of the retry and dead-letter topics a send-back
		// may have made from it.
		{"DELETE_TOPIC_IN_BROKER", codec.ReqDeleteTopicInBroker, func(n string) map[string]string { return h("topic", n) }, none},
		{"DELETE_TOPIC_IN_BROKER %RETRY%", codec.ReqDeleteTopicInBroker, func(n string) map[string]string { return h("topic", "%RETRY%"+n) }, none},
		{"DELETE_TOPIC_IN_BROKER %DLQ%", codec.ReqDeleteTopicInBroker, func(n string) map[string]string { return h("topic", "%DLQ%"+n) }, none},
		{"DELETE_SUBSCRIPTIONGROUP", codec.ReqDeleteSubscriptiongroup, func(n string) map[string]string {
			return h("groupName", n, "cleanOffset", "true")
		}, none},
	}
}

func runSecurityNames(t *testing.T, tg *harness.Target) {
	apache := tg.Kind == harness.KindApache
	report := func(format string, args ...any) {
		t.Helper()
		if apache {
			t.Logf("APACHE WEAKER: "+format, args...)
		} else {
			t.Errorf(format, args...)
		}
	}
	c := remoting.NewClient(remoting.ClientConfig{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() { _ = c.Close() })
	s := &secClient{t: t, c: c, tg: tg}

	store := tg.StoreDir
	parent := filepath.Dir(store)
	root := filepath.Dir(parent) // the test's own temporary root: two levels of climbing stay visible
	victim := filepath.Join(parent, "victim.txt")
	if err := os.WriteFile(victim, []byte("victim"), 0o644); err != nil {
		t.Fatal(err)
	}

	const keep = "IT_sec_keep"
	s.must("create "+keep, codec.ReqUpdateAndCreateTopic, map[string]string{"topic": keep, "defaultTopic": "TBW102",
		"readQueueNums": "1", "writeQueueNums": "1", "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0",
		"order": "false"}, nil)
	sent := s.must("send to "+keep, codec.ReqSendMessage, sendHeader(keep, 0, ""), []byte("keep"))
	msgID, _ := sent.Ext.Get("msgId")
	_, offset, err := compat.DecodeOffsetMsgID(msgID)
	if err != nil {
		t.Fatalf("send answered msgId %q: %v", msgID, err)
	}

	// NUL last: a record whose topic holds one wedges Apache's dispatcher for good (docs/security.md),
	// and every name after it would go unmeasured there.
	names := []string{
		"../x", "../../victim.txt", "../checkpoint", "../../../escape3", "/tmp/x", filepath.Join(root, "abs_escape"),
		strings.Repeat("a", 300), "x/../../y", "x/../../../grp_escape", "x/../../../../grp_escape2", "..", ".",
		"x\x00y",
	}
	cases := secCases(offset, msgID, keep)
	answers := map[string][]string{} // case → "code" per name, for the log
	baseline := fileTree(t, root)
	before := baseline
	for _, n := range names {
		for _, sc := range cases {
			resp, err := s.call(sc.code, sc.ext(n), sc.body(n))
			a := "no answer"
			switch {
			case err != nil:
				a = "error: " + err.Error()
			case resp != nil:
				a = strconv.Itoa(int(resp.Code))
				if !apache && resp.Code == codec.RespSuccess {
					report("%s with name %q answered SUCCESS", sc.name, n)
				}
			}
			answers[sc.name] = append(answers[sc.name], a)
		}
		// Both brokers dispatch to consume queues after answering.
		time.Sleep(200 * time.Millisecond)
		after := fileTree(t, root)
		created, removedOut, removedIn := treeDiff(root, store, before, after)
		for _, p := range created {
			report("name %q: created %s outside the store", n, p)
		}
		for _, p := range removedOut {
			report("name %q: removed %s outside the store", n, p)
		}
		for _, p := range removedIn {
			if baseline[p] { // what an attack made inside the store may go again
				report("name %q: removed %s inside the store", n, p)
			}
		}
		before = after
	}
	for _, sc := range cases {
		t.Logf("%s: %-40s %s", tg.Kind, sc.name, strings.Join(answers[sc.name], " "))
	}

	runSmuggledRealTopic(t, s, report, root, store)

	// Delayed retries (level 1 = 1 s) have come due by now.
	time.Sleep(2 * time.Second)
	created, removedOut, removedIn := treeDiff(root, store, before, fileTree(t, root))
	for _, p := range append(created, removedOut...) {
		report("after the delayed retries: %s created or removed outside the store", p)
	}
	for _, p := range removedIn {
		if baseline[p] {
			report("after the delayed retries: %s removed inside the store", p)
		}
	}
	if data, err := os.ReadFile(victim); err != nil || string(data) != "victim" {
		report("victim file beside the store: %q %v", data, err)
	}
	for _, f := range []string{"checkpoint", "lock", "commitlog", "consumequeue/" + keep} {
		if _, err := os.Stat(filepath.Join(store, f)); err != nil {
			report("store lost %s: %v", f, err)
		}
	}

	// Still serving: a new topic takes a message and a pull returns it.
	const ok = "IT_sec_after"
	s.must("create "+ok, codec.ReqUpdateAndCreateTopic, map[string]string{"topic": ok, "defaultTopic": "TBW102",
		"readQueueNums": "1", "writeQueueNums": "1", "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0",
		"order": "false"}, nil)
	s.must("send after the attack", codec.ReqSendMessage, sendHeader(ok, 0, ""), []byte("after"))
	var got *codec.RemotingCommand
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := s.call(codec.ReqPullMessage, map[string]string{"consumerGroup": "IT_sec_after_cg", "topic": ok,
			"queueId": "0", "queueOffset": "0", "maxMsgNums": "32", "sysFlag": strconv.Itoa(pullFlagSubscription), "commitOffset": "0",
			"suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0", "expressionType": "TAG"}, nil)
		if err == nil && resp.Code == codec.RespSuccess {
			got = resp
			break
		}
		if time.Now().After(deadline) {
			report("pull after the attack never found the message sent after it: %v %+v", err, resp)
			if apache {
				return
			}
			t.FailNow()
		}
	}
	var m codec.Message
	n, err := codec.DecodeRecord(got.Body, &m)
	if err != nil || n != len(got.Body) || string(m.Body) != "after" {
		t.Fatalf("%s: pull after the attack: record of %d/%d bytes, body %q, err %v", tg.Kind, n, len(got.Body), m.Body, err)
	}
}

// runSmuggledRealTopic sends a transactional half message whose own properties carry REAL_TOPIC and
// REAL_QID pointing out of the store, then commits it with END_TRANSACTION: the broker must put the
// committed message into the topic it was sent to, or nowhere, never into ../../evil_topic.
func runSmuggledRealTopic(t *testing.T, s *secClient, report func(string, ...any), root, store string) {
	const topic, pg = "IT_sec_tx", "IT_sec_txpg"
	for _, evil := range []string{"../../evil_topic", "x/../../../evil_topic2", filepath.Join(root, "evil_abs")} {
		before := fileTree(t, root)
		props := "TRAN_MSG\x01true\x02PGROUP\x01" + pg + "\x02REAL_TOPIC\x01" + evil + "\x02REAL_QID\x010\x02"
		h := sendHeader(topic, 0, props)
		h["producerGroup"] = pg
		h["sysFlag"] = "4" // TRANSACTION_PREPARED_TYPE
		resp, err := s.call(codec.ReqSendMessage, h, []byte("half"))
		if err != nil || resp.Code != codec.RespSuccess {
			t.Logf("%s: half message with REAL_TOPIC=%q: %v %+v", s.tg.Kind, evil, err, resp)
			continue
		}
		msgID, _ := resp.Ext.Get("msgId")
		qoff, _ := resp.Ext.Get("queueOffset")
		_, off, err := compat.DecodeOffsetMsgID(msgID)
		if err != nil {
			t.Fatalf("half message msgId %q: %v", msgID, err)
		}
		end, err := s.call(codec.ReqEndTransaction, map[string]string{"producerGroup": pg, "tranStateTableOffset": qoff,
			"commitLogOffset": strconv.FormatInt(off, 10), "commitOrRollback": "8", "fromTransactionCheck": "false",
			"msgId": msgID, "transactionId": msgID, "topic": topic}, nil)
		code := "no answer"
		if err == nil && end != nil {
			code = fmt.Sprintf("%d %q", end.Code, end.Remark)
		}
		t.Logf("%s: END_TRANSACTION commit of a half message with REAL_TOPIC=%q: %s", s.tg.Kind, evil, code)
		time.Sleep(300 * time.Millisecond)
		created, removedOut, removedIn := treeDiff(root, store, before, fileTree(t, root))
		for _, p := range append(append(created, removedOut...), removedIn...) {
			report("smuggled REAL_TOPIC=%q: %s created or removed", evil, p)
		}
		for p := range fileTree(t, filepath.Join(store, "consumequeue")) {
			if strings.Contains(p, "evil") {
				report("smuggled REAL_TOPIC=%q: consume queue %s inside the store", evil, p)
			}
		}
	}
}
