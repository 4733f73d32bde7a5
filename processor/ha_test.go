package processor

import (
	"bytes"
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/remoting"
	"rmqd/store"
)

func slaveConf(c *BrokerConfig) {
	c.Store.BrokerRole = RoleSlave
	c.BrokerID = 1
}

func TestSlaveRefusesWrites(t *testing.T) {
	b := newTestBrokerWith(t, slaveConf, func(s *store.Config) { s.BrokerRole = store.RoleSlave }, nil)
	c := newTestConn(1)
	ctx := context.Background()
	resp, err := b.handleSendMessage(ctx, c, sendReq("T", 0, []byte("x"), ""))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSystemBusy, resp.Code)
	require.Equal(t, slaveRejectRemark, resp.Remark)
	require.Zero(t, b.st.MaxPhyOffset(), "nothing stored")

	resp, err = b.handlePullMessage(ctx, c, pullReq("G", "T", 0, 0, 0, 0))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSystemBusy, resp.Code, "no reads without slaveReadEnable")

	req := codec.NewRequest(codec.ReqEndTransaction)
	resp, err = b.handleEndTransaction(ctx, c, req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSlaveNotAvailable, resp.Code)

	r := newTestBrokerWith(t, func(c *BrokerConfig) { slaveConf(c); c.SlaveReadEnable = true },
		func(s *store.Config) { s.BrokerRole = store.RoleSlave }, nil)
	resp, err = r.handlePullMessage(ctx, c, pullReq("G", "T", 0, 0, 0, 0))
	require.NoError(t, err)
	if resp != nil {
		require.NotEqualValues(t, codec.RespSystemBusy, resp.Code, "slaveReadEnable serves pulls")
	}
}

func TestSlaveSyncsMetadataFromMaster(t *testing.T) {
	ctx := context.Background()
	master := newTestBroker(t, nil)
	tc := NewTopicConfig("SyncedTopic")
	tc.ReadQueueNums, tc.WriteQueueNums = 3, 3
	master.topics.Update(tc)
	master.offsets.Commit("SyncedGroup", "SyncedTopic", 2, 42)
	require.NoError(t, master.groups.Update(NewSubscriptionGroupConfig("SyncedGroup")))
	srv := remoting.NewServer(remoting.ServerConfig{Addr: "127.0.0.1:0", Logger: quietLog()})
	master.Register(srv)
	require.NoError(t, srv.Start(ctx))
	defer srv.Shutdown(context.Background())

	slave := newTestBrokerWith(t, slaveConf, func(s *store.Config) { s.BrokerRole = store.RoleSlave }, nil)
	cl := remoting.NewClient(remoting.ClientConfig{Logger: quietLog()})
	defer cl.Close()
	slave.SetNameServerInvoker(cl)
	slave.topics.Update(NewTopicConfig("OnlyOnSlave"))

	require.NoError(t, slave.SyncFromMaster(ctx, srv.Addr().String()))
	got, ok := slave.topics.Select("SyncedTopic")
	require.True(t, ok)
	require.EqualValues(t, 3, got.WriteQueueNums)
	require.False(t, slave.topics.Exists("OnlyOnSlave"), "topics the master lacks are dropped")
	require.Equal(t, master.topics.DataVersion(), slave.topics.DataVersion())
	require.EqualValues(t, 42, slave.offsets.Query("SyncedGroup", "SyncedTopic", 2))
	_, ok = slave.groups.Get("SyncedGroup")
	require.True(t, ok)

	// The register answer teaches a slave its master.
	var ha string
	slave.OnMasterHAAddr(func(a string) { ha = a })
	resp := codec.NewResponse(codec.NewRequest(codec.ReqRegisterBroker), codec.RespSuccess, "")
	resp.Ext.Set("haServerAddr", "127.0.0.1:10912")
	resp.Ext.Set("masterAddr", "127.0.0.1:10911")
	slave.registered(resp)
	require.Equal(t, "127.0.0.1:10912", ha)
	require.Equal(t, "127.0.0.1:10911", slave.MasterAddr())
}

func TestPullSuggestsBrokerWithSlaveReadEnable(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.SlaveReadEnable = true })
	c := newTestConn(40000)
	ctx := context.Background()
	g := NewSubscriptionGroupConfig("GS")
	g.BrokerID = 1
	require.NoError(t, b.groups.Update(g))
	resp, err := b.handleSendMessage(ctx, c, sendReq("TopicS", 0, []byte("x"), ""))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("TopicS", 0) == 1 }, 5*time.Second, 5*time.Millisecond)
	r, err := b.handlePullMessage(ctx, c, pullReq("GS", "TopicS", 0, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.Nil(t, r)
	pr := waitResponse(t, c, 1)
	require.EqualValues(t, codec.RespSuccess, pr.Code)
	require.Equal(t, "1", ext(t, pr, "suggestWhichBrokerId"), "a consumer in memory reads where its group says")
}

func TestSyncMasterWithoutSlave(t *testing.T) {
	b := newTestBrokerWith(t, func(c *BrokerConfig) { c.Store.BrokerRole = RoleSyncMaster },
		func(s *store.Config) { s.BrokerRole = store.RoleSyncMaster }, nil)
	c := newTestConn(1)
	ctx := context.Background()
	resp, err := b.handleSendMessage(ctx, c, sendReq("T", 0, []byte("x"), ""))
	require.NoError(t, err)
	if resp == nil {
		resp = waitResponse(t, c, 1)
	}
	require.EqualValues(t, codec.RespSlaveNotAvailable, resp.Code, "stored, but no slave holds it")
	require.Len(t, ext(t, resp, "msgId"), 32, "answered as a send, with its id")
	off := b.st.MaxPhyOffset()
	require.Positive(t, off)

	// A send-back is stored all the same and answered as Java does.
	resp, err = b.handleConsumerSendMsgBack(ctx, c, sendBackReq(0, "G", 0, 16))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Greater(t, b.st.MaxPhyOffset(), off)
}

// A slave that registers before its master learns the master from a later
// registration within seconds, not at the next 30 s period.
func TestSlaveAsksAgainUntilItHearsOfItsMaster(t *testing.T) {
	ctx := context.Background()
	var registrations atomic.Int32
	ns := remoting.NewServer(remoting.ServerConfig{Addr: "127.0.0.1:0", Logger: quietLog()})
	ns.Register(codec.ReqRegisterBroker, remoting.ProcessorFunc(func(_ context.Context, _ remoting.Conn,
		req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
		resp := codec.NewResponse(req, codec.RespSuccess, "")
		if registrations.Add(1) > 2 { // the master registers meanwhile
			resp.Ext.Set("haServerAddr", "127.0.0.1:10912")
			resp.Ext.Set("masterAddr", "127.0.0.1:10911")
		}
		return resp, nil
	}))
	require.NoError(t, ns.Start(ctx))
	defer ns.Shutdown(context.Background())

	cfg := testConfig(t)
	slaveConf(&cfg)
	cfg.NamesrvAddr = ns.Addr().String()
	scfg := store.DefaultConfig()
	scfg.StorePathRootDir = cfg.Store.StorePathRootDir
	scfg.BrokerRole = store.RoleSlave
	st, err := store.Open(scfg, quietLog())
	require.NoError(t, err)
	require.NoError(t, st.Start())
	defer func() { require.NoError(t, st.Shutdown()) }()
	b, err := NewBroker(cfg, st, quietLog())
	require.NoError(t, err)
	cl := remoting.NewClient(remoting.ClientConfig{Logger: quietLog()})
	defer cl.Close()
	b.SetNameServerInvoker(cl)
	require.NoError(t, b.Start(ctx))
	defer func() { require.NoError(t, b.Shutdown()) }()

	require.Eventually(t, func() bool { return b.MasterAddr() == "127.0.0.1:10911" }, 8*time.Second, 50*time.Millisecond,
		"registrations so far: %d", registrations.Load())
	// Once it knows its master, the slave is back on the period.
	require.Equal(t, cfg.registerPeriod(), b.nextRegister(cfg.registerPeriod(), time.Second))
}

// A slave copies its master's message request modes (SlaveSynchronize's
// syncMessageRequestMode): a POP group stays POP when its consumers query
// assignments from the slave while the master is down. Modes the master does
// not have are dropped.
func TestSlaveSyncsMessageRequestModes(t *testing.T) {
	ctx := context.Background()
	master := newTestBroker(t, nil)
	require.NoError(t, master.requestModes.set(requestModeBody{Topic: "TM", ConsumerGroup: "GM", Mode: requestModePop, PopShareQueueNum: 2}))
	srv := remoting.NewServer(remoting.ServerConfig{Addr: "127.0.0.1:0", Logger: quietLog()})
	master.Register(srv)
	require.NoError(t, srv.Start(ctx))
	defer srv.Shutdown(context.Background())

	slave := newTestBrokerWith(t, slaveConf, func(s *store.Config) { s.BrokerRole = store.RoleSlave }, nil)
	cl := remoting.NewClient(remoting.ClientConfig{Logger: quietLog()})
	defer cl.Close()
	slave.SetNameServerInvoker(cl)
	require.NoError(t, slave.requestModes.set(requestModeBody{Topic: "OnlySlave", ConsumerGroup: "G", Mode: requestModePop}))

	require.NoError(t, slave.SyncFromMaster(ctx, srv.Addr().String()))
	v, ok := slave.requestModes.get("TM", "GM")
	require.True(t, ok)
	require.Equal(t, requestModePop, v.Mode)
	require.EqualValues(t, 2, v.PopShareQueueNum)
	_, ok = slave.requestModes.get("OnlySlave", "G")
	require.False(t, ok, "modes the master lacks are dropped")

	// And kept across a restart (persisted as Java's messageRequestMode.json).
	again := newRequestModes(filepath.Dir(slave.requestModes.path))
	require.NoError(t, again.load())
	_, ok = again.get("TM", "GM")
	require.True(t, ok)
}

// A slave copies its master's metadata as soon as a registration names the
// master (at start, or when the master changes), not at its next periodic
// round: a slave restarted after a while would otherwise serve the topics,
// groups and offsets it held when it stopped. The periodic round is pushed
// out of the test's reach, so only the prompt copy can pass it.
func TestSlaveSyncsAtOnceWhenItLearnsItsMaster(t *testing.T) {
	ctx := context.Background()
	master := newTestBroker(t, nil)
	master.topics.Update(NewTopicConfig("NewOnMaster"))
	master.offsets.Commit("GReset", "NewOnMaster", 0, 7)
	srv := remoting.NewServer(remoting.ServerConfig{Addr: "127.0.0.1:0", Logger: quietLog()})
	master.Register(srv)
	require.NoError(t, srv.Start(ctx))
	defer srv.Shutdown(context.Background())

	var registeredNew atomic.Bool
	ns := remoting.NewServer(remoting.ServerConfig{Addr: "127.0.0.1:0", Logger: quietLog()})
	ns.Register(codec.ReqRegisterBroker, remoting.ProcessorFunc(func(_ context.Context, _ remoting.Conn,
		req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
		if bytes.Contains(req.Body, []byte("NewOnMaster")) {
			registeredNew.Store(true)
		}
		resp := codec.NewResponse(req, codec.RespSuccess, "")
		resp.Ext.Set("haServerAddr", "127.0.0.1:1")
		resp.Ext.Set("masterAddr", srv.Addr().String())
		return resp, nil
	}))
	require.NoError(t, ns.Start(ctx))
	defer ns.Shutdown(context.Background())

	cfg := testConfig(t)
	slaveConf(&cfg)
	cfg.NamesrvAddr = ns.Addr().String()
	scfg := store.DefaultConfig()
	scfg.StorePathRootDir = cfg.Store.StorePathRootDir
	scfg.BrokerRole = store.RoleSlave
	st, err := store.Open(scfg, quietLog())
	require.NoError(t, err)
	require.NoError(t, st.Start())
	defer func() { require.NoError(t, st.Shutdown()) }()
	b, err := NewBroker(cfg, st, quietLog())
	require.NoError(t, err)
	b.slaveSyncTick = time.Hour
	b.offsets.Commit("GReset", "NewOnMaster", 0, 500) // what it held when it stopped
	cl := remoting.NewClient(remoting.ClientConfig{Logger: quietLog()})
	defer cl.Close()
	b.SetNameServerInvoker(cl)
	require.NoError(t, b.Start(ctx))
	defer func() { require.NoError(t, b.Shutdown()) }()

	require.Eventually(t, func() bool {
		return b.topics.Exists("NewOnMaster") && b.offsets.Query("GReset", "NewOnMaster", 0) == 7
	}, 10*time.Second, 20*time.Millisecond, "the master's topics and (reset) offsets")
	// The copied topics reach the name servers with the next registration,
	// not the next period (30 s): the route lists the slave for them.
	require.Eventually(t, registeredNew.Load, 10*time.Second, 20*time.Millisecond)
}

// What the master deletes or resets, the slave's next copy follows: a
// deleted topic and group go (Java's slave replaces both tables), a consumer
// offset reset on the master overwrites the slave's (putAll per topic@group).
func TestSlaveFollowsMasterDeletesAndResets(t *testing.T) {
	ctx := context.Background()
	master := newTestBroker(t, nil)
	master.topics.Update(NewTopicConfig("Doomed"), NewTopicConfig("Kept"))
	require.NoError(t, master.groups.Update(NewSubscriptionGroupConfig("DoomedGroup")))
	master.offsets.Commit("G", "Kept", 0, 100)
	srv := remoting.NewServer(remoting.ServerConfig{Addr: "127.0.0.1:0", Logger: quietLog()})
	master.Register(srv)
	require.NoError(t, srv.Start(ctx))
	defer srv.Shutdown(context.Background())

	slave := newTestBrokerWith(t, slaveConf, func(s *store.Config) { s.BrokerRole = store.RoleSlave }, nil)
	cl := remoting.NewClient(remoting.ClientConfig{Logger: quietLog()})
	defer cl.Close()
	slave.SetNameServerInvoker(cl)
	require.NoError(t, slave.SyncFromMaster(ctx, srv.Addr().String()))
	require.True(t, slave.topics.Exists("Doomed"))
	require.EqualValues(t, 100, slave.offsets.Query("G", "Kept", 0))

	require.True(t, master.topics.Delete("Doomed"))
	require.NoError(t, master.groups.Delete("DoomedGroup"))
	master.offsets.Commit("G", "Kept", 0, 3) // reset back
	require.NoError(t, slave.SyncFromMaster(ctx, srv.Addr().String()))
	require.False(t, slave.topics.Exists("Doomed"))
	require.True(t, slave.topics.Exists("Kept"))
	_, ok := slave.groups.Get("DoomedGroup")
	require.False(t, ok)
	require.EqualValues(t, 3, slave.offsets.Query("G", "Kept", 0), "the reset offset, though lower")
}
