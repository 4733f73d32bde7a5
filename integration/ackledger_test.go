package integration

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"rmqd/integration/harness"
)

// ackLedger is one Go producer sending SYNC in a loop (no retry) and the ids of
// every send it saw acknowledged: what the replication tests require the
// surviving broker to hold after a master dies.
type ackLedger struct {
	mu     sync.Mutex
	acked  []string
	lastOK time.Time
	stop   atomic.Bool
	done   chan struct{}
}

func startAckLedger(t *testing.T, nsAddr, group, topic, tag string, size int) *ackLedger {
	t.Helper()
	pr, err := producer.NewDefaultProducer(
		producer.WithNameServer([]string{nsAddr}),
		producer.WithGroupName(group),
		producer.WithInstanceName(fmt.Sprintf("%s_%d", group, time.Now().UnixNano())),
		producer.WithRetry(0),
		producer.WithSendMsgTimeout(3*time.Second))
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	if err := pr.Start(); err != nil {
		t.Fatalf("producer start: %v", err)
	}
	l := &ackLedger{done: make(chan struct{})}
	go func() {
		defer close(l.done)
		defer func() { _ = pr.Shutdown() }()
		for i := 0; i < 1_000_000 && !l.stop.Load(); i++ {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			r, err := pr.SendSync(ctx, primitive.NewMessage(topic, harness.MakeBody(tag, i, size)))
			cancel()
			if err == nil && r.Status == primitive.SendOK {
				l.mu.Lock()
				l.acked = append(l.acked, r.MsgID)
				l.lastOK = time.Now()
				l.mu.Unlock()
			} else {
				time.Sleep(50 * time.Millisecond)
			}
		}
	}()
	t.Cleanup(func() { l.finish() })
	return l
}

// count is how many sends were acknowledged so far, and when the last was.
func (l *ackLedger) count() (int, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked), l.lastOK
}

// waitMore waits until n more sends than now are acknowledged and returns
// when the last of them was.
func (l *ackLedger) waitMore(t *testing.T, what string, n int, timeout time.Duration) time.Time {
	t.Helper()
	base, _ := l.count()
	deadline := time.Now().Add(timeout)
	for {
		got, last := l.count()
		if got >= base+n {
			return last
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: only %d of %d more sends acknowledged in %v", what, got-base, n, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// finish stops the producer and returns every acknowledged id.
func (l *ackLedger) finish() []string {
	l.stop.Store(true)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.acked...)
}
