package codec

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The bodies under testdata/clients were captured on the wire (strace of the client process) from
// rocketmq-client-cpp as bundled in PyPI rocketmq 0.4.4 and from ali-ons 3.12.0, talking to rmqd.
func readClientBody(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "clients", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeHeartbeatDataClients(t *testing.T) {
	retry := func(g string, ver int64) SubscriptionData {
		return SubscriptionData{SubString: "*", SubVersion: ver, Topic: "%RETRY%" + g}
	}
	cases := []struct {
		file string
		want HeartbeatData
	}{
		{"cpp/heartbeat-push-tag.json", HeartbeatData{ClientID: "21190-127.0.0.1@DEFAULT", ConsumerDataSet: []ConsumerData{{
			ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET", ConsumeType: "CONSUME_PASSIVELY", GroupName: "CCG", MessageModel: "CLUSTERING",
			SubscriptionDataSet: []SubscriptionData{retry("CCG", 1796139954857),
				// codeSet [0]: the C++ client writes atoi(tag), not the tag's hash; kept as sent, as Java does.
				{CodeSet: CodeSet{0}, SubString: "a", SubVersion: 1796139954857, TagsSet: []string{"a"}, Topic: "CT"}},
		}}}},
		{"cpp/heartbeat-push-orderly.json", HeartbeatData{ClientID: "22398-127.0.0.1@DEFAULT", ConsumerDataSet: []ConsumerData{{
			ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET", ConsumeType: "CONSUME_PASSIVELY", GroupName: "COG", MessageModel: "CLUSTERING",
			SubscriptionDataSet: []SubscriptionData{retry("COG", 1796139977827), {SubString: "*", SubVersion: 1796139977826, Topic: "CO"}},
		}}}},
		{"cpp/heartbeat-pull.json", HeartbeatData{ClientID: "22535-127.0.0.1@DEFAULT", ConsumerDataSet: []ConsumerData{{
			ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET", ConsumeType: "CONSUME_ACTIVELY", GroupName: "CPULL", MessageModel: "CLUSTERING",
		}}}},
		{"ali-ons/heartbeat-push-tag.json", HeartbeatData{ClientID: "192.0.2.2@29681", ProducerDataSet: []ProducerData{}, ConsumerDataSet: []ConsumerData{{
			ConsumeFromWhere: "CONSUME_FROM_FIRST_OFFSET", ConsumeType: "CONSUME_PASSIVELY", GroupName: "NCG", MessageModel: "CLUSTERING",
			SubscriptionDataSet: []SubscriptionData{{CodeSet: CodeSet{97}, SubString: "a", SubVersion: 1796140106390, TagsSet: []string{"a"}, Topic: "NT"}},
		}}}},
		{"ali-ons/heartbeat-push-sql.json", HeartbeatData{ClientID: "192.0.2.2@6378", ProducerDataSet: []ProducerData{}, ConsumerDataSet: []ConsumerData{{
			ConsumeFromWhere: "CONSUME_FROM_FIRST_OFFSET", ConsumeType: "CONSUME_PASSIVELY", GroupName: "SQG", MessageModel: "CLUSTERING",
			SubscriptionDataSet: []SubscriptionData{{CodeSet: CodeSet{}, ExpressionType: "SQL92", SubString: "color = 'red' AND TAGS IN ('a', 'c')",
				SubVersion: 1796141019374, TagsSet: []string{}, Topic: "SQ"}},
		}}}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			got, err := DecodeHeartbeatData(readClientBody(t, c.file))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestDecodeLockBatchClients(t *testing.T) {
	got, err := DecodeLockBatchRequestBody(readClientBody(t, "cpp/lock-batch-mq.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := LockBatchRequestBody{ClientID: "22398-127.0.0.1@DEFAULT", ConsumerGroup: "COG",
		MQSet: []MessageQueue{{BrokerName: "b1", QueueID: 0, Topic: "CO"}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("lock: got %+v want %+v", got, want)
	}
	got, err = DecodeLockBatchRequestBody(readClientBody(t, "cpp/unlock-batch-mq.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.MQSet) != 3 || got.MQSet[2] != (MessageQueue{BrokerName: "b1", QueueID: 3, Topic: "CO"}) || got.ClientID != want.ClientID {
		t.Fatalf("unlock: got %+v", got)
	}
}

// What fastjson 1.2.83 accepts for these fields beyond what the captured clients send.
func TestDecodeHeartbeatDataLenient(t *testing.T) {
	body := `{"producerDataSet":[{"groupName":"PG","extra":1}],"unknown":{"a":[1,2]},"withoutSub":"true",
		"heartbeatFingerprint":"-7","consumerDataSet":[{"unitMode":1,"messageModel":"0","consumeType":"CONSUME_POP",
		"consumeFromWhere":"5","groupName":"G","subscriptionDataSet":[{"topic":"T","subVersion":"0","codeSet":["97",98],
		"classFilterMode":"false","expressionType":"SQL92","subString":"a > 1","tagsSet":null}]}],"clientID":"c"}`
	got, err := DecodeHeartbeatData([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := HeartbeatData{ClientID: "c", HeartbeatFingerprint: -7, WithoutSub: true, ProducerDataSet: []ProducerData{{GroupName: "PG"}},
		ConsumerDataSet: []ConsumerData{{ConsumeFromWhere: "CONSUME_FROM_TIMESTAMP", ConsumeType: "CONSUME_POP", GroupName: "G",
			MessageModel: "BROADCASTING", UnitMode: true, SubscriptionDataSet: []SubscriptionData{{CodeSet: CodeSet{97, 98},
				ExpressionType: "SQL92", SubString: "a > 1", Topic: "T"}}}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	// A missing or null subVersion is the decode time, as Java's field initialiser makes it.
	before := time.Now().UnixMilli()
	got, err = DecodeHeartbeatData([]byte(`{"consumerDataSet":[{"subscriptionDataSet":[{"topic":"T"},{"topic":"U","subVersion":null}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, sd := range got.ConsumerDataSet[0].SubscriptionDataSet {
		if sd.SubVersion < before || sd.SubVersion > time.Now().UnixMilli() {
			t.Errorf("%s: subVersion %d, want the decode time", sd.Topic, sd.SubVersion)
		}
	}
	// fastjson's non-standard spellings reach the same decoder through StrictJSON.
	got, err = DecodeHeartbeatData([]byte(`{clientID:'x',consumerDataSet:[{groupName:'G',consumeType:1,messageModel:1,consumeFromWhere:4}]}`))
	if err != nil || got.ClientID != "x" || got.ConsumerDataSet[0].ConsumeFromWhere != "CONSUME_FROM_FIRST_OFFSET" {
		t.Fatalf("bare keys: %+v %v", got, err)
	}
}

// Strict where leniency would store something wrong.
func TestDecodeHeartbeatDataRejects(t *testing.T) {
	for _, body := range []string{
		`{"consumerDataSet":[{"consumeType":3}]}`,                              // ordinal out of range (fastjson throws)
		`{"consumerDataSet":[{"messageModel":-1}]}`,                            // negative ordinal
		`{"consumerDataSet":[{"messageModel":"CLUSTER"}]}`,                     // unknown constant
		`{"consumerDataSet":[{"consumeFromWhere":1.5}]}`,                       // not an ordinal
		`{"consumerDataSet":[{"subscriptionDataSet":[{"subVersion":"12x"}]}]}`, // not a long
		`{"consumerDataSet":[{"subscriptionDataSet":[{"subVersion":1.5}]}]}`,
		`{"consumerDataSet":[{"subscriptionDataSet":[{"codeSet":["a"]}]}]}`,
		`{"consumerDataSet":[{"unitMode":"maybe"}]}`,
		`{"heartbeatFingerprint":4294967296}`, // int overflow
		`{"clientID":{"a":1}}`,                // an object for a string
		`{"consumerDataSet":{}}`,              // an object for a list
		`{"clientID":"c"`,                     // truncated
	} {
		if hb, err := DecodeHeartbeatData([]byte(body)); err == nil {
			t.Errorf("%s: accepted as %+v", body, hb)
		} else if !strings.Contains(err.Error(), "HeartbeatData") {
			t.Errorf("%s: error does not name the body: %v", body, err)
		}
	}
}

func TestDecodeMessageQueueLenient(t *testing.T) {
	got, err := DecodeLockBatchRequestBody([]byte(`{"mqSet":[{"queueId":"7","topic":"T","brokerName":"b","x":null}],"onlyThisBroker":"true"}`))
	if err != nil || len(got.MQSet) != 1 || got.MQSet[0] != (MessageQueue{BrokerName: "b", QueueID: 7, Topic: "T"}) || !got.OnlyThisBroker {
		t.Fatalf("got %+v %v", got, err)
	}
	if _, err := DecodeLockBatchRequestBody([]byte(`{"mqSet":[{"queueId":"7a"}]}`)); err == nil {
		t.Fatal("queueId 7a accepted")
	}
	cc, err := DecodeCheckClientRequestBody([]byte(`{"group":"G","clientId":"c","subscriptionData":{"subVersion":"5","expressionType":"SQL92","subString":"a>1"}}`))
	if err != nil || cc.SubscriptionData == nil || cc.SubscriptionData.SubVersion != 5 || cc.Group != "G" {
		t.Fatalf("check client: %+v %v", cc, err)
	}
}

// FuzzDecodeClientBodies: no body panics the lenient decoders, and what they accept survives a
// marshal/decode round trip unchanged.
func FuzzDecodeClientBodies(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "clients", "*", "*.json"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{consumerDataSet:[{consumeType:'1',subscriptionDataSet:[{subVersion:"-1",codeSet:["2"]}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if hb, err := DecodeHeartbeatData(b); err == nil {
			again, err := json.Marshal(hb)
			if err != nil {
				t.Fatal(err)
			}
			hb2, err := DecodeHeartbeatData(again)
			if err != nil || !reflect.DeepEqual(hb, hb2) {
				t.Fatalf("round trip of %s: %+v, %v\nwant %+v", again, hb2, err, hb)
			}
		}
		if l, err := DecodeLockBatchRequestBody(b); err == nil {
			again, err := json.Marshal(l)
			if err != nil {
				t.Fatal(err)
			}
			l2, err := DecodeLockBatchRequestBody(again)
			if err != nil || !reflect.DeepEqual(l, l2) {
				t.Fatalf("round trip of %s: %+v, %v\nwant %+v", again, l2, err, l)
			}
		}
		_, _ = DecodeCheckClientRequestBody(b)
	})
}
