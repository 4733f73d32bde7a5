package pop

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// FuzzBatchAckBody: any BATCH_ACK_MESSAGE body decodes or fails cleanly, a
// decoded entry never lists more offsets than its bit set can hold, and a body
// never more than maxBatchAckBits.
func FuzzBatchAckBody(f *testing.F) {
	f.Add([]byte(`{"acks":[{"b":"BQ==","c":"G","it":1000,"pt":1,"q":0,"r":"0","rq":1,"so":0,"t":"T"}],"brokerName":"broker-a"}`))
	f.Add([]byte(`{"acks":[{"bitSet":"/w==","consumerGroup":"G","retry":"2","startOffset":9}]}`))
	f.Add([]byte(`{acks:[{b:'AQ=='}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		body, err := DecodeBatchAckBody(b)
		if err != nil {
			return
		}
		total := 0
		for i := range body.Acks {
			n := len(body.Acks[i].setBits())
			if n > len(body.Acks[i].Bits)*8 {
				t.Fatalf("%d bits from %d bytes", n, len(body.Acks[i].Bits))
			}
			total += n
		}
		if total > maxBatchAckBits {
			t.Fatalf("%d offsets acked by one body", total)
		}
	})
}

// FuzzExtraInfo: receipt handles parse or fail cleanly, into the fields
// strings.Split gives, and what BuildExtraInfo writes parses back to the same.
func FuzzExtraInfo(f *testing.F) {
	f.Add("5 1700000000000 30000 3 2 broker-a 2 9")
	f.Add("0 1 2 999 0 b 0")
	f.Add("1 2 3")
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseExtraInfo(s)
		parts := strings.Split(s, " ")
		if e.Fields != len(parts) {
			t.Fatalf("%d fields, Split gives %d", e.Fields, len(parts))
		}
		if err == nil && (len(parts) > 4 && e.Retry != parts[4] || len(parts) > 5 && e.BrokerName != parts[5]) {
			t.Fatalf("retry %q broker %q, Split gives %q", e.Retry, e.BrokerName, parts)
		}
		if err != nil || e.Fields < 8 {
			return
		}
		topic := "T"
		switch e.Retry {
		case "1":
			topic = "%RETRY%G_T"
		case "2":
			topic = "%RETRY%G+T"
		default:
			e.Retry = "0"
		}
		if e.BrokerName == "" {
			return
		}
		back, err := ParseExtraInfo(BuildExtraInfo(e.CkQueueOffset, e.PopTime, e.InvisibleTime, e.ReviveQid, topic, e.BrokerName, e.QueueID, e.QueueOffset))
		if err != nil {
			t.Fatalf("rebuilt handle does not parse: %v", err)
		}
		if back.CkQueueOffset != e.CkQueueOffset || back.PopTime != e.PopTime || back.QueueOffset != e.QueueOffset || back.Retry != e.Retry {
			t.Fatalf("round trip: %+v != %+v", back, e)
		}
	})
}

// FuzzCheckPointJSON: a revive record body never panics the reviver's decode.
func FuzzCheckPointJSON(f *testing.F) {
	f.Add([]byte(`{"bm":0,"bn":"b","c":"G","d":[0,3],"it":50,"n":2,"pt":100,"q":1,"reviveTime":150,"ro":0,"so":7,"t":"T"}`))
	f.Add([]byte(`{"ao":3,"aol":[1,2],"c":"G","pt":5,"q":0,"so":1,"t":"T"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var ck CheckPoint
		if json.Unmarshal(b, &ck) == nil {
			for i := 0; i < int(ck.Num) && i < len(ck.Diff); i++ {
				_ = ck.indexOfAck(ck.ackOffsetByIndex(i))
			}
		}
		var a AckMsg
		_ = json.Unmarshal(b, &a)
	})
}

// TestBatchAckBodyBoundsTheRequest: every entry may ack up to maxBatchAckBits
// offsets, and so may all of them together.
func TestBatchAckBodyBoundsTheRequest(t *testing.T) {
	full := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xff}, maxBatchAckBits/8))
	half := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xff}, maxBatchAckBits/16))
	entry := func(b string) string { return `{"b":"` + b + `","c":"G","q":0,"r":"0","so":0,"t":"T"}` }
	body, err := DecodeBatchAckBody([]byte(`{"acks":[` + entry(full) + `]}`))
	require.NoError(t, err)
	require.Len(t, body.Acks[0].setBits(), maxBatchAckBits)
	_, err = DecodeBatchAckBody([]byte(`{"acks":[` + entry(half) + `,` + entry(half) + `]}`))
	require.NoError(t, err, "two halves are one whole")
	_, err = DecodeBatchAckBody([]byte(`{"acks":[` + entry(full) + `,` + entry(half) + `]}`))
	require.ErrorContains(t, err, "acks more than 65536 offsets")
}

// FuzzValidReviveRecord: any tag and body a broker sends to the revive topic
// is judged without failing, and a record judged valid decodes as its tag says.
func FuzzValidReviveRecord(f *testing.F) {
	f.Add("ck", []byte(`{"bm":0,"bn":"b","c":"G","d":[0],"it":50,"n":1,"pt":100,"q":1,"so":7,"t":"T"}`))
	f.Fuzz(func(t *testing.T, tag string, b []byte) {
		if !ValidReviveRecord(tag, b) {
			return
		}
		switch tag {
		case ckTag:
			var ck CheckPoint
			require.NoError(t, codec.UnmarshalBody(b, &ck))
			require.True(t, ck.valid())
		case ackTag, batchAckTag:
			var a AckMsg
			require.NoError(t, codec.UnmarshalBody(b, &a))
			require.NotEmpty(t, a.Topic)
		default:
			t.Fatalf("tag %q judged valid", tag)
		}
	})
}
