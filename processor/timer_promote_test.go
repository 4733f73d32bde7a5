package processor

import (
	"context"
	"encoding/binary"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
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
	master := newTestBroker(t, nil)
	c := newTestConn(1)
	for _, s := range []struct{ body, props string }{
		{"far", "TIMER_DELAY_SEC\x01172800\x02"}, // the oldest pending record: holds the commit point
		{"near", "TIMER_DELAY_MS\x01500\x02"},
	} {
		resp, err := master.handleSendMessage(ctx, c, sendReq("TimerP", 0, []byte(s.body), s.props))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
	require.Eventually(t, func() bool { return master.st.MaxOffsetInQueue("TimerP", 0) == 1 }, 10*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { return master.offsets.Query(timerSysGroup, TopicTimer, 0) == 0 }, 5*time.Second, 20*time.Millisecond)

	srv := remoting.NewServer(remoting.ServerConfig{Addr: "127.0.0.1:0", Logger: quietLog()})
	master.Register(srv)
	require.NoError(t, srv.Start(ctx))
	defer srv.Shutdown(context.Background())

	// The slave's store as replication leaves it: the timer records at the
	// same queue offsets (its store takes puts, standing in for HA).
	slave := newTestBrokerWith(t, slaveConf, nil, nil)
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

	cl := remoting.NewClient(remoting.ClientConfig{Logger: quietLog()})
	defer cl.Close()
	slave.SetNameServerInvoker(cl)
	require.NoError(t, slave.SyncFromMaster(ctx, srv.Addr().String()))

	// Promotion: the slave's wheel loads from what it holds.
	slave.timer.StepAt(ctx, time.Now().Add(5*time.Second).UnixMilli())
	require.Equal(t, 1, slave.timer.PendingCount(), "only far waits")
	require.Eventually(t, func() bool { return slave.st.MaxOffsetInQueue(TopicTimer, 0) == 2 }, time.Second, 20*time.Millisecond)
	time.Sleep(100 * time.Millisecond) // a re-put, had there been one, is dispatched
	require.LessOrEqual(t, slave.st.MaxOffsetInQueue("TimerP", 0), int64(0), "near is not delivered again")

	// Java slaves and tools read the 56-byte body by position.
	resp, err := cl.InvokeSync(ctx, srv.Addr().String(), codec.NewRequest(codec.ReqGetTimerCheckPoint))
	require.NoError(t, err)
	require.Len(t, resp.Body, 56)
	require.EqualValues(t, 2, binary.BigEndian.Uint64(resp.Body[16:24]), "lastTimerQueueOffset")
}

// TestSlaveTimerSyncFromJavaMaster: a Java master's GET_TIMER_CHECK_POINT
// answer (the 56-byte body alone) or its refusal leaves the slave's progress
// file alone, without an error.
func TestSlaveTimerSyncFromJavaMaster(t *testing.T) {
	ctx := context.Background()
	var refuse atomic.Bool
	srv := remoting.NewServer(remoting.ServerConfig{Addr: "127.0.0.1:0", Logger: quietLog()})
	srv.Register(codec.ReqGetTimerCheckPoint, remoting.ProcessorFunc(func(_ context.Context, _ remoting.Conn,
		req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
		if refuse.Load() {
			return codec.NewResponse(req, codec.RespSystemError, "The checkpoint is null"), nil
		}
		resp := codec.NewResponse(req, codec.RespSuccess, "")
		resp.Body = make([]byte, 56)
		return resp, nil
	}))
	require.NoError(t, srv.Start(ctx))
	defer srv.Shutdown(context.Background())

	slave := newTestBrokerWith(t, slaveConf, func(s *store.Config) { s.BrokerRole = store.RoleSlave }, nil)
	cl := remoting.NewClient(remoting.ClientConfig{Logger: quietLog()})
	defer cl.Close()
	slave.SetNameServerInvoker(cl)
	for _, r := range []bool{false, true} {
		refuse.Store(r)
		require.NoError(t, slave.syncTimerProgress(ctx, srv.Addr().String()))
		require.NoFileExists(t, filepath.Join(slave.conf().ConfigDir(), "timerProgress.json"))
	}
}
