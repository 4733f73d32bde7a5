package processor

import (
	"context"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/remoting"
	"rmqd/store"
)

// loadStore is the real store with its load figures and puts under the
// test's control: a blocked put stands for a slow disk.
type loadStore struct {
	*store.DefaultStore
	busy     atomic.Bool
	lockMs   atomic.Int64
	full     atomic.Bool
	blocked  atomic.Bool
	unblock  chan struct{}
	entering chan struct{}
}

func (s *loadStore) IsOSPageCacheBusy() bool { return s.busy.Load() }
func (s *loadStore) LockTimeMills() int64    { return s.lockMs.Load() }
func (s *loadStore) DiskUsage() store.DiskUsage {
	u := s.DefaultStore.DiskUsage()
	if s.full.Load() {
		u.Full, u.CommitLog, u.WarningRatio = true, 0.97, 0.9
	}
	return u
}

func (s *loadStore) PutMessage(ctx context.Context, msg *codec.Message) store.PutResult {
	if s.full.Load() {
		return store.PutResult{Status: store.PutServiceNotAvailable}
	}
	if s.blocked.Load() {
		s.entering <- struct{}{}
		<-s.unblock
	}
	return s.DefaultStore.PutMessage(ctx, msg)
}

// startLoadBroker serves a broker over ls on a real remoting server.
func startLoadBroker(t *testing.T, mod func(*BrokerConfig)) (*testBroker, *loadStore, string) {
	t.Helper()
	ls := &loadStore{unblock: make(chan struct{}), entering: make(chan struct{}, 64)}
	b := newTestBrokerWith(t, mod, nil, func(st *store.DefaultStore) MessageStore {
		ls.DefaultStore = st
		return ls
	})
	srv := remoting.NewServer(remoting.ServerConfig{Addr: "127.0.0.1:0", Logger: quietLog()})
	b.Register(srv)
	require.NoError(t, srv.Start(context.Background()))
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return b, ls, srv.Addr().String()
}

func invoke(t *testing.T, c *remoting.Client, addr string, req *codec.RemotingCommand) *codec.RemotingCommand {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.InvokeSync(ctx, addr, req)
	require.NoError(t, err)
	return resp
}

// Sends meet Java's overload answers: REJECTREQUEST while the store is busy,
// the pool when the commitlog lock is held long (not the event loop), and
// SERVICE_NOT_AVAILABLE naming the disk when it is full.
func TestSendAdmission(t *testing.T) {
	b, ls, addr := startLoadBroker(t, nil)
	b.topics.Update(TopicConfig{TopicName: "AdmT", ReadQueueNums: 4, WriteQueueNums: 4, Perm: PermRead | PermWrite})
	c := remoting.NewClient(remoting.ClientConfig{Logger: quietLog()})
	defer c.Close()

	resp := invoke(t, c, addr, sendReq("AdmT", 0, []byte("ok"), ""))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)

	ls.busy.Store(true)
	resp = invoke(t, c, addr, sendReq("AdmT", 0, []byte("busy"), ""))
	require.EqualValues(t, codec.RespSystemBusy, resp.Code)
	require.Equal(t, "[REJECTREQUEST]system busy, start flow control for a while", resp.Remark)
	ls.busy.Store(false)

	ls.lockMs.Store(5)
	require.False(t, b.sendInline(sendReq("AdmT", 0, nil, "")), "a long-held lock keeps sends off the event loop")
	resp = invoke(t, c, addr, sendReq("AdmT", 0, []byte("via pool"), ""))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	ls.lockMs.Store(0)
	require.True(t, b.sendInline(sendReq("AdmT", 0, nil, "")))

	ls.full.Store(true)
	resp = invoke(t, c, addr, sendReq("AdmT", 0, []byte("full"), ""))
	require.EqualValues(t, codec.RespServiceNotAvailable, resp.Code)
	require.Contains(t, resp.Remark, "service not available now. It may be caused by one of the following reasons: the broker's disk is full [CL:  0.97 CQ: ")
	require.Contains(t, resp.Remark, "Disk full: the store at "+ls.DiskUsage().CommitLogPath+" is 97% used, above diskSpaceWarningLevelRatio 90%.")
	ls.full.Store(false)
	resp = invoke(t, c, addr, sendReq("AdmT", 0, []byte("again"), ""))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
}

// Sends that wait in the send queue longer than waitTimeMillsInSendQueue
// while every worker is stuck on the disk are answered SYSTEM_BUSY with
// Java's TIMEOUT_CLEAN_QUEUE remark, and GET_BROKER_RUNTIME_INFO shows the
// queue, its head's wait and the lock time.
func TestSendQueueTimeout(t *testing.T) {
	b, ls, addr := startLoadBroker(t, func(c *BrokerConfig) { c.WaitTimeMillsInSendQueue = 100 })
	b.topics.Update(TopicConfig{TopicName: "SqT", ReadQueueNums: 4, WriteQueueNums: 4, Perm: PermRead | PermWrite})
	ls.lockMs.Store(5) // every send goes through the pool
	ls.blocked.Store(true)
	workers := b.pools.Load().send
	n := 10
	type answer struct {
		opaque int32
		resp   *codec.RemotingCommand
	}
	answers := make(chan answer, n)
	c := remoting.NewClient(remoting.ClientConfig{Logger: quietLog()})
	defer c.Close()
	for i := range n {
		go func() {
			req := sendReq("SqT", 0, []byte(strconv.Itoa(i)), "")
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			resp, err := c.InvokeSync(ctx, addr, req)
			if err != nil {
				resp = codec.NewResponse(req, -1, err.Error())
			}
			answers <- answer{int32(i), resp}
		}()
	}
	// The stuck workers hold a few; the rest queue and expire.
	require.Eventually(t, func() bool { return workers.Queued() > 0 && workers.HeadWait() > 20*time.Millisecond },
		10*time.Second, time.Millisecond)
	tb := runtimeTable(t, b)
	require.NotEqual(t, "0", tb["sendThreadPoolQueueSize"])
	require.NotEqual(t, "0", tb["sendThreadPoolQueueHeadWaitTimeMills"])
	require.Equal(t, "10000", tb["sendThreadPoolQueueCapacity"])
	require.Equal(t, "100000", tb["pullThreadPoolQueueCapacity"])
	require.Equal(t, "5", tb["pageCacheLockTimeMills"])

	re := regexp.MustCompile(`^\[TIMEOUT_CLEAN_QUEUE\]broker busy, start flow control for a while, period in queue: \d+ms, size of queue: \d+$`)
	busy := 0
	for busy+len(ls.entering) < n { // every send is either stuck in the store or answered
		a := <-answers
		require.EqualValues(t, codec.RespSystemBusy, a.resp.Code, "%d: %s", a.opaque, a.resp.Remark)
		require.Regexp(t, re, a.resp.Remark)
		busy++
	}
	close(ls.unblock) // the disk recovers: the stuck sends finish
	ls.blocked.Store(false)
	for i := busy; i < n; i++ {
		a := <-answers
		require.Contains(t, []int32{codec.RespSuccess, codec.RespSystemBusy}, a.resp.Code, a.resp.Remark)
	}
	ls.lockMs.Store(0)
	tb = runtimeTable(t, b)
	require.Equal(t, "0", tb["sendThreadPoolQueueSize"])
	require.Equal(t, "0", tb["pageCacheLockTimeMills"])
	// The last sends' records may still be on their way into the consume queues.
	require.Eventually(t, func() bool { return runtimeTable(t, b)["dispatchBehindBytes"] == "0" }, 10*time.Second, 5*time.Millisecond)
}

// The fast-failure limits are live: UPDATE_BROKER_CONFIG changes them for the
// next check, as the pools read the configuration each time.
func TestFastFailureConfigLive(t *testing.T) {
	b := newTestBroker(t, nil)
	require.EqualValues(t, 200, b.conf().WaitTimeMillsInSendQueue)
	require.True(t, b.conf().BrokerFastFailureEnable)
	_, _, err := b.updateConfig(map[string]string{"waitTimeMillsInSendQueue": "1500", "brokerFastFailureEnable": "false"})
	require.NoError(t, err)
	require.EqualValues(t, 1500, b.conf().WaitTimeMillsInSendQueue)
	ff := b.fastFailure(func(c *BrokerConfig) int64 { return c.WaitTimeMillsInSendQueue }, nil)
	require.Zero(t, ff.MaxWait(), "brokerFastFailureEnable=false: no limit")
	_, _, err = b.updateConfig(map[string]string{"brokerFastFailureEnable": "true"})
	require.NoError(t, err)
	require.Equal(t, 1500*time.Millisecond, ff.MaxWait())
	require.Equal(t, "1500", b.brokerProperties()["waitTimeMillsInSendQueue"])
}

// A commit the store refuses (a full disk) answers as Java's
// EndTransactionProcessor does, and writes no op record, so the checker keeps
// the half message and the commit can be retried once space is back.
func TestEndTransactionRefusedByFullDisk(t *testing.T) {
	b, ls, _ := startLoadBroker(t, func(c *BrokerConfig) { c.TransactionCheckInterval = 3600000 })
	ctx := context.Background()
	c := newTestConn(31)
	req := sendReq("TxFull", 0, []byte("commit-later"), "TRAN_MSG\x01true\x02PGROUP\x01PG\x02")
	req.Ext.Set("sysFlag", "4")
	resp, err := b.handleSendMessage(ctx, c, req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	_, off, err := compat.DecodeOffsetMsgID(ext(t, resp, "msgId"))
	require.NoError(t, err)
	qo, err := strconv.ParseInt(ext(t, resp, "queueOffset"), 10, 64)
	require.NoError(t, err)

	ls.full.Store(true)
	r, _ := b.handleEndTransaction(ctx, c, endTxReq("PG", qo, off, tranCommit))
	require.EqualValues(t, codec.RespServiceNotAvailable, r.Code, r.Remark)
	require.Equal(t, "Service not available now.", r.Remark)
	require.EqualValues(t, 0, b.st.MaxOffsetInQueue(TopicTransOpHalf, 0), "no op record for a refused commit")

	ls.full.Store(false)
	r, _ = b.handleEndTransaction(ctx, c, endTxReq("PG", qo, off, tranCommit))
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("TxFull", 0) == 1 }, 5*time.Second, 10*time.Millisecond)
}
