package lg

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"rmqd/codec"
)

// PopConfig is one POP consumer run: per queue one loop of POP_MESSAGE then the acks of what it got, as
// rocketmq-proxy does for a gRPC SimpleConsumer (one receive in flight per queue, every message acked).
type PopConfig struct {
	Route     Route
	Topic     string
	Group     string        // consumer group, default "lg-pop"
	Expect    int64         // stop once this many messages were popped and acked over all queues
	Batch     int           // maxMsgNums, default 32
	BatchAck  bool          // one BATCH_ACK_MESSAGE per pop instead of one ACK_MESSAGE per message
	Invisible time.Duration // invisibleTime, default 60 s (longer than the run: nothing is revived)
	Timeout   time.Duration // whole run
	Full      bool
}

// PopResult is what a POP run measured: pop round trips, ack round trips (an ack batch's round trip
// when BatchAck) and messages popped and acked per second.
type PopResult struct {
	Acked int64 `json:"acked"`
	// Redelivered counts messages popped again after their invisible time (acked too, not in Acked).
	Redelivered int64    `json:"redelivered,omitempty"`
	ElapsedS    float64  `json:"elapsedS"`
	MsgPerS     float64  `json:"msgPerS"`
	Pops        int64    `json:"pops"`
	PopLat      Summary  `json:"popLat"`
	AckLat      Summary  `json:"ackLat"`
	Errors      []string `json:"errors,omitempty"`
}

// Pop pops and acks until Expect messages were acked or the timeout passed; the latter is an error.
func Pop(ctx context.Context, cfg PopConfig) (PopResult, error) {
	if cfg.Group == "" {
		cfg.Group = "lg-pop"
	}
	popDefaults(&cfg.Batch, &cfg.Invisible, &cfg.Timeout)
	return popLanes(ctx, cfg.Route.BrokerAddr, cfg.Route.Queues, cfg.Expect, cfg.Timeout, cfg.Full, "popped",
		func(ctx context.Context, conn *Conn, q int, c *popCounts) error {
			return popQueue(ctx, conn, &cfg, q, c)
		})
}

// popDefaults fills what a POP or lite run left unset: 32 per pop, 60 s invisible (longer than the run:
// nothing is revived), 5 min for the whole run.
func popDefaults(batch *int, invisible, timeout *time.Duration) {
	if *batch <= 0 {
		*batch = 32
	}
	if *invisible <= 0 {
		*invisible = 60 * time.Second
	}
	if *timeout <= 0 {
		*timeout = 5 * time.Minute
	}
}

// popCounts is what one lane of a POP or lite run counts: its own latencies, the run's shared totals.
type popCounts struct {
	popH, ackH               *Hist
	acked, redelivered, pops *atomic.Int64
}

// popLanes runs lanes consumer loops over one connection until expect messages were acked over all or
// timeout passed (an error, as is a lane's); the first lane error stops the others.
func popLanes(ctx context.Context, addr string, lanes int, expect int64, timeout time.Duration, full bool, what string,
	lane func(ctx context.Context, conn *Conn, i int, c *popCounts) error) (PopResult, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := Dial(ctx, addr)
	if err != nil {
		return PopResult{}, err
	}
	defer conn.Close()
	var acked, redelivered, pops atomic.Int64
	var errMu sync.Mutex
	var errs []string
	popH, ackH := make([]Hist, lanes), make([]Hist, lanes)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &popCounts{&popH[i], &ackH[i], &acked, &redelivered, &pops}
			if err := lane(ctx, conn, i, c); err != nil {
				errMu.Lock()
				errs = append(errs, err.Error())
				errMu.Unlock()
				cancel()
			}
		}()
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	var pa, aa Hist
	for i := range popH {
		pa.Merge(&popH[i])
		aa.Merge(&ackH[i])
	}
	res := PopResult{Acked: acked.Load(), Redelivered: redelivered.Load(), ElapsedS: el, Pops: pops.Load(), PopLat: pa.Summarize(full),
		AckLat: aa.Summarize(full), Errors: errs}
	if el > 0 {
		res.MsgPerS = float64(res.Acked) / el
	}
	if res.Acked < expect {
		return res, fmt.Errorf("lg: %s and acked %d of %d messages in %v (%v)", what, res.Acked, expect, timeout, errs)
	}
	return res, nil
}

// roundTrip sends req on conn (encoded into frame, reused) and records its round trip in h.
func roundTrip(conn *Conn, req *codec.RemotingCommand, frame *[]byte, call *Call, h *Hist) error {
	req.Opaque = conn.NextOpaque()
	*frame = req.Encode((*frame)[:0])
	t0 := time.Now()
	if err := conn.Do(*frame, req.Opaque, call, 10*time.Second); err != nil {
		return err
	}
	h.Record(time.Since(t0))
	return nil
}

// popAnswered reads a pop's code: drained (after a short sleep, so a drained lane does not spin) when it
// found nothing, an error when it was refused.
func popAnswered(code int32, remark string) (drained bool, err error) {
	switch code {
	case codec.RespSuccess:
		return false, nil
	case codec.RespPollingTimeout, codec.RespPullNotFound, codec.RespPollingFull:
		time.Sleep(time.Millisecond)
		return true, nil
	}
	return false, fmt.Errorf("code %d %s", code, remark)
}

// popped is what a pop answered: the header fields a receipt handle is built from, the queue offsets of
// the messages of the topic itself, and the receipt handles (POP_CK) of redelivered ones.
type popped struct {
	code                      int32
	remark                    string
	popTime, invisible, start string
	reviveQid                 string
	offsets                   []int64
	retries                   []string
	perr                      error
}

func popQueue(ctx context.Context, conn *Conn, cfg *PopConfig, q int, c *popCounts) error {
	popH, ackH, acked, redelivered, pops := c.popH, c.ackH, c.acked, c.redelivered, c.pops
	qs := strconv.Itoa(q)
	req := codec.NewRequest(codec.ReqPopMessage)
	for _, kv := range [][2]string{{"consumerGroup", cfg.Group}, {"topic", cfg.Topic}, {"queueId", qs},
		{"maxMsgNums", strconv.Itoa(cfg.Batch)}, {"invisibleTime", strconv.FormatInt(cfg.Invisible.Milliseconds(), 10)},
		{"pollTime", "0"}, {"bornTime", "0"}, {"initMode", "0"}, {"expType", "TAG"}, {"exp", "*"}, {"order", "false"}} {
		req.Ext.Set(kv[0], kv[1])
	}
	var p popped
	var rec codec.Message
	call := NewCall(func(cmd *codec.RemotingCommand) {
		p.code, p.remark, p.offsets, p.retries, p.perr = cmd.Code, strings.Clone(cmd.Remark), p.offsets[:0], p.retries[:0], nil
		if cmd.Code != codec.RespSuccess {
			return
		}
		get := func(k string) string { v, _ := cmd.Ext.Get(k); return strings.Clone(v) }
		p.popTime, p.invisible, p.reviveQid = get("popTime"), get("invisibleTime"), get("reviveQid")
		p.start = ""
		// startOffsetInfo: "<retry mark> <queue> <start offset>" entries; a mark other than 0 means the pop
		// also took messages revived into the retry topic (a pop-to-ack gap longer than the invisible time).
		retry := false
		for _, e := range strings.Split(get("startOffsetInfo"), ";") {
			f := strings.Fields(e)
			switch {
			case len(f) != 3:
			case f[0] == "0" && f[1] == qs:
				p.start = f[2]
			case f[0] != "0":
				retry = true
			}
		}
		// The record's queue offset sits after totalSize, magic, bodyCRC, queueId and flag.
		for b := cmd.Body; len(b) >= 28; {
			size := int(int32(binary.BigEndian.Uint32(b)))
			if size < 28 || size > len(b) {
				p.perr = fmt.Errorf("record size %d with %d bytes left", size, len(b))
				return
			}
			if retry {
				// A redelivered message carries its receipt handle in POP_CK (MQClientAPIImpl keeps it).
				if _, err := codec.DecodeRecord(b[:size], &rec); err != nil {
					p.perr = err
					return
				}
				if ck, ok := codec.PropertyValue(rec.Properties, "POP_CK"); ok {
					p.retries = append(p.retries, strings.Clone(ck))
					b = b[size:]
					continue
				}
			}
			p.offsets = append(p.offsets, int64(binary.BigEndian.Uint64(b[20:28])))
			b = b[size:]
		}
	})
	var (
		ackCode   int32
		ackRemark string
	)
	ackCall := NewCall(func(cmd *codec.RemotingCommand) { ackCode, ackRemark = cmd.Code, strings.Clone(cmd.Remark) })
	var frame []byte
	ack := func(r *codec.RemotingCommand) error {
		if err := roundTrip(conn, r, &frame, ackCall, ackH); err != nil {
			return err
		}
		if ackCode != codec.RespSuccess {
			return fmt.Errorf("ack %s/%d: code %d %s", cfg.Topic, q, ackCode, ackRemark)
		}
		return nil
	}
	ackOne := func(topic, queue, offset, handle string) error {
		r := codec.NewRequest(codec.ReqAckMessage)
		r.Ext.Set("consumerGroup", cfg.Group)
		r.Ext.Set("topic", topic)
		r.Ext.Set("queueId", queue)
		r.Ext.Set("offset", offset)
		r.Ext.Set("extraInfo", handle)
		return ack(r)
	}
	for acked.Load() < cfg.Expect {
		if ctx.Err() != nil {
			return nil // another queue failed or the run timed out; Pop reports the count
		}
		if err := roundTrip(conn, req, &frame, call, popH); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("pop %s/%d: %w", cfg.Topic, q, err)
		}
		pops.Add(1)
		if drained, err := popAnswered(p.code, p.remark); err != nil {
			return fmt.Errorf("pop %s/%d: %w", cfg.Topic, q, err)
		} else if drained {
			continue
		}
		if p.perr != nil {
			return fmt.Errorf("pop %s/%d: body: %w", cfg.Topic, q, p.perr)
		}
		// Redeliveries are acked one by one on their retry topic (ExtraInfoUtil.getRealTopic) and counted
		// apart: the run still ends when Expect messages of the topic were acked.
		for _, ck := range p.retries {
			f := strings.Fields(ck)
			if len(f) < 8 {
				return fmt.Errorf("pop %s/%d: receipt handle %q", cfg.Topic, q, ck)
			}
			topic := "%RETRY%" + cfg.Group + "_" + cfg.Topic
			if f[4] == "2" {
				topic = "%RETRY%" + cfg.Group + "+" + cfg.Topic
			}
			if err := ackOne(topic, f[6], f[7], ck); err != nil {
				return err
			}
			redelivered.Add(1)
		}
		if len(p.offsets) == 0 {
			continue
		}
		if p.start == "" {
			return fmt.Errorf("pop %s/%d: no start offset for queue %d in the answer", cfg.Topic, q, q)
		}
		if cfg.BatchAck {
			if err := ack(batchAckRequest(cfg, q, &p)); err != nil {
				return err
			}
		} else {
			for _, off := range p.offsets {
				offs := strconv.FormatInt(off, 10)
				// ExtraInfoUtil's receipt handle of a message of the original topic (retry mark 0).
				if err := ackOne(cfg.Topic, qs, offs, p.start+" "+p.popTime+" "+p.invisible+" "+p.reviveQid+" 0 "+
					cfg.Route.BrokerName+" "+qs+" "+offs); err != nil {
					return err
				}
			}
		}
		acked.Add(int64(len(p.offsets)))
	}
	return nil
}

// batchAckRequest is one BATCH_ACK_MESSAGE entry for every message of a pop: a bit per offset from the
// pop's start offset, as the proxy's batch ack sends it.
func batchAckRequest(cfg *PopConfig, q int, p *popped) *codec.RemotingCommand {
	start, _ := strconv.ParseInt(p.start, 10, 64)
	bits := make([]byte, (p.offsets[len(p.offsets)-1]-start)/8+1)
	for _, off := range p.offsets {
		bits[(off-start)/8] |= 1 << ((off - start) % 8)
	}
	body := fmt.Sprintf(`{"acks":[{"b":"%s","c":"%s","it":%s,"pt":%s,"q":%d,"r":"0","rq":%s,"so":%d,"t":"%s"}],"brokerName":"%s"}`,
		base64.StdEncoding.EncodeToString(bits), cfg.Group, p.invisible, p.popTime, q, p.reviveQid, start, cfg.Topic, cfg.Route.BrokerName)
	r := codec.NewRequest(codec.ReqBatchAckMessage)
	r.Body = []byte(body)
	return r
}
