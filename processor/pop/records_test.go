package pop

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// appendJSON writes what MarshalBody wrote for these records before it
// replaced it; names with characters jsoniter escapes as HTML (fastjson
// does not) differ in bytes only, and read back the same.
func TestAckMsgAppendJSONMatchesMarshal(t *testing.T) {
	for _, a := range []AckMsg{
		{AckOffset: 7, ConsumerGroup: "G", Topic: "T", PopTime: 1700000000000, QueueID: 3, StartOffset: 5, BrokerName: "broker-a"},
		{AckOffset: -1, AckOffsetList: []int64{1, 2, 90000000000}, ConsumerGroup: "%RETRY%G", Topic: "%RETRY%G+T"},
	} {
		want, err := jsonMarshal(&a)
		require.NoError(t, err)
		require.Equal(t, string(want), string(a.appendJSON(nil)))
	}
	odd := AckMsg{ConsumerGroup: "g\"\\\x01\u2028é<>&", Topic: "t\n", BrokerName: "b\x7f"}
	var back AckMsg
	require.NoError(t, json.Unmarshal(odd.appendJSON(nil), &back))
	require.Equal(t, odd, back)
}

func TestRecordUniqueIDs(t *testing.T) {
	a := AckMsg{AckOffset: 12345678901, ConsumerGroup: "G", Topic: "T", PopTime: 1700000000000, QueueID: 3, BrokerName: "broker-a"}
	require.Equal(t, "T@3@12345678901@G@1700000000000@broker-a@ack", a.uniqueID())
	ck := CheckPoint{StartOffset: -1, CID: "G", Topic: "T", PopTime: 9, QueueID: 0}
	require.Equal(t, "T@0@-1@G@9@@ck", ck.uniqueID())
}

// FuzzAckMsgJSON: what every ack writes to the revive log reads back as the
// same record, whatever the names from the wire hold.
func FuzzAckMsgJSON(f *testing.F) {
	f.Add("G", "T", "broker-a", int64(7), int64(1700000000000), int32(3), int64(5), int64(-1))
	f.Add("g\"\\", "t\x00\u2028", "", int64(-1), int64(0), int32(-1), int64(0), int64(9))
	f.Fuzz(func(t *testing.T, group, topic, broker string, ao, pt int64, q int32, so, listed int64) {
		a := AckMsg{AckOffset: ao, ConsumerGroup: group, Topic: topic, BrokerName: broker, PopTime: pt, QueueID: q, StartOffset: so}
		if listed >= 0 {
			a.AckOffsetList = []int64{listed, listed / 2}
		}
		b := a.appendJSON(nil)
		if !json.Valid(b) {
			t.Fatalf("invalid JSON %q", b)
		}
		var back AckMsg
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		if back.AckOffset != ao || back.PopTime != pt || back.QueueID != q || back.StartOffset != so ||
			len(back.AckOffsetList) != len(a.AckOffsetList) {
			t.Fatalf("numbers: %+v from %q", back, b)
		}
		if validUTF8(group, topic, broker) && (back.ConsumerGroup != group || back.Topic != topic || back.BrokerName != broker) {
			t.Fatalf("names: %+v from %q", back, b)
		}
	})
}

func validUTF8(ss ...string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}
