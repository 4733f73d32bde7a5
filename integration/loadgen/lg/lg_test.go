package lg

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"rmqd/codec"
)

// fakeBroker answers SEND_MESSAGE_V2 (decoding the V2 header the load generator wrote), GET_MAX_OFFSET
// and nothing else; busyEvery > 0 answers every n-th send with SYSTEM_BUSY.
type fakeBroker struct {
	t         *testing.T
	ln        net.Listener
	mu        sync.Mutex
	perQueue  map[int32]int64
	sends     int
	busyEvery int
}

func newFakeBroker(t *testing.T) *fakeBroker {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeBroker{t: t, ln: ln, perQueue: map[int32]int64{}}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(c)
		}
	}()
	return f
}

func (f *fakeBroker) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	var lenBuf [4]byte
	for {
		if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
			return
		}
		frame := make([]byte, binary.BigEndian.Uint32(lenBuf[:]))
		if _, err := io.ReadFull(r, frame); err != nil {
			return
		}
		var req codec.RemotingCommand
		if err := codec.DecodeCommand(frame, &req); err != nil {
			f.t.Errorf("fake broker: decode: %v", err)
			return
		}
		var resp *codec.RemotingCommand
		switch req.Code {
		case codec.ReqSendMessageV2:
			var h codec.SendMessageRequestHeader
			if err := h.DecodeV2(req.Ext); err != nil {
				f.t.Errorf("fake broker: send header: %v", err)
				return
			}
			if h.Topic != "T" || len(req.Body) != 100 || h.BrokerName != "b" {
				f.t.Errorf("fake broker: topic %q body %d bname %q", h.Topic, len(req.Body), h.BrokerName)
			}
			f.mu.Lock()
			f.sends++
			busy := f.busyEvery > 0 && f.sends%f.busyEvery == 0
			if !busy {
				f.perQueue[h.QueueID]++
			}
			off := f.perQueue[h.QueueID]
			f.mu.Unlock()
			if busy {
				resp = codec.NewResponse(&req, codec.RespSystemBusy, "[TIMEOUT_CLEAN_QUEUE]broker busy")
			} else {
				resp = codec.NewResponse(&req, codec.RespSuccess, "")
				resp.CustomHeader = &codec.SendMessageResponseHeader{MsgID: "X", QueueID: h.QueueID, QueueOffset: off - 1}
			}
		case codec.ReqGetMaxOffset:
			q, _ := strconv.Atoi(func() string { v, _ := req.Ext.Get("queueId"); return v }())
			f.mu.Lock()
			n := f.perQueue[int32(q)]
			f.mu.Unlock()
			resp = codec.NewResponse(&req, codec.RespSuccess, "")
			resp.Ext.SetInt64("offset", n)
		default:
			resp = codec.NewResponse(&req, 1, "unsupported")
		}
		if _, err := c.Write(resp.Encode(nil)); err != nil {
			return
		}
	}
}

func TestSendCountsAgreeWithBroker(t *testing.T) {
	f := newFakeBroker(t)
	f.busyEvery = 7
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	route := Route{BrokerName: "b", BrokerAddr: f.ln.Addr().String(), Queues: 4}
	for _, binaryHeaders := range []bool{false, true} {
		f.mu.Lock()
		f.perQueue, f.sends = map[int32]int64{}, 0
		f.mu.Unlock()
		res, err := Send(ctx, SendConfig{Route: route, Topic: "T", Size: 100, InFlight: 8, Count: 700, Binary: binaryHeaders})
		if err != nil {
			t.Fatal(err)
		}
		// Count is of stored messages: every 7th attempt is refused, so 700 stored take ~816 attempts.
		if res.Failed != 0 || res.Busy < 100 || res.Sent != 700 {
			t.Fatalf("binary=%v: sent %d failed %d busy %d (%v), want 700/0/>=100", binaryHeaders, res.Sent, res.Failed, res.Busy, res.Errors)
		}
		offs, sum, err := MaxOffsets(ctx, route.BrokerAddr, "T", 4)
		if err != nil {
			t.Fatal(err)
		}
		if sum != res.Sent {
			t.Fatalf("broker has %d, load generator counted %d", sum, res.Sent)
		}
		for q, n := range offs {
			if n != res.PerQueue[q] {
				t.Errorf("queue %d: broker %d, load generator %d", q, n, res.PerQueue[q])
			}
		}
		if res.Lat.Count != 700 || res.Lat.P50Us <= 0 {
			t.Errorf("latency summary %+v", res.Lat)
		}
	}
}

func TestOpenLoopKeepsTheOfferedRate(t *testing.T) {
	f := newFakeBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	route := Route{BrokerName: "b", BrokerAddr: f.ln.Addr().String(), Queues: 2}
	start := time.Now()
	res, err := Send(ctx, SendConfig{Route: route, Topic: "T", Size: 100, InFlight: 16, Rate: 1000, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// 1000/s for 1 s: the schedule ends at the duration whatever the machine does.
	if res.Sent < 900 || res.Sent > 1001 || time.Since(start) > 10*time.Second {
		t.Fatalf("open loop sent %d in %v", res.Sent, time.Since(start))
	}
}

// TestSinkAnswersSends: the wire-ceiling sink routes a topic to itself and answers every pipelined send
// SEND_OK with a queue offset counted per queue, so lg.Send runs against it as against a broker.
func TestSinkAnswersSends(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := StartSink(ctx, "127.0.0.1:0", 4)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	route, err := LookupRoute(ctx, s.Addr(), "SinkTopic")
	if err != nil {
		t.Fatal(err)
	}
	if route.BrokerAddr != s.Addr() || route.Queues != 4 {
		t.Fatalf("route %+v, want the sink itself with 4 queues", route)
	}
	res, err := Send(ctx, SendConfig{Route: route, Topic: "SinkTopic", Size: 16 << 10, InFlight: 16, Count: 500,
		Duration: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != 500 || res.Failed != 0 {
		t.Fatalf("sent %d, failed %d (%v); want 500 and 0", res.Sent, res.Failed, res.Errors)
	}
	var perQueue int64
	for _, n := range res.PerQueue {
		perQueue += n
	}
	if perQueue != 500 {
		t.Fatalf("per-queue counts %v sum to %d, want 500", res.PerQueue, perQueue)
	}
}
