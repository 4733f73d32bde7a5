package ha

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/store"
)

// A master reports a slave transferring once its connection from that host
// made its first offset report; a slave, once connected. Pre-online waits on
// these (Java's HAConnectionStateNotificationService, TRANSFER).
func TestTransferring(t *testing.T) {
	master := openStore(t, t.TempDir(), store.RoleAsyncMaster)
	defer master.Shutdown()
	m := NewMaster(master, testCfg())
	require.NoError(t, m.Start("127.0.0.1:0"))
	defer m.Close()
	require.False(t, m.Transferring("127.0.0.1:10911"))

	slave := openStore(t, t.TempDir(), store.RoleSlave)
	defer slave.Shutdown()
	sl := NewSlave(slave, testCfg())
	require.False(t, sl.Transferring(""))
	sl.SetMasterAddr(m.Addr().String())
	sl.Start()
	defer sl.Close()
	require.Eventually(t, func() bool { return m.Transferring("127.0.0.1:10911") }, 5*time.Second, 5*time.Millisecond,
		"the slave's remoting address: its port is not the HA connection's")
	require.True(t, m.Transferring("127.0.0.1"))
	require.True(t, m.Transferring("::ffff:127.0.0.1"))
	require.False(t, m.Transferring("127.0.0.2:10911"), "another host")
	require.False(t, m.Transferring("not-an-ip"))
	require.True(t, sl.Transferring(""))

	require.NoError(t, sl.Close())
	require.Eventually(t, func() bool { return !m.Transferring("127.0.0.1") }, 5*time.Second, 5*time.Millisecond)
	require.False(t, sl.Transferring(""))
}

// A slave told its master's HA address again while not connected dials at
// once instead of after its retry wait: a returning master's pre-online
// tells it (EXCHANGE_BROKER_HA_INFO) and waits for this connection.
func TestSlaveToldSameAddressDialsAtOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nobody there yet: the first dial fails

	slave := openStore(t, t.TempDir(), store.RoleSlave)
	defer slave.Shutdown()
	sl := NewSlave(slave, testCfg())
	sl.SetMasterAddr(addr)
	sl.Start()
	defer sl.Close()
	time.Sleep(200 * time.Millisecond) // the dial failed: the client waits retryWait

	master := openStore(t, t.TempDir(), store.RoleAsyncMaster)
	defer master.Shutdown()
	m := NewMaster(master, testCfg())
	require.NoError(t, m.Start(addr))
	defer m.Close()
	sl.SetMasterAddr(addr)
	require.Eventually(t, func() bool { return m.Transferring("127.0.0.1") }, retryWait/2, 5*time.Millisecond)
}
