package processor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/remoting"
)

// TestCompensatedConsumers: POP and pull consumers that never heartbeat are known by their compensated
// subscriptions (QUERY_SUBSCRIPTION_BY_CONSUMER answers them, as Java's findSubscriptionData) but have no
// connection (GET_CONSUMER_CONNECTION_LIST: not online), as in Java 5.3.3.
func TestCompensatedConsumers(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	c := newTestConn(1)
	h := b.Handlers()
	call := func(req *codec.RemotingCommand) *codec.RemotingCommand {
		t.Helper()
		resp, err := h[req.Code].ProcessRequest(ctx, c, req)
		if !errors.Is(err, remoting.ErrAnsweredLater) {
			require.NoError(t, err)
		}
		return resp
	}
	_, err := b.handleSendMessage(ctx, c, sendReq("CompT", 0, []byte("m"), ""))
	require.NoError(t, err)
	pop := codec.NewRequest(codec.ReqPopMessage)
	for k, v := range map[string]string{"consumerGroup": "PopG", "topic": "CompT", "queueId": "-1", "maxMsgNums": "1",
		"invisibleTime": "60000", "pollTime": "0", "bornTime": fmt.Sprint(time.Now().UnixMilli()), "initMode": "0",
		"expType": "TAG", "exp": "a || b", "order": "false"} {
		pop.Ext.Set(k, v)
	}
	call(pop)
	call(pullReq("PullG", "CompT", 0, 0, codec.PullFlagSubscription, 0))

	sub := func(group, topic string) map[string]any {
		t.Helper()
		q := codec.NewRequest(codec.ReqQuerySubscriptionByConsumer)
		q.Ext.Set("group", group)
		q.Ext.Set("topic", topic)
		resp := call(q)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
		var body map[string]any
		require.NoError(t, json.Unmarshal(resp.Body, &body))
		require.Equal(t, group, body["group"])
		require.Equal(t, topic, body["topic"])
		sd, _ := body["subscriptionData"].(map[string]any)
		return sd
	}
	sd := sub("PopG", "CompT")
	require.Equal(t, "a || b", sd["subString"])
	require.Equal(t, []any{"a", "b"}, sd["tagsSet"])
	require.Equal(t, "*", sub("PopG", "%RETRY%PopG_CompT")["subString"])
	require.Equal(t, "*", sub("PullG", "CompT")["subString"])
	require.Nil(t, sub("PopG", "Other"), "no subscription: the body has none (fastjson leaves nulls out)")

	conns := codec.NewRequest(codec.ReqGetConsumerConnectionList)
	conns.Ext.Set("consumerGroup", "PopG")
	resp := call(conns)
	require.EqualValues(t, codec.RespConsumerNotOnline, resp.Code)
	require.Equal(t, "the consumer group[PopG] not online", resp.Remark)

	ct, model, _, ok := b.consumers.CompensatedGroup("PopG")
	require.True(t, ok)
	require.Equal(t, []string{"CONSUME_POP", "CLUSTERING"}, []string{ct, model})
	ct, model, _, ok = b.consumers.CompensatedGroup("PullG")
	require.True(t, ok)
	require.Equal(t, []string{"CONSUME_PASSIVELY", "CLUSTERING"}, []string{ct, model})
}
