package lg

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"

	"rmqd/codec"
)

// Sink is the wire ceiling for a send benchmark: a server that is its own name server and broker, reads
// every request frame, decodes its header and answers SEND_OK without storing anything. What a load run
// reaches against it is what this machine's loopback, the load generator and a plain Go server reading
// frames allow; a broker cannot go faster on the same machine, whatever its store does.
type Sink struct {
	ln     net.Listener
	queues int32
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
}

// StartSink listens on addr (e.g. 127.0.0.1:0) and serves until ctx ends or Close.
func StartSink(ctx context.Context, addr string, queues int) (*Sink, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("lg: sink listen %s: %w", addr, err)
	}
	s := &Sink{ln: ln, queues: int32(max(queues, 1)), conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go s.accept()
	go func() { <-ctx.Done(); _ = s.Close() }()
	return s, nil
}

// Addr is the address clients use both as name server and broker.
func (s *Sink) Addr() string { return s.ln.Addr().String() }

// Close stops the listener and every connection.
func (s *Sink) Close() error {
	err := s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

func (s *Sink) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			_ = s.serve(c) // a client that leaves, or a frame the sink cannot read, ends its connection only
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			_ = c.Close()
		}()
	}
}

// serve answers one connection's requests in order; answers are flushed when no request is left in the
// read buffer, so a pipelined client gets them coalesced as a real server would write them.
func (s *Sink) serve(c net.Conn) error {
	r := bufio.NewReaderSize(c, 256<<10)
	w := bufio.NewWriterSize(c, 64<<10)
	var frame, out []byte
	var cmd codec.RemotingCommand
	offsets := make([]int64, s.queues)
	for {
		var err error
		if frame, err = readCommand(r, frame, &cmd); err != nil {
			return err
		}
		if cmd.IsOneway() {
			continue
		}
		resp := s.answer(&cmd, offsets)
		out = resp.Encode(out[:0])
		if _, err := w.Write(out); err != nil {
			return err
		}
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return err
			}
		}
	}
}

func (s *Sink) answer(req *codec.RemotingCommand, offsets []int64) *codec.RemotingCommand {
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	switch req.Code {
	case codec.ReqSendMessage, codec.ReqSendMessageV2:
		q := int32(0)
		key := "queueId"
		if req.Code == codec.ReqSendMessageV2 {
			key = "e" // the V2 header's short name for queueId
		}
		if v, ok := req.Ext.Get(key); ok {
			if n, err := strconv.Atoi(v); err == nil && n >= 0 && n < len(offsets) {
				q = int32(n)
			}
		}
		off := offsets[q]
		offsets[q]++
		resp.CustomHeader = &codec.SendMessageResponseHeader{MsgID: "00000000000000000000000000000000", QueueID: q, QueueOffset: off}
	case codec.ReqGetRouteinfoByTopic:
		rd := codec.TopicRouteData{
			QueueDatas: []codec.QueueData{{BrokerName: "sink", ReadQueueNums: s.queues, WriteQueueNums: s.queues, Perm: 6}},
			BrokerDatas: []*codec.BrokerData{{Cluster: "SinkCluster", BrokerName: "sink",
				BrokerAddrs: map[int64]string{0: s.Addr()}}},
		}
		resp.Body = rd.AppendJSON(nil)
	case codec.ReqGetMaxOffset:
		resp.Ext.Set("offset", "0")
	}
	return resp
}
