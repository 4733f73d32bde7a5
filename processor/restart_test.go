package processor

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/store"
)

// restartable is a broker over a store in a directory that outlives it: it
// can be stopped cleanly, or killed (no final persist of the broker's files,
// the store marked as crashed, as a kill -9 leaves it), and opened again.
type restartable struct {
	t    *testing.T
	cfg  BrokerConfig
	scfg store.Config
	st   *store.DefaultStore
	b    *Broker
}

func newRestartable(t *testing.T, mod func(*BrokerConfig)) *restartable {
	t.Helper()
	cfg := testConfig(t)
	if mod != nil {
		mod(&cfg)
	}
	scfg := store.DefaultConfig()
	scfg.StorePathRootDir = cfg.Store.StorePathRootDir
	scfg.MappedFileSizeCommitLog = 1 << 20
	scfg.MappedFileSizeConsumeQueue = 20 * 1000
	r := &restartable{t: t, cfg: cfg, scfg: scfg}
	r.open()
	t.Cleanup(func() {
		if r.b != nil {
			r.stop()
		}
	})
	return r
}

// tb is the running broker as the handler tests' helpers take it.
func (r *restartable) tb() *testBroker { return &testBroker{Broker: r.b, st: r.st} }

func (r *restartable) open() {
	r.t.Helper()
	st, err := store.Open(r.scfg, quietLog())
	require.NoError(r.t, err)
	require.NoError(r.t, st.Start())
	b, err := NewBroker(r.cfg, st, quietLog())
	require.NoError(r.t, err)
	require.NoError(r.t, b.Start(context.Background()))
	r.st, r.b = st, b
}

// stop is a clean shutdown.
func (r *restartable) stop() {
	r.t.Helper()
	require.NoError(r.t, r.b.Shutdown())
	require.NoError(r.t, r.st.Shutdown())
	r.b, r.st = nil, nil
}

// kill stops the broker's loops without the shutdown's final writes: what is
// on disk is what the periodic flushes wrote. The store is closed (its
// records are in the page cache either way) and marked as not shut down, so
// the next open recovers it as after a crash.
func (r *restartable) kill() {
	r.t.Helper()
	b := r.b
	b.mu.Lock()
	b.started = false
	b.cancel()
	b.wg.Wait()
	b.mu.Unlock()
	b.stopRegistering()
	require.NoError(r.t, b.pop.Stop())
	require.NoError(r.t, r.st.Shutdown())
	require.NoError(r.t, os.WriteFile(filepath.Join(r.scfg.StorePathRootDir, "abort"), nil, 0o644))
	r.b, r.st = nil, nil
}
