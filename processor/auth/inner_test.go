package auth

import (
	"context"
	"testing"

	"rmqd/codec"
)

// wireInvoker hands each request to the hook as a peer would read it: encoded, then decoded.
type wireInvoker struct {
	t *testing.T
	m *Manager
}

func (w wireInvoker) InvokeSync(_ context.Context, _ string, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	for _, st := range []codec.SerializeType{codec.SerializeJSON, codec.SerializeRocketMQ} {
		req.SerializeType = st
		frame := req.Encode(nil)
		var got codec.RemotingCommand
		if err := codec.DecodeCommand(frame[4:], &got); err != nil {
			w.t.Fatal(err)
		}
		if resp := w.m.Hook().Before(from("127.0.0.1"), &got); resp != nil {
			return resp, nil
		}
	}
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// TestInnerSignsTypedHeaders: a broker's own request with a typed header (the escape bridge's
// SEND_MESSAGE) is signed over the header's fields, as Java signs after makeCustomHeaderToNet; signed
// over Ext alone, the receiver, which reads them as ext fields, answered "check signature failed.".
func TestInnerSignsTypedHeaders(t *testing.T) {
	m := newTestManager(t, t.TempDir(), nil)
	inv, err := SignInnerWith(`{"accessKey":"rocketmq","secretKey":"12345678"}`, wireInvoker{t: t, m: m})
	if err != nil {
		t.Fatal(err)
	}
	req := codec.NewRequest(codec.ReqSendMessage)
	req.CustomHeader = &codec.SendMessageRequestHeader{ProducerGroup: "InnerProducerGroup_b_1", Topic: "rmq_sys_REVIVE_LOG_c",
		DefaultTopic: "TBW102", DefaultTopicQueueNums: 4, QueueID: 3, BornTimestamp: 1, Properties: "WAIT\x01false\x02",
		BrokerName: "broker-b"}
	req.Body = []byte("a checkpoint")
	resp, err := inv.InvokeSync(context.Background(), "peer", req)
	if err != nil || resp.Code != codec.RespSuccess {
		t.Fatalf("signed typed request: %v %d %q", err, resp.Code, resp.Remark)
	}
	if req.CustomHeader != nil {
		t.Fatal("the typed header was not moved into the ext fields")
	}
	if topic, _ := req.Ext.Get("topic"); topic != "rmq_sys_REVIVE_LOG_c" {
		t.Fatalf("ext topic %q", topic)
	}
}
