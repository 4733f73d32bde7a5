package processor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// asSlave turns a broker that holds messages into a slave that serves reads
// (what a slave's replicated store looks like to its pull path).
func asSlave(b *testBroker, mod func(*BrokerConfig)) {
	b.setRole(RoleSlave, 1)
	next := *b.conf()
	next.SlaveReadEnable = true
	if mod != nil {
		mod(&next)
	}
	b.cfg.Store(&next)
}

// pullOnce runs one pull without suspension and returns its answer.
func pullOnce(t *testing.T, b *testBroker, c *testConn, group, topic string, offset int64) *codec.RemotingCommand {
	t.Helper()
	n := len(c.responses())
	resp, err := b.handlePullMessage(context.Background(), c, pullReq(group, topic, 0, offset, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	if resp == nil {
		resp = waitResponse(t, c, n+1)
	}
	return resp
}

// A slave does not correct a consumer's offset (Java's offsetCheckInSlave=false,
// DefaultMessageStore.nextOffsetCorrection and DefaultPullMessageResultHandler):
// a slave behind its master, or one that began at the master's last commitlog
// file, would otherwise move the consumer back (re-delivering what it consumed)
// or forward past messages it has not read. It answers PULL_RETRY_IMMEDIATELY
// with the request's own offset and sends the consumer to the group's broker.
func TestSlaveDoesNotMoveConsumerOffsets(t *testing.T) {
	b := newTestBroker(t, nil)
	c := newTestConn(40000)
	ctx := context.Background()
	for range 3 {
		resp, err := b.handleSendMessage(ctx, c, sendReq("TopicSR", 0, []byte("x"), ""))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("TopicSR", 0) == 3 }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, b.groups.Update(NewSubscriptionGroupConfig("GSR")))
	asSlave(b, nil)

	// Past the slave's end: the master may hold these already.
	r := pullOnce(t, b, c, "GSR", "TopicSR", 10)
	require.EqualValues(t, codec.RespPullRetryImmediately, r.Code, r.Remark)
	require.Equal(t, "10", ext(t, r, "nextBeginOffset"), "the consumer keeps its offset")
	require.Equal(t, "0", ext(t, r, "suggestWhichBrokerId"), "and goes to its group's broker")

	// A queue the slave has no messages of.
	r = pullOnce(t, b, c, "GSR", "TopicSR2", 4)
	if r.Code != codec.RespTopicNotExist {
		require.EqualValues(t, codec.RespPullRetryImmediately, r.Code, r.Remark)
		require.Equal(t, "4", ext(t, r, "nextBeginOffset"))
	}

	// Reads within what the slave holds are served as ever.
	r = pullOnce(t, b, c, "GSR", "TopicSR", 1)
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	require.Equal(t, "3", ext(t, r, "nextBeginOffset"))

	// At the end: not found, offset kept (long polling as on a master).
	r = pullOnce(t, b, c, "GSR", "TopicSR", 3)
	require.EqualValues(t, codec.RespPullNotFound, r.Code, r.Remark)
	require.Equal(t, "3", ext(t, r, "nextBeginOffset"))

	// offsetCheckInSlave=true: TestSlaveDoesNotMoveOffsets (the store corrects offsets).
}
