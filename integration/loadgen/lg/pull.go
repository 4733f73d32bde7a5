package lg

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"rmqd/codec"
)

// PullConfig is one consumer run over PULL_MESSAGE: one pull in flight per queue, as a Java push consumer
// does, from offset 0 of every queue.
type PullConfig struct {
	Route    Route
	Topic    string
	Group    string        // consumer group, default "lg-consumer"
	Expect   int64         // stop once this many messages arrived over all queues
	Batch    int           // maxMsgNums, default 32 (the Java consumer's pullBatchSize)
	LongPoll bool          // suspend at the end of a queue (FLAG_SUSPEND) like a push consumer
	Timeout  time.Duration // whole run
	Latency  bool          // end-to-end latency from the send time in the first 8 body bytes
	// StoreLatency (with Latency) measures to the record's store timestamp instead of the receive time:
	// how late a message sent for later delivery (its due time in the body) reached its topic.
	StoreLatency bool
	// CountOffsets counts messages by how far each pull moved the queue offset: a BatchCQ record holds a
	// whole batch, and its queue gives every message of it an offset.
	CountOffsets bool
	Full         bool
	Binary       bool
}

// PullResult is what a consumer run measured.
type PullResult struct {
	Consumed int64    `json:"consumed"`
	Bytes    int64    `json:"bytes"`
	ElapsedS float64  `json:"elapsedS"`
	MsgPerS  float64  `json:"msgPerS"`
	MiBPerS  float64  `json:"miBPerS"`
	Pulls    int64    `json:"pulls"`
	Lat      Summary  `json:"lat"`
	Errors   []string `json:"errors,omitempty"`
}

// Pull flags (PullSysFlag).
const (
	pullFlagSuspend      = 1 << 1
	pullFlagSubscription = 1 << 2
)

// Pull consumes until Expect messages arrived or the timeout passed; the latter is an error.
func Pull(ctx context.Context, cfg PullConfig) (PullResult, error) {
	if cfg.Group == "" {
		cfg.Group = "lg-consumer"
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 32
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	conn, err := Dial(ctx, cfg.Route.BrokerAddr)
	if err != nil {
		return PullResult{}, err
	}
	defer conn.Close()
	var consumed, bytes, pulls atomic.Int64
	var errMu sync.Mutex
	var errs []string
	hists := make([]Hist, cfg.Route.Queues)
	start := time.Now()
	var wg sync.WaitGroup
	for q := range cfg.Route.Queues {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := pullQueue(ctx, conn, &cfg, q, &hists[q], &consumed, &bytes, &pulls)
			if err != nil {
				errMu.Lock()
				errs = append(errs, err.Error())
				errMu.Unlock()
				cancel()
			}
		}()
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	var all Hist
	for i := range hists {
		all.Merge(&hists[i])
	}
	res := PullResult{Consumed: consumed.Load(), Bytes: bytes.Load(), ElapsedS: el, Pulls: pulls.Load(),
		Lat: all.Summarize(cfg.Full), Errors: errs}
	if el > 0 {
		res.MsgPerS = float64(res.Consumed) / el
		res.MiBPerS = float64(res.Bytes) / el / (1 << 20)
	}
	if res.Consumed < cfg.Expect {
		return res, fmt.Errorf("lg: consumed %d of %d messages in %v (%v)", res.Consumed, cfg.Expect, cfg.Timeout, errs)
	}
	return res, nil
}

func pullQueue(ctx context.Context, conn *Conn, cfg *PullConfig, q int, h *Hist, consumed, bytes, pulls *atomic.Int64) error {
	hdr := codec.PullMessageRequestHeader{ConsumerGroup: cfg.Group, Topic: cfg.Topic, QueueID: int32(q),
		MaxMsgNums: int32(cfg.Batch), SysFlag: pullFlagSubscription, Subscription: "*", ExpressionType: "TAG",
		BrokerName: cfg.Route.BrokerName}
	reqTimeout := 10 * time.Second
	if cfg.LongPoll {
		hdr.SysFlag |= pullFlagSuspend
		hdr.SuspendTimeoutMillis = 2000
	}
	req := codec.NewRequest(codec.ReqPullMessage)
	req.CustomHeader = &hdr
	if cfg.Binary {
		req.SerializeType = codec.SerializeRocketMQ
	}
	var (
		code   int32
		remark string
		next   int64
		nextOK bool
		got    int64
		nbytes int64
		perr   error
		msg    codec.Message
	)
	call := NewCall(func(cmd *codec.RemotingCommand) {
		code, remark, got, nbytes, perr = cmd.Code, strings.Clone(cmd.Remark), 0, 0, nil
		v, ok, err := cmd.Ext.GetInt64("nextBeginOffset")
		next, nextOK = v, ok && err == nil
		if code != codec.RespSuccess {
			return
		}
		now := time.Now().UnixNano()
		b := cmd.Body
		for len(b) >= 8 {
			size := int(int32(binary.BigEndian.Uint32(b)))
			if size <= 0 || size > len(b) {
				perr = fmt.Errorf("record size %d with %d bytes left", size, len(b))
				return
			}
			if cfg.Latency {
				if _, err := codec.DecodeRecord(b[:size], &msg); err != nil {
					perr = err
					return
				}
				if len(msg.Body) >= 8 {
					at := now
					if cfg.StoreLatency {
						at = msg.StoreTimestamp * int64(time.Millisecond)
					}
					h.Record(time.Duration(at - int64(binary.BigEndian.Uint64(msg.Body))))
				}
			}
			got++
			nbytes += int64(size)
			b = b[size:]
		}
	})
	var frame []byte
	for consumed.Load() < cfg.Expect {
		if err := ctx.Err(); err != nil {
			return nil // another queue failed or the run timed out; Pull reports the count
		}
		req.Opaque = conn.NextOpaque()
		frame = req.Encode(frame[:0])
		if err := conn.Do(frame, req.Opaque, call, reqTimeout); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("pull %s/%d@%d: %w", cfg.Topic, q, hdr.QueueOffset, err)
		}
		pulls.Add(1)
		switch code {
		case codec.RespSuccess:
			if perr != nil {
				return fmt.Errorf("pull %s/%d@%d: body: %w", cfg.Topic, q, hdr.QueueOffset, perr)
			}
			if cfg.CountOffsets && nextOK {
				got = next - hdr.QueueOffset
			}
			consumed.Add(got)
			bytes.Add(nbytes)
		case codec.RespPullNotFound, codec.RespPullRetryImmediately, codec.RespPullOffsetMoved:
			if !cfg.LongPoll && code == codec.RespPullNotFound {
				time.Sleep(time.Millisecond) // caught up on this queue: don't spin
			}
		default:
			return fmt.Errorf("pull %s/%d@%d: code %d %s", cfg.Topic, q, hdr.QueueOffset, code, remark)
		}
		if nextOK {
			hdr.QueueOffset = next
		}
	}
	return nil
}
