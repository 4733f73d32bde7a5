package lg

import (
	"context"
	"fmt"
	"time"
)

// E2EConfig is an end-to-end latency run: an open-loop producer at Rate while a long-polling consumer
// (what a push consumer does underneath) reads the topic; latency = receive time - send time in the body.
type E2EConfig struct {
	Route    Route
	Topic    string
	Size     int
	Rate     float64
	Duration time.Duration
	InFlight int
	Timeout  time.Duration
	Full     bool
}

// E2EResult holds both sides.
type E2EResult struct {
	Send SendResult `json:"send"`
	Pull PullResult `json:"pull"`
}

// EndToEnd runs the producer and the consumer together and waits until every sent message arrived.
func EndToEnd(ctx context.Context, cfg E2EConfig) (E2EResult, error) {
	if cfg.Rate <= 0 {
		return E2EResult{}, fmt.Errorf("lg: e2e needs a rate")
	}
	count := int64(cfg.Rate * cfg.Duration.Seconds())
	type pr struct {
		r   PullResult
		err error
	}
	pc := make(chan pr, 1)
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		r, err := Pull(pctx, PullConfig{Route: cfg.Route, Topic: cfg.Topic, Group: "lg-e2e", Expect: count, LongPoll: true,
			Latency: true, Timeout: cfg.Timeout, Full: cfg.Full})
		pc <- pr{r, err}
	}()
	time.Sleep(300 * time.Millisecond) // the consumer's first pulls are parked before the first send
	s, err := Send(ctx, SendConfig{Route: cfg.Route, Topic: cfg.Topic, Size: cfg.Size, InFlight: max(cfg.InFlight, 16),
		Rate: cfg.Rate, Count: count, Duration: cfg.Duration + time.Minute, Full: cfg.Full})
	if err != nil {
		return E2EResult{Send: s}, err
	}
	if s.Sent < count {
		cancel()
		p := <-pc
		return E2EResult{Send: s, Pull: p.r}, fmt.Errorf("lg: e2e sent %d of %d (%v)", s.Sent, count, s.Errors)
	}
	p := <-pc
	return E2EResult{Send: s, Pull: p.r}, p.err
}
