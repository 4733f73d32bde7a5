package processor

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

func staticResetReq(topic, group string, ts int64, kv ...string) *codec.RemotingCommand {
	req := codec.NewRequest(codec.ReqInvokeBrokerToResetOffset)
	req.Ext.Set("topic", topic)
	req.Ext.Set("group", group)
	req.Ext.Set("timestamp", fmt.Sprint(ts))
	req.Ext.Set("isForce", "true")
	for i := 0; i+1 < len(kv); i += 2 {
		req.Ext.Set(kv[i], kv[i+1])
	}
	return req
}

// A server-side reset of a logical queue moved from broker-a to broker-b: its
// leader searches both items, commits the target in the item holding it (on
// broker-a, through a forward), forgets the group's offset in its own later
// item and hands the logical offset to the next pull; broker-a, leading
// nothing, resets nothing.
func TestStaticTopicResetAcrossItems(t *testing.T) {
	ctx := context.Background()
	brs, _ := staticBrokers(t, "", "broker-a", "broker-b")
	a, b := brs[0], brs[1]
	c := newTestConn(41101)
	ok := func(resp *codec.RemotingCommand, err error) *codec.RemotingCommand {
		t.Helper()
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
		return resp
	}
	mapping := func(bname string, epoch int, items string) *codec.RemotingCommand {
		return staticTopicReq("ResetT", 1, fmt.Sprintf(`{"bname":%q,"epoch":%d,"hostedQueues":{0:[%s]},"scope":"__global__","topic":"ResetT","totalQueues":1}`,
			bname, epoch, items))
	}
	ok(a.handleUpdateAndCreateStaticTopic(ctx, c, mapping("broker-a", 1, item(0, 0, "broker-a", 0))))
	for i := range 3 {
		ok(a.handleSendMessage(ctx, c, sendReq("ResetT", 0, []byte(fmt.Sprint("a", i)), "")))
	}
	require.Eventually(t, func() bool { return a.st.MaxOffsetInQueue("ResetT", 0) == 3 }, 5*time.Second, time.Millisecond)
	time.Sleep(5 * time.Millisecond) // broker-b's messages stored strictly later
	mid := time.Now().UnixMilli()
	time.Sleep(5 * time.Millisecond)
	moved := item(0, 0, "broker-a", 0) + "," + item(1, 0, "broker-b", 10)
	ok(b.handleUpdateAndCreateStaticTopic(ctx, c, mapping("broker-b", 2, moved)))
	ok(a.handleUpdateAndCreateStaticTopic(ctx, c, mapping("broker-a", 2, moved)))
	for i := range 3 {
		ok(b.handleSendMessage(ctx, c, sendReq("ResetT", 0, []byte(fmt.Sprint("b", i)), "")))
	}
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("ResetT", 0) == 3 }, 5*time.Second, time.Millisecond)
	for _, br := range []*testBroker{a, b} {
		ok(br.handleUpdateAndCreateSubscriptionGroup(ctx, c, groupReq("SG")))
	}
	commit := func(off int64) {
		t.Helper()
		up := codec.NewRequest(codec.ReqUpdateConsumerOffset)
		for k, v := range map[string]string{"consumerGroup": "SG", "topic": "ResetT", "queueId": "0", "commitOffset": fmt.Sprint(off)} {
			up.Ext.Set(k, v)
		}
		ok(b.handleUpdateConsumerOffset(ctx, c, up))
	}
	query := func() string {
		t.Helper()
		return ext(t, ok(b.handleQueryConsumerOffset(ctx, c, queryOffsetReq("SG", "ResetT", "0"))), "offset")
	}
	pull := func(off int64) *codec.RemotingCommand {
		t.Helper()
		pc := newTestConn(41102)
		resp, err := b.handlePullMessage(ctx, pc, pullReq("SG", "ResetT", 0, off, codec.PullFlagSubscription, 0))
		require.NoError(t, err)
		if resp == nil {
			resp = waitResponse(t, pc, 1)
		}
		return resp
	}
	commit(12) // the consumer is in broker-b's item
	require.EqualValues(t, 2, b.offsets.Query("SG", "ResetT", 0))

	// Back to the start: broker-a's first message.
	resp := ok(b.handleInvokeBrokerToResetOffset(ctx, c, staticResetReq("ResetT", "SG", 0)))
	require.Equal(t, `{"offsetTable":{{"brokerName":"broker-b","queueId":0,"topic":"ResetT"}:0}}`, string(resp.Body))
	require.EqualValues(t, 0, a.offsets.Query("SG", "ResetT", 0), "committed in broker-a's item")
	require.EqualValues(t, -1, b.offsets.Query("SG", "ResetT", 0), "broker-b's later offset forgotten")
	require.Equal(t, "0", query(), "the pending reset")
	commit(12) // the client's stale commit, ignored while the reset is pending
	require.EqualValues(t, -1, b.offsets.Query("SG", "ResetT", 0))
	resp = pull(12)
	require.EqualValues(t, codec.RespPullOffsetMoved, resp.Code, resp.Remark)
	for k, want := range map[string]string{"nextBeginOffset": "0", "minOffset": "0", "maxOffset": "13", "offsetDelta": "0"} {
		require.Equal(t, want, ext(t, resp, k), k)
	}
	resp = pull(0) // taken once: the pull reads broker-a's item now
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Equal(t, "0", query(), "read from broker-a's item, the later one having none")
	commit(1)
	require.EqualValues(t, 1, a.offsets.Query("SG", "ResetT", 0))

	// To broker-b's first message, by time: committed in its own item.
	resp = ok(b.handleInvokeBrokerToResetOffset(ctx, c, staticResetReq("ResetT", "SG", mid)))
	require.Contains(t, string(resp.Body), `"topic":"ResetT"}:10}`)
	require.EqualValues(t, 0, b.offsets.Query("SG", "ResetT", 0))
	resp = pull(1)
	require.EqualValues(t, codec.RespPullOffsetMoved, resp.Code, resp.Remark)
	require.Equal(t, "10", ext(t, resp, "nextBeginOffset"))
	require.Equal(t, "10", ext(t, resp, "offsetDelta"))
	require.Equal(t, "10", query())

	// A queue and offset (mqadmin resetOffsetByTime -b -q -o): both logical,
	// the offset inside the logical queue's range.
	ok(b.handleInvokeBrokerToResetOffset(ctx, c, staticResetReq("ResetT", "SG", 0, "queueId", "0", "offset", "2")))
	require.EqualValues(t, 2, a.offsets.Query("SG", "ResetT", 0))
	require.Equal(t, "2", query())
	resp, _ = b.handleInvokeBrokerToResetOffset(ctx, c, staticResetReq("ResetT", "SG", 0, "queueId", "0", "offset", "99"))
	require.EqualValues(t, codec.RespSystemError, resp.Code)
	require.Equal(t, "Target offset 99 not in consume queue range [0-13]", resp.Remark)

	// A pull held at the queue's end when a reset comes is answered with it
	// once woken (a held pull is re-run past the logical queue's lookup).
	require.Equal(t, "2", ext(t, pull(13), "nextBeginOffset"), "the pending reset taken")
	hc := newTestConn(41106)
	held, err := b.handlePullMessage(ctx, hc, pullReq("SG", "ResetT", 0, 13, codec.PullFlagSubscription|codec.PullFlagSuspend, 20000))
	require.NoError(t, err)
	require.Nil(t, held, "held at the end of broker-b's item")
	ok(b.handleInvokeBrokerToResetOffset(ctx, c, staticResetReq("ResetT", "SG", 0)))
	ok(b.handleSendMessage(ctx, c, sendReq("ResetT", 0, []byte("b3"), "")))
	held = waitResponse(t, hc, 1)
	require.EqualValues(t, codec.RespPullOffsetMoved, held.Code, held.Remark)
	require.Equal(t, "0", ext(t, held, "nextBeginOffset"))
	require.Equal(t, "0", ext(t, held, "offsetDelta"))

	// broker-a leads nothing: an empty table, so mqadmin's round of every
	// broker in the route succeeds; a queue it does not lead is refused.
	resp = ok(a.handleInvokeBrokerToResetOffset(ctx, c, staticResetReq("ResetT", "SG", 0)))
	require.Equal(t, `{"offsetTable":{}}`, string(resp.Body))
	resp, _ = a.handleInvokeBrokerToResetOffset(ctx, c, staticResetReq("ResetT", "SG", 0, "queueId", "0", "offset", "1"))
	require.EqualValues(t, codec.RespNotLeaderForQueue, resp.Code)
}

// A static queue served as its one physical queue is reset as any queue, the
// pull's answer carrying offsetDelta as every static pull answer does.
func TestStaticTopicResetPhysical(t *testing.T) {
	ctx := context.Background()
	b := newTestBroker(t, nil)
	c := newTestConn(41103)
	bn := b.conf().BrokerName
	// Logical 1 on physical queue 0.
	resp, _ := b.handleUpdateAndCreateStaticTopic(ctx, c, staticTopicReq("PhysT", 1,
		fmt.Sprintf(`{"bname":%q,"epoch":1,"hostedQueues":{1:[%s]},"topic":"PhysT","totalQueues":2}`, bn, item(0, 0, bn, 0))))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	for range 3 {
		resp, _ = b.handleSendMessage(ctx, c, sendReq("PhysT", 1, []byte("m"), ""))
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("PhysT", 0) == 3 }, 5*time.Second, time.Millisecond)
	resp, _ = b.handleUpdateAndCreateSubscriptionGroup(ctx, c, groupReq("PG"))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	resp, _ = b.handleInvokeBrokerToResetOffset(ctx, c, staticResetReq("PhysT", "PG", -1))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Contains(t, string(resp.Body), `"queueId":1,"topic":"PhysT"}:3}`, "reported by its logical id")
	require.EqualValues(t, 3, b.offsets.Query("PG", "PhysT", 0))
	resp, err := b.handlePullMessage(ctx, c, pullReq("PG", "PhysT", 1, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespPullOffsetMoved, resp.Code, resp.Remark)
	require.Equal(t, "3", ext(t, resp, "nextBeginOffset"))
	require.Equal(t, "0", ext(t, resp, "offsetDelta"))
}

// A queue moved twice (broker-a, broker-c, then broker-b): a reset into
// broker-a's item clears the group's offset in broker-c's middle item too,
// so the query reads the target back once the pull has taken the reset.
func TestStaticTopicResetClearsMiddleItem(t *testing.T) {
	ctx := context.Background()
	brs, _ := staticBrokers(t, "", "broker-a", "broker-b", "broker-c")
	a, b, cb := brs[0], brs[1], brs[2]
	conn := newTestConn(41104)
	items := item(0, 0, "broker-a", 0) + "," + item(1, 0, "broker-c", 10) + "," + item(2, 0, "broker-b", 20)
	for _, br := range []*testBroker{a, b, cb} {
		resp, _ := br.handleUpdateAndCreateStaticTopic(ctx, conn, staticTopicReq("ChainT", 1,
			fmt.Sprintf(`{"bname":%q,"epoch":3,"hostedQueues":{0:[%s]},"topic":"ChainT","totalQueues":1}`, br.conf().BrokerName, items)))
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
		resp, _ = br.handleUpdateAndCreateSubscriptionGroup(ctx, conn, groupReq("CG"))
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
	cb.offsets.Commit("CG", "ChainT", 0, 0) // the consumer passed through broker-c's item
	b.offsets.Commit("CG", "ChainT", 0, 0)  // and is at broker-b's start
	query := func() *codec.RemotingCommand {
		resp, err := b.handleQueryConsumerOffset(ctx, conn, queryOffsetReq("CG", "ChainT", "0"))
		require.NoError(t, err)
		return resp
	}
	require.Equal(t, "20", ext(t, query(), "offset"))

	resp, _ := b.handleInvokeBrokerToResetOffset(ctx, conn, staticResetReq("ChainT", "CG", 0, "queueId", "0", "offset", "0"))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.EqualValues(t, 0, a.offsets.Query("CG", "ChainT", 0))
	require.EqualValues(t, -1, cb.offsets.Query("CG", "ChainT", 0), "cleared on broker-c")
	require.EqualValues(t, -1, b.offsets.Query("CG", "ChainT", 0), "forgotten here")
	pc := newTestConn(41105)
	resp, err := b.handlePullMessage(ctx, pc, pullReq("CG", "ChainT", 0, 20, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespPullOffsetMoved, resp.Code, resp.Remark)
	require.Equal(t, "0", ext(t, resp, "nextBeginOffset"))
	require.Equal(t, "0", ext(t, query(), "offset"), "broker-a's, past the cleared ones")
}
