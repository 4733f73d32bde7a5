package processor

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/store"
)

// A slave never moves a consumer's offset (Java's nextOffsetCorrection and
// DefaultPullMessageResultHandler, offsetCheckInSlave=false): an offset its
// queue does not reach (it lags its master) or one past an empty queue (it
// lost its store) is answered PULL_RETRY_IMMEDIATELY with the offset asked
// and the group's broker suggested, never PULL_OFFSET_MOVED, which makes the
// client store the slave's offset and consume again from there.
func TestSlaveDoesNotMoveOffsets(t *testing.T) {
	for _, check := range []bool{false, true} {
		b := newTestBrokerWith(t, func(c *BrokerConfig) {
			slaveConf(c)
			c.SlaveReadEnable = true
			c.Store.OffsetCheckInSlave = check
		}, func(s *store.Config) { s.OffsetCheckInSlave = check }, nil)
		b.topics.Update(NewTopicConfig("Lag"))
		ctx := context.Background()
		// The slave's store holds two messages (put as a master, as replication would).
		for i := 0; i < 2; i++ {
			res := b.st.PutMessage(ctx, &codec.Message{Topic: "Lag", QueueID: 0, Body: []byte("m"),
				BornTimestamp: time.Now().UnixMilli()})
			require.Equal(t, store.PutOK, res.Status)
		}
		waitQueued(b, "Lag", 2)
		require.NoError(t, b.st.SetRole(store.RoleSlave))
		c := newTestConn(40001)
		for _, tc := range []struct {
			queue  int32
			offset int64
			moved  string // nextBeginOffset with offsetCheckInSlave
		}{{0, 7, "2"}, {1, 5, "0"}} {
			r, err := b.handlePullMessage(ctx, c, pullReq("G1", "Lag", tc.queue, tc.offset, codec.PullFlagSubscription, 0))
			require.NoError(t, err)
			if check {
				require.EqualValues(t, codec.RespPullOffsetMoved, r.Code)
				require.Equal(t, tc.moved, ext(t, r, "nextBeginOffset"))
				continue
			}
			require.EqualValues(t, codec.RespPullRetryImmediately, r.Code, "queue %d offset %d", tc.queue, tc.offset)
			require.Equal(t, fmtInt(tc.offset), ext(t, r, "nextBeginOffset"))
			require.Equal(t, "0", ext(t, r, "suggestWhichBrokerId"))
		}
	}
}

func fmtInt(v int64) string { return fmt.Sprint(v) }
