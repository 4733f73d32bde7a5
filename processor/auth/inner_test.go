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

// onewayWire is wireInvoker that also sends oneway, as *remoting.Client does.
type onewayWire struct {
	wireInvoker
	got *codec.RemotingCommand
}

func (w *onewayWire) InvokeOneway(ctx context.Context, addr string, req *codec.RemotingCommand) error {
	resp, err := w.InvokeSync(ctx, addr, req)
	w.got = resp
	return err
}

// TestInnerSignsOneway: over a client that sends oneway, the signed invoker does too (heartbeats), and
// signs those requests; over one that does not, it offers no oneway send.
func TestInnerSignsOneway(t *testing.T) {
	m := newTestManager(t, t.TempDir(), nil)
	const cred = `{"accessKey":"rocketmq","secretKey":"12345678"}`
	w := &onewayWire{wireInvoker: wireInvoker{t: t, m: m}}
	inv, err := SignInnerWith(cred, w)
	if err != nil {
		t.Fatal(err)
	}
	ow, ok := inv.(onewayInvoker)
	if !ok {
		t.Fatal("the signed invoker dropped the client's oneway send")
	}
	req := codec.NewRequest(codec.ReqBrokerHeartbeat)
	req.Ext.Set("clusterName", "c")
	if err := ow.InvokeOneway(context.Background(), "peer", req); err != nil || w.got == nil || w.got.Code != codec.RespSuccess {
		t.Fatalf("signed oneway request: err %v resp %+v", err, w.got)
	}
	if inv, err = SignInnerWith(cred, wireInvoker{t: t, m: m}); err != nil {
		t.Fatal(err)
	}
	if _, ok := inv.(onewayInvoker); ok {
		t.Fatal("a oneway send offered over a client without one")
	}
}
