package codec

import "testing"

// TestMakeCustomHeaderToNet: the typed header's fields land in Ext ahead of Ext's own, as a peer reads
// them, and the request encodes to the same frame as before.
func TestMakeCustomHeaderToNet(t *testing.T) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		req := NewRequest(ReqSendMessage)
		req.SerializeType = st
		req.CustomHeader = &SendMessageRequestHeader{ProducerGroup: "pg", Topic: "t", DefaultTopic: "TBW102",
			DefaultTopicQueueNums: 4, QueueID: 2, Properties: "WAIT\x01false\x02", BrokerName: "b"}
		req.Ext.Set("extra", "x")
		req.Body = []byte("body")
		before := req.Encode(nil)
		if err := req.MakeCustomHeaderToNet(); err != nil {
			t.Fatal(err)
		}
		if req.CustomHeader != nil || string(req.Body) != "body" {
			t.Fatalf("%d: header %v body %q", st, req.CustomHeader, req.Body)
		}
		if req.Ext[0].Key != "producerGroup" || req.Ext[len(req.Ext)-1].Key != "extra" {
			t.Fatalf("%d: ext order %v", st, req.Ext)
		}
		if q, _ := req.Ext.Get("queueId"); q != "2" {
			t.Fatalf("%d: queueId %q", st, q)
		}
		if after := req.Encode(nil); string(after) != string(before) {
			t.Fatalf("%d: frame changed\n%q\n%q", st, before, after)
		}
		if err := req.MakeCustomHeaderToNet(); err != nil || len(req.Ext) == 0 {
			t.Fatalf("%d: second call: %v", st, err)
		}
	}
}
