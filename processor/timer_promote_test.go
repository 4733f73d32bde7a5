package processor

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/processor/delivery"
	"rmqd/remoting"
	"rmqd/store"
)

// TestPromotedSlaveSkipsWhatMasterDelivered: a slave holding its master's
// timer records and consumer offsets, promoted after a timer behind a far one
// was delivered by the master, does not deliver it again: it saved the
// master's timer progress (GET_TIMER_CHECK_POINT) when it synced. The answer's
// body stays Java's 56 bytes.
func TestPromotedSlaveSkipsWhatMasterDelivered(t *testing.T) {
	ctx := context.Background()
	master, slave := slaveWithMastersTimers(t)
	srv := remoting.NewServer(remoting.ServerConfig{Addr: "127.0.0.1:0", Logger: quietLog()})
	master.Register(srv)
	require.NoError(t, srv.Start(ctx))
	defer srv.Shutdown(context.Background())

	cl := remoting.NewClient(remoting.ClientConfig{Logger: quietLog()})
	defer cl.Close()
	slave.SetNameServerInvoker(cl)
	require.NoError(t, slave.SyncFromMaster(ctx, srv.Addr().String()))

	promoteTimer(t, slave)

	// Java slaves and tools read the 56-byte body by position.
	resp, err := cl.InvokeSync(ctx, srv.Addr().String(), codec.NewRequest(codec.ReqGetTimerCheckPoint))
	require.NoError(t, err)
	require.Len(t, resp.Body, 56)
	require.EqualValues(t, 2, binary.BigEndian.Uint64(resp.Body[16:24]), "lastTimerQueueOffset")
}

// slaveWithMastersTimers is a master that delivered a near timer behind a far
// one (the oldest pending record, which holds its commit point back), and a
// slave holding both records at the same queue offsets as replication leaves
// them (its store takes puts, standing in for HA).
func slaveWithMastersTimers(t *testing.T) (master, slave *testBroker) {
	t.Helper()
	ctx := context.Background()
	master = newTestBroker(t, nil)
	c := newTestConn(1)
	for _, s := range []struct{ body, props string }{
		{"far", "TIMER_DELAY_SEC\x01172800\x02"},
		{"near", "TIMER_DELAY_MS\x01500\x02"},
	} {
		resp, err := master.handleSendMessage(ctx, c, sendReq("TimerP", 0, []byte(s.body), s.props))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
	require.Eventually(t, func() bool { return master.st.MaxOffsetInQueue("TimerP", 0) == 1 }, 10*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { return master.offsets.Query(timerSysGroup, TopicTimer, 0) == 0 }, 5*time.Second, 20*time.Millisecond)

	slave = newTestBrokerWith(t, slaveConf, nil, nil)
	res := master.st.GetMessage("copy", TopicTimer, 0, 0, 32, 1<<20, nil)
	require.Equal(t, store.GetFound, res.Status)
	require.Len(t, res.Records, 2)
	for _, rec := range res.Records {
		var m codec.Message
		_, err := codec.DecodeRecord(rec, &m)
		require.NoError(t, err)
		require.True(t, slave.st.PutMessage(ctx, &m).Status.Written())
	}
	res.Release()
	require.Eventually(t, func() bool { return slave.st.MaxOffsetInQueue(TopicTimer, 0) == 2 }, 5*time.Second, 20*time.Millisecond)
	return master, slave
}

// promoteTimer steps a promoted slave's wheel past the near timer's time: it
// loads from the progress the slave saved, and must leave only far pending,
// near not delivered again.
func promoteTimer(t *testing.T, slave *testBroker) {
	t.Helper()
	slave.timer.StepAt(context.Background(), time.Now().Add(5*time.Second).UnixMilli())
	require.Equal(t, 1, slave.timer.PendingCount(), "only far waits")
	require.Eventually(t, func() bool { return slave.st.MaxOffsetInQueue(TopicTimer, 0) == 2 }, time.Second, 20*time.Millisecond)
	time.Sleep(100 * time.Millisecond) // a re-put, had there been one, is dispatched
	require.LessOrEqual(t, slave.st.MaxOffsetInQueue("TimerP", 0), int64(0), "near is not delivered again")
}

// TestSlaveTimerSyncFromJavaMaster: a Java master's GET_TIMER_CHECK_POINT
// answer (the 56-byte body alone) that claims nothing, or its refusal, leaves
// the slave's progress file alone, without an error; one that claims its
// delivered timers is saved, and the promoted slave delivers none of them
// again.
func TestSlaveTimerSyncFromJavaMaster(t *testing.T) {
	ctx := context.Background()
	_, slave := slaveWithMastersTimers(t)
	var answer atomic.Value // the body; nil refuses
	srv := remoting.NewServer(remoting.ServerConfig{Addr: "127.0.0.1:0", Logger: quietLog()})
	srv.Register(codec.ReqGetTimerCheckPoint, remoting.ProcessorFunc(func(_ context.Context, _ remoting.Conn,
		req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
		body, _ := answer.Load().([]byte)
		if body == nil {
			return codec.NewResponse(req, codec.RespSystemError, "The checkpoint is null"), nil
		}
		resp := codec.NewResponse(req, codec.RespSuccess, "")
		resp.Body = body
		return resp, nil
	}))
	require.NoError(t, srv.Start(ctx))
	defer srv.Shutdown(context.Background())

	cl := remoting.NewClient(remoting.ClientConfig{Logger: quietLog()})
	defer cl.Close()
	slave.SetNameServerInvoker(cl)
	progress := filepath.Join(slave.conf().ConfigDir(), "timerProgress.json")
	for _, body := range [][]byte{make([]byte, 56), nil} {
		answer.Store(body)
		require.NoError(t, slave.syncTimerProgress(ctx, srv.Addr().String()))
		require.NoFileExists(t, progress)
	}

	// Java's master: both records went into its timerlog (lastTimerQueueOffset
	// 2) and it has read its wheel up to now, past near's time.
	readMs := time.Now().UnixMilli()
	answer.Store(delivery.JavaCheckpointBody(readMs, 2, readMs))
	require.NoError(t, slave.syncTimerProgress(ctx, srv.Addr().String()))
	saved, err := os.ReadFile(progress)
	require.NoError(t, err)
	var s delivery.ProgressState
	require.NoError(t, json.Unmarshal(saved, &s))
	require.Equal(t, delivery.ProgressState{ReadOffset: 2, DeliveredBeforeMs: readMs, RollsUnknown: true}, s)
	promoteTimer(t, slave)
}
