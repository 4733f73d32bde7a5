package ha

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/store"
)

// A SYNC_MASTER whose slave stopped answers SEND_OK with
// enableAutoInSyncReplicas (minInSyncReplicas 1: the master's write is enough),
// SLAVE_NOT_AVAILABLE without it or with minInSyncReplicas 2, as
// CommitLog.calcNeedAckNums.
func TestAutoInSyncReplicasAfterSlaveStops(t *testing.T) {
	for _, tc := range []struct {
		name   string
		auto   bool
		minISR int
		want   store.PutStatus
	}{
		{"off", false, 1, store.PutSlaveNotAvailable},
		{"on", true, 1, store.PutOK},
		{"on, minInSyncReplicas 2", true, 2, store.PutSlaveNotAvailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := store.DefaultConfig()
			c.StorePathRootDir = t.TempDir()
			c.MappedFileSizeCommitLog = fileSize
			c.MappedFileSizeConsumeQueue = 20 * 1000
			c.MaxHashSlotNum = 100
			c.MaxIndexNum = 400
			c.BrokerRole = store.RoleSyncMaster
			c.EnableAutoInSyncReplicas = tc.auto
			c.MinInSyncReplicas = tc.minISR
			master, err := store.Open(c, testLogger())
			require.NoError(t, err)
			require.NoError(t, master.Start())
			defer master.Shutdown()
			m := NewMaster(master, testCfg())
			require.NoError(t, m.Start("127.0.0.1:0"))
			defer m.Close()

			slave := openStore(t, t.TempDir(), store.RoleSlave)
			sl := NewSlave(slave, testCfg())
			sl.SetMasterAddr(m.Addr().String())
			sl.Start()
			require.Eventually(t, func() bool { return len(m.Status()) == 1 && m.Status()[0].AckOffset >= 0 },
				5*time.Second, 5*time.Millisecond)
			for i := 0; i < 5; i++ {
				r := master.PutMessage(context.Background(), msg(i))
				require.Equal(t, store.PutOK, r.Status, "slave up: acked")
				require.GreaterOrEqual(t, slave.MaxPhyOffset(), r.WroteOffset+int64(r.WroteBytes))
			}

			require.NoError(t, sl.Close())
			require.NoError(t, slave.Shutdown())
			require.Eventually(t, func() bool { return len(m.Status()) == 0 }, 5*time.Second, 5*time.Millisecond,
				"master still counts the stopped slave")
			for i := 5; i < 10; i++ {
				r := master.PutMessage(context.Background(), msg(i))
				require.Equal(t, tc.want, r.Status, "slave stopped")
				require.Positive(t, r.WroteBytes, "stored either way")
			}
		})
	}
}
