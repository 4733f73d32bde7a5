package processor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// POP_CK is the broker's receipt handle. Java's send drops one a producer
// sent (SendMessageProcessor.clearReservedProperties): a client keeps a
// popped message's POP_CK when there is one, so a stored handle would make
// every ack of that message name the wrong pop.
func TestSendDropsPopCK(t *testing.T) {
	b := newTestBroker(t, nil)
	sendOK(t, b, sendReq("PopCkT", 0, []byte("x"), "POP_CK\x010 1 2 3 0 broker-a 0 0\x02TAGS\x01x\x02"))
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("PopCkT", 0) == 1 }, 5*time.Second, 5*time.Millisecond)
	msgs := pullAll(t, b, "PopCkT", 0)
	require.Len(t, msgs, 1)
	_, has := codec.PropertyValue(msgs[0].Properties, "POP_CK")
	require.False(t, has, "stored properties: %q", msgs[0].Properties)
	tag, _ := codec.PropertyValue(msgs[0].Properties, codec.PropTags)
	require.Equal(t, "x", tag)
}
