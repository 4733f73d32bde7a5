package lg

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"rmqd/codec"
	"rmqd/compat"
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

	// Delivery later (timer wheel or delay level): the first 8 body bytes then carry the due time (send time
	// + delay), so a reader's latency from the body is the delivery lag.
	TimerDelay  time.Duration // > 0: TIMER_DELAY_MS, as Message.setDelayTimeMs (5.x timer wheel)
	TimerSpread time.Duration // the delays spread over [TimerDelay, TimerDelay+TimerSpread) in 1 ms steps
	DelayLevel  int           // > 0: DELAY level, as Message.setDelayTimeLevel (level 1: 1 s by default)
	// Txn sends half messages (TRAN_MSG, PGROUP, the prepared sysflag) and commits each with a oneway
	// END_TRANSACTION on the same connection once it is acknowledged, as TransactionMQProducer does.
	Txn bool
	// Batch > 1 sends SEND_BATCH_MESSAGE requests of Batch messages of Size bytes each, with a UNIQ_KEY on
	// the batch and on every message as the Java producer's MessageBatch has (a BatchCQ topic stores such a
	// batch as one inner-batch record). Count and Rate are then in requests; the result counts messages.
	Batch int
	// Lites > 0 sends message n to lite topic LiteName(n % Lites) of a message.type=LITE topic (__LITE_TOPIC).
	Lites int
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
	levelWait time.Duration // cfg.DelayLevel's wait under the default messageDelayLevel
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
	var levelWait time.Duration
	if cfg.DelayLevel > 0 {
		levels, err := compat.ParseDelayLevels(compat.DefaultMessageDelayLevel)
		if err != nil {
			return SendResult{}, err
		}
		levelWait = levels[min(cfg.DelayLevel, len(levels))-1]
	}
	s := &sender{cfg: cfg, levelWait: levelWait, perQueue: make([]atomic.Int64, cfg.Route.Queues)}
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
	perReq := int64(max(cfg.Batch, 1))
	// UNIQ_KEY like the Java client's: 32 hex digits, fixed per lane prefix and a counter.
	var keyRaw [16]byte
	binary.BigEndian.PutUint64(keyRaw[:8], rand.Uint64())
	binary.BigEndian.PutUint32(keyRaw[8:12], uint32(id))
	var hdr codec.SendMessageRequestHeader
	hdr.ProducerGroup, hdr.Topic, hdr.DefaultTopic, hdr.DefaultTopicQueueNums = cfg.Group, cfg.Topic, "TBW102", 4
	hdr.BrokerName = cfg.Route.BrokerName
	req := codec.NewRequest(codec.ReqSendMessageV2)
	if cfg.Batch > 1 {
		// Java brokers go by the header's batch flag, not the request code: without it a batch is stored
		// as one message whose body is the batch.
		req.Code, hdr.Batch = codec.ReqSendBatchMessage, true
	}
	if cfg.Txn {
		hdr.SysFlag = sysFlagTranPrepared
	}
	req.CustomHeader = (*codec.SendMessageRequestHeaderV2)(&hdr)
	req.Body = body
	if cfg.Binary {
		req.SerializeType = codec.SerializeRocketMQ
	}
	var code int32
	var remark string
	var end txnEnd // Txn: the commit of the message just acknowledged
	call := NewCall(func(cmd *codec.RemotingCommand) {
		code = cmd.Code
		if code != codec.RespSuccess {
			remark = strings.Clone(cmd.Remark) // cmd aliases the reader's buffer
			return
		}
		if cfg.Txn {
			end.fromResponse(cmd)
		}
	})
	var txnReq *codec.RemotingCommand
	if cfg.Txn {
		end.hdr = codec.EndTransactionRequestHeader{ProducerGroup: cfg.Group, CommitOrRollback: tranCommitType}
		end.topic, end.brokerName = cfg.Topic, cfg.Route.BrokerName
		txnReq = codec.NewRequest(codec.ReqEndTransaction)
		txnReq.Flag |= codec.FlagOneway
		txnReq.CustomHeader = &end
		txnReq.SerializeType = req.SerializeType
	}
	var frame, signed, props, batchBody, txnFrame []byte
	var tmp codec.RemotingCommand // the signed form's fields (Sign)
	var seq uint32
	period := time.Duration(0)
	if cfg.Rate > 0 {
		period = time.Duration(float64(time.Second) / cfg.Rate)
	}
	spreadMs := cfg.TimerSpread.Milliseconds()
	var num [20]byte
	var inner [64]byte
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
		stamp := now
		props = props[:0]
		switch {
		case cfg.TimerDelay > 0:
			d := cfg.TimerDelay
			if spreadMs > 0 {
				d += time.Duration(t%spreadMs) * time.Millisecond
			}
			stamp = now.Add(d)
			props = appendProp(props, codec.PropTimerDelayMs, strconv.AppendInt(num[:0], d.Milliseconds(), 10))
		case cfg.DelayLevel > 0:
			stamp = now.Add(s.levelWait)
			props = appendProp(props, codec.PropDelay, strconv.AppendInt(num[:0], int64(cfg.DelayLevel), 10))
		}
		binary.BigEndian.PutUint64(body, uint64(stamp.UnixNano()))
		if cfg.Lites > 0 {
			props = appendProp(props, codec.PropLiteTopic, appendLiteName(num[:0], int(seq)%cfg.Lites))
		}
		if cfg.Txn {
			props = appendProp(props, codec.PropTranMsg, trueBytes)
			props = append(append(append(props, codec.PropProducerGroup...), 1), cfg.Group...)
			props = append(props, 2)
		}
		if cfg.Batch > 1 {
			// The messages of a batch, each with its own key; the batch's key follows.
			batchBody = batchBody[:0]
			for range cfg.Batch {
				seq++
				binary.BigEndian.PutUint32(keyRaw[12:], seq)
				p := appendProp(inner[:0], codec.PropWait, trueBytes)
				p = appendKey(p, &keyRaw)
				batchBody = codec.AppendBatchEntry(batchBody, 0, body, unsafe.String(unsafe.SliceData(p), len(p)))
			}
			req.Body = batchBody
		}
		seq++
		binary.BigEndian.PutUint32(keyRaw[12:], seq)
		props = appendKey(props, &keyRaw)
		props = appendProp(props, codec.PropWait, trueBytes)
		if cfg.Txn {
			hex.Encode(end.msgID[:], keyRaw[:])
			upperHex(end.msgID[:])
		}
		// The header's string lives until Encode copies it into the frame.
		hdr.Properties = unsafe.String(unsafe.SliceData(props), len(props))
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
		if cfg.Txn {
			if err := end.err; err != nil {
				s.recordErr(err.Error())
				continue
			}
			txnReq.Opaque = conn.NextOpaque()
			txnFrame = txnReq.Encode(txnFrame[:0])
			if cfg.Sign != nil {
				var err error
				if signed, err = cfg.Sign.signFrame(signed, txnFrame, &tmp); err != nil {
					s.recordErr(err.Error())
					return
				}
				txnFrame = append(txnFrame[:0], signed...)
			}
			if err := conn.Oneway(txnFrame); err != nil {
				s.recordErr(err.Error())
				return
			}
		}
		s.sent.Add(perReq)
		s.perQueue[q].Add(perReq)
		if !due.Before(s.measureAt) {
			s.measured.Add(perReq)
			h.Record(done.Sub(due))
		}
	}
}

// Transaction flags (MessageSysFlag): the prepared type a half message is sent with, the commit type of
// its END_TRANSACTION.
const (
	sysFlagTranPrepared = 0x1 << 2
	tranCommitType      = 0x2 << 2
)

var trueBytes = []byte("true")

// appendProp appends name 0x01 value 0x02 (the properties string layout).
func appendProp(dst []byte, name string, value []byte) []byte {
	dst = append(dst, name...)
	dst = append(dst, 1)
	dst = append(dst, value...)
	return append(dst, 2)
}

// appendKey appends UNIQ_KEY with raw as 32 upper-case hex digits, as MessageClientIDSetter writes them.
func appendKey(dst []byte, raw *[16]byte) []byte {
	dst = append(dst, codec.PropUniqKey...)
	dst = append(dst, 1)
	n := len(dst)
	dst = append(dst, make([]byte, 32)...)
	hex.Encode(dst[n:], raw[:])
	upperHex(dst[n:])
	return append(dst, 2)
}

func upperHex(b []byte) {
	for i, c := range b {
		if c >= 'a' && c <= 'f' {
			b[i] = c - 'a' + 'A'
		}
	}
}

// txnEnd is the END_TRANSACTION header of one half message, filled from its send response as
// DefaultMQProducerImpl.endTransaction does: the commitlog offset from the offset message id, the queue
// offset as tranStateTableOffset, the UNIQ_KEY (the response's transactionId when it has one).
type txnEnd struct {
	hdr        codec.EndTransactionRequestHeader
	topic      string
	brokerName string
	msgID      [32]byte // the half message's UNIQ_KEY (SendResult.getMsgId)
	txnID      []byte
	err        error
}

// fromResponse reads a SEND_OK answer (in the reader goroutine; cmd aliases its buffer).
func (e *txnEnd) fromResponse(cmd *codec.RemotingCommand) {
	e.err = nil
	id, _ := cmd.Ext.Get("msgId")
	_, off, err := compat.DecodeOffsetMsgID(id)
	if err != nil {
		e.err = err
		return
	}
	qo, ok, err := cmd.Ext.GetInt64("queueOffset")
	if !ok || err != nil {
		e.err = fmt.Errorf("lg: send response without queueOffset (%v)", err)
		return
	}
	e.hdr.CommitLogOffset, e.hdr.TranStateTableOffset = off, qo
	tid, _ := cmd.Ext.Get("transactionId")
	e.txnID = append(e.txnID[:0], tid...)
}

// WriteExt writes EndTransactionRequestHeader's fields (with topic and brokerName, which 5.x sets).
func (e *txnEnd) WriteExt(w *codec.ExtWriter) {
	w.String("topic", e.topic)
	w.String("producerGroup", e.hdr.ProducerGroup)
	w.Int64("tranStateTableOffset", e.hdr.TranStateTableOffset)
	w.Int64("commitLogOffset", e.hdr.CommitLogOffset)
	w.Int32("commitOrRollback", e.hdr.CommitOrRollback)
	w.Bool("fromTransactionCheck", false)
	w.String("msgId", unsafe.String(&e.msgID[0], len(e.msgID)))
	if len(e.txnID) > 0 {
		w.String("transactionId", unsafe.String(unsafe.SliceData(e.txnID), len(e.txnID)))
	}
	w.String("brokerName", e.brokerName)
}
