package processor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// unwritableConn is a connection past its write-buffer high-water mark.
type unwritableConn struct{ *testConn }

func (unwritableConn) Writable() bool { return false }

// enableNetWorkFlowControl drops the answer of a pull that found messages
// when the consumer's connection is not writable, as Java's
// DefaultPullMessageResultHandler.channelIsWritable; off (Java's default) or
// on a writable connection the messages are sent.
func TestPullNetWorkFlowControl(t *testing.T) {
	ctx := context.Background()
	b := newTestBroker(t, func(c *BrokerConfig) { c.EnableNetWorkFlowControl = true })
	b.topics.Update(NewTopicConfig("NF"))
	r, err := b.handleSendMessage(ctx, newTestConn(1), sendReq("NF", 0, []byte("m"), ""))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code)
	waitQueued(b, "NF", 1)

	full := unwritableConn{newTestConn(2)}
	r, err = b.handlePullMessage(ctx, full, pullReq("G", "NF", 0, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.Nil(t, r)
	select {
	case <-full.wrote:
		t.Fatalf("answered a connection that is not writable: %+v", full.responses())
	case <-time.After(50 * time.Millisecond):
	}

	c := newTestConn(3)
	r, err = b.handlePullMessage(ctx, c, pullReq("G", "NF", 0, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.Nil(t, r)
	require.EqualValues(t, codec.RespSuccess, waitResponse(t, c, 1).Code)

	off := newTestBroker(t, nil) // Java's default
	off.topics.Update(NewTopicConfig("NF"))
	r, err = off.handleSendMessage(ctx, newTestConn(1), sendReq("NF", 0, []byte("m"), ""))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code)
	waitQueued(off, "NF", 1)
	r, err = off.handlePullMessage(ctx, full, pullReq("G", "NF", 0, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.Nil(t, r)
	require.EqualValues(t, codec.RespSuccess, waitResponse(t, full.testConn, 1).Code)

	require.Contains(t, liveConfigKeys, "enableNetWorkFlowControl")
	require.False(t, DefaultBrokerConfig().EnableNetWorkFlowControl)
}
