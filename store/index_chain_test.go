package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestQueryMaxNumCountsRecords: a record that names the key twice in KEYS is
// one answer, so maxNum records are answered when that many exist (the query
// answers each record once; counting entries gave fewer).
func TestQueryMaxNumCountsRecords(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	defer s.Shutdown()
	for i := range 4 {
		m := newMsg("Dup", 0, fmt.Sprint(i), map[string]string{"KEYS": "d d", "UNIQ_KEY": "d"})
		require.Equal(t, PutOK, s.PutMessage(context.Background(), m).Status)
	}
	waitDispatched(t, s, "Dup", 0, 4)
	s.doReput()
	recs, _, _ := queryRecords(s, "Dup", "d", 3, 0, time.Now().Add(time.Hour).UnixMilli())
	require.Len(t, recs, 3)
}

// TestQueryChainCycleEnds: a damaged index whose chain loops back on itself
// through entries of another hash must not keep a query walking forever
// (Java's walk only stops a chain that points at itself). A valid chain
// always points to an older, lower entry.
func TestQueryChainCycleEnds(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MaxHashSlotNum = 1 // every key shares the one slot
	cfg.MaxIndexNum = 100
	s := openStore(t, cfg)
	defer s.Shutdown()
	for i := range 3 {
		m := newMsg("Cyc", 0, fmt.Sprint(i), map[string]string{"KEYS": fmt.Sprintf("other%d", i)})
		require.Equal(t, PutOK, s.PutMessage(context.Background(), m).Status)
	}
	waitDispatched(t, s, "Cyc", 0, 3)
	s.doReput()
	s.index.mu.RLock()
	x := s.index.files[len(s.index.files)-1]
	s.index.mu.RUnlock()
	// Entry 1 (the oldest) points up to entry 3: 3 -> 2 -> 1 -> 3 -> ...
	x.put32(indexHeaderSize+x.slotNum*4+1*20+16, 3)
	done := make(chan int, 1)
	go func() {
		recs, _, _ := queryRecords(s, "Cyc", "missing", 32, 0, time.Now().Add(time.Hour).UnixMilli())
		done <- len(recs)
	}()
	select {
	case n := <-done:
		require.Zero(t, n)
	case <-time.After(10 * time.Second):
		t.Fatal("query walks a looping chain forever")
	}
}
