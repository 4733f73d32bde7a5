package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"rmqd/integration/loadgen/lg"
)

// goClientSend drives the broker with the official Go client (SendSync from `threads` goroutines, one
// producer) for d after a warm-up: a cross-check of the lean load generator's figures.
func goClientSend(ctx context.Context, b *broker, topic string, size, threads int, warm, d time.Duration) (lg.SendResult, error) {
	rlog.SetLogLevel("error")
	p, err := rocketmq.NewProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{b.namesrv})),
		producer.WithGroupName(fmt.Sprintf("bench-go-%d", time.Now().UnixNano())),
		producer.WithRetry(0),
		producer.WithSendMsgTimeout(10*time.Second),
	)
	if err != nil {
		return lg.SendResult{}, fmt.Errorf("go client: %w", err)
	}
	if err := p.Start(); err != nil {
		return lg.SendResult{}, fmt.Errorf("go client start: %w", err)
	}
	defer func() { _ = p.Shutdown() }()
	body := make([]byte, size)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	start := time.Now()
	measureAt, stopAt := start.Add(warm), start.Add(warm+d)
	var sent, failed, measured atomic.Int64
	var errMu sync.Mutex
	var errs []string
	hists := make([]lg.Hist, threads)
	var wg sync.WaitGroup
	for i := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				t0 := time.Now()
				if t0.After(stopAt) {
					return
				}
				r, err := p.SendSync(ctx, primitive.NewMessage(topic, body))
				t1 := time.Now()
				if err != nil || r.Status != primitive.SendOK {
					failed.Add(1)
					errMu.Lock()
					if len(errs) < 8 {
						errs = append(errs, fmt.Sprintf("%v %v", err, r))
					}
					errMu.Unlock()
					if err != nil {
						time.Sleep(10 * time.Millisecond)
					}
					continue
				}
				sent.Add(1)
				if !t0.Before(measureAt) {
					measured.Add(1)
					hists[i].Record(t1.Sub(t0))
				}
			}
		}()
	}
	wg.Wait()
	var all lg.Hist
	for i := range hists {
		all.Merge(&hists[i])
	}
	el := time.Since(measureAt).Seconds()
	res := lg.SendResult{Sent: sent.Load(), Failed: failed.Load(), Measured: measured.Load(), ElapsedS: el,
		Lat: all.Summarize(false), Errors: errs}
	res.MsgPerS = float64(res.Measured) / el
	res.MiBPerS = res.MsgPerS * float64(size) / (1 << 20)
	return res, nil
}
