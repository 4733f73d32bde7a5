package processor

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"rmqd/codec"
	"rmqd/processor/pop"
	"rmqd/remoting"
	"rmqd/store"
)

// popAckRig pops from queue 0 of a topic and acks what came back through the
// broker's own handlers, as a 5.x push consumer in POP mode does.
type popAckRig struct {
	b     *testBroker
	c     *testConn
	h     map[int32]remoting.Processor
	topic string
	acks  []*codec.RemotingCommand
	rec   codec.Message
}

func newPopAckRig(tb testing.TB, topic string) *popAckRig {
	// Files large enough that no pop stops at a consume queue file's end.
	b := newTestBrokerWith(tb, nil, func(c *store.Config) {
		c.MappedFileSizeCommitLog = 64 << 20
		c.MappedFileSizeConsumeQueue = 300000 * 20
	}, nil)
	return &popAckRig{b: b, c: newTestConn(1), h: b.Handlers(), topic: topic}
}

func (r *popAckRig) call(tb testing.TB, req *codec.RemotingCommand) *codec.RemotingCommand {
	resp, err := r.h[req.Code].ProcessRequest(context.Background(), r.c, req)
	if err != nil && !errors.Is(err, remoting.ErrAnsweredLater) {
		tb.Fatalf("code %d: %v", req.Code, err)
	}
	return resp
}

// fill sends n messages to queue 0 and waits until they are dispatched.
func (r *popAckRig) fill(tb testing.TB, n int) {
	start := r.b.st.MaxOffsetInQueue(r.topic, 0)
	req := sendReq(r.topic, 0, make([]byte, 128), clientSendProps)
	for i := 0; i < n; i++ {
		if resp := r.call(tb, req); resp.Code != codec.RespSuccess {
			tb.Fatalf("send: %d %s", resp.Code, resp.Remark)
		}
	}
	waitQueued(r.b, r.topic, start+int64(n))
}

func (r *popAckRig) popReq() *codec.RemotingCommand {
	req := codec.NewRequest(codec.ReqPopMessage)
	for _, kv := range [][2]string{{"consumerGroup", "PopG"}, {"topic", r.topic}, {"queueId", "0"}, {"maxMsgNums", "32"},
		{"invisibleTime", "60000"}, {"pollTime", "0"}, {"bornTime", fmt.Sprint(time.Now().UnixMilli())}, {"initMode", "0"},
		{"expType", "TAG"}, {"exp", "*"}, {"order", "false"}} {
		req.Ext.Set(kv[0], kv[1])
	}
	return req
}

// pop pops once from queue 0.
func (r *popAckRig) pop(tb testing.TB) *codec.RemotingCommand {
	resp := r.call(tb, r.popReq())
	if resp.Code != codec.RespSuccess {
		tb.Fatalf("pop: %d %s", resp.Code, resp.Remark)
	}
	return resp
}

// prepareAcks builds one ACK_MESSAGE per popped message, with the receipt
// handle (ExtraInfoUtil.buildExtraInfo) the client computes from the pop's
// header and keeps in POP_CK; it returns how many messages came back.
func (r *popAckRig) prepareAcks(tb testing.TB, resp *codec.RemotingCommand) int {
	hdr, ok := resp.CustomHeader.(*pop.PopResponseHeader)
	if !ok {
		tb.Fatalf("pop header %T", resp.CustomHeader)
	}
	r.acks = r.acks[:0]
	ckOffset := int64(-1)
	for body := resp.Body; len(body) > 0; {
		n, err := codec.DecodeRecord(body, &r.rec)
		if err != nil {
			tb.Fatalf("popped record: %v", err)
		}
		if ckOffset < 0 {
			ckOffset = r.rec.QueueOffset
		}
		ck := pop.BuildExtraInfo(ckOffset, hdr.PopTime, hdr.InvisibleTime, hdr.ReviveQid, r.topic,
			r.b.conf().BrokerName, 0, r.rec.QueueOffset)
		ack := codec.NewRequest(codec.ReqAckMessage)
		for _, kv := range [][2]string{{"consumerGroup", "PopG"}, {"topic", r.topic}, {"queueId", "0"},
			{"offset", fmt.Sprint(r.rec.QueueOffset)}, {"extraInfo", ck}} {
			ack.Ext.Set(kv[0], kv[1])
		}
		r.acks = append(r.acks, ack)
		body = body[n:]
	}
	return len(r.acks)
}

func (r *popAckRig) ackAll(tb testing.TB) {
	for _, ack := range r.acks {
		if resp := r.call(tb, ack); resp.Code != codec.RespSuccess {
			tb.Fatalf("ack: %d %s", resp.Code, resp.Remark)
		}
	}
}

// BenchmarkPopAck is one POP of 32 messages of 128 bytes and an ACK_MESSAGE for
// each, through the broker's handlers into the real store and timer wheel.
func BenchmarkPopAck(b *testing.B) {
	r := newPopAckRig(b, "BenchPop")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		r.fill(b, 32)
		b.StartTimer()
		resp := r.pop(b)
		b.StopTimer()
		if got := r.prepareAcks(b, resp); got != 32 {
			b.Fatalf("popped %d of 32", got)
		}
		b.StartTimer()
		r.ackAll(b)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*32), "ns/msg")
}
