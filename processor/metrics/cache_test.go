package metrics

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

type countingGatherer struct {
	n   atomic.Int32
	reg *prometheus.Registry
}

func (c *countingGatherer) Gather() ([]*dto.MetricFamily, error) {
	c.n.Add(1)
	return c.reg.Gather()
}

// Scrapes within the TTL share one gathering (each walks every queue), so a
// peer scraping in a loop costs one walk a second.
func TestScrapesShareAGathering(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total"}))
	g := &countingGatherer{reg: reg}
	c := &cachedGatherer{g: g, ttl: gatherTTL * 3600}
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mfs, err := c.Gather()
			require.NoError(t, err)
			require.Len(t, mfs, 1)
		}()
	}
	wg.Wait()
	require.EqualValues(t, 1, g.n.Load())
	c.at = c.at.Add(-gatherTTL * 3601)
	_, _ = c.Gather()
	require.EqualValues(t, 2, g.n.Load())
}
