package processor

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/store"
	"rmqd/store/ha"
)

// fakeHA records what controller mode asks of the replication side.
type fakeHA struct {
	mu    sync.Mutex
	calls []string
	epoch int32
}

func (f *fakeHA) note(s string) { f.mu.Lock(); f.calls = append(f.calls, s); f.mu.Unlock() }
func (f *fakeHA) ChangeToMaster(epoch, _ int32, _ []int64) error {
	f.note("master")
	f.epoch = epoch
	return nil
}
func (f *fakeHA) ChangeToSlave(addr string, epoch int32, _ int64) error {
	f.note("slave " + addr)
	f.epoch = epoch
	return nil
}
func (f *fakeHA) SetSyncStateSet([]int64, int32)     { f.note("set") }
func (f *fakeHA) SetMasterHAAddr(addr string)        { f.note("ha " + addr) }
func (f *fakeHA) SetLocalBrokerID(int64)             {}
func (f *fakeHA) OnSyncStateSetChange(func([]int64)) {}
func (f *fakeHA) LastEpoch() int32                   { return f.epoch }
func (f *fakeHA) ConfirmOffset() int64               { return 0 }
func (f *fakeHA) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func newControllerBroker(t *testing.T) (*Broker, *store.DefaultStore, *fakeHA) {
	t.Helper()
	cfg := testConfig(t)
	cfg.Controller.EnableControllerMode = true
	cfg.Controller.ControllerAddr = "127.0.0.1:1"
	scfg := store.DefaultConfig()
	scfg.StorePathRootDir = cfg.Store.StorePathRootDir
	scfg.MappedFileSizeCommitLog = 1 << 20
	scfg.BrokerRole = store.RoleSlave
	st, err := store.Open(scfg, quietLog())
	require.NoError(t, err)
	require.NoError(t, st.Start())
	t.Cleanup(func() { require.NoError(t, st.Shutdown()) })
	b, err := NewBroker(cfg, st, quietLog())
	require.NoError(t, err)
	f := &fakeHA{}
	require.NoError(t, b.EnableControllerMode(f))
	return b, st, f
}

// notifyRole applies a role as the controller's answer (GET_REPLICA_INFO) would.
func notifyRole(t *testing.T, b *Broker, masterID int64, addr string, epoch int32) {
	t.Helper()
	b.ctl.changeRole(masterID, addr, epoch, epoch, []int64{1, 2})
}

// NOTIFY_BROKER_ROLE_CHANGED changes nothing by itself (any client could send it): it only makes the
// broker ask the controller now.
func TestControllerNotifyIsOnlyAHint(t *testing.T) {
	b, st, f := newControllerBroker(t)
	b.ctl.selfID = 2
	req := codec.NewRequest(codec.ReqNotifyBrokerRoleChanged)
	req.Ext.SetInt64("masterBrokerId", 2)
	req.Ext.Set("masterAddress", b.conf().BrokerAddr())
	req.Ext.SetInt32("masterEpoch", 99)
	req.Ext.SetInt32("syncStateSetEpoch", 99)
	req.Body = []byte(`{"syncStateSet":[1,2],"syncStateSetEpoch":1}`)
	for range 3 {
		resp, err := b.handleNotifyBrokerRoleChanged(context.Background(), nil, req)
		require.NoError(t, err)
		require.Equal(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
	require.Equal(t, store.RoleSlave, st.Role())
	require.Empty(t, f.list())
	require.Len(t, b.ctl.recheck, 1, "one recheck queued however many notifications")
}

// A controller-mode broker starts fenced as a slave, becomes master (broker 0, SYNC_MASTER, sends
// served) and slave (its own id, sends refused with Java's answer) as NOTIFY_BROKER_ROLE_CHANGED says,
// and ignores an older epoch.
func TestControllerRoleChange(t *testing.T) {
	b, st, f := newControllerBroker(t)
	require.True(t, b.conf().IsSlave())
	require.False(t, b.controllerRunning())
	b.ctl.selfID = 2

	notifyRole(t, b, 2, b.conf().BrokerAddr(), 1)
	require.Equal(t, int64(0), b.conf().BrokerID)
	require.Equal(t, store.RoleSyncMaster, st.Role())
	require.Nil(t, b.rejectOnSlave(sendReq("T", 0, []byte("x"), "")))
	require.True(t, b.controllerRunning())

	notifyRole(t, b, 3, "127.0.0.1:30911", 2)
	require.Equal(t, int64(2), b.conf().BrokerID)
	require.Equal(t, store.RoleSlave, st.Role())
	resp := b.rejectOnSlave(sendReq("T", 0, []byte("x"), ""))
	require.NotNil(t, resp)
	require.Equal(t, codec.RespSystemBusy, resp.Code)

	// An older epoch changes nothing.
	notifyRole(t, b, 2, b.conf().BrokerAddr(), 1)
	require.Equal(t, store.RoleSlave, st.Role())

	// The master's HA address from a name server that agrees with the controller starts replication;
	// one naming another master does not.
	other := "127.0.0.1:40911"
	b.masters.master.Store(&other)
	b.ctl.masterHAAddr("127.0.0.1:40912")
	m := "127.0.0.1:30911"
	b.masters.master.Store(&m)
	b.ctl.masterHAAddr("127.0.0.1:30912")
	require.Equal(t, []string{"master", "slave ", "ha 127.0.0.1:30912"}, f.list())
}

// The broker identity files are Java's BrokerMetadata / TempBrokerMetadata: "cluster#name#id[#code]".
func TestControllerIdentityFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "brokerIdentity")
	require.NoError(t, writeFileAtomic(p, "DefaultCluster#broker-a#3"))
	c, n, id, _, ok := readIdentity(p, false)
	require.True(t, ok)
	require.Equal(t, []any{"DefaultCluster", "broker-a", int64(3)}, []any{c, n, id})
	require.NoError(t, os.WriteFile(p+"-temp", []byte("DefaultCluster#broker-a#4#127.0.0.1:10911;1700000000000"), 0o644))
	_, _, id, code, ok := readIdentity(p+"-temp", true)
	require.True(t, ok)
	require.Equal(t, int64(4), id)
	require.Equal(t, "127.0.0.1:10911;1700000000000", code)
	for _, bad := range []string{"", "a#b", "a#b#x", "#b#1"} {
		require.NoError(t, os.WriteFile(p, []byte(bad), 0o644))
		_, _, _, _, ok := readIdentity(p, false)
		require.False(t, ok, bad)
	}
	_, _, _, _, ok = readIdentity(filepath.Join(dir, "none"), false)
	require.False(t, ok)
}

// GET_BROKER_EPOCH_CACHE lists the auto-switch HA service's epoch entries as Java's EpochEntryCache.
func TestControllerEpochCache(t *testing.T) {
	cfg := testConfig(t)
	cfg.Controller.EnableControllerMode = true
	cfg.Controller.ControllerAddr = "127.0.0.1:1"
	scfg := store.DefaultConfig()
	scfg.StorePathRootDir = cfg.Store.StorePathRootDir
	scfg.MappedFileSizeCommitLog = 1 << 20
	scfg.BrokerRole = store.RoleSlave
	st, err := store.Open(scfg, quietLog())
	require.NoError(t, err)
	require.NoError(t, st.Start())
	t.Cleanup(func() { require.NoError(t, st.Shutdown()) })
	b, err := NewBroker(cfg, st, quietLog())
	require.NoError(t, err)
	a, err := ha.NewAutoSwitch(st, ha.AutoConfig{EpochFile: ha.EpochFilePath(scfg.StorePathRootDir), Config: ha.Config{Logger: quietLog()}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	require.NoError(t, b.EnableControllerMode(a))
	b.ctl.selfID = 1
	notifyRole(t, b, 1, b.conf().BrokerAddr(), 3)

	resp, err := b.handleGetBrokerEpochCache(context.Background(), nil, codec.NewRequest(codec.ReqGetBrokerEpochCache))
	require.NoError(t, err)
	require.Equal(t, codec.RespSuccess, resp.Code, resp.Remark)
	var got struct {
		BrokerID  int64 `json:"brokerId"`
		EpochList []struct {
			Epoch       int32 `json:"epoch"`
			StartOffset int64 `json:"startOffset"`
		} `json:"epochList"`
	}
	require.NoError(t, json.Unmarshal(resp.Body, &got))
	require.Equal(t, int64(0), got.BrokerID)
	require.Len(t, got.EpochList, 1)
	require.Equal(t, int32(3), got.EpochList[0].Epoch)
	require.Equal(t, int64(0), got.EpochList[0].StartOffset)
}

// The controller-mode keys bind under Java's names, the DNS lookup of the controllers among them.
func TestControllerConfigKeys(t *testing.T) {
	c := DefaultBrokerConfig()
	unknown, err := c.ApplyProperties(map[string]string{"enableControllerMode": "true",
		"controllerAddr": "127.0.0.1:9878;127.0.0.1:9868", "allAckInSyncStateSet": "true", "minInSyncReplicas": "2",
		"syncBrokerMetadataPeriod": "2000", "brokerHeartbeatInterval": "500"})
	require.NoError(t, err)
	require.Empty(t, unknown)
	require.True(t, c.Controller.EnableControllerMode)
	require.Equal(t, []string{"127.0.0.1:9878", "127.0.0.1:9868"}, c.Controller.addrs())
	require.True(t, c.Controller.AllAckInSyncStateSet)
	require.Equal(t, 2, c.Controller.MinInSyncReplicas)
	require.Equal(t, int64(500), c.Controller.BrokerHeartbeatInterval)
	require.Equal(t, "true", c.Properties()["enableControllerMode"])

	c = DefaultBrokerConfig()
	_, err = c.ApplyProperties(map[string]string{"fetchControllerAddrByDnsLookup": "true"})
	require.NoError(t, err)
	require.True(t, c.Controller.FetchControllerAddrByDNSLookup)
}

// A controller's sync state set answer is bounded and free of duplicates.
func TestDecodeSyncStateSetBounds(t *testing.T) {
	ss, err := decodeSyncStateSet([]byte(`{"syncStateSetEpoch":2,"syncStateSet":[1,2,3]}`))
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2, 3}, ss.SyncStateSet)
	require.EqualValues(t, 2, ss.SyncStateSetEpoch)

	var b strings.Builder
	b.WriteString(`{"syncStateSetEpoch":2,"syncStateSet":[`)
	for i := 0; i <= maxSyncStateSet; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(i))
	}
	b.WriteString("]}")
	ss, err = decodeSyncStateSet([]byte(b.String()))
	require.Error(t, err)
	require.Empty(t, ss.SyncStateSet)

	ss, err = decodeSyncStateSet([]byte(`{"syncStateSetEpoch":2,"syncStateSet":[1,2,1]}`))
	require.Error(t, err)
	require.Empty(t, ss.SyncStateSet)
}

// storePathBrokerIdentity moves the identity file, as Java's getStorePathBrokerIdentity;
// unset, it is <storePathRootDir>/brokerIdentity.
func TestControllerIdentityPathBound(t *testing.T) {
	identity := func(props map[string]string) string {
		c := DefaultBrokerConfig()
		_, err := c.ApplyProperties(props)
		require.NoError(t, err)
		b := &Broker{}
		b.cfg.Store(&c)
		return (&controllerMode{b: b}).identityPath()
	}
	require.Equal(t, filepath.Join("/data/store", "brokerIdentity"), identity(map[string]string{"storePathRootDir": "/data/store"}))
	require.Equal(t, "/data/id/broker-a", identity(map[string]string{"storePathRootDir": "/data/store",
		"storePathBrokerIdentity": "/data/id/broker-a"}))
}
