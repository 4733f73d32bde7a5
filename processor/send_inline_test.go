package processor

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"rmqd/codec"
	"rmqd/store"
)

// TestSendInlinePicksOnlyNonBlockingSends: only sends to an existing, non-retry
// topic may run on the event loop; auto-creation and retry handling go to workers.
func TestSendInlinePicksOnlyNonBlockingSends(t *testing.T) {
	b := newTestBroker(t, nil)
	b.topics.Update(TopicConfig{TopicName: "Exists", ReadQueueNums: 4, WriteQueueNums: 4, Perm: PermRead | PermWrite})
	b.topics.Update(TopicConfig{TopicName: RetryGroupTopicPrefix + "G", ReadQueueNums: 1, WriteQueueNums: 1, Perm: PermRead | PermWrite})

	assert.True(t, b.sendInline(sendReq("Exists", 0, []byte("x"), "")), "V1 header, existing topic")
	assert.False(t, b.sendInline(sendReq("NotYet", 0, []byte("x"), "")), "auto-create registers with the name servers")
	assert.False(t, b.sendInline(sendReq(RetryGroupTopicPrefix+"G", 0, []byte("x"), "")), "retry sends may create the DLQ")

	v2 := codec.NewRequest(codec.ReqSendMessageV2)
	v2.Ext.Set("a", "PG")
	v2.Ext.Set("b", "Exists")
	assert.True(t, b.sendInline(v2), "V2 header")
	assert.False(t, b.sendInline(codec.NewRequest(codec.ReqSendMessage)), "no topic at all: the worker answers the error")
}

// TestSendInlineNeverUnderSyncFlush: a SYNC_FLUSH send waits for an fdatasync
// anyway; on a worker, a put slowed by the disk cannot stop its event loop.
func TestSendInlineNeverUnderSyncFlush(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.Store.FlushDiskType = store.SyncFlush })
	b.topics.Update(TopicConfig{TopicName: "Exists", ReadQueueNums: 4, WriteQueueNums: 4, Perm: PermRead | PermWrite})
	assert.False(t, b.sendInline(sendReq("Exists", 0, []byte("x"), "")))
}

// A batch is a put per record: one of up to ~190,000 records in a 4 MiB body
// held its loop for 150-275 ms. Only small batches run inline; a single send
// of any size still does (one copy).
func TestBigBatchesLeaveTheLoop(t *testing.T) {
	b := newTestBroker(t, nil)
	b.topics.Update(TopicConfig{TopicName: "Exists", ReadQueueNums: 4, WriteQueueNums: 4, Perm: PermRead | PermWrite})
	batch := func(n int) *codec.RemotingCommand {
		r := codec.NewRequest(codec.ReqSendBatchMessage)
		r.Ext.Set("a", "PG")
		r.Ext.Set("b", "Exists")
		r.Body = make([]byte, n)
		return r
	}
	inline := b.sendInlineRule(codec.ReqSendBatchMessage)
	assert.True(t, inline(batch(inlineBodyMax)))
	assert.False(t, inline(batch(inlineBodyMax+1)))
	assert.True(t, b.sendInlineRule(codec.ReqSendMessage)(sendReq("Exists", 0, make([]byte, 1<<20), "")))
}

// TestSignedSendHeaderLeavesTheLoop: with ACL on, the hook sorts and MACs the
// header as well as the body where the send runs, so a small body with a big
// header (up to 4 MiB of fields) must not run on the event loop either.
func TestSignedSendHeaderLeavesTheLoop(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) {
		c.AclEnable = true
		c.RocketmqHome = ""
	})
	b.topics.Update(TopicConfig{TopicName: "Exists", ReadQueueNums: 4, WriteQueueNums: 4, Perm: PermRead | PermWrite})
	inline := b.sendInlineRule(codec.ReqSendMessageV2)
	req := func(body, header int) *codec.RemotingCommand {
		r := codec.NewRequest(codec.ReqSendMessageV2)
		r.Ext.Set("a", "PG")
		r.Ext.Set("b", "Exists")
		r.Ext.Set("pad", string(make([]byte, header)))
		r.Body = make([]byte, body)
		return r
	}
	assert.True(t, inline(req(1024, 1024)))
	assert.False(t, inline(req(inlineBodyMax+1, 0)), "big body")
	assert.False(t, inline(req(1024, inlineBodyMax)), "big header, small body")
	assert.False(t, inline(req(inlineBodyMax/2, inlineBodyMax/2)), "body and header together")
}
