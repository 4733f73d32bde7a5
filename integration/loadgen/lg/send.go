package lg

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"rmqd/codec"
)

// SendConfig is one producer run: SEND_MESSAGE_V2 with the V2 header, as the Java client sends it.
type SendConfig struct {
	Route    Route // from LookupRoute: sends go straight to the broker
	Topic    string
	Group    string        // producer group, default "lg-producer"
	Size     int           // body bytes (>= 16; the first 8 carry the send time for end-to-end latency)
	InFlight int           // requests in flight = producer threads of a blocking client
	Conns    int           // connections to the broker (default 1: a Java producer shares one per broker)
	Duration time.Duration // run length (after Warmup)
	Warmup   time.Duration // sent and counted as stored, not measured
	Count    int64         // stop after this many sends (0: Duration only); closed loop: SEND_OKs
	Rate     float64       // open loop: offered messages per second over all lanes; 0: closed loop
	Timeout  time.Duration // per request, default 10s
	Binary   bool          // ROCKETMQ binary headers instead of JSON (the Java client default is JSON)
	Full     bool          // include every histogram bucket in the result
	TLS      *tls.Config   // connect to the broker over TLS when set
	Sign     *Credentials  // sign every send as AclClientRPCHook does (ACL 1.0 / 2.0) when set
}

// SendResult is what a run measured. Sent counts every SEND_OK, warm-up included; Rate and Lat cover the
// measured window only.
type SendResult struct {
	Sent      int64     `json:"sent"`
	Failed    int64     `json:"failed"`
	Busy      int64     `json:"busy"` // SYSTEM_BUSY answers (broker flow control): not stored, not failures
	Measured  int64     `json:"measured"`
	ElapsedS  float64   `json:"elapsedS"`
	MsgPerS   float64   `json:"msgPerS"`
	MiBPerS   float64   `json:"miBPerS"`
	Offered   float64   `json:"offered,omitempty"`
	Lat       Summary   `json:"lat"`
	PerQueue  []int64   `json:"perQueue"`
	Errors    []string  `json:"errors,omitempty"`
	StartedAt time.Time `json:"-"`
}

type sender struct {
	cfg       SendConfig
	conns     []*Conn
	perQueue  []atomic.Int64
	sent      atomic.Int64
	failed    atomic.Int64
	busy      atomic.Int64
	measured  atomic.Int64
	ticket    atomic.Int64
	errMu     sync.Mutex
	errs      []string
	start     time.Time
	measureAt time.Time
	stopAt    time.Time
}

func (s *sender) recordErr(e string) {
	s.failed.Add(1)
	s.errMu.Lock()
	if len(s.errs) < 8 {
		s.errs = append(s.errs, e)
	}
	s.errMu.Unlock()
}

// Send runs a producer load and returns its figures. It fails only when it cannot start; failed sends are
// counted in the result (the caller decides what is acceptable).
func Send(ctx context.Context, cfg SendConfig) (SendResult, error) {
	if cfg.Group == "" {
		cfg.Group = "lg-producer"
	}
	cfg.Size = max(cfg.Size, 16)
	cfg.InFlight = max(cfg.InFlight, 1)
	cfg.Conns = min(max(cfg.Conns, 1), cfg.InFlight)
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Route.Queues <= 0 {
		return SendResult{}, fmt.Errorf("lg: send: route has no queues")
	}
	s := &sender{cfg: cfg, perQueue: make([]atomic.Int64, cfg.Route.Queues)}
	for range cfg.Conns {
		c, err := DialTLS(ctx, cfg.Route.BrokerAddr, cfg.TLS)
		if err != nil {
			for _, c := range s.conns {
				_ = c.Close()
			}
			return SendResult{}, err
		}
		s.conns = append(s.conns, c)
	}
	defer func() {
		for _, c := range s.conns {
			_ = c.Close()
		}
	}()
	s.start = time.Now()
	s.measureAt = s.start.Add(cfg.Warmup)
	s.stopAt = s.measureAt.Add(cfg.Duration)
	if cfg.Duration == 0 {
		s.stopAt = s.start.Add(24 * time.Hour)
	}
	hists := make([]Hist, cfg.InFlight)
	var wg sync.WaitGroup
	for i := range cfg.InFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.lane(ctx, i, &hists[i])
		}()
	}
	wg.Wait()
	end := time.Now()
	var all Hist
	for i := range hists {
		all.Merge(&hists[i])
	}
	window := end.Sub(s.measureAt).Seconds()
	res := SendResult{Sent: s.sent.Load(), Failed: s.failed.Load(), Busy: s.busy.Load(), Measured: s.measured.Load(), ElapsedS: window,
		Lat: all.Summarize(cfg.Full), Errors: s.errs, StartedAt: s.start, Offered: cfg.Rate}
	if window > 0 {
		res.MsgPerS = float64(res.Measured) / window
		res.MiBPerS = res.MsgPerS * float64(cfg.Size) / (1 << 20)
	}
	for i := range s.perQueue {
		res.PerQueue = append(res.PerQueue, s.perQueue[i].Load())
	}
	return res, nil
}

func (s *sender) lane(ctx context.Context, id int, h *Hist) {
	cfg := &s.cfg
	conn := s.conns[id%len(s.conns)]
	body := make([]byte, cfg.Size)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	// UNIQ_KEY like the Java client's: 32 hex digits, fixed per lane prefix and a counter.
	var keyRaw [16]byte
	binary.BigEndian.PutUint64(keyRaw[:8], rand.Uint64())
	binary.BigEndian.PutUint32(keyRaw[8:12], uint32(id))
	var hdr codec.SendMessageRequestHeader
	hdr.ProducerGroup, hdr.Topic, hdr.DefaultTopic, hdr.DefaultTopicQueueNums = cfg.Group, cfg.Topic, "TBW102", 4
	hdr.BrokerName = cfg.Route.BrokerName
	req := codec.NewRequest(codec.ReqSendMessageV2)
	req.CustomHeader = (*codec.SendMessageRequestHeaderV2)(&hdr)
	req.Body = body
	if cfg.Binary {
		req.SerializeType = codec.SerializeRocketMQ
	}
	var code int32
	var remark string
	call := NewCall(func(cmd *codec.RemotingCommand) {
		code = cmd.Code
		if code != codec.RespSuccess {
			remark = strings.Clone(cmd.Remark) // cmd aliases the reader's buffer
		}
	})
	var frame, signed []byte
	var tmp codec.RemotingCommand // the signed form's fields (Sign)
	var seq uint32
	period := time.Duration(0)
	if cfg.Rate > 0 {
		period = time.Duration(float64(time.Second) / cfg.Rate)
	}
	for n := 0; ; n++ {
		if ctx.Err() != nil {
			return
		}
		t := s.ticket.Add(1) - 1
		if cfg.Count > 0 && t >= cfg.Count {
			s.ticket.Add(-1) // leave the counter at Count, so a ticket given back after SYSTEM_BUSY is taken again
			return
		}
		var due time.Time
		slept := false
		if period > 0 {
			due = s.start.Add(time.Duration(t) * period)
			if due.After(s.stopAt) {
				return
			}
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
				slept = true
			}
		} else if time.Now().After(s.stopAt) {
			return
		}
		seq++
		binary.BigEndian.PutUint32(keyRaw[12:], seq)
		q := int((t + int64(id)) % int64(cfg.Route.Queues))
		hdr.QueueID = int32(q)
		now := time.Now()
		if period == 0 || slept {
			// A lane that slept until its slot starts the clock when it sends: how late
			// the Go runtime wakes it is the generator's doing (an idle runtime's
			// timers fire on millisecond epoll timeouts, up to 1 ms late). A lane still
			// waiting for its previous answer at its slot is charged from the slot, so
			// a stalled broker pays for the queue it causes (no coordinated omission).
			due = now
		}
		hdr.BornTimestamp = now.UnixMilli()
		binary.BigEndian.PutUint64(body, uint64(now.UnixNano()))
		hdr.Properties = "UNIQ_KEY\x01" + hex.EncodeToString(keyRaw[:]) + "\x02WAIT\x01true\x02"
		req.Opaque = conn.NextOpaque()
		frame = req.Encode(frame[:0])
		out := frame
		if cfg.Sign != nil {
			var err error
			if signed, err = cfg.Sign.signFrame(signed, frame, &tmp); err != nil {
				s.recordErr(err.Error())
				return
			}
			out = signed
		}
		if err := conn.Do(out, req.Opaque, call, cfg.Timeout); err != nil {
			s.recordErr(err.Error())
			return // the connection is gone
		}
		done := time.Now()
		if code == codec.RespSystemBusy {
			// Flow control (Apache: a request waited too long in the send queue). The Java client treats it
			// as a failed attempt and moves on; so do we, and the report counts them.
			s.busy.Add(1)
			if period == 0 && cfg.Count > 0 {
				s.ticket.Add(-1) // closed loop to a count: the count is of stored messages, so try again
			}
			continue
		}
		if code != codec.RespSuccess {
			s.recordErr(fmt.Sprintf("code %d: %s", code, remark))
			continue
		}
		s.sent.Add(1)
		s.perQueue[q].Add(1)
		if !due.Before(s.measureAt) {
			s.measured.Add(1)
			h.Record(done.Sub(due))
		}
	}
}
