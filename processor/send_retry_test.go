package processor

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// retrySendReq is the consumer-side retry of the Java 4.x/5.x push consumer
// (DefaultMQPushConsumerImpl.sendMessageBack's fallback, or the orderly
// service's): a SEND_MESSAGE to %RETRY%<group> whose header carries the
// message's next reconsume count and the consumer's maximum.
func retrySendReq(group string, reconsumeTimes, maxTimes int32, props string) *codec.RemotingCommand {
	req := sendReq(RetryGroupTopicPrefix+group, 0, []byte("again"), props)
	req.Ext.Set("reconsumeTimes", fmt.Sprint(reconsumeTimes))
	req.Ext.Set("maxReconsumeTimes", fmt.Sprint(maxTimes))
	return req
}

// Apache 5.x (SendMessageProcessor.handleRetryAndDLQ) moves a retry send to
// the DLQ only once its reconsume count is past the maximum: the header
// carries the count the message will have, one more than the send-back's
// (CONSUMER_SEND_MSG_BACK compares the stored count with >=). The DLQ copy
// keeps DELAY=-1 as Java writes it.
func TestRetrySendGoesToDLQOnlyPastMax(t *testing.T) {
	b := newTestBroker(t, nil)
	sendOK(t, b, retrySendReq("CGR", 2, 2, "TAGS\x01x\x02"))
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("%RETRY%CGR", 0) == 1 }, 5*time.Second, 5*time.Millisecond)
	_, dlq := b.topics.Select("%DLQ%CGR")
	require.False(t, dlq, "reconsumeTimes == max is retried once more, as Apache 5.3.3 does")

	sendOK(t, b, retrySendReq("CGR", 3, 2, "TAGS\x01x\x02"))
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("%DLQ%CGR", 0) == 1 }, 5*time.Second, 5*time.Millisecond)
	msgs := pullAll(t, b, "%DLQ%CGR", 0)
	require.Len(t, msgs, 1)
	require.EqualValues(t, 3, msgs[0].ReconsumeTimes)
	d, ok := codec.PropertyValue(msgs[0].Properties, codec.PropDelay)
	require.True(t, ok)
	require.Equal(t, "-1", d)
}

// A group holding a live queue lock consumes orderly; it sends only used-up
// messages (4.9.7's orderly consumer with the count unchanged), and Java 5.x
// puts them in the DLQ whatever the count (RebalanceLockManager.isLockAllExpired).
func TestRetrySendOfLockedGroupGoesToDLQ(t *testing.T) {
	b := newTestBroker(t, nil)
	mq := codec.MessageQueue{Topic: "OrderT", BrokerName: "broker-a", QueueID: 0}
	require.Len(t, b.locks.TryLockBatch("CGO", []codec.MessageQueue{mq}, "client-1"), 1)
	sendOK(t, b, retrySendReq("CGO", 5, 16, "TAGS\x01x\x02"))
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("%DLQ%CGO", 0) == 1 }, 5*time.Second, 5*time.Millisecond)

	// Unlocked: an ordinary retry again.
	b.locks.UnlockBatch("CGO", []codec.MessageQueue{mq}, "client-1")
	sendOK(t, b, retrySendReq("CGO", 5, 16, "TAGS\x01x\x02"))
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("%RETRY%CGO", 0) == 1 }, 5*time.Second, 5*time.Millisecond)
	require.EqualValues(t, 1, b.st.MaxOffsetInQueue("%DLQ%CGO", 0))
}

// Java's send-back stores its copy with WAIT=false (msgExt.setWaitStoreMsgOK):
// the consumer sees that property, and the put does not wait for the disk or a
// slave, so a SYNC_MASTER with a slow slave does not hold the send-back past the
// client's timeout (which would make the client send the message again).
func TestConsumerSendMsgBackStoresWaitFalse(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.Store.MessageDelayLevel = "1s" })
	ctx := context.Background()
	c := newTestConn(1)
	sendOK(t, b, sendReq("WaitT", 0, []byte("w"), "WAIT\x01true\x02TAGS\x01x\x02"))
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("WaitT", 0) == 1 }, 5*time.Second, 5*time.Millisecond)
	orig := pullAll(t, b, "WaitT", 0)[0]

	resp, err := b.handleConsumerSendMsgBack(ctx, c, sendBackReq(orig.CommitLogOffset, "CGW", -1, 16))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("%DLQ%CGW", 0) == 1 }, 5*time.Second, 5*time.Millisecond)
	dlq := pullAll(t, b, "%DLQ%CGW", 0)
	require.Len(t, dlq, 1)
	w, _ := codec.PropertyValue(dlq[0].Properties, codec.PropWait)
	require.Equal(t, "false", w)
}
