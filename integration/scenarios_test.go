package integration

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"rmqd/integration/harness"
)

// scenario is one black-box check, written once and run against every target by TestMatrix.
// Run gets a fresh-enough target (shared by the scenarios of one target, so use your own topic and group
// names) and fails through tb like a test. Needs lists the Java lib folders it uses (see harness.LibDir).
type scenario struct {
	Name  string
	Needs []string
	Run   func(tb harness.TB, tg *harness.Target)
}

// Properties set on every message by the produce steps: a space, '=' and ':' in values, a trailing space and
// non-ASCII UTF-8, all of which must round-trip byte for byte. (Blank values are refused by the Java client.)
const userPropsFlag = "color=red,spaced=a b=c:d,utf8=h\u00e9llo \u2713,trailing=x "

var userPropKeys = []string{"color", "spaced", "utf8", "trailing"}

var scenarios = []scenario{
	{
		Name:  "mqadmin-clusterList",
		Needs: []string{"mqadmin"},
		Run: func(tb harness.TB, tg *harness.Target) {
			out := harness.Mqadmin(tb, tg, "clusterList")
			for _, want := range []string{tg.ClusterName, tg.BrokerName, tg.BrokerAddr} {
				if !strings.Contains(out, want) {
					tb.Fatalf("clusterList output lacks %q:\n%s", want, out)
				}
			}
		},
	},
	{
		// mqadmin's topic and consumer administration around a produce/consume round: updateTopic (17),
		// topicRoute (105), topicList (206), topicStatus (202), consumerProgress (208, 351 on 5.x).
		Name:  "mqadmin-topic-admin",
		Needs: []string{"mqadmin", "client5"},
		Run: func(tb harness.TB, tg *harness.Target) {
			const topic, group = "IT_admin", "IT_admin_cg"
			out := harness.Mqadmin(tb, tg, "updateTopic", "-b", tg.BrokerAddr, "-t", topic, "-r", "3", "-w", "3")
			if !strings.Contains(out, "success") {
				tb.Fatalf("updateTopic:\n%s", out)
			}
			var route struct {
				QueueDatas []struct {
					BrokerName     string `json:"brokerName"`
					ReadQueueNums  int    `json:"readQueueNums"`
					WriteQueueNums int    `json:"writeQueueNums"`
					Perm           int    `json:"perm"`
				} `json:"queueDatas"`
				BrokerDatas []struct {
					BrokerName  string            `json:"brokerName"`
					BrokerAddrs map[string]string `json:"brokerAddrs"`
				} `json:"brokerDatas"`
			}
			out = harness.Mqadmin(tb, tg, "topicRoute", "-t", topic)
			if err := json.Unmarshal(fastjsonToJSON(out), &route); err != nil {
				tb.Fatalf("topicRoute output is not a route: %v\n%s", err, out)
			}
			if len(route.QueueDatas) != 1 || route.QueueDatas[0].ReadQueueNums != 3 || route.QueueDatas[0].WriteQueueNums != 3 ||
				route.QueueDatas[0].Perm != 6 || len(route.BrokerDatas) != 1 || route.BrokerDatas[0].BrokerAddrs["0"] != tg.BrokerAddr {
				tb.Fatalf("topicRoute: want 3/3 queues, perm 6 on %s, got:\n%s", tg.BrokerAddr, out)
			}
			if out := harness.Mqadmin(tb, tg, "topicList"); !strings.Contains(out, topic) {
				tb.Fatalf("topicList lacks %s:\n%s", topic, out)
			}

			p := harness.RunJava(tb, tg, "5", "produce", "--topic", topic, "--count", "6", "--tags", "A")
			onlyOK(tb, p.Sent)
			out = harness.Mqadmin(tb, tg, "topicStatus", "-t", topic)
			rows := tableRows(out, tg.BrokerName)
			total := int64(0)
			for _, r := range rows {
				if len(r) < 4 {
					tb.Fatalf("topicStatus row %q", r)
				}
				total += atoi64(tb, r[3])
			}
			if len(rows) != 3 || total != 6 {
				tb.Fatalf("topicStatus: want 3 queues with max offsets summing to 6, got %d rows, sum %d:\n%s", len(rows), total, out)
			}

			// The linger outlasts one periodic offset persist (5 s): the commits the client sends oneway at
			// shutdown raced its channel's close, and an Apache broker once kept two queues at 0.
			c := harness.RunJava(tb, tg, "5", "consume", "--topic", topic, "--group", group, "--count", "6", "--timeout", "45000",
				"--linger", "5500")
			expectDelivered(tb, p.Sent, c.Received, nil)
			out = harness.Mqadmin(tb, tg, "consumerProgress", "-g", group)
			if !strings.Contains(out, topic) || !regexp.MustCompile(`Diff Total:\s*0\b`).MatchString(out) {
				tb.Fatalf("consumerProgress: want %s rows and Diff Total 0 once the consumer committed:\n%s", topic, out)
			}
		},
	},
	{
		// Java 5.x producer (sync small bodies, then async bodies above the 4 KiB compression threshold) and a
		// push consumer in clustering mode on the same topic.
		Name:  "java5-push-clustering",
		Needs: []string{"client5"},
		Run: func(tb harness.TB, tg *harness.Target) {
			const topic = "IT_java5_push"
			a := harness.RunJava(tb, tg, "5", "produce", "--topic", topic, "--mode", "sync", "--count", "10",
				"--size", "200", "--tags", "TagA,TagB", "--keys", "k-sync", "--props", userPropsFlag, "--body-prefix", "sync")
			b := harness.RunJava(tb, tg, "5", "produce", "--topic", topic, "--mode", "async", "--count", "5",
				"--size", "5000", "--tags", "TagC", "--keys", "k-async", "--props", userPropsFlag, "--body-prefix", "async")
			sent := append(a.Sent, b.Sent...)
			onlyOK(tb, sent)
			c := harness.RunJava(tb, tg, "5", "consume", "--topic", topic, "--group", "IT_java5_push_cg",
				"--mode", "push", "--model", "clustering", "--count", "15", "--timeout", "45000")
			expectDelivered(tb, sent, c.Received, userPropKeys)
		},
	},
	{
		// A 4.9.7 producer sends one batch (SEND_BATCH_MESSAGE); a 5.x lite pull consumer reads it.
		Name:  "java4-batch-java5-litepull",
		Needs: []string{"client4", "client5"},
		Run: func(tb harness.TB, tg *harness.Target) {
			const topic = "IT_java4_batch"
			p := harness.RunJava(tb, tg, "4", "produce", "--topic", topic, "--mode", "batch", "--batch", "8",
				"--count", "8", "--size", "300", "--tags", "B", "--keys", "k-batch", "--props", userPropsFlag)
			onlyOK(tb, p.Sent)
			c := harness.RunJava(tb, tg, "5", "consume", "--topic", topic, "--group", "IT_java4_batch_cg",
				"--mode", "litepull", "--count", "8", "--timeout", "45000")
			expectDelivered(tb, p.Sent, c.Received, userPropKeys)
		},
	},
	{
		// SQL92 property filter (broker enablePropertyFilter=true): only the red messages may arrive.
		Name:  "java5-sql92-filter",
		Needs: []string{"client5"},
		Run: func(tb harness.TB, tg *harness.Target) {
			const topic = "IT_java5_sql"
			red := harness.RunJava(tb, tg, "5", "produce", "--topic", topic, "--count", "4", "--tags", "T",
				"--props", "color=red,n=1", "--body-prefix", "red")
			blue := harness.RunJava(tb, tg, "5", "produce", "--topic", topic, "--count", "6", "--tags", "T",
				"--props", "color=blue,n=2", "--body-prefix", "blue")
			onlyOK(tb, append(red.Sent, blue.Sent...))
			c := harness.RunJava(tb, tg, "5", "consume", "--topic", topic, "--group", "IT_java5_sql_cg",
				"--filter", "sql", "--expr", "color = 'red' AND n = 1", "--count", "4", "--timeout", "45000",
				"--linger", "2000")
			expectDelivered(tb, red.Sent, c.Received, []string{"color", "n"})
		},
	},
	{
		// 4.9.7 oneway sends with two tags; a 4.9.7 broadcasting consumer (local offset store) subscribed
		// to one tag must get exactly those.
		Name:  "java4-oneway-broadcast-tag",
		Needs: []string{"client4"},
		Run: func(tb harness.TB, tg *harness.Target) {
			const topic = "IT_java4_bcast"
			p := harness.RunJava(tb, tg, "4", "produce", "--topic", topic, "--mode", "oneway", "--count", "6",
				"--tags", "X,Y", "--keys", "k-ow", "--props", userPropsFlag)
			var wantX []harness.Msg
			for _, m := range p.Sent {
				if m.Status != "ONEWAY" {
					tb.Fatalf("oneway send #%d: status %q error %q", m.Index, m.Status, m.Error)
				}
				if m.Tags == "X" {
					wantX = append(wantX, m)
				}
			}
			c := harness.RunJava(tb, tg, "4", "consume", "--topic", topic, "--group", "IT_java4_bcast_cg",
				"--model", "broadcasting", "--expr", "X", "--count", "3", "--timeout", "45000", "--linger", "1500")
			expectDelivered(tb, wantX, c.Received, userPropKeys)
		},
	},
	{
		// Consumer answers RECONSUME_LATER twice per message: the 5.x client sends each back
		// (CONSUMER_SEND_MSG_BACK, delay level 1) and it must come back through %RETRY%<group> with
		// reconsumeTimes 1, then 2, with body, keys, tags and properties intact.
		Name:  "java5-sendback-retry",
		Needs: []string{"client5"},
		Run: func(tb harness.TB, tg *harness.Target) {
			const topic = "IT_java5_retry"
			p := harness.RunJava(tb, tg, "5", "produce", "--topic", topic, "--count", "3", "--tags", "R",
				"--keys", "k-r", "--props", userPropsFlag)
			onlyOK(tb, p.Sent)
			// The retries come through %RETRY%group, made by the consumer's heartbeat: the client sees its
			// route at its next route poll, every 0.3 s here instead of every 30 (at 1 s it lands just after
			// the consumer's first rebalance, which then leaves the retry queue to the next, 20 s on).
			c := harness.RunJava(tb, tg, "5", "consume", "--topic", topic, "--group", "IT_java5_retry_cg",
				"--reconsume", "2", "--retry-delay-level", "1", "--count", "3", "--timeout", "90000", "--poll-namesrv", "300")
			expectDelivered(tb, p.Sent, c.Received, userPropKeys)
			for _, s := range p.Sent {
				seen := map[int]string{}
				for _, r := range c.Received {
					if r.MsgID == s.MsgID {
						seen[r.ReconsumeTimes] = r.Outcome
					}
				}
				if seen[0] != "RECONSUME_LATER" || seen[1] != "RECONSUME_LATER" || seen[2] != "SUCCESS" {
					tb.Fatalf("message %s: outcomes by reconsumeTimes %v, want 0,1: RECONSUME_LATER, 2: SUCCESS", s.MsgID, seen)
				}
			}
		},
	},
	{
		// Transactions (5.x producer): commit, rollback, and unknown resolved to commit by the broker's
		// CHECK_TRANSACTION_STATE call; a 4.9.7 consumer must see exactly the committed ones.
		Name:  "java5-transaction",
		Needs: []string{"client5", "client4"},
		Run: func(tb harness.TB, tg *harness.Target) {
			const topic = "IT_java5_tx"
			p := harness.RunJava(tb, tg, "5", "txproduce", "--topic", topic, "--group", "IT_java5_tx_pg", "--count", "6",
				"--tx", "commit,rollback,unknown", "--check", "commit", "--tags", "TX", "--keys", "k-tx",
				"--props", userPropsFlag, "--await-checks", "60000")
			var want []harness.Msg
			for _, m := range p.Sent {
				if m.Status != "SEND_OK" {
					tb.Fatalf("half message #%d: status %q error %q", m.Index, m.Status, m.Error)
				}
				if m.LocalState == "UNKNOW" && m.Checks == 0 {
					tb.Fatalf("unknown transaction #%d was never checked", m.Index)
				}
				if m.LocalState != "ROLLBACK_MESSAGE" {
					want = append(want, m)
				}
			}
			c := harness.RunJava(tb, tg, "4", "consume", "--topic", topic, "--group", "IT_java5_tx_cg",
				"--count", fmt.Sprint(len(want)), "--timeout", "45000", "--linger", "2000")
			expectDelivered(tb, want, c.Received, userPropKeys)
		},
	},
	{
		// The Go client v2.1.2 alone: single sends and one batch, then a push consumer.
		Name: "go-produce-consume",
		Run: func(tb harness.TB, tg *harness.Target) {
			const topic = "IT_go"
			props := map[string]string{"color": "green", "utf8": "h\u00e9llo \u2713"}
			single := harness.RunGoProduce(tb, tg, harness.GoProduce{Topic: topic, Count: 10, Size: 150,
				Tags: []string{"G1", "G2"}, KeyPrefix: "k-go", Props: props, BodyPrefix: "go-single"})
			batch := harness.RunGoProduce(tb, tg, harness.GoProduce{Topic: topic, Count: 5, Size: 100,
				Tags: []string{"G3"}, KeyPrefix: "k-gobatch", Props: props, Batch: true, BodyPrefix: "go-batch"})
			sent := append(single, batch...)
			onlyOK(tb, sent)
			got := harness.RunGoConsume(tb, tg, harness.GoConsume{Topic: topic, Group: "IT_go_cg", Count: len(sent)})
			expectDelivered(tb, sent, got, []string{"color", "utf8"})
		},
	},
	{
		// Java 5.x sends (compressed and plain bodies), the Go client consumes.
		Name:  "java5-to-go",
		Needs: []string{"client5"},
		Run: func(tb harness.TB, tg *harness.Target) {
			const topic = "IT_java5_to_go"
			a := harness.RunJava(tb, tg, "5", "produce", "--topic", topic, "--count", "4", "--size", "6000",
				"--tags", "J", "--keys", "k-j", "--props", userPropsFlag, "--body-prefix", "big")
			b := harness.RunJava(tb, tg, "5", "produce", "--topic", topic, "--count", "4", "--size", "10",
				"--tags", "J", "--keys", "k-j2", "--props", userPropsFlag, "--body-prefix", "small")
			sent := append(a.Sent, b.Sent...)
			onlyOK(tb, sent)
			got := harness.RunGoConsume(tb, tg, harness.GoConsume{Topic: topic, Group: "IT_java5_to_go_cg", Count: len(sent)})
			expectDelivered(tb, sent, got, userPropKeys)
		},
	},
	{
		// The Go client sends; a 4.9.7 orderly push consumer (LOCK_BATCH_MQ) reads.
		Name:  "go-to-java4-orderly",
		Needs: []string{"client4"},
		Run: func(tb harness.TB, tg *harness.Target) {
			const topic = "IT_go_to_java4"
			sent := harness.RunGoProduce(tb, tg, harness.GoProduce{Topic: topic, Count: 8, Size: 120,
				Tags: []string{"O"}, KeyPrefix: "k-o", Props: map[string]string{"color": "red"}})
			onlyOK(tb, sent)
			c := harness.RunJava(tb, tg, "4", "consume", "--topic", topic, "--group", "IT_go_to_java4_cg",
				"--orderly", "--count", "8", "--timeout", "45000")
			expectDelivered(tb, sent, c.Received, []string{"color"})
		},
	},
	{
		// POP for a remoting consumer: mqadmin setConsumeMode (SET_MESSAGE_REQUEST_MODE) switches the group to
		// POP; a 5.3.3 push consumer with server-side rebalance asks QUERY_ASSIGNMENT and pops.
		Name:  "java5-pop-push",
		Needs: []string{"client5", "mqadmin"},
		Run: func(tb harness.TB, tg *harness.Target) {
			const topic, group = "IT_pop", "IT_pop_cg"
			p := harness.RunJava(tb, tg, "5", "produce", "--topic", topic, "--count", "6", "--tags", "P", "--keys", "k-pop")
			onlyOK(tb, p.Sent)
			harness.Mqadmin(tb, tg, "setConsumeMode", "-c", tg.ClusterName, "-t", topic, "-g", group, "-m", "POP", "-q", "0")
			c := harness.RunJava(tb, tg, "5", "consume", "--topic", topic, "--group", group, "--server-rebalance",
				"--count", "6", "--timeout", "60000")
			expectDelivered(tb, p.Sent, c.Received, nil)
			for _, m := range c.Received {
				if m.Properties["POP_CK"] == "" { // popped messages carry their checkpoint, pulled ones do not
					tb.Errorf("%s was not popped: no POP_CK among its properties %v", m.MsgID, m.Properties)
				}
			}
		},
	},
}

// tableRows returns the whitespace-split rows of an mqadmin table whose first column is first.
func tableRows(out, first string) [][]string {
	var rows [][]string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == first {
			rows = append(rows, f)
		}
	}
	return rows
}

func atoi64(tb harness.TB, s string) int64 {
	tb.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		tb.Fatalf("not a number: %q", s)
	}
	return n
}

var bareIntKey = regexp.MustCompile(`([{,]\s*)(-?\d+):`)

// fastjsonToJSON cuts mqadmin output to its JSON object and quotes the bare integer map keys fastjson
// writes (brokerAddrs {0:"..."}), so encoding/json can read it.
func fastjsonToJSON(out string) []byte {
	if i := strings.Index(out, "{"); i >= 0 {
		out = out[i:]
	}
	return []byte(bareIntKey.ReplaceAllString(out, `$1"$2":`))
}
