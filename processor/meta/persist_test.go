package meta

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
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
	p := persister{write: func() error {
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
			require.NoError(t, p.persist())
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
	p := persister{write: func() error {
		n++
		if fail {
			return fmt.Errorf("disk full")
		}
		return nil
	}}
	require.Error(t, p.persist())
	fail = false
	require.NoError(t, p.persist())
	require.Equal(t, 2, n)
}

// TestFindAllAndCreateAllWriteOnce: a heartbeat's worth of new groups and retry
// topics is one write of each file; the .bak a write leaves (the file before
// it) holds none of them.
func TestFindAllAndCreateAllWriteOnce(t *testing.T) {
	cfg := testConfig(t)
	groups := NewSubscriptionGroupManager(fixedConf(&cfg), quietLog())
	topics := NewTopicConfigManager(fixedConf(&cfg), quietLog())
	require.NoError(t, groups.Persist())
	require.NoError(t, topics.Persist())
	var changes [][]TopicConfig
	topics.SetOnChange(func(tcs []TopicConfig) { changes = append(changes, tcs) })

	names := []string{"GID_known"}
	_, ok := groups.Find("GID_known")
	require.True(t, ok)
	for i := range 200 {
		names = append(names, fmt.Sprintf("GID_new_%d", i))
	}
	names = append(names, "bad/name")
	found := groups.FindAll(names)
	require.Len(t, found, len(names))
	var specs []TopicSpec
	for i, f := range found[:len(found)-1] {
		require.True(t, f.OK, names[i])
		require.Equal(t, names[i], f.Config.GroupName)
		specs = append(specs, TopicSpec{Name: RetryGroupTopicPrefix + names[i], QueueNums: 1, Perm: PermRead | PermWrite})
	}
	require.False(t, found[len(found)-1].OK, "an invalid name is not created")
	topics.CreateAllInSendMessageBack(specs)
	require.Len(t, changes, 1, "one change notice for all the topics")
	require.Len(t, changes[0], len(specs))

	for _, f := range []string{"subscriptionGroup.json", "topics.json"} {
		cur, err := os.ReadFile(filepath.Join(cfg.ConfigDir, f))
		require.NoError(t, err)
		bak, err := os.ReadFile(filepath.Join(cfg.ConfigDir, f+".bak"))
		require.NoError(t, err)
		require.Contains(t, string(cur), "GID_new_199", f)
		require.False(t, strings.Contains(string(bak), "GID_new_"), "%s was written more than once", f)
	}
	reloaded := NewTopicConfigManager(fixedConf(&cfg), quietLog())
	require.NoError(t, reloaded.Load())
	_, ok = reloaded.Select(RetryGroupTopicPrefix + "GID_new_7")
	require.True(t, ok)
}

// TestPersisterSharesAWrite: callers that arrive while a write runs are all
// covered by the one write after it.
func TestPersisterSharesAWrite(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	var writes atomic.Int32
	p := persister{write: func() error {
		if writes.Add(1) == 1 {
			started <- struct{}{}
			<-release
		}
		return nil
	}}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); require.NoError(t, p.persist()) }()
	<-started
	const waiting = 10
	for range waiting {
		wg.Add(1)
		go func() { defer wg.Done(); require.NoError(t, p.persist()) }()
	}
	for p.asked.Load() < waiting+1 {
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	require.EqualValues(t, 2, writes.Load(), "the waiting callers share one write")
}
