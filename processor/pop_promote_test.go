package processor

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/remoting"
	"rmqd/store"
)

// reviveFailLog counts the errors of failed revive and checkpoint puts.
type reviveFailLog struct {
	slog.Handler
	fails *atomic.Int32
}

func (h reviveFailLog) Enabled(context.Context, slog.Level) bool { return true }
func (h reviveFailLog) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError && (strings.Contains(r.Message, "revive put") || strings.Contains(r.Message, "put pop checkpoint")) {
		h.fails.Add(1)
	}
	return nil
}
func (h reviveFailLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h reviveFailLog) WithGroup(string) slog.Handler      { return h }

// startedControllerBroker is a started controller-mode broker, fenced as a
// slave until notifyRole makes it master (its controller is unreachable).
// Its SYNC_MASTER puts count as replicated at once.
func startedControllerBroker(t *testing.T) (*restartable, *atomic.Int32) {
	t.Helper()
	cfg := testConfig(t)
	cfg.Controller.EnableControllerMode = true
	cfg.Controller.ControllerAddr = "127.0.0.1:1"
	cfg.ReviveQueueNum = 1
	cfg.Pop.ReviveInterval = 100
	scfg := store.DefaultConfig()
	scfg.StorePathRootDir = cfg.Store.StorePathRootDir
	scfg.MappedFileSizeCommitLog = 1 << 20
	scfg.MappedFileSizeConsumeQueue = 20 * 1000
	scfg.BrokerRole = store.RoleSlave
	st, err := store.Open(scfg, quietLog())
	require.NoError(t, err)
	require.NoError(t, st.Start())
	t.Cleanup(func() { require.NoError(t, st.Shutdown()) })
	st.SetReplicaWaiter(func(_ int64, _ time.Duration, done func(store.PutStatus)) { done(store.PutOK) })
	fails := &atomic.Int32{}
	b, err := NewBroker(cfg, st, slog.New(reviveFailLog{fails: fails}))
	require.NoError(t, err)
	require.NoError(t, b.EnableControllerMode(&fakeHA{}))
	cl := remoting.NewClient(remoting.ClientConfig{Logger: quietLog()})
	t.Cleanup(func() { _ = cl.Close() })
	b.SetNameServerInvoker(cl)
	require.NoError(t, b.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, b.Shutdown()) })
	b.ctl.selfID = 2
	require.False(t, b.pop.Reviving(), "a fenced slave does not revive")
	return &restartable{t: t, cfg: cfg, scfg: scfg, st: st, b: b}, fails
}

// awaitRevived pops until the message comes back through the retry topic.
func awaitRevived(t *testing.T, p *popClient, body string, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); {
		for _, m := range popOnce(p) {
			if m.body == body && m.retried == 1 {
				p.ack(m)
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s was not revived into the retry topic within %v", body, within)
}

func popOnce(p *popClient) []popMsg {
	ms, _ := p.pop(32, 60_000, false)
	return ms
}

// TestPromotedBrokerRevives: a controller-mode broker starts fenced as a
// slave; once the controller makes it master, a popped message nobody acks
// comes back through the retry topic (revive starts with the other
// master-only services).
func TestPromotedBrokerRevives(t *testing.T) {
	r, fails := startedControllerBroker(t)
	notifyRole(t, r.b, 2, r.b.conf().BrokerAddr(), 1)
	require.Equal(t, store.RoleSyncMaster, r.st.Role())

	p := &popClient{t: t, r: r, c: newTestConn(1), group: "PromG", topic: "PromT"}
	require.EqualValues(t, codec.RespSuccess, p.call(createTopicReq("PromT", 1)).Code)
	p.send("m0")
	waitQueued(r.tb(), "PromT", 1)
	ms, _ := p.pop(1, 1000, false)
	require.Len(t, ms, 1)
	awaitRevived(t, p, "m0", 15*time.Second)
	require.Zero(t, fails.Load())
}

// TestDemotedBrokerStopsReviving: a master the controller demotes stops its
// revivers (its store refuses puts), leaves the checkpoint it did not revive
// unrevived and puts nothing; promoted again, it revives it.
func TestDemotedBrokerStopsReviving(t *testing.T) {
	r, fails := startedControllerBroker(t)
	notifyRole(t, r.b, 2, r.b.conf().BrokerAddr(), 1)
	require.Eventually(t, r.b.pop.Reviving, 5*time.Second, 10*time.Millisecond)

	p := &popClient{t: t, r: r, c: newTestConn(1), group: "DemG", topic: "DemT"}
	require.EqualValues(t, codec.RespSuccess, p.call(createTopicReq("DemT", 1)).Code)
	p.send("m0")
	waitQueued(r.tb(), "DemT", 1)
	ms, _ := p.pop(1, 1000, false)
	require.Len(t, ms, 1)

	notifyRole(t, r.b, 3, "127.0.0.1:30911", 2)
	require.Equal(t, store.RoleSlave, r.st.Role())
	require.Eventually(t, func() bool { return !r.b.pop.Reviving() }, 5*time.Second, 10*time.Millisecond,
		"the revivers exit on demotion")
	time.Sleep(4 * time.Second) // past the time a master would have revived m0
	retry := "%RETRY%DemG_DemT"
	require.LessOrEqual(t, r.st.MaxOffsetInQueue(retry, 0), int64(0), "nothing revived on the slave")
	require.Zero(t, fails.Load(), "no revive put was tried on the slave")

	notifyRole(t, r.b, 2, r.b.conf().BrokerAddr(), 3)
	require.Eventually(t, r.b.pop.Reviving, 5*time.Second, 10*time.Millisecond)
	awaitRevived(t, p, "m0", 15*time.Second)
	require.Zero(t, fails.Load())
}
