package meta

import (
	"bytes"
	"testing"

	"rmqd/codec"
)

// FuzzSubscriptionGroupConfig: UPDATE_AND_CREATE_SUBSCRIPTIONGROUP(_LIST)'s
// body is a peer's JSON, retry policies included. Decoding never panics, and
// an accepted config written as subscriptionGroup.json is read back the same.
func FuzzSubscriptionGroupConfig(f *testing.F) {
	f.Add([]byte(`{"groupName":"G","groupRetryPolicy":{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":1000},"customizedRetryPolicy":{}}}`))
	f.Add([]byte(`{"groupName":"G","groupRetryPolicy":{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[1,2,-3]}}}`))
	f.Add([]byte(`{"groupName":"G","groupRetryPolicy":{"customizedRetryPolicy":null,"exponentialRetryPolicy":{"max":"7","multiplier":null}}}`))
	f.Add([]byte(`{"attributes":{"+a":"1","-b":""},"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,` +
		`"consumeFromMinEnable":true,"consumeMessageOrderly":false,"consumeTimeoutMinute":15,"groupName":"G",` +
		`"groupSysFlag":0,"notifyConsumerIdsChangedEnable":true,"retryMaxTimes":16,"retryQueueNums":1,` +
		`"subscriptionDataSet":[{"expression":"*","expressionType":"TAG","topic":"T","version":1}],"whichBrokerWhenConsumeSlowly":1}`))
	f.Add([]byte(`{"groupConfigList":[{"groupName":"G","retryQueueNums":"2"},{}]}`))
	f.Add([]byte(`{"subscriptionGroupTable":{"G":{"groupName":"G"}},"forbiddenTable":{"G":{"T":1}},"dataVersion":{"counter":1,"timestamp":2}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var one SubscriptionGroupConfig
		if err := codec.UnmarshalBody(body, &one); err == nil {
			roundTrip(t, &one)
		}
		var list struct {
			GroupConfigList []SubscriptionGroupConfig `json:"groupConfigList"`
		}
		if err := codec.UnmarshalBody(body, &list); err == nil {
			roundTrip(t, &list)
		}
		var table SubscriptionGroupTable
		if err := codec.UnmarshalBody(body, &table); err == nil {
			roundTrip(t, &table)
		}
	})
}

// roundTrip fails t when v, written as the broker writes its files, does
// not read back to what writes the same file again. (A set given as [] reads
// back as none: both are written without the field, as nothing Java reads
// tells them apart.)
func roundTrip[T any](t *testing.T, v *T) {
	t.Helper()
	out, err := codec.MarshalBodyIndent(v, "\t")
	if err != nil {
		t.Fatalf("encode %+v: %v", *v, err)
	}
	var again T
	if err := codec.UnmarshalBody(out, &again); err != nil {
		t.Fatalf("read back %s: %v", out, err)
	}
	out2, err := codec.MarshalBodyIndent(&again, "\t")
	if err != nil {
		t.Fatalf("encode again %+v: %v", again, err)
	}
	if !bytes.Equal(out, out2) {
		t.Fatalf("read back %s:\nwritten again as %s", out, out2)
	}
}
