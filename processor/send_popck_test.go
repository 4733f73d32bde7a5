package processor

import (
	"context"
	"strings"
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

// A message the store refuses is answered MESSAGE_ILLEGAL with Java's remark,
// which names the configured body limit (the client puts it in its exception).
func TestSendIllegalRemarkNamesBodyLimit(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.Store.MaxMessageSize = 65536 })
	resp, err := b.handleSendMessage(context.Background(), newTestConn(1),
		sendReq("BigPropsT", 0, []byte("x"), "K\x01"+strings.Repeat("a", 32770)+"\x02"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespMessageIllegal, resp.Code)
	require.Equal(t, "the message is illegal, maybe msg body or properties length not matched. "+
		"msg body length limit 65536B, msg properties length limit 32KB.", resp.Remark)
}
