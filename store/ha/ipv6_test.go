package ha

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/store"
)

// A Java master's haServerAddr (and a Java broker.conf's haMasterAddress) names
// an IPv6 host as "::1:10912": the slave dials it as Java's does, splitting at
// the last colon, and copies records whose hosts are IPv6 byte for byte.
func TestSlaveDialsJavaStyleIPv6MasterAddr(t *testing.T) {
	if ln, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	} else {
		ln.Close()
	}
	mdir, sdir := t.TempDir(), t.TempDir()
	master := openStore(t, mdir, store.RoleAsyncMaster)
	m := NewMaster(master, testCfg())
	require.NoError(t, m.Start("[::1]:0"))
	slave := openStore(t, sdir, store.RoleSlave)
	sl := NewSlave(slave, testCfg())
	sl.SetMasterAddr("::1:" + strconv.Itoa(m.Addr().(*net.TCPAddr).Port))
	sl.Start()
	waitSlaveSeen(t, m)
	for i := 0; i < 20; i++ {
		mm := msg(i)
		mm.BornHost = netip.MustParseAddrPort("[2001:db8::1]:40000")
		mm.StoreHost = netip.MustParseAddrPort("[::1]:10911")
		require.Equal(t, store.PutOK, master.PutMessage(context.Background(), mm).Status)
	}
	waitCaughtUp(t, master, slave)
	require.NoError(t, sl.Close())
	require.NoError(t, m.Close())
	require.NoError(t, slave.Shutdown())
	require.NoError(t, master.Shutdown())
	sameFiles(t, mdir, sdir)
}
