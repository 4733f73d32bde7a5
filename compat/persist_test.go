package compat

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPersisterCoversEveryCaller: callers at the same time share writes, and
// each returns only after a write whose snapshot holds its change.
func TestPersisterCoversEveryCaller(t *testing.T) {
	var mu sync.Mutex
	table := map[int]bool{}
	var written []map[int]bool // each write's snapshot, in order
	var writes atomic.Int32
	p := Persister{Write: func() error {
		mu.Lock()
		snap := make(map[int]bool, len(table))
		for k := range table {
			snap[k] = true
		}
		written = append(written, snap)
		mu.Unlock()
		writes.Add(1)
		return nil
	}}
	const callers = 64
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mu.Lock()
			table[i] = true
			mu.Unlock()
			require.NoError(t, p.Persist())
			mu.Lock()
			last := written[len(written)-1]
			mu.Unlock()
			require.True(t, last[i], "caller %d returned before a write held its change", i)
		}()
	}
	wg.Wait()
	require.LessOrEqual(t, writes.Load(), int32(callers))
	require.Len(t, written[len(written)-1], callers)
}

// TestPersisterReportsTheCoveringWrite: a caller covered by a failed write gets
// its error, and the next call writes again.
func TestPersisterReportsTheCoveringWrite(t *testing.T) {
	fail := true
	n := 0
	p := Persister{Write: func() error {
		n++
		if fail {
			return fmt.Errorf("disk full")
		}
		return nil
	}}
	require.Error(t, p.Persist())
	fail = false
	require.NoError(t, p.Persist())
	require.Equal(t, 2, n)
}

// TestPersisterSharesAWrite: callers that arrive while a write runs are all
// covered by the one write after it.
func TestPersisterSharesAWrite(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	var writes atomic.Int32
	p := Persister{Write: func() error {
		if writes.Add(1) == 1 {
			started <- struct{}{}
			<-release
		}
		return nil
	}}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); require.NoError(t, p.Persist()) }()
	<-started
	const waiting = 10
	for range waiting {
		wg.Add(1)
		go func() { defer wg.Done(); require.NoError(t, p.Persist()) }()
	}
	for p.asked.Load() < waiting+1 {
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	require.EqualValues(t, 2, writes.Load(), "the waiting callers share one write")
}

func TestDirtyFileWritesOnlyMarkedAndKeepsFailures(t *testing.T) {
	var d DirtyFile
	writes := 0
	ok := func() error { writes++; return nil }
	if err := d.Flush(false, ok); err != nil || writes != 0 {
		t.Fatalf("unmarked flush wrote: %d %v", writes, err)
	}
	d.Mark()
	if err := d.Flush(false, func() error { return errors.New("disk") }); err == nil || !d.Dirty() {
		t.Fatalf("a failed write must leave the file marked (err %v, dirty %v)", err, d.Dirty())
	}
	if err := d.Flush(false, ok); err != nil || writes != 1 || d.Dirty() {
		t.Fatalf("marked flush: writes %d, dirty %v, err %v", writes, d.Dirty(), err)
	}
	if err := d.Flush(true, ok); err != nil || writes != 2 {
		t.Fatalf("forced flush: writes %d, err %v", writes, err)
	}
}
