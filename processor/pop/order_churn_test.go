package pop

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func (m *OrderInfo) size() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.table)
}

// The ordered-POP records of queues no one popped for a day leave even when
// nothing else changes: a broker whose ordered consumers (or their topics)
// are gone must not keep them.
func TestOrderInfoForgetsIdleQueuesWithoutNewPops(t *testing.T) {
	m := NewOrderInfo(t.TempDir(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	m.every = 10 * time.Millisecond
	for i := range 200 {
		m.Update("a", false, fmt.Sprintf("T%d", i), "G", 0, time.Now().UnixMilli(), 30_000, []int64{0}, &offsetInfo{})
	}
	require.NoError(t, m.Persist()) // the last change is saved
	m.mu.Lock()
	for _, qs := range m.table {
		for _, e := range qs {
			e.LastConsume -= (orderCleanAfter + time.Minute).Milliseconds()
		}
	}
	m.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.run(ctx); close(done) }()
	// The loop may be writing the file when the test ends: stop it before
	// TempDir's cleanup removes the directory.
	defer func() { cancel(); <-done }()
	require.Eventually(t, func() bool { return m.size() == 0 }, 5*time.Second, 10*time.Millisecond)
}
