package processor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/processor/meta"
	"rmqd/remoting"
	"rmqd/store"
)

// staticTopicReq is UPDATE_AND_CREATE_STATIC_TOPIC as mqadmin's
// createStaticTopic sends it: the topic config in the header, the
// TopicQueueMappingDetail as fastjson writes it (bare Integer keys).
func staticTopicReq(topic string, queues int, detail string) *codec.RemotingCommand {
	req := codec.NewRequest(codec.ReqUpdateAndCreateStaticTopic)
	for _, kv := range [][2]string{{"topic", topic}, {"defaultTopic", TopicAutoCreate},
		{"readQueueNums", fmt.Sprint(queues)}, {"writeQueueNums", fmt.Sprint(queues)}, {"perm", "6"},
		{"topicFilterType", "SINGLE_TAG"}, {"topicSysFlag", "0"}, {"order", "false"}, {"force", "false"}} {
		req.Ext.Set(kv[0], kv[1])
	}
	req.Body = []byte(detail)
	return req
}

// item is one LogicQueueMappingItem as fastjson writes it.
func item(gen, queueID int, bname string, logicOffset int) string {
	return fmt.Sprintf(`{"bname":%q,"endOffset":-1,"gen":%d,"logicOffset":%d,"queueId":%d,"startOffset":0,"timeOfEnd":-1,"timeOfStart":-1}`,
		bname, gen, logicOffset, queueID)
}

// A static topic made by `mqadmin updateStaticTopic` (logical queues 1 and 3
// here, on physical 0 and 1; 0 and 2 on another broker): stored and
// persisted, answered by GET_TOPIC_CONFIG, registered, and every queue
// request rewritten from the logical id to the physical one.
func TestStaticTopicServedLocally(t *testing.T) {
	b := newTestBroker(t, nil)
	c := newTestConn(40100)
	ctx := context.Background()
	bn := b.conf().BrokerName
	detail := fmt.Sprintf(`{"bname":%q,"currIdMap":{},"dirty":false,"epoch":100,"hostedQueues":{1:[%s],3:[%s]},"scope":"__global__","topic":"StaticT","totalQueues":4}`,
		bn, item(0, 0, bn, 0), item(0, 1, bn, 0))
	resp, err := b.handleUpdateAndCreateStaticTopic(ctx, c, staticTopicReq("StaticT", 2, detail))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	tc, ok := b.topics.Select("StaticT")
	require.True(t, ok)
	require.EqualValues(t, 2, tc.WriteQueueNums)

	// Java's file, reloaded by a fresh manager.
	data, err := os.ReadFile(filepath.Join(b.conf().ConfigDir(), "topicQueueMapping.json"))
	require.NoError(t, err)
	require.Contains(t, string(data), `"hostedQueues":{1:[{"bname":`)
	m := meta.NewTopicQueueMappingManager(b.conf().ConfigDir(), quietLog())
	require.NoError(t, m.Load())
	require.Equal(t, b.mappings.Get("StaticT"), m.Get("StaticT"))
	require.Equal(t, b.mappings.DataVersion(), m.DataVersion())

	// GET_TOPIC_CONFIG: the mapping only when asked with lo=true (mqadmin does).
	get := codec.NewRequest(codec.ReqGetTopicConfig)
	get.Ext.Set("topic", "StaticT")
	resp, _ = b.handleGetTopicConfig(ctx, c, get)
	require.NotContains(t, string(resp.Body), "mappingDetail")
	get.Ext.Set("lo", "true")
	resp, _ = b.handleGetTopicConfig(ctx, c, get)
	var withMapping struct {
		TopicName     string          `json:"topicName"`
		MappingDetail json.RawMessage `json:"mappingDetail"`
	}
	require.NoError(t, codec.UnmarshalBody(resp.Body, &withMapping))
	require.Equal(t, "StaticT", withMapping.TopicName)
	d, err := codec.DecodeTopicQueueMappingDetail(withMapping.MappingDetail)
	require.NoError(t, err)
	require.EqualValues(t, 100, d.Epoch)
	require.Len(t, d.HostedQueues, 2)

	// The registration carries Java's cloneAsMappingInfo.
	reg := b.registerBody(map[string]TopicConfig{"StaticT": tc}, b.topics.DataVersion())
	info := reg.TopicConfigSerializeWrapper.TopicQueueMappingInfoMap["StaticT"]
	require.NotNil(t, info)
	require.Equal(t, map[int32]int32{1: 0, 3: 1}, info.CurrIDMap)
	require.EqualValues(t, 4, info.TotalQueues)
	require.Nil(t, b.registerBody(map[string]TopicConfig{"Other": NewTopicConfig("Other")}, b.topics.DataVersion()).
		TopicConfigSerializeWrapper.TopicQueueMappingInfoMap)

	// Send to logical 3: stored in physical queue 1, answered as queue 3.
	resp, err = b.handleSendMessage(ctx, c, sendReq("StaticT", 3, []byte("hello"), "TAGS\x01a\x02"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Equal(t, "3", ext(t, resp, "queueId"))
	require.Equal(t, "0", ext(t, resp, "queueOffset"))
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("StaticT", 1) == 1 }, 5*time.Second, 5*time.Millisecond)
	require.EqualValues(t, 0, b.st.MaxOffsetInQueue("StaticT", 0))
	// A logical queue another broker leads: Java's NOT_LEADER_FOR_QUEUE.
	resp, _ = b.handleSendMessage(ctx, c, sendReq("StaticT", 0, []byte("x"), ""))
	require.EqualValues(t, codec.RespNotLeaderForQueue, resp.Code)
	require.Equal(t, "StaticT-0 does not exit in request process of current broker "+bn, resp.Remark)

	// Pull logical 3 from 0.
	r, err := b.handlePullMessage(ctx, c, pullReq("SG", "StaticT", 3, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.Nil(t, r)
	pr := waitResponse(t, c, 1)
	require.EqualValues(t, codec.RespSuccess, pr.Code, pr.Remark)
	msgs := decodeBody(t, pr.Body)
	require.Len(t, msgs, 1)
	require.Equal(t, "hello", string(msgs[0].Body))
	require.Equal(t, "1", ext(t, pr, "nextBeginOffset"))
	require.Equal(t, "0", ext(t, pr, "offsetDelta"), "Java's static pull answer carries it")

	// Offsets are kept under the physical queue, as Java's rewritten requests do.
	up := codec.NewRequest(codec.ReqUpdateConsumerOffset)
	for k, v := range map[string]string{"consumerGroup": "SG", "topic": "StaticT", "queueId": "3", "commitOffset": "1"} {
		up.Ext.Set(k, v)
	}
	resp, _ = b.handleUpdateConsumerOffset(ctx, c, up)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.EqualValues(t, 1, b.offsets.Query("SG", "StaticT", 1))
	resp, _ = b.handleQueryConsumerOffset(ctx, c, queryOffsetReq("SG", "StaticT", "3"))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Equal(t, "1", ext(t, resp, "offset"))

	// Admin offset queries by logical id; lo=false (a forward) is physical.
	queueReq := func(code int32, queueID string, lo string) *codec.RemotingCommand {
		q := codec.NewRequest(code)
		q.Ext.Set("topic", "StaticT")
		q.Ext.Set("queueId", queueID)
		q.Ext.Set("timestamp", "0")
		if lo != "" {
			q.Ext.Set("lo", lo)
		}
		return q
	}
	for _, tc := range []struct {
		queueID, lo, want string
	}{{"3", "", "1"}, {"1", "", "0"}, {"1", "false", "1"}, {"3", "true", "1"}} {
		resp, _ = b.handleGetMaxOffset(ctx, c, queueReq(codec.ReqGetMaxOffset, tc.queueID, tc.lo))
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
		require.Equal(t, tc.want, ext(t, resp, "offset"), "max offset of %+v", tc)
	}
	resp, _ = b.handleGetMinOffset(ctx, c, queueReq(codec.ReqGetMinOffset, "3", ""))
	require.Equal(t, "0", ext(t, resp, "offset"))
	resp, _ = b.handleSearchOffsetByTimestamp(ctx, c, queueReq(codec.ReqSearchOffsetByTimestamp, "3", ""))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Equal(t, "0", ext(t, resp, "offset"))
	resp, _ = b.handleGetEarliestMsgStoretime(ctx, c, queueReq(codec.ReqGetEarliestMsgStoretime, "3", ""))
	require.NotEqual(t, "-1", ext(t, resp, "timestamp"), "the message of physical queue 1")
	resp, _ = b.handleGetMaxOffset(ctx, c, queueReq(codec.ReqGetMaxOffset, "2", ""))
	require.EqualValues(t, codec.RespNotLeaderForQueue, resp.Code)

	// Deleting the topic drops its mapping, in the file too.
	del := codec.NewRequest(codec.ReqDeleteTopicInBroker)
	del.Ext.Set("topic", "StaticT")
	resp, _ = b.handleDeleteTopicInBroker(ctx, c, del)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Nil(t, b.mappings.Get("StaticT"))
	m = meta.NewTopicQueueMappingManager(b.conf().ConfigDir(), quietLog())
	require.NoError(t, m.Load())
	require.Zero(t, m.Len())
}

// After `mqadmin remappingStaticTopic` a logical queue has several items and
// a request is served by the broker holding the offset. Java's epoch and identity checks refuse stale or foreign
// mappings.
func TestStaticTopicRemappedAndRefused(t *testing.T) {
	b := newTestBroker(t, nil)
	c := newTestConn(40101)
	ctx := context.Background()
	bn := b.conf().BrokerName
	mk := func(epoch int, items0 string) string {
		return fmt.Sprintf(`{"bname":%q,"epoch":%d,"hostedQueues":{0:[%s]},"scope":"__global__","topic":"RemapT","totalQueues":1}`,
			bn, epoch, items0)
	}
	resp, _ := b.handleUpdateAndCreateStaticTopic(ctx, c, staticTopicReq("RemapT", 1, mk(100, item(0, 0, bn, 0))))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)

	resp, _ = b.handleUpdateAndCreateStaticTopic(ctx, c, staticTopicReq("RemapT", 1, mk(99, item(0, 0, bn, 0))))
	require.EqualValues(t, codec.RespSystemError, resp.Code)
	require.Equal(t, "Can't accept data with small epoch 99 < 100", resp.Remark)

	// Remapped back here after a stay on broker-x: three items.
	items := item(0, 0, bn, 0) + "," + item(1, 0, "broker-x", 10) + "," + item(2, 0, bn, 20)
	resp, _ = b.handleUpdateAndCreateStaticTopic(ctx, c, staticTopicReq("RemapT", 1, mk(200, items)))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	// Sends go to the leader item, answered at its logic offset.
	resp, _ = b.handleSendMessage(ctx, c, sendReq("RemapT", 0, []byte("x"), ""))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Equal(t, "20", ext(t, resp, "queueOffset"))
	// Offsets broker-x holds are forwarded: without a name server to find it,
	// the cause is answered.
	r, _ := b.handlePullMessage(ctx, c, pullReq("SG", "RemapT", 0, 15, codec.PullFlagSubscription, 0))
	require.EqualValues(t, codec.RespSystemError, r.Code)
	require.Contains(t, r.Remark, "cannot find addr for broker broker-x")

	// Items out of order (Java's checkLogicQueueMappingItemOffset).
	bad := item(1, 0, bn, 0) + "," + item(1, 0, bn, 5)
	resp, _ = b.handleUpdateAndCreateStaticTopic(ctx, c, staticTopicReq("RemapT", 1, mk(300, bad)))
	require.EqualValues(t, codec.RespSystemError, resp.Code)
	require.Contains(t, resp.Remark, "The gen does not increase monotonically")

	// Another broker's mapping, another topic's, a logical id beyond totalQueues.
	for _, body := range []string{
		`{"bname":"broker-x","epoch":1,"hostedQueues":{},"topic":"OtherT","totalQueues":1}`,
		fmt.Sprintf(`{"bname":%q,"epoch":1,"hostedQueues":{},"topic":"RemapT","totalQueues":1}`, bn),
		fmt.Sprintf(`{"bname":%q,"epoch":1,"hostedQueues":{5:[%s]},"topic":"OtherT","totalQueues":1}`, bn, item(0, 0, bn, 0)),
	} {
		resp, _ = b.handleUpdateAndCreateStaticTopic(ctx, c, staticTopicReq("OtherT", 1, body))
		require.EqualValues(t, codec.RespInvalidParameter, resp.Code, body)
	}
	_, ok := b.topics.Select("OtherT")
	require.False(t, ok)
	require.Equal(t, 1, b.mappings.Len())
}

// A pull held on a logical queue waits on its physical queue and, re-run when
// a message arrives there, reads that queue (the hold keeps the rewritten id).
func TestStaticTopicHeldPull(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	bn := b.conf().BrokerName
	detail := fmt.Sprintf(`{"bname":%q,"epoch":1,"hostedQueues":{0:[%s],1:[%s]},"topic":"HeldT","totalQueues":2}`,
		bn, item(0, 1, bn, 0), item(0, 0, bn, 0))
	resp, _ := b.handleUpdateAndCreateStaticTopic(ctx, newTestConn(40102), staticTopicReq("HeldT", 2, detail))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)

	held := newTestConn(40103)
	r, err := b.handlePullMessage(ctx, held, pullReq("G", "HeldT", 0, 0, codec.PullFlagSubscription|codec.PullFlagSuspend, 20000))
	require.NoError(t, err)
	require.Nil(t, r)
	require.Equal(t, 1, b.HeldPulls())

	// Logical 1 is physical 0: the held pull (physical 1) stays held.
	resp, _ = b.handleSendMessage(ctx, newTestConn(40104), sendReq("HeldT", 1, []byte("other"), ""))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Equal(t, "1", ext(t, resp, "queueId"))
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("HeldT", 0) == 1 }, 5*time.Second, 5*time.Millisecond)
	require.Equal(t, 1, b.HeldPulls())

	resp, _ = b.handleSendMessage(ctx, newTestConn(40104), sendReq("HeldT", 0, []byte("mine"), ""))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	pr := waitResponse(t, held, 1)
	require.EqualValues(t, codec.RespSuccess, pr.Code, pr.Remark)
	msgs := decodeBody(t, pr.Body)
	require.Len(t, msgs, 1)
	require.Equal(t, "mine", string(msgs[0].Body))
	require.EqualValues(t, 1, msgs[0].QueueID, "stored in the physical queue")
}

// GET_ALL_TOPIC_CONFIG carries the mappings (Java's
// TopicConfigAndMappingSerializeWrapper), and a slave copies them, so one
// serving reads (slaveReadEnable) maps logical ids as its master does.
func TestStaticTopicSlaveSync(t *testing.T) {
	ctx := context.Background()
	master := newTestBroker(t, nil)
	bn := master.conf().BrokerName
	detail := fmt.Sprintf(`{"bname":%q,"epoch":7,"hostedQueues":{0:[%s],1:[%s],2:[%s]},"topic":"SyncStaticT","totalQueues":3}`,
		bn, item(0, 1, bn, 0), item(0, 0, bn, 0), item(0, 0, "broker-x", 0))
	resp, _ := master.handleUpdateAndCreateStaticTopic(ctx, newTestConn(40105), staticTopicReq("SyncStaticT", 2, detail))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	resp, _ = master.handleSendMessage(ctx, newTestConn(40105), sendReq("SyncStaticT", 0, []byte("on physical 1"), ""))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)

	resp, _ = master.handleGetAllTopicConfig(ctx, newTestConn(40105), codec.NewRequest(codec.ReqGetAllTopicConfig))
	require.Contains(t, string(resp.Body), `,"topicQueueMappingDetailMap":{"SyncStaticT":{"bname":`)
	var all TopicConfigTable
	require.NoError(t, codec.UnmarshalBody(resp.Body, &all), "still the topic table")
	require.Contains(t, all.TopicConfigTable, "SyncStaticT")

	srv := remoting.NewServer(remoting.ServerConfig{Addr: "127.0.0.1:0", Logger: quietLog()})
	master.Register(srv)
	require.NoError(t, srv.Start(ctx))
	defer srv.Shutdown(context.Background())
	slave := newTestBrokerWith(t, func(c *BrokerConfig) { slaveConf(c); c.SlaveReadEnable = true },
		func(s *store.Config) { s.BrokerRole = store.RoleSlave }, nil)
	cl := remoting.NewClient(remoting.ClientConfig{Logger: quietLog()})
	defer cl.Close()
	slave.SetNameServerInvoker(cl)
	require.NoError(t, slave.SyncFromMaster(ctx, srv.Addr().String()))
	require.Equal(t, master.mappings.Get("SyncStaticT"), slave.mappings.Get("SyncStaticT"))
	require.Equal(t, master.mappings.DataVersion(), slave.mappings.DataVersion())

	// The slave maps as its master: logical 2 is led by broker-x (without the
	// mapping it would read physical queue 2).
	q := codec.NewRequest(codec.ReqGetMaxOffset)
	q.Ext.Set("topic", "SyncStaticT")
	q.Ext.Set("queueId", "2")
	resp, _ = slave.handleGetMaxOffset(ctx, newTestConn(40106), q)
	require.EqualValues(t, codec.RespNotLeaderForQueue, resp.Code, resp.Remark)
}

// GET_CONSUME_STATS of a static topic leaves a missing consumer offset -1, as
// Java's getConsumeStats (it clamps to 0 for other topics only).
func TestStaticTopicConsumeStatsMissingOffset(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	c := newTestConn(40110)
	bn := b.conf().BrokerName
	detail := fmt.Sprintf(`{"bname":%q,"epoch":1,"hostedQueues":{0:[%s]},"topic":"StatsT","totalQueues":1}`, bn, item(0, 0, bn, 0))
	resp, _ := b.handleUpdateAndCreateStaticTopic(ctx, c, staticTopicReq("StatsT", 1, detail))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	b.topics.Update(NewTopicConfig("PlainT"))
	for topic, want := range map[string]string{"StatsT": `"consumerOffset":-1,"lastTimestamp":0,"pullOffset":-1`,
		"PlainT": `"consumerOffset":0,"lastTimestamp":0,"pullOffset":0`} {
		cs := codec.NewRequest(codec.ReqGetConsumeStats)
		cs.Ext.Set("consumerGroup", "SG")
		cs.Ext.Set("topic", topic)
		r, _ := b.handleGetConsumeStats(ctx, c, cs)
		require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
		require.Contains(t, string(r.Body), want, topic)
	}
}
