package metrics

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// Scrapes within the TTL share one rendering (each walks every queue), so a
// peer scraping in a loop costs one walk a second.
func TestScrapesShareAGathering(t *testing.T) {
	var n atomic.Int32
	c := &scrapeCache{ttl: gatherTTL * 3600, render: func() []byte { n.Add(1); return []byte("x_total 1\n") }}
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			require.Equal(t, "x_total 1\n", string(c.get()))
		}()
	}
	wg.Wait()
	require.EqualValues(t, 1, n.Load())
	c.at = c.at.Add(-gatherTTL * 3601)
	_ = c.get()
	require.EqualValues(t, 2, n.Load())
}
