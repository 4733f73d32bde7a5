package store

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// waitReputIdle waits (bounded) until the dispatcher waits for appends.
func waitReputIdle(t *testing.T, s *DefaultStore) {
	t.Helper()
	for i := 0; i < 5000 && !(s.reputNap.idle.Load() && s.reputFrom.Load() == s.MaxPhyOffset()); i++ {
		time.Sleep(time.Millisecond)
	}
	require.True(t, s.reputNap.idle.Load(), "dispatcher never idle")
}

// An append while the dispatcher is idle and caught up is dispatched before
// the put returns, on the putting goroutine, and told to the arriving
// listener there (which is what wakes a held pull).
func TestAppendDispatchesInlineWhenIdle(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	defer s.Shutdown()
	ctx := context.Background()
	var inPut atomic.Bool
	var onPutter, arrived atomic.Int64
	s.SetArrivingListener(func(topic string, qid int32, logicOffset, _, _ int64, _ string) {
		if topic != "Inline" {
			return
		}
		arrived.Store(logicOffset)
		if inPut.Load() {
			onPutter.Add(1)
		}
	})
	for i := 0; i < 20; i++ {
		waitReputIdle(t, s)
		inPut.Store(true)
		r := s.PutMessage(ctx, newMsg("Inline", 0, fmt.Sprintf("m%d", i), nil))
		inPut.Store(false)
		require.Equal(t, PutOK, r.Status)
		// No waiting: the consume queue already has it.
		require.Equal(t, int64(i+1), s.MaxOffsetInQueue("Inline", 0))
		require.Equal(t, int64(i+1), arrived.Load())
	}
	require.Equal(t, int64(20), onPutter.Load())
	got := readAll(t, s, "Inline", 0)
	require.Len(t, got, 20)
	for i, m := range got {
		require.Equal(t, fmt.Sprintf("m%d", i), string(m.Body))
	}
}

// Puts racing each other and the dispatcher goroutine (inline dispatch,
// fall-back wake-ups, batches that always wake it) lose nothing and keep each
// queue in append order; the listener hears every offset of a queue in order.
func TestAppendDispatchRacesKeepOrder(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	defer s.Shutdown()
	ctx := context.Background()
	const writers, perWriter = 4, 300
	var mu sync.Mutex
	next := map[int32]int64{}
	var outOfOrder atomic.Int64
	s.SetArrivingListener(func(topic string, qid int32, logicOffset, _, _ int64, _ string) {
		if topic != "Race" {
			return
		}
		mu.Lock()
		if next[qid]+1 != logicOffset {
			outOfOrder.Add(1)
		}
		next[qid] = logicOffset
		mu.Unlock()
	})
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				q := int32(i % 2)
				if i%50 == 49 {
					// A batch of two: appended under the commitlog lock, it wakes the dispatcher.
					body := batchBody(t, fmt.Sprintf("w%d-%d-a", w, i), fmt.Sprintf("w%d-%d-b", w, i))
					tmpl := newMsg("Race", q, "", nil)
					if st := s.PutMessages(ctx, tmpl, body, nil).Status; st != PutOK {
						t.Errorf("batch put: %v", st)
						return
					}
					continue
				}
				if st := s.PutMessage(ctx, newMsg("Race", q, fmt.Sprintf("w%d-%d", w, i), nil)).Status; st != PutOK {
					t.Errorf("put: %v", st)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	// Batches are at odd i, so queue 1 gets them: two messages each.
	perQueue := [2]int64{writers * perWriter / 2, writers * (perWriter/2 + perWriter/50)}
	total := perQueue[0] + perQueue[1]
	waitDispatched(t, s, "Race", 0, perQueue[0])
	waitDispatched(t, s, "Race", 1, perQueue[1])
	require.Zero(t, outOfOrder.Load())
	seen := map[string]bool{}
	for q := int32(0); q < 2; q++ {
		got := readAll(t, s, "Race", q)
		require.Len(t, got, int(perQueue[q]))
		last := map[int]int{} // writer -> last index seen in this queue
		for i, m := range got {
			require.Equal(t, int64(i), m.QueueOffset)
			if i > 0 {
				require.Greater(t, m.CommitLogOffset, got[i-1].CommitLogOffset)
			}
			b := string(m.Body)
			require.False(t, seen[b], "duplicate %s", b)
			seen[b] = true
			var w, n int
			_, err := fmt.Sscanf(b, "w%d-%d", &w, &n)
			require.NoError(t, err)
			if p, ok := last[w]; ok {
				require.GreaterOrEqual(t, n, p, "writer %d out of order in queue %d", w, q)
			}
			last[w] = n
		}
	}
	require.Len(t, seen, int(total))
}

// batchBody encodes bodies as a SEND_BATCH_MESSAGE body.
func batchBody(t *testing.T, bodies ...string) []byte {
	t.Helper()
	var out []byte
	for _, b := range bodies {
		out = codec.AppendBatchEntry(out, 0, []byte(b), "")
	}
	return out
}
