package processor

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// reopenBroker loads a second broker's tables from b's config directory while
// b still runs: what a broker restarted after a kill -9 of b would find.
func reopenBroker(t *testing.T, b *testBroker) *Broker {
	t.Helper()
	b2, err := NewBroker(b.Config(), b.st, quietLog())
	require.NoError(t, err)
	return b2
}

// eventuallyOnDisk reopens b until ok holds for what a restart finds, 10 s at
// most (the flush intervals are set to 100 ms).
func eventuallyOnDisk(t *testing.T, b *testBroker, what string, ok func(*Broker) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(reopenBroker(t, b)) {
		if time.Now().After(deadline) {
			t.Fatalf("not on disk after a kill: %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMetadataSurvivesKill changes every persisted table through the request
// handlers and checks what a broker started from the same directory without a
// shutdown of the first finds, within the periodic flush intervals: topics and
// subscription groups are written before the answer (Java's
// TopicConfigManager and SubscriptionGroupManager), consumer offsets by the
// flushConsumerOffsetInterval flush, delay offsets by the
// flushDelayOffsetInterval one.
func TestMetadataSurvivesKill(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) {
		c.FlushConsumerOffsetInterval = 100
		c.Store.FlushDelayOffsetInterval = 100
	})
	ctx := context.Background()
	c := newTestConn(1)
	ok := func(resp *codec.RemotingCommand, err error) {
		t.Helper()
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	}

	// Topics: create, update, create and delete.
	ok(b.handleUpdateAndCreateTopic(ctx, c, createTopicReq("KillT", 4)))
	ok(b.handleUpdateAndCreateTopic(ctx, c, createTopicReq("KillT", 8)))
	ok(b.handleUpdateAndCreateTopic(ctx, c, createTopicReq("GoneT", 2)))
	del := codec.NewRequest(codec.ReqDeleteTopicInBroker)
	del.Ext.Set("topic", "GoneT")
	ok(b.handleDeleteTopicInBroker(ctx, c, del))

	// Subscription groups: create two, delete one with its offsets.
	for _, g := range []string{"KillG", "GoneG"} {
		req := codec.NewRequest(codec.ReqUpdateAndCreateSubscriptiongroup)
		req.Body = []byte(fmt.Sprintf(`{"groupName":%q,"retryMaxTimes":3,"retryQueueNums":1}`, g))
		ok(b.handleUpdateAndCreateSubscriptionGroup(ctx, c, req))
	}
	upd := func(group string, queueID int32, off int64) {
		u := codec.NewRequest(codec.ReqUpdateConsumerOffset)
		for _, kv := range [][2]string{{"consumerGroup", group}, {"topic", "KillT"},
			{"queueId", fmt.Sprint(queueID)}, {"commitOffset", fmt.Sprint(off)}} {
			u.Ext.Set(kv[0], kv[1])
		}
		ok(b.handleUpdateConsumerOffset(ctx, c, u))
	}
	upd("GoneG", 0, 3)
	eventuallyOnDisk(t, b, "GoneG's offset", func(b2 *Broker) bool { return b2.offsets.Query("GoneG", "KillT", 0) == 3 })
	dg := codec.NewRequest(codec.ReqDeleteSubscriptiongroup)
	dg.Ext.Set("groupName", "GoneG")
	dg.Ext.Set("cleanOffset", "true")
	ok(b.handleDeleteSubscriptionGroup(ctx, c, dg))

	b2 := reopenBroker(t, b)
	tc, found := b2.topics.Select("KillT")
	require.True(t, found, "a created topic is on disk when answered")
	require.EqualValues(t, 8, tc.WriteQueueNums, "and so is its update")
	require.False(t, b2.topics.Exists("GoneT"), "and a delete")
	_, found = b2.groups.Get("KillG")
	require.True(t, found)
	_, found = b2.groups.Get("GoneG")
	require.False(t, found)

	// Consumer offsets: UPDATE_CONSUMER_OFFSET, a pull's commit, and the
	// offsets of the deleted group going.
	upd("KillG", 1, 42)
	for i := range 3 {
		resp, err := b.handleSendMessage(ctx, c, sendReq("KillT", 2, []byte(fmt.Sprint("m", i)), ""))
		ok(resp, err)
	}
	waitQueued(b, "KillT", 0) // queue 2 below
	deadline := time.Now().Add(5 * time.Second)
	for b.st.MaxOffsetInQueue("KillT", 2) < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	p := pullReq("KillG", "KillT", 2, 3, codec.PullFlagCommitOffset|codec.PullFlagSubscription, 0)
	p.Ext.Set("commitOffset", "2")
	_, err := b.handlePullMessage(ctx, c, p)
	require.NoError(t, err)
	require.EqualValues(t, 2, b.offsets.Query("KillG", "KillT", 2), "the pull committed")
	eventuallyOnDisk(t, b, "committed offsets", func(b2 *Broker) bool {
		return b2.offsets.Query("KillG", "KillT", 1) == 42 && b2.offsets.Query("KillG", "KillT", 2) == 2 &&
			b2.offsets.Query("GoneG", "KillT", 0) == -1
	})

	// Delay offsets: a level-1 (1 s) message delivered moves level 1's offset.
	resp, err := b.handleSendMessage(ctx, c, sendReq("KillT", 3, []byte("later"), "DELAY\x011\x02"))
	ok(resp, err)
	deadline = time.Now().Add(10 * time.Second)
	for b.st.MaxOffsetInQueue("KillT", 3) < 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	require.EqualValues(t, 1, b.st.MaxOffsetInQueue("KillT", 3), "the delayed message was delivered")
	eventuallyOnDisk(t, b, "delay level 1's offset", func(b2 *Broker) bool { return b2.schedule.Offset(1) == 1 })
}

// TestDelayOffsetWrittenBeforeIdle: with Java's 10 s flushDelayOffsetInterval,
// the offsets of the last deliveries are written when the schedule service
// goes idle, not at its next idle tick 10 s on: a kill in between delivered
// those messages again.
func TestDelayOffsetWrittenBeforeIdle(t *testing.T) {
	b := newTestBroker(t, nil)
	require.EqualValues(t, 10000, b.Config().Store.FlushDelayOffsetInterval)
	ctx := context.Background()
	c := newTestConn(1)
	resp, err := b.handleSendMessage(ctx, c, sendReq("DelayT", 0, []byte("later"), "DELAY\x011\x02"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	deadline := time.Now().Add(10 * time.Second)
	for b.st.MaxOffsetInQueue("DelayT", 0) < 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	require.EqualValues(t, 1, b.st.MaxOffsetInQueue("DelayT", 0), "the delayed message was delivered")
	deadline = time.Now().Add(3 * time.Second)
	for reopenBroker(t, b).schedule.Offset(1) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("delay level 1's offset not on disk 3 s after the delivery")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
