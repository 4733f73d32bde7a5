package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Controller mode changes the role at runtime; a SYNC_MASTER's put then waits through the replica waiter
// it was given, and a slave promoted to master numbers its queues after what its dispatch filled in.
func TestSetRoleAndReplicaWaiter(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.BrokerRole = RoleSlave
	s := openStore(t, cfg)
	defer s.Shutdown()
	require.True(t, s.IsSlave())
	require.Error(t, s.SetRole("LEADER"))

	// A slave's commitlog takes only replicated bytes: a put there would shift it off its master's offsets.
	require.Equal(t, PutServiceNotAvailable, s.PutMessage(context.Background(), newMsg("T", 0, "x", nil)).Status)
	require.Zero(t, s.MaxPhyOffset())

	// As a slave's dispatch would: records numbered 0..2 by someone else, then the table is recovered.
	require.NoError(t, s.SetRole(RoleAsyncMaster))
	for range 3 {
		require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("T", 0, "x", nil)).Status)
	}
	require.NoError(t, s.SetRole(RoleSlave))
	s.doReput()
	s.commitLog.setQueueOffsets(map[tqKey]int64{}) // the promoted slave's stale table
	s.RecoverTopicQueueTable()

	require.NoError(t, s.SetRole(RoleSyncMaster))
	require.Equal(t, RoleSyncMaster, s.Role())
	var asked []int64
	s.SetReplicaWaiter(func(next int64, _ time.Duration, done func(PutStatus)) {
		asked = append(asked, next)
		done(PutFlushSlaveTimeout)
	})
	res := s.PutMessage(context.Background(), newMsg("T", 0, "y", nil))
	require.Equal(t, PutFlushSlaveTimeout, res.Status)
	require.Equal(t, int64(3), res.QueueOffset, "numbering continues after the recovered queue")
	require.Len(t, asked, 1)
	require.Equal(t, s.MaxPhyOffset(), asked[0])

	s.SetReplicaWaiter(nil) // the classic wait again: no slave connected
	require.Equal(t, PutSlaveNotAvailable, s.PutMessage(context.Background(), newMsg("T", 0, "z", nil)).Status)
}
