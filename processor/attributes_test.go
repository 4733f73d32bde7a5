package processor

import (
	"context"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/processor/meta"
)

// updateTopicAttrs sends UPDATE_AND_CREATE_TOPIC for topic with attrs as the
// attributes header ("" leaves it out).
func updateTopicAttrs(t testing.TB, b *testBroker, topic, attrs string) *codec.RemotingCommand {
	t.Helper()
	req := codec.NewRequest(codec.ReqUpdateAndCreateTopic)
	for _, kv := range [][2]string{{"topic", topic}, {"readQueueNums", "4"}, {"writeQueueNums", "4"}, {"perm", "6"}} {
		req.Ext.Set(kv[0], kv[1])
	}
	if attrs != "" {
		req.Ext.Set("attributes", attrs)
	}
	resp, err := b.handleUpdateAndCreateTopic(context.Background(), newTestConn(5), req)
	require.NoError(t, err)
	return resp
}

// TestTopicAttributesValidated: the attributes modification is checked as
// Java's AttributeUtil.alterCurrentAttributes checks it against
// TopicAttributes.ALL: known keys, values in their set or range, only
// additions on create, no deleting what is absent, queue.type and
// cleanup.policy fixed once made; nothing is changed by a refused request.
func TestTopicAttributesValidated(t *testing.T) {
	b := newTestBroker(t, nil)
	for _, tc := range []struct{ attrs, remark string }{
		{"+no.such.key=1", "unsupported key: no.such.key"},
		{"+message.type=SOMETHING", "value is not in set"},
		{"+message.type=MIXED", "MIXED message type is not supported."},
		{"-message.type", "only add attribute is supported while creating topic. key: message.type"},
		{"+reserve.time=abc", `For input string: "abc"`},
		{"+reserve.time=-2", "value is not in range"},
		{"+message.type=FIFO,+message.type=NORMAL", "key duplication"},
		{"message.type=FIFO", "format"},
		{"+message.type", "format"},
		{"+message.type=", "format"},
	} {
		resp := updateTopicAttrs(t, b, "AttrNew", tc.attrs)
		require.EqualValues(t, codec.RespInvalidParameter, resp.Code, tc.attrs)
		require.Contains(t, resp.Remark, tc.remark, tc.attrs)
		_, ok := b.topics.Select("AttrNew")
		require.False(t, ok, "a refused create made the topic: %s", tc.attrs)
	}

	resp := updateTopicAttrs(t, b, "AttrT", "+message.type=FIFO,+queue.type=SimpleCQ,+cleanup.policy=DELETE")
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	tc, _ := b.topics.Select("AttrT")
	require.Equal(t, map[string]string{"message.type": "FIFO", "queue.type": "SimpleCQ", "cleanup.policy": "DELETE"}, tc.Attributes)

	for _, u := range []struct{ attrs, remark string }{
		{"+queue.type=SimpleCQ", "attempt to update an unchangeable attribute. key: queue.type"},
		{"-cleanup.policy", "attempt to update an unchangeable attribute. key: cleanup.policy"},
		{"-reserve.time", "attempt to delete a nonexistent key: reserve.time"},
		{"+message.type=NORMAL,+no.such=1", "unsupported key: no.such"},
	} {
		resp = updateTopicAttrs(t, b, "AttrT", u.attrs)
		require.EqualValues(t, codec.RespInvalidParameter, resp.Code, u.attrs)
		require.Contains(t, resp.Remark, u.remark, u.attrs)
		tc, _ = b.topics.Select("AttrT")
		require.Equal(t, "FIFO", tc.Attributes["message.type"], "a refused update changed the topic: %s", u.attrs)
	}

	// Changeable ones change; no header keeps what is there.
	resp = updateTopicAttrs(t, b, "AttrT", "+message.type=DELAY")
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	resp = updateTopicAttrs(t, b, "AttrT", "")
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	tc, _ = b.topics.Select("AttrT")
	require.Equal(t, "DELAY", tc.Attributes["message.type"])
	resp = updateTopicAttrs(t, b, "AttrT", "-message.type")
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	tc, _ = b.topics.Select("AttrT")
	require.NotContains(t, tc.Attributes, "message.type")
}

// TestTopicAttributesMixedAllowed: enableMixedMessageType lets MIXED through,
// as Java's broker does.
func TestTopicAttributesMixedAllowed(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.EnableMixedMessageType = true })
	resp := updateTopicAttrs(t, b, "MixedT", "+message.type=MIXED")
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	tc, _ := b.topics.Select("MixedT")
	require.Equal(t, "MIXED", tc.Attributes["message.type"])
}

// TestTopicAttributesStoreKinds: both store kinds Java's attributes ask for are
// taken: cleanup.policy=COMPACTION (whatever enableCompaction says, as Java)
// and queue.type=BatchCQ (a batch consume queue, store/batchcq.go).
func TestTopicAttributesStoreKinds(t *testing.T) {
	b := newTestBroker(t, nil)
	resp := updateTopicAttrs(t, b, "CompactT", "+cleanup.policy=COMPACTION")
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	tc, ok := b.topics.Select("CompactT")
	require.True(t, ok)
	require.True(t, meta.Compacted(&tc))

	resp = updateTopicAttrs(t, b, "BatchT", "+queue.type=BatchCQ")
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	tc, _ = b.topics.Select("BatchT")
	require.Equal(t, "BatchCQ", tc.Attributes["queue.type"])
}

// TestTopicListAttributes: UPDATE_AND_CREATE_TOPIC_LIST carries each topic's
// modification as a map keyed "+key"/"-key" (mqadmin's updateTopicList); Java
// stores the keys without the sign and checks them as the single form does.
func TestTopicListAttributes(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	list := codec.NewRequest(codec.ReqUpdateAndCreateTopicList)
	list.Body = []byte(`{"topicConfigList":[{"topicName":"ListA","readQueueNums":4,"writeQueueNums":4,"perm":6,` +
		`"attributes":{"+message.type":"FIFO"}},{"topicName":"ListB","readQueueNums":4,"writeQueueNums":4,"perm":6}]}`)
	resp, err := b.handleUpdateAndCreateTopicList(ctx, newTestConn(5), list)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	tc, _ := b.topics.Select("ListA")
	require.Equal(t, map[string]string{"message.type": "FIFO"}, tc.Attributes)

	// One bad topic refuses the whole list; nothing of it is applied.
	list.Body = []byte(`{"topicConfigList":[{"topicName":"ListC","readQueueNums":4,"writeQueueNums":4,"perm":6},` +
		`{"topicName":"ListA","readQueueNums":4,"writeQueueNums":4,"perm":6,"attributes":{"+queue.type":"SimpleCQ"}}]}`)
	resp, err = b.handleUpdateAndCreateTopicList(ctx, newTestConn(5), list)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespInvalidParameter, resp.Code)
	require.Contains(t, resp.Remark, "unchangeable attribute. key: queue.type")
	_, ok := b.topics.Select("ListC")
	require.False(t, ok)

	list.Body = []byte(`{"topicConfigList":[{"topicName":"ListD","readQueueNums":4,"writeQueueNums":4,"perm":6,` +
		`"attributes":{"+message.type":"MIXED"}}]}`)
	resp, err = b.handleUpdateAndCreateTopicList(ctx, newTestConn(5), list)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespInvalidParameter, resp.Code)
	require.Equal(t, "MIXED message type is not supported.", resp.Remark)
}

// TestTopicAttributesOwnTheirStrings: the attributes header aliases the
// request frame, which the event loop reuses for the next request; the stored
// attributes must not change with it (a proxy then read message.type=FIFO
// back as a garbled key and served the topic as NORMAL).
func TestTopicAttributesOwnTheirStrings(t *testing.T) {
	b := newTestBroker(t, nil)
	frame := []byte("+message.type=FIFO")
	req := codec.NewRequest(codec.ReqUpdateAndCreateTopic)
	for _, kv := range [][2]string{{"topic", "AliasT"}, {"readQueueNums", "4"}, {"writeQueueNums", "4"}, {"perm", "6"}} {
		req.Ext.Set(kv[0], kv[1])
	}
	req.Ext.Set("attributes", unsafe.String(&frame[0], len(frame)))
	resp, err := b.handleUpdateAndCreateTopic(context.Background(), newTestConn(5), req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	for i := range frame {
		frame[i] = 'x'
	}
	tc, ok := b.topics.Select("AliasT")
	require.True(t, ok)
	require.Equal(t, map[string]string{"message.type": "FIFO"}, tc.Attributes)
}
